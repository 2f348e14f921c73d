// keyschema/backend.hpp: the byte-level contract every storage backend meets.
//
// The typed layer (keyschema::store) never talks to a database directly; it talks to a Backend,
// a small class that stores byte-string keys in unsigned lexicographic (memcmp) order. The
// contract is deliberately small so that LevelDB, LMDB, RocksDB, SQLite or a replicated engine
// can each meet it in one header. It is stated as code below: the concepts `backend_cursor`,
// `backend`, and the optional `backend_with_erase_range`, `backend_with_write_transaction`,
// `backend_with_transaction_range_erase`, `backend_with_write_guards`,
// `backend_with_concurrent_writes`, `backend_with_compact_range`, `backend_with_placements`,
// `backend_with_long_keys` and `backend_with_value_kept_on_miss`,
// each requirement commented where it is declared. tests/static/backend_archetype.cpp holds the
// archetype: the minimal class that models `backend`, with one counter-example per requirement.
//
// Thread-safety required of a backend: get, snapshot, limits and cursor may be called
// concurrently from any number of threads, also while one thread is inside write().
// keyschema::store calls write() from one thread at a time (it serializes writers itself), except
// on a backend_with_concurrent_writes, which it calls from several threads at once. A
// single cursor or snapshot object is not shared between threads without external
// synchronization.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/write_batch.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE

// Bounds of a cursor: lower <= key < upper; an empty upper means no upper bound (an empty
// exclusive upper bound would select nothing, so the encoding is unambiguous).
struct key_range {
  std::string_view lower;
  std::string_view upper;
  bool reverse = false;
};

// What one write() of a backend accepts. SIZE_MAX (the default of every member) means unlimited.
// A backend reports the limits of its engine and configuration; the typed layer refuses what
// exceeds them with a limit_error naming the keyspace, the limit, the size and the maximum, before
// anything reaches the engine. Examples: LMDB caps keys at 511 bytes (mdb_env_get_maxkeysize);
// LevelDB caps key + value of one operation (max_entry_bytes); etcd caps a transaction at 128
// operations and a request at 1.5 MiB.
struct backend_limits {
  static constexpr std::size_t unlimited = SIZE_MAX;
  // The longest key of one operation (put or erase).
  std::size_t max_key_bytes = unlimited;
  // The longest value of one put.
  std::size_t max_value_bytes = unlimited;
  // The longest key + value of one operation (an erase counts its key alone).
  std::size_t max_entry_bytes = unlimited;
  // The most operations one write() (one atomic batch) may hold.
  std::size_t max_ops_per_write = unlimited;
  // The most key + value bytes one write() may hold (write_batch::byte_size()).
  std::size_t max_bytes_per_write = unlimited;
  // The longest key of one operation in a keyspace with long keys (keyschema::long_keys) on a
  // backend_with_long_keys, which stores keys beyond max_key_bytes in a form of its own (LMDB: up
  // to its value limit). 0 (the default): as max_key_bytes, which every other backend keeps.
  std::size_t max_long_key_bytes = 0;

  friend bool operator==(const backend_limits&, const backend_limits&) = default;
};

// An ordered iterator over a key range of one consistent view (see backend::cursor). It starts
// on the first entry of its range in its direction, or is invalid when the range is empty.
// Cursors throw backend_error when the engine reports an error while moving.
template <class C>
concept backend_cursor = requires(C& c, const C& cc) {
  // A cursor is returned by value and kept in scans and transactions.
  requires std::move_constructible<C>;
  requires std::destructible<C>;
  // True when positioned on an entry inside the range; false once it moved past the end.
  { cc.valid() } -> std::convertible_to<bool>;
  // The current key and value. REQUIRES: valid(). Each view stays valid until the next call to
  // next() or the cursor's destruction.
  { cc.key() } -> std::convertible_to<std::string_view>;
  { cc.value() } -> std::convertible_to<std::string_view>;
  // Moves to the next entry in the cursor's direction (ascending, or descending when the range
  // was reverse). REQUIRES: valid(). Errors: backend_error.
  c.next();
};

