// The backend archetype: the minimal class that models keyschema::backend, declared exactly as
// <keyschema/backend.hpp> states the contract and nothing more. It is what a new adapter starts
// from (each member names the requirement it meets), and it keeps the store honest: store<S,
// backend_archetype> must be a complete type, so the store may use nothing the concept does not
// require. Below it, one counter-example per requirement: a class lacking exactly that one
// requirement does not model backend (and the optional capabilities are detected only when
// present).
//
// Only declarations: this file is compiled, never linked or run.
#include <keyschema/backend.hpp>
#include <keyschema/memory_backend.hpp>
#include <keyschema/store.hpp>
#include <keyschema/write_batch.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace ks = keyschema;

namespace archetype {

// backend_cursor: an ordered iterator over one consistent view.
class cursor_archetype {
 public:
  cursor_archetype(cursor_archetype&&) noexcept;  // returned by value, kept in scans: movable
  cursor_archetype& operator=(cursor_archetype&&) = delete;  // not required
  ~cursor_archetype();
  bool valid() const;                    // positioned on an entry inside the range
  std::string_view key() const;          // REQUIRES: valid()
  std::string_view value() const;        // REQUIRES: valid()
  void next();                           // REQUIRES: valid(); throws backend_error
};

// backend: byte keys in memcmp order.
class backend_archetype {
 public:
  // A consistent view; copyable and cheap to copy.
  struct snapshot_type {
    snapshot_type(const snapshot_type&);
    snapshot_type& operator=(const snapshot_type&) = delete;  // not required
    ~snapshot_type();
  };
  using cursor_type = cursor_archetype;

  backend_archetype(const backend_archetype&) = delete;  // a backend need not be copyable...
  backend_archetype& operator=(const backend_archetype&) = delete;
  backend_archetype(backend_archetype&&) = delete;       // ...nor movable

  bool get(std::string_view key, std::string& value, const snapshot_type* snap) const;
  void write(const ks::write_batch& batch, const ks::write_options& opts);
  snapshot_type snapshot() const;
  cursor_type cursor(const ks::key_range& range, const snapshot_type* snap) const;
  ks::backend_limits limits() const noexcept;
};

}  // namespace archetype

using archetype::backend_archetype;

static_assert(ks::backend_cursor<archetype::cursor_archetype>);
static_assert(ks::backend<backend_archetype>, "the archetype models the backend contract");
static_assert(!ks::backend_with_erase_range<backend_archetype>, "native range erase is optional");
static_assert(!ks::backend_with_write_transaction<backend_archetype>, "write transactions are optional");
static_assert(ks::detail::check_backend<backend_archetype>());

// The store needs nothing beyond the contract: its class (every member declaration) instantiates
// over the archetype.
using ks_schema = ks::schema<ks::keyspace<"a", std::int64_t, ks::lit<"A">, ks::field<"id", std::uint64_t>>>;
static_assert(sizeof(ks::store<ks_schema, backend_archetype>) > 0);
static_assert(sizeof(ks::store_transaction<ks_schema, backend_archetype>) > 0);
static_assert(sizeof(ks::store_snapshot<ks_schema, backend_archetype>) > 0);

// The shipped backend models it too.
static_assert(ks::backend<ks::memory_backend>);

// --- counter-examples: each lacks exactly one requirement ----------------------------------------
namespace counter {

enum class lacks {
  nothing,
  cursor_valid,
  cursor_key,
  cursor_value,
  cursor_next,
  cursor_move,       // a cursor that cannot be moved (the store returns and keeps cursors)
  snapshot_type,
  snapshot_copy,     // a move-only snapshot
  cursor_type,
  get,
  get_const,         // get() only on a non-const backend (readers are const)
  write,
  snapshot,
  cursor,
  limits,
  limits_type,       // the old max_key_size() instead of limits()
};

template <lacks L>
class cursor_of {
 public:
  cursor_of(cursor_of&&) noexcept requires(L != lacks::cursor_move);
  cursor_of(cursor_of&&) requires(L == lacks::cursor_move) = delete;
  bool valid() const requires(L != lacks::cursor_valid);
  std::string_view key() const requires(L != lacks::cursor_key);
  std::string_view value() const requires(L != lacks::cursor_value);
  void next() requires(L != lacks::cursor_next);
};

struct copyable_snapshot {};
struct move_only_snapshot {
  move_only_snapshot(move_only_snapshot&&) noexcept;
  move_only_snapshot(const move_only_snapshot&) = delete;
};

template <lacks L>
struct snapshot_typedef {
  using snapshot_type = std::conditional_t<L == lacks::snapshot_copy, move_only_snapshot, copyable_snapshot>;
};
template <>
struct snapshot_typedef<lacks::snapshot_type> {};

template <lacks L>
struct cursor_typedef {
  using cursor_type = cursor_of<L>;
};
template <>
struct cursor_typedef<lacks::cursor_type> {};

template <lacks L>
class backend : public snapshot_typedef<L>, public cursor_typedef<L> {
  using snap = std::conditional_t<L == lacks::snapshot_type, copyable_snapshot,
                                  std::conditional_t<L == lacks::snapshot_copy, move_only_snapshot, copyable_snapshot>>;

 public:
  bool get(std::string_view, std::string&, const snap*) const requires(L != lacks::get && L != lacks::get_const);
  bool get(std::string_view, std::string&, const snap*) requires(L == lacks::get_const);
  void write(const ks::write_batch&, const ks::write_options&) requires(L != lacks::write);
  snap snapshot() const requires(L != lacks::snapshot);
  cursor_of<L> cursor(const ks::key_range&, const snap*) const requires(L != lacks::cursor);
  ks::backend_limits limits() const noexcept requires(L != lacks::limits && L != lacks::limits_type);
  std::size_t max_key_size() const noexcept requires(L == lacks::limits_type);
};

// The full template is a backend, so each counter-example below differs by its one lack only.
static_assert(ks::backend<backend<lacks::nothing>>);
static_assert(ks::detail::check_backend<backend<lacks::nothing>>());
static_assert(ks::backend_cursor<cursor_of<lacks::nothing>>);

static_assert(!ks::backend_cursor<cursor_of<lacks::cursor_valid>>);
static_assert(!ks::backend_cursor<cursor_of<lacks::cursor_key>>);
static_assert(!ks::backend_cursor<cursor_of<lacks::cursor_value>>);
static_assert(!ks::backend_cursor<cursor_of<lacks::cursor_next>>);
static_assert(!ks::backend_cursor<cursor_of<lacks::cursor_move>>);

static_assert(!ks::backend<backend<lacks::cursor_valid>>);
static_assert(!ks::backend<backend<lacks::cursor_key>>);
static_assert(!ks::backend<backend<lacks::cursor_value>>);
static_assert(!ks::backend<backend<lacks::cursor_next>>);
static_assert(!ks::backend<backend<lacks::cursor_move>>);
static_assert(!ks::backend<backend<lacks::snapshot_type>>);
static_assert(!ks::backend<backend<lacks::snapshot_copy>>);
static_assert(!ks::backend<backend<lacks::cursor_type>>);
static_assert(!ks::backend<backend<lacks::get>>);
static_assert(!ks::backend<backend<lacks::get_const>>);
static_assert(!ks::backend<backend<lacks::write>>);
static_assert(!ks::backend<backend<lacks::snapshot>>);
static_assert(!ks::backend<backend<lacks::cursor>>);
static_assert(!ks::backend<backend<lacks::limits>>);
static_assert(!ks::backend<backend<lacks::limits_type>>);

// --- the optional capabilities ---------------------------------------------------------------------
struct with_erase_range : backend<lacks::nothing> {
  void erase_range(const ks::key_range& range, const ks::write_options& opts);
};
static_assert(ks::backend_with_erase_range<with_erase_range>);

// backend_with_placements: place(routes), called once by the store after constructing the backend.
struct with_placements : backend<lacks::nothing> {
  void place(std::span<const ks::placement_route> routes);
};
static_assert(ks::backend_with_placements<with_placements>);
static_assert(!ks::backend_with_placements<backend<lacks::nothing>>, "placement is optional");
static_assert(sizeof(ks::store<ks_schema, with_placements>) > 0);

// backend_with_value_kept_on_miss: a true get_keeps_value_on_miss; false or absent is not it.
struct with_value_kept : backend<lacks::nothing> {
  static constexpr bool get_keeps_value_on_miss = true;
};
struct with_value_not_kept : backend<lacks::nothing> {
  static constexpr bool get_keeps_value_on_miss = false;
};
static_assert(ks::backend_with_value_kept_on_miss<with_value_kept>);
static_assert(!ks::backend_with_value_kept_on_miss<with_value_not_kept>);
static_assert(!ks::backend_with_value_kept_on_miss<backend<lacks::nothing>>, "keeping the value is optional");
static_assert(sizeof(ks::store<ks_schema, with_value_kept>) > 0);

struct with_write_transaction : backend<lacks::nothing> {
  struct write_transaction_type {
    write_transaction_type(write_transaction_type&&) noexcept;
    bool is_open() const;
    bool get(std::string_view key, std::string& value) const;
    cursor_of<lacks::nothing> cursor(const ks::key_range& range) const;
    void commit(const ks::write_batch& batch, const ks::write_options& opts);
  };
  write_transaction_type begin_write();
};
static_assert(ks::backend_with_write_transaction<with_write_transaction>);

// A write transaction without commit (or without a cursor) is not the capability.
struct without_commit : backend<lacks::nothing> {
  struct write_transaction_type {
    write_transaction_type(write_transaction_type&&) noexcept;
    bool is_open() const;
    bool get(std::string_view key, std::string& value) const;
    cursor_of<lacks::nothing> cursor(const ks::key_range& range) const;
  };
  write_transaction_type begin_write();
};
static_assert(!ks::backend_with_write_transaction<without_commit>);
struct without_transaction_cursor : backend<lacks::nothing> {
  struct write_transaction_type {
    write_transaction_type(write_transaction_type&&) noexcept;
    bool is_open() const;
    bool get(std::string_view key, std::string& value) const;
    void commit(const ks::write_batch& batch, const ks::write_options& opts);
  };
  write_transaction_type begin_write();
};
static_assert(!ks::backend_with_write_transaction<without_transaction_cursor>);

// backend_with_write_guards: guarded write() and commit(), both returning whether the conditions
// held; required of backends other processes can write (LMDB, SQLite, etcd).
struct with_write_guards : backend<lacks::nothing> {
  using backend<lacks::nothing>::write;
  bool write(const ks::write_batch& batch, const ks::write_options& opts, ks::write_guards guards);
  struct write_transaction_type {
    write_transaction_type(write_transaction_type&&) noexcept;
    bool is_open() const;
    bool get(std::string_view key, std::string& value) const;
    cursor_of<lacks::nothing> cursor(const ks::key_range& range) const;
    void commit(const ks::write_batch& batch, const ks::write_options& opts);
    bool commit(const ks::write_batch& batch, const ks::write_options& opts, ks::write_guards guards);
  };
  write_transaction_type begin_write();
};
static_assert(ks::backend_with_write_guards<with_write_guards>);
// The store's guarded writes use nothing else: its classes instantiate over it.
static_assert(sizeof(ks::store<ks_schema, with_write_guards>) > 0);
static_assert(sizeof(ks::store_transaction<ks_schema, with_write_guards>) > 0);
// Single-process backends need not model it.
static_assert(!ks::backend_with_write_guards<ks::memory_backend>);
static_assert(!ks::backend_with_write_guards<with_write_transaction>);

// A guarded write() without a guarded commit() is not the capability.
struct without_guarded_commit : with_write_transaction {
  using with_write_transaction::write;
  bool write(const ks::write_batch& batch, const ks::write_options& opts, ks::write_guards guards);
};
static_assert(!ks::backend_with_write_guards<without_guarded_commit>);
// Nor is one that erases ranges natively without guarding them.
struct with_unguarded_erase_range : with_write_guards {
  void erase_range(const ks::key_range& range, const ks::write_options& opts);
};
static_assert(!ks::backend_with_write_guards<with_unguarded_erase_range>);
struct with_guarded_erase_range : with_unguarded_erase_range {
  using with_unguarded_erase_range::erase_range;
  bool erase_range(const ks::key_range& range, const ks::write_options& opts, ks::write_guards guards);
};
static_assert(ks::backend_with_write_guards<with_guarded_erase_range>);
static_assert(sizeof(ks::store<ks_schema, with_guarded_erase_range>) > 0);

// backend_with_concurrent_writes: write transactions plus concurrent_writes(), how many commit
// groups the store keeps in flight at once (etcd).
struct with_concurrent_writes : with_write_guards {
  std::size_t concurrent_writes() const;
};
static_assert(ks::backend_with_concurrent_writes<with_concurrent_writes>);
static_assert(sizeof(ks::store<ks_schema, with_concurrent_writes>) > 0);
// Without write transactions (no conflict detection) it is not the capability.
struct concurrent_without_transactions : backend<lacks::nothing> {
  std::size_t concurrent_writes() const;
};
static_assert(!ks::backend_with_concurrent_writes<concurrent_without_transactions>);
static_assert(!ks::backend_with_concurrent_writes<with_write_guards>);

}  // namespace counter