template <class B>
concept backend = requires(B& b, const B& cb, std::string_view k, std::string& out, const write_batch& wb,
                           const write_options& wo, const key_range& r,
                           const typename B::snapshot_type* snap) {
  // A consistent, read-only view of the whole database: the latest committed state when it was
  // taken, unchanged while writers go on. Copyable and cheap to copy (store_snapshot and the
  // cursors over it copy it); the state is released when the last copy is destroyed.
  // REQUIRES: every copy is destroyed before the backend.
  typename B::snapshot_type;
  requires std::copy_constructible<typename B::snapshot_type>;
  requires std::destructible<typename B::snapshot_type>;

  // The ordered iterator over one view (see backend_cursor).
  typename B::cursor_type;
  requires backend_cursor<typename B::cursor_type>;

  // Reads key in *snap (the latest committed state when snap is nullptr). On success assigns
  // the value to `out` and returns true; returns false when the key does not exist (`out` is
  // then unspecified). Errors: backend_error.
  { cb.get(k, out, snap) } -> std::same_as<bool>;

  // Applies every operation of wb atomically: after a crash, either all of them are present or
  // none. Later operations on the same key win. With wo.sync the commit is on stable storage
  // when write() returns. Errors: backend_error (nothing was applied), limit_error (a limit such
  // as LMDB's map size was reached; nothing was applied).
  b.write(wb, wo);

  // A view of the latest committed state (see snapshot_type).
  { cb.snapshot() } -> std::same_as<typename B::snapshot_type>;

  // An iterator over the keys k with r.lower <= k < r.upper (no upper bound when r.upper is
  // empty), ascending, or descending when r.reverse. The cursor reads *snap, or a private
  // snapshot taken now when snap is nullptr: either way one cursor always sees one consistent
  // state. The cursor copies the bounds it needs.
  // REQUIRES: the cursor and *snap do not outlive the backend.
  { cb.cursor(r, snap) } -> std::same_as<typename B::cursor_type>;

  // What one write() accepts (see backend_limits). The typed layer checks every operation and
  // every batch against it before writing, so the error can name the keyspace and the limit,
  // and sizes the chunks of its bounded range erases by it.
  { cb.limits() } -> std::same_as<backend_limits>;
};

// Optional: a backend whose engine has write transactions that are serializable with every
// other writer, also across processes: pessimistic ones that lock writers out (LMDB, SQLite), or
// optimistic ones that read one state and refuse to commit over a changed one (etcd: conflict_error).
// keyschema::store then runs its transactions and read-modify-writes inside one (so they are
// serializable across processes) instead of over a snapshot guarded by its in-process writer
// lock. REQUIRES: a write_transaction_type is begun, used and ended by one thread, which
// meanwhile does not call write() or begin_write() of the same backend.
template <class B>
concept backend_with_write_transaction =
    backend<B> &&
    requires(B& b, const typename B::write_transaction_type& ct, typename B::write_transaction_type& t,
             std::string_view k, std::string& out, const key_range& r, const write_batch& wb,
             const write_options& wo) {
      // Move-constructible; destroying an open one aborts it.
      requires std::move_constructible<typename B::write_transaction_type>;
      // Takes the engine's write lock (waiting for writers of this and every other process) and
      // returns a transaction reading the state it locked, which stays current until it ends; or,
      // optimistic, returns a transaction reading one state without locking, whose commit fails
      // with conflict_error if that state changed. Errors: backend_error, limit_error.
      // Optionally also begin_write(const write_options&): a transaction whose commit will be
      // made with those options, for an engine that fixes a transaction's durability when it
      // begins (SQLite); keyschema::store calls it when it knows them (its own read-modify-writes).
      { b.begin_write() } -> std::same_as<typename B::write_transaction_type>;
      // True until commit() succeeded or a failure ended the transaction.
      { ct.is_open() } -> std::convertible_to<bool>;
      // As backend::get, on the locked state. REQUIRES: is_open().
      { ct.get(k, out) } -> std::same_as<bool>;
      // As backend::cursor, on the locked state. REQUIRES: is_open(); the cursor is not used
      // after the transaction ended.
      { ct.cursor(r) } -> backend_cursor;
      // Applies wb atomically with the durability of wo and ends the transaction. When it
      // throws, nothing was applied; the transaction is either still open (the locked state is
      // unchanged) or ended (is_open() is false), and never commits over a state other than the
      // one it read: if the engine had to let go of its lock (or never held one), it throws
      // conflict_error when another writer committed over what it read meanwhile.
      t.commit(wb, wo);
    };

// Optional: a backend_with_write_transaction whose commit can erase a run of keys as one
// operation (etcd's DeleteRange), so that a transaction's range erase is not bounded by
// max_ops_per_write. keyschema::store goes over the range it erases in a transaction with
// ct.erase_cursor(r) (a cursor like ct.cursor(r)) and erases, in the batch it commits, the keys it
// finds; the engine may commit a run of keys that cursor went over, all erased by the batch, as
// one range operation. ct.operation_count(wb) is what t.commit(wb) counts against
// backend_limits::max_ops_per_write (the store checks it before commit); on a
// backend_with_write_guards, ct.operation_count(wb, n) is what a commit guarded by n conditions
// counts (each condition one more compare).
// Errors: erase_cursor: as cursor; operation_count: limit_error for an operation over the entry
// limits. REQUIRES: is_open().
template <class B>
concept backend_with_transaction_range_erase =
    backend_with_write_transaction<B> &&
    requires(const typename B::write_transaction_type& ct, const key_range& r, const write_batch& wb) {
      { ct.erase_cursor(r) } -> std::same_as<decltype(ct.cursor(r))>;
      { ct.operation_count(wb) } -> std::convertible_to<std::size_t>;
    };

// One condition of a guarded write (backend_with_write_guards): `key` holds exactly the bytes
// `value`, or, when `exists` is false, `key` does not exist (`value` is then ignored).
struct write_guard {
  std::string_view key;
  std::string_view value;
  bool exists = true;
};
// The conditions of one guarded write: all of them must hold.
using write_guards = std::span<const write_guard>;

// Optional, and REQUIRED of every backend whose database other processes or clients can write
// while it is open (LMDB, SQLite, etcd): writes that check conditions inside the engine's write
// transaction, so that no other writer can change what they check before the write commits.
// keyschema::store guards each of its writes with its schema record (the bytes it opened the
// database with) and the absence of a ks::migrate progress record, and ks::migrate guards each of
// its batches with its own progress record: a process that opened the database with a schema
// that another process has since migrated away from (or is migrating) is refused instead of
// writing keys the new schema cannot read. A backend whose engine admits one process at a time
// (LevelDB and RocksDB lock their directory; memory_backend is private to its process) need not
// model it: nobody can migrate its database while a store has it open.
// Cost: the backend reads the guarded keys once per write, under the write lock it already holds
// (LMDB: one cursor search in the write transaction, and a step to a neighbouring key; SQLite: a
// point SELECT per key inside BEGIN IMMEDIATE; etcd: a compare per key in the Txn, no extra round
// trip). A backend may skip the reads when it can tell that nothing was committed since its last
// guarded write with the same conditions, which wrote none of their keys (LMDB: the write
// transaction's id is the next one; SQLite: the file's data version is unchanged).
template <class B>
concept backend_with_write_guards =
    backend_with_write_transaction<B> &&
    requires(B& b, typename B::write_transaction_type& t, const write_batch& wb, const write_options& wo,
             write_guards g) {
      // As backend::write, but first checks every condition of g on the state the engine's write
      // transaction reads (under its write lock, or as compares of an optimistic commit). Returns
      // true when they held and wb was applied; false when one did not hold: nothing was applied.
      // Errors: as backend::write.
      { b.write(wb, wo, g) } -> std::same_as<bool>;
      // As write_transaction_type::commit, but first checks every condition of g on the locked
      // state. Returns true when they held and wb was committed; false when one did not hold:
      // nothing was applied and the transaction has ended (is_open() is false). Errors: as
      // commit.
      { t.commit(wb, wo, g) } -> std::same_as<bool>;
    } &&
    // A backend that erases ranges natively guards those too.
    (!requires(B& b, const key_range& r, const write_options& wo) { b.erase_range(r, wo); } ||
     requires(B& b, const key_range& r, const write_options& wo, write_guards g) {
       { b.erase_range(r, wo, g) } -> std::same_as<bool>;
     });

// Optional: a backend that can erase a range natively (RocksDB's DeleteRange). The store uses it
// instead of erasing in bounded batches. Erases every key in r (as backend::cursor bounds it)
// atomically, with the durability of wo. Errors: as backend::write.
template <class B>
concept backend_with_erase_range = backend<B> && requires(B& b, const key_range& r, const write_options& wo) {
  b.erase_range(r, wo);
};

// Optional: a backend whose writes may be in flight from several threads at once, each applied
// atomically on its own, with write transactions that detect conflicts themselves (optimistic:
// a commit fails with conflict_error when what it read changed). A remote engine (etcd), where a
// write is mostly a network round trip: keyschema::store then keeps up to
// concurrent_writes() commit groups in flight at once instead of one (see store.hpp). Returns at
// least 1.
template <class B>
concept backend_with_concurrent_writes = backend_with_write_transaction<B> && requires(const B& cb) {
  { cb.concurrent_writes() } -> std::convertible_to<std::size_t>;
};

// Optional: a backend that can compact a key range on demand (LevelDB's and RocksDB's
// CompactRange), dropping erased entries so that cursors over a mass-erased range (a drained
// queue) no longer step over their tombstones. Blocks until done; readers and writers may go on.
// Errors: as the backend documents (LevelDB reports none here; RocksDB: backend_error).
template <class B>
concept backend_with_compact_range = backend<B> && requires(B& b, const key_range& r) { b.compact_range(r); };

// Optional: a backend whose engine batch the typed layer can build directly, so that a batch's
// keys and values are copied once, into the engine's batch, instead of into a write_batch first
// and into the engine's batch at write() (LevelDB: a leveldb::WriteBatch cannot adopt another
// buffer). B::direct_batch_type holds puts and erases in order, as write_batch does:
//   put(key, value), erase(key): appends an operation (copies its bytes);
//   clear() noexcept: removes every operation, keeping the capacity;
//   size(), byte_size(): operations and key plus value bytes held (as write_batch's);
//   append_to(out): appends every operation to the write_batch out, in order (copies).
// b.write_direct(d, wo) writes d as b.write(batch, wo) would write a write_batch holding d's
// operations: the same effect, the same checks and the same errors (d is left as it was, but for
// engine bookkeeping such as LevelDB's sequence number in the batch's header).
// keyschema::store_batch encodes into one when the backend has none of backend_with_write_guards
// (whose writes are guarded inside the engine's transaction).
template <class B>
concept backend_with_direct_batch =
    backend<B> && std::default_initializable<typename B::direct_batch_type> &&
    requires(B& b, typename B::direct_batch_type& d, const typename B::direct_batch_type& cd, std::string_view s,
             const write_options& wo, write_batch& out) {
      d.put(s, s);
      d.erase(s);
      { d.clear() } noexcept;
      { cd.size() } -> std::convertible_to<std::size_t>;
      { cd.byte_size() } -> std::convertible_to<std::size_t>;
      cd.append_to(out);
      b.write_direct(d, wo);
    };

// Where the keys of one placed keyspace (keyschema::placed, schema.hpp) go: the keys starting
// with `prefix` (the encoding of the keyspace's leading literals) belong to `placement`. When
// `previous` is set (ks::migrate only, moving the keyspace), they may also still be in
// `previous`: reads look in both, erases erase in both, puts go to `placement`. A placement name
// is 1 to 64 characters of [a-z0-9_-]; "" is the default placement.
struct placement_route {
  std::string_view prefix;
  std::string_view placement;
  std::optional<std::string_view> previous;
};

// Optional: a backend that keeps placements apart in the engine's own means (LMDB: one named
// database each; RocksDB: one column family each; SQLite: one table each). keyschema::store calls
// place(routes) once, right after constructing the backend and before anything else, with one
// route per placed keyspace of its schema (none when it places nothing); ks::migrate calls it with
// the routes of both schemas. Afterwards:
//   - a key goes to the placement of the route with the longest prefix it starts with, or to the
//     default placement (every key of an unplaced keyspace, and the store's 0xFF records);
//   - write() stays atomic across placements (one engine transaction), snapshot() covers every
//     placement at one point, and a cursor whose range reaches several placements merges them
//     in key order, in both directions;
//   - placements the engine already holds but no route names stay readable by full-range
//     cursors only before place() is called (keyschema-dump, a raw backend); the schema record
//     (fingerprint.hpp) names each keyspace's placement, so a store whose schema places a
//     keyspace elsewhere is refused before it could read an empty placement.
// A backend without it keeps every key in one key space (LevelDB, etcd, memory_backend).
// Calling place() twice replaces the routes. Errors: backend_error (creating a placement failed;
// nothing else changed), limit_error (more placements than the engine was opened for).
template <class B>
concept backend_with_placements =
    backend<B> && requires(B& b, std::span<const placement_route> routes) { b.place(routes); };

// The keys starting with `prefix` (the encoding of a keyspace's leading literals) belong to a
// keyspace with long keys (keyschema::long_keys, schema.hpp). `encode` false (ks::migrate only,
// taking the marker off the keyspace): its keys may still be stored in the backend's long form,
// so reads and erases find them in either form, but puts store them plainly.
// `plain_too` (ks::migrate only, putting the marker on): its keys may still be stored plainly too.
struct long_key_route {
  std::string_view prefix;
  bool encode = true;
  bool plain_too = false;
};

// Optional: a backend whose engine limits the key size (LMDB: 511 bytes) and which stores longer
// keys of the keyspaces that opted in (keyschema::long_keys) in a form of its own, keeping every
// part of this contract for them: key order (cursors in both directions, with any bounds),
// exact lookups and uniqueness, atomic writes, snapshots and write transactions. keyschema::store
// calls long_keys(routes) once, right after constructing the backend (and after place(), on a
// backend_with_placements), before anything else, with one route per keyspace with long keys of
// its schema (none when it has none); ks::migrate calls it with the routes of both schemas.
// Afterwards a key starting with a route's prefix may be up to backend_limits::max_long_key_bytes
// long; every other key keeps max_key_bytes. A backend whose engine takes long keys natively
// (LevelDB, RocksDB, SQLite, memory_backend) does not model it and needs nothing; one with a hard
// key limit of its own (etcd's request size) does not either: its limit_error stays.
// Calling long_keys() twice replaces the routes. Errors: limit_error (the engine cannot hold the
// long form: its key limit is too small), usage_error (a prefix is empty or too long).
template <class B>
concept backend_with_long_keys =
    backend<B> && requires(B& b, std::span<const long_key_route> routes) { b.long_keys(routes); };

// Optional: a backend whose get() (and, on a backend_with_write_transaction, its transaction's
// get()) leaves `out` unchanged when it returns false or throws, instead of leaving it
// unspecified, says so with `static constexpr bool get_keeps_value_on_miss = true;`. The store's
// get_into() then reads a std::string or bytes value straight into the caller's object (else into
// a buffer it swaps in on a hit). LMDB models it.
template <class B>
concept backend_with_value_kept_on_miss = backend<B> && requires {
  requires B::get_keeps_value_on_miss;
};

namespace detail {
// One static_assert per requirement of `backend`, so that a class that does not model it is told
// what is missing (called at keyschema::store's entry point). Returns backend<B>, which also
// catches anything the list below does not name.
template <class B>
constexpr bool check_backend() {
  constexpr bool has_snapshot = requires { typename B::snapshot_type; };
  static_assert(has_snapshot, "keyschema::store: Backend does not define snapshot_type; add `using snapshot_type = ...` "
                              "(a copyable, consistent view; see keyschema/backend.hpp)");
  if constexpr (has_snapshot) {
    static_assert(std::copy_constructible<typename B::snapshot_type>,
                  "keyschema::store: Backend::snapshot_type is not copy-constructible; make it a cheap copyable handle "
                  "(for example a shared_ptr to the engine's snapshot)");
    static_assert(requires(const B& cb, std::string_view k, std::string& out, const typename B::snapshot_type* snap) {
      { cb.get(k, out, snap) } -> std::same_as<bool>;
    }, "keyschema::store: Backend does not have `bool get(std::string_view key, std::string& value, const "
       "snapshot_type* snap) const`; add it (see keyschema/backend.hpp)");
    static_assert(requires(const B& cb) {
      { cb.snapshot() } -> std::same_as<typename B::snapshot_type>;
    }, "keyschema::store: Backend does not have `snapshot_type snapshot() const`; add it (see keyschema/backend.hpp)");
  }
  constexpr bool has_cursor = requires { typename B::cursor_type; };
  static_assert(has_cursor, "keyschema::store: Backend does not define cursor_type; add `using cursor_type = ...` "
                            "(an ordered iterator; see keyschema/backend.hpp)");
  if constexpr (has_cursor) {
    static_assert(backend_cursor<typename B::cursor_type>,
                  "keyschema::store: Backend::cursor_type does not model backend_cursor; it needs valid(), key(), "
                  "value() (const), next(), and a move constructor (see keyschema/backend.hpp)");
    if constexpr (has_snapshot) {
      static_assert(requires(const B& cb, const key_range& r, const typename B::snapshot_type* snap) {
        { cb.cursor(r, snap) } -> std::same_as<typename B::cursor_type>;
      }, "keyschema::store: Backend does not have `cursor_type cursor(const key_range& range, const snapshot_type* "
         "snap) const`; add it (see keyschema/backend.hpp)");
    }
  }
  static_assert(requires(B& b, const write_batch& wb, const write_options& wo) { b.write(wb, wo); },
                "keyschema::store: Backend does not have `void write(const write_batch& batch, const write_options& "
                "opts)`; add it (see keyschema/backend.hpp)");
  static_assert(requires(const B& cb) {
    { cb.limits() } -> std::same_as<backend_limits>;
  }, "keyschema::store: Backend does not have `backend_limits limits() const` (it replaces max_key_size()); report "
     "the engine's limits, or backend_limits{} when it has none");
  return backend<B>;
}
}  // namespace detail

KEYSCHEMA_END_NAMESPACE
