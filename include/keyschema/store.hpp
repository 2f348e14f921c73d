// keyschema/store.hpp: the typed store over a schema and a backend.
//
// store<Schema, Backend> is the object applications use. It owns a Backend (constructed in place
// from the store's constructor arguments) and offers, per keyspace of Schema, typed point
// operations (put, get, erase, contains), typed ordered scans (scan -> a range-v3 view of
// entry<KS>), range erases, atomic batches across keyspaces, write transactions that read their
// own writes, and snapshots for consistent multi-scan reads:
//
//   keyschema::store<broker, keyschema::memory_backend> db;        // or leveldb_backend{path}, ...
//   db.put<message_metadata>({"queue-7", 42}, keyschema::bytes("..."));   // bytes(const char*)
//   std::optional<keyschema::bytes> v = db.get<message_metadata>({"queue-7", 42});
//   for (const auto& e : db.scan<message_metadata>("queue-7").from(40)) ...
//   auto b = db.batch();  b.put<...>(...);  b.erase<...>(...);  b.commit({.sync = true});
//   auto tx = db.transaction();  auto n = tx.get<message_count>({"queue-7"}).value_or(0);
//   tx.put<message_count>({"queue-7"}, n + 1);  tx.commit();
//   b.add<acks>({"queue-7"}, 1);   // counters: resolved at commit under the writer lock (counters.hpp)
//
// The schema is checked at compile time (see schema.hpp): a store over an invalid schema does not
// compile, and the first error names the keyspaces and segment involved. At construction the
// store checks the database's schema record (see fingerprint.hpp) keyspace by keyspace: it
// records it in a new database, extends it when the program added keyspaces, and throws
// schema_error when a keyspace differs or is not declared, or the database holds keys but no
// schema record (unless opened with the keyschema::adopt tag; see the constructors).
//
// Thread-safety: a store may be used from many threads at once. Reads (get, contains, scan,
// snapshot) never block each other or writers. Writes commit one at a time, in order: put, erase,
// add, batch commits and write() go through the store's commit queue (group commit,
// detail/store/commit_queue.hpp): writers that commit at the same time are committed together by
// the first of them, in one atomic engine write with one sync (durable if any of them asked for
// sync), each getting its own result (a write that fails, an add that overflows, fails alone: its
// neighbours are committed). Each write is still atomic on its own, and its adds, counts and
// index entries are resolved against the state the writes queued before it leave. On a
// backend_with_concurrent_writes (etcd, where a commit is a network round trip) several groups of
// plain writes (no add, count or index to resolve) may be in flight at once, up to the backend's
// concurrent_writes(), once the writes waiting fill more than one group. Transactions
// and range erases take the store's writer lock, which a group's commit also holds: a transaction
// holds it from transaction() until commit(), rollback() or its destruction, so no write commits
// between its reads and its commit, and a read-modify-write inside it cannot lose an update. On a backend whose engine
// serializes writers across processes (LMDB, SQLite), a transaction also holds the engine's write
// lock, so this holds for several processes sharing one database too; on etcd, whose transactions
// are optimistic, a transaction whose reads another process changed fails with conflict_error
// (run it again: run_transaction in retry.hpp). A batch's adds (add<KS>), and the
// declared counts (count_of) and index entries (index_of) of what a write creates, changes or
// erases, are resolved while the writer lock is held (on a backend_with_write_transaction, LMDB,
// SQLite or etcd, inside one engine write transaction, resolved again when etcd reports a
// conflict) and written in the same atomic write, so they are exact under concurrent writers of
// this and other processes; see counters.hpp and indexes.hpp. Errors of every write: those its function lists, plus overflow_error for adds.
// Schema changes by other processes: on a backend other processes can write while the store is
// open (backend_with_write_guards: LMDB, SQLite, etcd), every write (put, erase, add, batches,
// transactions, erase_range, and what is built on them: prepared transactions, chunked values,
// sweeps) checks inside the engine's write transaction, under the lock it holds anyway, that the
// database's schema record is still the one this store opened it with and that no ks::migrate is
// under way; otherwise it throws schema_error naming what changed ("changed schema since this
// store opened it with layout <fp>: a ks::migrate is converting it (...)" or "it was migrated or
// extended to schema layout <fp>") and writes nothing. Remedy: reopen the store with the
// database's current schema. Cost per write: on LMDB one search and one cursor step, on SQLite
// two point SELECTs, under the write lock already held, and nothing when no commit of any process
// came since this store's last write; on etcd two compares in the same Txn.
// REQUIRES: a thread that holds an open transaction writes only through it; a write on the store
// itself from that thread throws usage_error instead of deadlocking.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/thread_batch.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/detail/store/commit_queue.hpp>
#include <keyschema/detail/store/derived_writes.hpp>
#include <keyschema/detail/store/erase_across.hpp>
#include <keyschema/detail/store/overlay_cursor.hpp>
#include <keyschema/detail/store/store_access.hpp>
#include <keyschema/detail/store/transaction_writes.hpp>
#include <keyschema/detail/store/writer_mutex.hpp>
#include <keyschema/detail/store/limit_check.hpp>
#include <keyschema/detail/store/live_handles.hpp>
#include <keyschema/detail/store/schema_check.hpp>
#include <keyschema/detail/this_thread.hpp>
#include <keyschema/entry.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fingerprint.hpp>
#include <keyschema/detail/store/placement_routes.hpp>
#include <keyschema/key_arg.hpp>
#include <keyschema/retry.hpp>
#include <keyschema/scan.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/value_codec.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

template <class Schema, class Backend>
class store;

// Tag of store's adopting constructor, ks::store<S, B> db{ks::adopt, path, options}: the caller
// declares that a database without a keyschema schema record holds keys of this schema, and the
// store records the schema in it. See store's constructors.
struct adopt_t {
  explicit adopt_t() = default;
};
inline constexpr adopt_t adopt{};

namespace detail {

// The batch a transaction's commit is built in: the thread's, kept between commits
// (detail/backend/thread_batch.hpp says why). A commit made while another holds it (from inside
// a backend's write()) gets a batch of its own.
struct write_batch_ops {
  static std::size_t size(const write_batch& b) noexcept { return b.byte_size(); }
  static void clear(write_batch& b) noexcept { b.clear(); }
};
using commit_batch_lease = thread_batch_lease<write_batch, write_batch_ops>;

// Whether store_batch encodes into Backend's engine batch (backend_with_direct_batch), and that
// batch's type. Not on a backend_with_write_guards: its writes are guarded inside the engine's
// write transaction, which write_direct does not take.
template <class Backend>
inline constexpr bool direct_batch_for = backend_with_direct_batch<Backend> && !backend_with_write_guards<Backend>;
template <class Backend, bool = direct_batch_for<Backend>>
struct direct_batch_of {
  using type = void;
};
template <class Backend>
struct direct_batch_of<Backend, true> {
  using type = typename Backend::direct_batch_type;
};
template <class Backend>
using direct_batch_t = typename direct_batch_of<Backend>::type;

template <class... Args>
struct starts_with_adopt : std::false_type {};
template <class First, class... Rest>
struct starts_with_adopt<First, Rest...> : std::is_same<std::remove_cvref_t<First>, adopt_t> {};

template <class Schema, class KS>
constexpr bool check_keyspace() {
  static_assert(Schema::template contains<KS>,
                "keyschema::store: this keyspace is not part of the store's schema; add it to the "
                "keyschema::schema<...> the store was declared with");
  return true;
}

// A direct write (put, erase, add) of KS: not a keyspace the store maintains (a derivation
// declared maintained, derivation.hpp: a declared count, an index, a sum). Its marker's
// refuse_direct_write<KS>() names the kind in its own static_assert; otherwise the one below.
template <class KS>
constexpr bool check_writable() {
  if constexpr (maintained_derivation<KS>()) {
    if constexpr (requires { KS::value_marker::template refuse_direct_write<KS>(); }) {
      static_assert(KS::value_marker::template refuse_direct_write<KS>());
    } else {
      static_assert(!maintained_derivation<KS>(),
                    "keyschema::put/erase/add: this keyspace is derived (its value marker is a derivation, "
                    "keyschema/derivation.hpp) and maintained by the store; write the records it derives from instead");
    }
  }
  return true;
}

// add<KS>: KS is writable and its value an integer.
template <class Schema, class KS>
constexpr bool check_add() {
  static_assert(check_keyspace<Schema, KS>());
  static_assert(check_writable<KS>());
  static_assert(addable_value<typename KS::value_type>,
                "keyschema::add: the keyspace's value type is not an integer type; add works on keyspaces whose "
                "value is an integer (std::int64_t, std::uint32_t, ...), not bool");
  return true;
}

// Typed reads over a Derived that provides, to store_access (detail/store/store_access.hpp),
//   bool raw_get(std::string_view key, std::string& value) const;
//   static constexpr bool raw_get_keeps_value_;  // raw_get leaves value unchanged on a miss
//   cursor raw_cursor(const key_range&) const;
template <class Derived, class Schema>
class basic_reader {
 public:
  // The value stored under key in keyspace KS, or std::nullopt. key: the typed key or its field
  // values (key_arg.hpp). Errors: decode_error when the stored value does not decode (names
  // keyspace and key); key_error when a field value is an integer outside its field's range;
  // backend_error from the engine.
  // The value is copied once, from the engine into the returned std::string or bytes value (other
  // types decode from it).
  template <class KS>
  std::optional<typename KS::value_type> get(const key_arg<KS>& key) const {
    static_assert(check_keyspace<Schema, KS>());
    using V = typename KS::value_type;
    key_buffer buf;
    const std::string_view k = key.encoded(buf);
    if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, bytes>) {
      // Read into the result itself (one return object: no move of the string afterwards).
      std::optional<V> out(std::in_place);
      bool found;
      if constexpr (std::is_same_v<V, bytes>)
        found = store_access::raw_get(self(), k, bytes_storage::of(*out));
      else
        found = store_access::raw_get(self(), k, *out);
      if (!found) out.reset();
      return out;
    } else {
      thread_local std::string v;
      if (!store_access::raw_get(self(), k, v)) return std::nullopt;
      return decode_value<KS>(k, v);
    }
  }

  // Reads the value stored under key in keyspace KS into out, reusing the storage out holds
  // (a std::string or bytes value receives the engine's bytes directly: one copy, no allocation
  // once out is large enough). key: as for get(). Returns false, leaving out unchanged, when
  // there is no such key. Errors: as get(); after a decode_error out is unspecified.
  template <class KS>
  bool get_into(const key_arg<KS>& key, typename KS::value_type& out) const {
    static_assert(check_keyspace<Schema, KS>());
    using V = typename KS::value_type;
    key_buffer buf;
    const std::string_view k = key.encoded(buf);
    if constexpr ((std::is_same_v<V, std::string> || std::is_same_v<V, bytes>) &&
                  store_access::raw_get_keeps_value<Derived>()) {
      // A miss leaves out unchanged: the engine's bytes go straight into it.
      if constexpr (std::is_same_v<V, bytes>)
        return store_access::raw_get(self(), k, bytes_storage::of(out));
      else
        return store_access::raw_get(self(), k, out);
    } else if constexpr (std::is_same_v<V, std::string>) {
      thread_local std::string v;  // out is left unchanged on a miss
      if (!store_access::raw_get(self(), k, v)) return false;
      out.swap(v);
      return true;
    } else if constexpr (std::is_same_v<V, bytes>) {
      thread_local std::string v;
      if (!store_access::raw_get(self(), k, v)) return false;
      out.swap(v);  // the engine's bytes go to out; out's old storage serves the next read
      return true;
    } else {
      thread_local std::string v;
      if (!store_access::raw_get(self(), k, v)) return false;
      decode_value_into<KS>(k, v, out);
      return true;
    }
  }

  // Whether key exists in keyspace KS. Errors: key_error (as get), backend_error.
  template <class KS>
  bool contains(const key_arg<KS>& key) const {
    static_assert(check_keyspace<Schema, KS>());
    thread_local std::string v;
    key_buffer buf;
    return store_access::raw_get(self(), key.encoded(buf), v);
  }

  // The entries of KS whose first sizeof...(P) fields equal prefix (none: the whole keyspace),
  // in key order. See scan.hpp for bounds, reverse, limit and lifetimes.
  template <class KS, class... P>
  scan_view<KS, Derived, sizeof...(P)> scan(const P&... prefix) const {
    static_assert(check_keyspace<Schema, KS>());
    static_assert(sizeof...(P) <= KS::field_count,
                  "keyschema::scan: more prefix values than the keyspace has fields; pass at most "
                  "KS::field_count values, in field order");
    static_assert(check_prefix_arguments<KS, P...>());
    // The view encodes the prefix straight into its bounds.
    return scan_view<KS, Derived, sizeof...(P)>(&self(), prefix_values_tag{}, prefix...);
  }

 private:
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
};

// The value writer of basic_writer::put for a value stored as it is (std::string, bytes: value
// codec "raw"): appends value, then check(value.size()) (throws limit_error). A sink that copies
// value from where it is (store_batch on a backend_with_direct_batch) calls check itself.
template <class Check>
struct raw_value_writer {
  std::string_view value;
  Check check;
  void operator()(std::string& b) const {
    b.append(value);
    check(value.size());
  }
};
// Spelled out: clang before 17 does not deduce an aggregate's template arguments (P1816).
template <class Check>
raw_value_writer(std::string_view, Check) -> raw_value_writer<Check>;
template <class T>
inline constexpr bool is_raw_value_writer = false;
template <class Check>
inline constexpr bool is_raw_value_writer<raw_value_writer<Check>> = true;

// Typed writes over a Derived that provides, to store_access (detail/store/store_access.hpp),
//   template <class KW, class VW> void emplace_op(write_batch::op_kind, KW&&, VW&&);
//   backend_limits limits() const;
template <class Derived, class Schema>
class basic_writer {
 public:
  // Stores value under key in keyspace KS (replacing any previous value) when the batch or
  // transaction commits. Errors: limit_error when the encoded key, value or key + value is
  // longer than the backend accepts (backend_limits; names the keyspace, the limit, the size and
  // the maximum; a key over max_key_bytes that a keyspace with keyschema::long_keys could hold
  // says so: remedy, mark the keyspace, a ks::migrate); key_error when a field value is an integer outside its field's range
  // (key_arg.hpp) or text that is not valid UTF-8; encode_error when the value holds such text
  // (a packed value; names the keyspace); nothing is added then.
  template <class KS>
  void put(const key_arg<KS>& key, const typename KS::value_type& value) {
    static_assert(check_keyspace<Schema, KS>());
    static_assert(check_writable<KS>());
    using V = typename KS::value_type;
    std::size_t key_bytes = 0;
    if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, bytes>) {
      // Stored as they are (value_codec "raw"): a sink may copy them from value itself.
      std::string_view v;
      if constexpr (std::is_same_v<V, bytes>) {
        v = value.view();
      } else {
        v = value;
      }
      store_access::emplace_op(
          self(), write_batch::op_kind::put, [&](std::string& b) { key_bytes = encode_checked<KS>(b, key); },
          raw_value_writer{v, [&](std::size_t value_bytes) {
                             check_value_limit(KS::name, store_access::limits(self()), key_bytes, value_bytes);
                           }});
    } else {
      store_access::emplace_op(
          self(), write_batch::op_kind::put, [&](std::string& b) { key_bytes = encode_checked<KS>(b, key); },
          [&](std::string& b) {
            const std::size_t mark = b.size();
            try {
              value_traits<typename KS::value_type>::encode(b, value);
            } catch (const encode_error& e) {
              throw encode_error("keyschema::put: keyspace '" + std::string(KS::name) + "': the value does not encode (" +
                                 e.what() + "); nothing was written");
            }
            check_value_limit(KS::name, store_access::limits(self()), key_bytes, b.size() - mark);
          });
    }
  }

  // Erases key from keyspace KS when the batch or transaction commits (a missing key is fine).
  // Errors: key_error (as put); nothing is added then.
  template <class KS>
  void erase(const key_arg<KS>& key) {
    static_assert(check_keyspace<Schema, KS>());
    static_assert(check_writable<KS>());
    store_access::emplace_op(
        self(), write_batch::op_kind::erase, [&](std::string& b) { encode_checked<KS>(b, key); },
        [](std::string&) {});
  }

 protected:
  // Appends the encoded key to b; returns its size. Errors: key_error, limit_error (too long).
  template <class KS>
  std::size_t encode_checked(std::string& b, const key_arg<KS>& key) const {
    const std::size_t mark = b.size();
    key.encode(b);
    const std::size_t n = b.size() - mark;
    check_key_limit(KS::name, store_access::limits(self()), n, has_long_keys<KS>());
    return n;
  }

 private:
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
};

// What a store transaction reads: the backend's write transaction when it has them
// (backend_with_write_transaction), a snapshot otherwise; and the cursor type of each.
template <class Backend, bool Native>
struct transaction_state {
  using type = typename Backend::snapshot_type;
  using cursor_type = typename Backend::cursor_type;
};
template <class Backend>
struct transaction_state<Backend, true> {
  using type = typename Backend::write_transaction_type;
  using cursor_type = decltype(std::declval<const type&>().cursor(std::declval<const key_range&>()));
};

}  // namespace detail

// A consistent, read-only view of a store: every read through it sees the database as of
// store::snapshot(). REQUIRES: the store outlives the snapshot and every scan made from it
// (checked when the store is destroyed: see ~store). A snapshot's scans may outlive the snapshot.
// Thread-safety: const members may be called from several threads at once.
template <class Schema, class Backend>
class store_snapshot : public detail::basic_reader<store_snapshot<Schema, Backend>, Schema> {
 private:
  friend class store<Schema, Backend>;
  friend detail::store_access;
  bool raw_get(std::string_view key, std::string& value) const { return backend_->get(key, value, &snap_); }
  static constexpr bool raw_get_keeps_value_ = backend_with_value_kept_on_miss<Backend>;
  detail::counted_cursor<typename Backend::cursor_type> raw_cursor(const key_range& r) const {
    return {[&] { return backend_->cursor(r, &snap_); }, live_};
  }

  store_snapshot(const Backend* b, typename Backend::snapshot_type s, const detail::live_count* live)
      : backend_(b), snap_(std::move(s)), live_(live), handle_(live, detail::live_kind::snapshot) {}
  const Backend* backend_;
  typename Backend::snapshot_type snap_;
  const detail::live_count* live_;  // the store's: its cursors count there too
  detail::live_handle handle_;
};

// An atomic group of puts, erases and adds across keyspaces, applied by commit() all together or
// not at all. Nothing is visible before commit. A batch is reusable: commit() empties it.
// Adds (add<KS>, counters.hpp) are recorded, not read: commit() resolves them against the state
// it writes over, under the store's writer lock (and, on a backend_with_write_transaction such as
// LMDB or SQLite, inside the engine's write transaction), so concurrent adds never lose updates.
// Declared counts and index entries of the records a batch writes are updated in the same atomic
// write.
// REQUIRES: the store outlives the batch. Thread-safety: one thread at a time.
template <class Schema, class Backend>
class store_batch : public detail::basic_writer<store_batch<Schema, Backend>, Schema> {
  // On a backend_with_direct_batch the operations are encoded into the engine's batch (each key
  // and value copied once), written as it is by a commit with nothing to resolve that commits
  // alone; the write_batch ops_ then holds them only when asked for (operations(), a commit that
  // resolves or is merged with others').
  static constexpr bool direct = detail::direct_batch_for<Backend>;

 public:
  // Adds delta to the integer stored under key in keyspace KS (a missing key counts as 0) when
  // the batch commits, after the batch's earlier operations on that key and before its later
  // ones (see counters.hpp). REQUIRES (compile time): KS's value_type is an integer type and KS
  // is not a declared count. Errors: key_error / limit_error for the key, as put; nothing is
  // added then. The sum is checked at commit (overflow_error).
  template <class KS>
  void add(const key_arg<KS>& key, std::int64_t delta) {
    static_assert(detail::check_add<Schema, KS>());
    adds_.emplace(
        op_count(), [&](std::string& b) { this->template encode_checked<KS>(b, key); }, delta,
        &detail::derived_writes<Schema>::template apply_add<KS>);
  }

  // Applies every operation atomically, with the durability of opts, then empties the batch.
  // Errors: backend_error / limit_error from the engine; overflow_error (an add's sum does not fit
  // its value type) and decode_error (a stored value an add or a count reads does not decode);
  // the batch is then left as it was and nothing was applied. usage_error when this thread
  // holds an open transaction.
  void commit(const write_options& opts = {}) {
    if constexpr (direct) {
      if (adds_.empty() && !needs_resolution_) {
        store_->write_direct(direct_, ops_, opts);
      } else {
        store_->write_resolved(operations(), adds_.empty() ? nullptr : &adds_, opts);
      }
    } else {
      store_->write_resolved(ops_, adds_.empty() ? nullptr : &adds_, opts);
    }
    clear();
  }
  // Drops every operation.
  void clear() noexcept {
    ops_.clear();
    adds_.clear();
    if constexpr (direct) {
      direct_.clear();
      materialized_ = true;
      needs_resolution_ = false;
      // A very large operation's buffer is given back, as the thread's batches are.
      if (stage_.capacity() > detail::commit_batch_lease::kept_limit) stage_ = std::string();
    }
  }
  // Number of operations (puts, erases and adds).
  std::size_t size() const noexcept { return op_count() + adds_.size(); }
  bool empty() const noexcept { return op_count() == 0 && adds_.empty(); }
  // The batch's puts and erases (its adds are resolved at commit and are not in it). Valid until
  // the batch is next modified, committed or destroyed. Errors: std::bad_alloc, on a backend
  // whose engine batch the batch builds directly (backend_with_direct_batch: the first call after
  // a change copies the operations out of it).
  const write_batch& operations() const noexcept(!direct) {
    if constexpr (direct) {
      if (!materialized_) {
        ops_.clear();
        direct_.append_to(ops_);
        materialized_ = true;
      }
    }
    return ops_;
  }

 private:
  friend class store<Schema, Backend>;
  friend detail::store_access;
  template <class KW, class VW>
  void emplace_op(write_batch::op_kind kind, KW&& kw, VW&& vw) {
    if constexpr (direct) {
      // Encoded into a buffer that stays in the processor's cache, then copied into the engine's
      // batch; nothing is added when either writer or the engine's batch throws.
      stage_.clear();
      kw(stage_);
      const std::size_t key_end = stage_.size();
      std::string_view value;
      if constexpr (detail::is_raw_value_writer<std::remove_cvref_t<VW>>) {
        vw.check(vw.value.size());
        value = vw.value;  // copied once, from where it is, by direct_.put
      } else {
        vw(stage_);
        value = std::string_view(stage_).substr(key_end);
      }
      const std::string_view key(stage_.data(), key_end);
      const bool resolve = detail::derived_writes<Schema>::needs_key(key);
      if (kind == write_batch::op_kind::put) {
        direct_.put(key, value);
      } else {
        direct_.erase(key);
      }
      materialized_ = false;
      needs_resolution_ = needs_resolution_ || resolve;
    } else {
      ops_.emplace(kind, std::forward<KW>(kw), std::forward<VW>(vw));
    }
  }
  backend_limits limits() const { return store_->backend().limits(); }
  std::size_t op_count() const noexcept {
    if constexpr (direct) {
      return direct_.size();
    } else {
      return ops_.size();
    }
  }

  explicit store_batch(store<Schema, Backend>* s) : store_(s), handle_(&s->live_, detail::live_kind::batch) {}
  store<Schema, Backend>* store_;
  // The operations; on a direct backend a copy of direct_'s, current when materialized_.
  mutable write_batch ops_;
  detail::pending_adds adds_;
  struct no_direct_batch {};
  [[no_unique_address]] std::conditional_t<direct, detail::direct_batch_t<Backend>, no_direct_batch> direct_{};
  std::string stage_;               // the operation being encoded (direct only)
  mutable bool materialized_ = true;  // ops_ holds direct_'s operations (direct only)
  bool needs_resolution_ = false;   // an operation's key is one whose writes are resolved (direct only)
  detail::live_handle handle_;
};

// A write transaction: it holds the store's writer lock from its creation, reads the state as of
// then plus its own pending writes (read-your-writes, also in scans), and applies all of its
// writes atomically at commit(). Since no other writer can commit meanwhile, what it read is
// still current at commit: read-modify-write sequences (counters) cannot lose updates.
// On a backend with write transactions (backend_with_write_transaction) it reads through one,
// so this holds across processes too: on LMDB and SQLite it holds the engine's write lock
// (writers of every process wait for it); on etcd, optimistic, its commit fails with
// conflict_error when another process changed what it read (run it again:
// keyschema::run_transaction in <keyschema/retry.hpp>). Otherwise it reads a snapshot, and the
// store's in-process writer lock is what serializes it (other processes must not write the
// database meanwhile; LevelDB forbids a second process anyway).
// Destroying an uncommitted transaction rolls it back.
// REQUIRES: created, used and ended by one thread; the store outlives it.
template <class Schema, class Backend>
class store_transaction : public detail::basic_reader<store_transaction<Schema, Backend>, Schema>,
                          public detail::basic_writer<store_transaction<Schema, Backend>, Schema>,
                          public detail::erase_prefix_ops<store_transaction<Schema, Backend>, Schema> {
  static constexpr bool native_ = backend_with_write_transaction<Backend>;
  // What the transaction reads (the engine's write transaction, or a snapshot) and its cursors.
  using state_type = typename detail::transaction_state<Backend, native_>::type;
  using base_cursor_type = typename detail::transaction_state<Backend, native_>::cursor_type;
  static base_cursor_type base_cursor(const Backend& b, const state_type& st, const key_range& r) {
    if constexpr (native_) {
      (void)b;
      return st.cursor(r);
    } else {
      return b.cursor(r, &st);
    }
  }

 public:
  store_transaction(store_transaction&&) noexcept = default;
  store_transaction& operator=(store_transaction&&) = delete;
  ~store_transaction() { release(); }

  using detail::basic_reader<store_transaction, Schema>::get;
  using detail::basic_reader<store_transaction, Schema>::get_into;
  using detail::basic_reader<store_transaction, Schema>::contains;
  using detail::basic_reader<store_transaction, Schema>::scan;
  using detail::basic_writer<store_transaction, Schema>::put;
  using detail::basic_writer<store_transaction, Schema>::erase;

  // Erases, atomically with the rest of the transaction, every entry a scan of this transaction
  // covers (honouring its bounds and limit). Returns how many entries it erased.
  // On a backend_with_transaction_range_erase (etcd) the erased keys count as one operation of
  // the commit (a DeleteRange), whatever their number, and are not checked one by one at commit:
  // a key created or changed in the range by another writer meanwhile still fails the commit
  // with conflict_error, one it erased meanwhile does not (and is counted).
  // Errors: decode_error (a key in the range that starts like one of KS's but does not decode as
  // one, see scan.hpp: names the keyspace and the key), backend_error. A key that does
  // not decode leaves the transaction unchanged (the keys are collected before any is erased).
  template <class KS, std::size_t K, scan_mode M>
  std::size_t erase_range(const scan_view<KS, store_transaction, K, M>& view) {
    static_assert(detail::check_writable<KS>());
    require_open();
    std::vector<std::string> keys;
    {
      auto c = erase_cursor(view.range());
      for (; c.valid() && keys.size() < view.max_count(); c.next())
        if (detail::key_codec<KS>::matches(c.key())) keys.emplace_back(c.key());
    }
    // Noted for prepare(), which records it as one range erase: what it covers, the limit
    // applied (a limit that stopped it ends the range at the last key erased).
    if (view.max_count() > 0) {
      detail::range_erase_read e{std::string(view.range().lower), std::string(view.range().upper),
                                 keyspace_fingerprint<KS>, &detail::key_codec<KS>::matches};
      if (!keys.empty() && keys.size() == view.max_count()) {
        if (view.range().reverse) {
          e.lower = keys.back();
        } else {
          e.upper = keys.back();
          e.upper.push_back('\0');
        }
      }
      reads_.range_erases.push_back(std::move(e));
    }
    for (std::string& key : keys) {
      if (!deltas_.empty()) {
        if (auto it = deltas_.find(key); it != deltas_.end()) deltas_.erase(it);
      }
      if constexpr (derived::template watched<KS>) {
        detail::write_overlay::journal j;
        auto st = overlay(&j);
        try {
          derived::erase(st, key);
        } catch (...) {
          detail::write_overlay::undo(pending_, j);
          throw;
        }
      } else {
        pending_[std::move(key)] = std::nullopt;
      }
    }
    return keys.size();
  }

  // Erases the entry `key` of D, a keyspace the store maintains, when it does not follow from the
  // records as this transaction sees them (an entry left by a write around the store, or its
  // record erased or changed in this transaction and the entry derived otherwise before): the
  // repair a sweep makes on its way (indexes.hpp). Returns true when it erased one, false when
  // there was none. REQUIRES (compile time): D's derivation can tell whether an entry follows
  // (its marker has follows<D>: an index does). Errors: key_error when the entry follows from a
  // record that exists (naming the keyspaces and both keys: erase the record instead); nothing
  // is erased then; key_error / limit_error for the key; backend_error.
  template <class D>
  bool erase_stale(const key_arg<D>& key) {
    static_assert(detail::check_keyspace<Schema, D>());
    static_assert(requires(derivation_context& cx, std::string_view k, const typename D::key_type& kk) {
      D::value_marker::template follows<D>(cx, k, kk);
    }, "keyschema::erase_stale: the keyspace's derivation cannot tell whether an entry follows from the records "
       "(only an index, index_of, can); erase or write the records it derives from instead");
    require_open();
    key_buf_.clear();
    this->template encode_checked<D>(key_buf_, key);
    typename D::key_type k;
    if (!detail::key_codec<D>::decode(key_buf_, k)) return false;
    auto st = overlay();
    std::string ignored;
    if (!st.get(key_buf_, ignored)) return false;
    derivation_context cx(st, &derived::write_record);
    D::value_marker::template follows<D>(cx, key_buf_, k);  // throws key_error when it follows
    st.erase(key_buf_);
    return true;
  }

  // Adds delta to the integer stored under key in keyspace KS, as the transaction sees it (its
  // own writes included; a missing key counts as 0): a read and a put. The transaction also
  // remembers the delta while it has not put or erased that key itself, so that prepare()
  // records the add as a delta (prepared.hpp). REQUIRES (compile time): KS's value_type is an
  // integer type and KS is not a declared count. Errors: overflow_error (the sum does not fit the
  // value type; names keyspace, key, value and delta), decode_error, key_error / limit_error for
  // the key, backend_error; the transaction is unchanged then.
  template <class KS>
  void add(const key_arg<KS>& key, std::int64_t delta) {
    static_assert(detail::check_add<Schema, KS>());
    require_open();
    key_buf_.clear();
    this->template encode_checked<KS>(key_buf_, key);
    const bool written = pending_.find(key_buf_) != pending_.end();
    auto st = overlay();
    derived::template add<KS>(st, key_buf_, delta);
    note_delta(written, delta);
  }
  // erase_prefix<KS>(prefix...) and erase_prefix_all<KS...>(prefix...): erase_range of
  // scan<KS>(prefix...), atomically with the rest of the transaction (detail::erase_prefix_ops).

  // Applies every write atomically with the durability of opts and releases the writer lock.
  // Errors: backend_error / limit_error from the engine: nothing was applied. Over a snapshot,
  // the transaction stays open and may be retried or rolled back (unless a new snapshot cannot be
  // taken either: then it is rolled back, and is_open() is false). Over an engine's write
  // transaction it stays open only when the engine kept that open (a limit checked before
  // writing); otherwise it is rolled back. conflict_error (etcd: another writer changed what
  // the transaction read; LMDB: the map had to grow and another process committed meanwhile):
  // rolled back; run the transaction again (keyschema::run_transaction does). schema_error (a
  // backend other processes can write, LMDB, SQLite, etcd: the database's schema changed since
  // the store opened it, see the top of this file): rolled back, nothing written; reopen the store.
  // REQUIRES: no scan of this transaction is used after commit().
  void commit(const write_options& opts = {}) {
    require_open();
    detail::commit_batch_lease lease;
    write_batch& b = lease.get();
    detail::overlay_to_batch(pending_, b);
    // A limit: nothing written, the transaction stays open.
    if constexpr (backend_with_transaction_range_erase<Backend>) store_->check_batch(b, guarded_operation_count(b));
    else store_->check_batch(b);
    if constexpr (native_) {
      bool guards_held = true;
      try {
        if constexpr (backend_with_write_guards<Backend>) {
          guards_held = state_->commit(b, opts, store_->schema_guards());
        } else {
          state_->commit(b, opts);
        }
      } catch (...) {
        if (!state_->is_open()) rollback();
        throw;
      }
      if (!guards_held) {
        rollback();
        store_->refuse_changed_schema();
      }
    } else {
      // Release the snapshot first: some engines cannot grow their files while a reader is open
      // (LMDB's map). The writer lock is held throughout, so a snapshot taken again after a failed
      // write sees the same state.
      state_.reset();
      try {
        store_->backend_.write(b, opts);
      } catch (...) {
        try {
          state_.emplace(store_->backend().snapshot());
        } catch (...) {
          rollback();  // no snapshot to read from: the transaction cannot stay open
        }
        throw;
      }
    }
    pending_.clear();
    deltas_.clear();
    release();
  }
  // Drops every write and releases the writer lock.
  void rollback() noexcept {
    pending_.clear();
    deltas_.clear();
    release();
  }
  bool is_open() const noexcept { return store_ != nullptr && lock_.owns_lock(); }
  // Number of distinct keys written so far.
  std::size_t size() const noexcept { return pending_.size(); }
  // The number of operations commit() would count now against the backend's
  // backend_limits::max_ops_per_write (db.backend().limits()), beyond which it throws
  // limit_error: size(), except on a backend_with_transaction_range_erase (etcd), where the
  // erases of a range erase count as one operation and what the transaction read counts too (as
  // compares, against the same limit: the larger of the two is returned). A transaction near the
  // limit can be committed and the rest written in another (keyschema::sweep does).
  // REQUIRES: is_open() (else keyschema::error). Errors: limit_error for an operation over the
  // backend's entry limits (as commit); std::bad_alloc.
  std::size_t operation_count() const {
    require_open();
    if constexpr (backend_with_transaction_range_erase<Backend>) {
      detail::commit_batch_lease lease;
      write_batch& b = lease.get();
      detail::overlay_to_batch(pending_, b);
      return guarded_operation_count(b);
    } else {
      return pending_.size();
    }
  }
  // What committing b counts against max_ops_per_write on a backend_with_transaction_range_erase,
  // with the store's schema guards (each one more compare) on a backend_with_write_guards.
  std::size_t guarded_operation_count(const write_batch& b) const
    requires backend_with_transaction_range_erase<Backend>
  {
    if constexpr (backend_with_write_guards<Backend>) {
      return state_->operation_count(b, store_->schema_guards().size());
    } else {
      return state_->operation_count(b);
    }
  }

 private:
  friend detail::store_access;
  friend class detail::transaction_writes<store_transaction>;
  // A pending erase answers false, a pending put assigns: value is touched only on a hit when the
  // backend's reads keep it on a miss (backend_with_value_kept_on_miss covers its transaction).
  static constexpr bool raw_get_keeps_value_ = backend_with_value_kept_on_miss<Backend>;
  bool raw_get(std::string_view key, std::string& value) const {
    require_open();
    reads_.note_key(key);  // for prepare()'s validation set
    if (auto it = pending_.find(key); it != pending_.end()) {
      if (!it->second) return false;
      value.assign(*it->second);
      return true;
    }
    if constexpr (native_) {
      return state_->get(key, value);
    } else {
      return store_->backend().get(key, value, &*state_);
    }
  }
  detail::counted_cursor<detail::overlay_cursor<base_cursor_type>> raw_cursor(const key_range& r) const {
    require_open();
    return {[&] {
              return detail::overlay_cursor<base_cursor_type>(base_cursor(store_->backend(), *state_, r), pending_, r,
                                                              reads_.note_scan(r));
            },
            &store_->live_};
  }
  // The cursor erase_range goes over r with: raw_cursor's, or on a
  // backend_with_transaction_range_erase one whose keys the commit may erase as one range.
  detail::counted_cursor<detail::overlay_cursor<base_cursor_type>> erase_cursor(const key_range& r) const {
    if constexpr (backend_with_transaction_range_erase<Backend>) {
      require_open();
      return {[&] { return detail::overlay_cursor<base_cursor_type>(state_->erase_cursor(r), pending_, r); },
              &store_->live_};
    } else {
      return raw_cursor(r);
    }
  }
  template <class KW, class VW>
  void emplace_op(write_batch::op_kind kind, KW&& kw, VW&& vw) {
    require_open();
    key_buf_.clear();
    kw(key_buf_);
    if (!deltas_.empty()) {
      if (auto it = deltas_.find(key_buf_); it != deltas_.end()) deltas_.erase(it);  // no longer base + delta
    }
    if constexpr (derived::any) {
      // What derives from this write (counts, index entries, owned entries, derivation.hpp)
      // changes with it; a write that fails half-way leaves the transaction as it was.
      detail::write_overlay::journal j;
      auto st = overlay(&j);
      try {
        if (kind == write_batch::op_kind::put) {
          std::string v;
          vw(v);
          derived::put(st, key_buf_, v);
        } else {
          derived::erase(st, key_buf_);
        }
      } catch (...) {
        detail::write_overlay::undo(pending_, j);
        throw;
      }
      return;
    }
    if (kind == write_batch::op_kind::put) {
      std::string v;
      vw(v);
      pending_.insert_or_assign(key_buf_, std::optional<std::string>(std::move(v)));
    } else {
      pending_.insert_or_assign(key_buf_, std::nullopt);
    }
  }
  backend_limits limits() const { return store_->backend().limits(); }

  using derived = detail::derived_writes<Schema>;
  // The state the transaction started from (without its own writes).
  static bool base_get(const void* ctx, std::string_view key, std::string& value) {
    const auto* self = static_cast<const store_transaction*>(ctx);
    if constexpr (native_) {
      return self->state_->get(key, value);
    } else {
      return self->store_->backend().get(key, value, &*self->state_);
    }
  }
  static void base_keys(const void* ctx, const key_range& r, std::vector<std::string>& keys) {
    const auto* self = static_cast<const store_transaction*>(ctx);
    for (auto c = base_cursor(self->store_->backend(), *self->state_, key_range{r.lower, r.upper, false}); c.valid();
         c.next())
      keys.emplace_back(c.key());
  }
  // The transaction's pending writes over that state.
  detail::write_overlay overlay(detail::write_overlay::journal* j = nullptr) {
    return detail::write_overlay(pending_, &base_get, this, &base_keys, j);
  }

  // After an add of delta to key_buf_ (written: whether the transaction had a pending write of it
  // before): a key the transaction had not written holds base + delta; one it had put or erased
  // holds a value of its own (and stays so); one it only added to sums the deltas (when the sum
  // of the deltas overflows, the key is recorded by its value instead).
  void note_delta(bool written, std::int64_t delta) {
    auto it = deltas_.find(key_buf_);
    if (!written) {
      deltas_.insert_or_assign(key_buf_, delta);
    } else if (it != deltas_.end() && __builtin_add_overflow(it->second, delta, &it->second)) {
      deltas_.erase(it);
    }
  }
  // transaction_writes::base_get / base_scan (prepare): the state the transaction started from.
  bool base_get_raw(std::string_view key, std::string& value) const {
    require_open();
    return base_get(this, key, value);
  }
  template <class F>
  void base_scan(const key_range& r, F&& f) const {
    require_open();
    for (auto c = base_cursor(store_->backend(), *state_, r); c.valid(); c.next()) f(c.key(), c.value());
  }
  // transaction_writes::add (commit_prepared).
  bool add_raw(std::string_view key, std::int64_t delta) {
    require_open();
    auto st = overlay();
    return derived::add_any(st, key, delta);
  }

  friend class store<Schema, Backend>;
  // Lock order: the store's writer lock (held by `lock`), then the engine's (begin_write()).
  store_transaction(store<Schema, Backend>* s, std::unique_lock<detail::writer_mutex_for<Backend>> lock)
      : store_(s), lock_(std::move(lock)), state_(begin(s->backend_)), handle_(&s->live_, detail::live_kind::transaction) {}

  static state_type begin(Backend& b) {
    if constexpr (native_) {
      return b.begin_write();
    } else {
      return b.snapshot();
    }
  }

  void require_open() const {
    if (!is_open()) throw usage_error("keyschema::store_transaction: the transaction is already committed or rolled back");
  }
  void release() noexcept {
    reads_.clear();  // before the engine state: cursors still alive must not read it any more
    state_.reset();  // ends the engine's write transaction first: locks are released in reverse order
    if (lock_.owns_lock()) {
      store_->writer_ = nullptr;
      lock_.unlock();
    }
  }

  store<Schema, Backend>* store_;
  std::unique_lock<detail::writer_mutex_for<Backend>> lock_;
  std::optional<state_type> state_;  // engaged while the transaction is open
  detail::pending_map pending_;
  detail::pending_deltas deltas_;  // keys of pending_ that hold base + delta (see note_delta)
  mutable detail::read_log reads_;  // what it read and range-erased, for prepare()
  std::string key_buf_;
  detail::live_handle handle_;
};

template <class Schema, class Backend>
class store : public detail::basic_reader<store<Schema, Backend>, Schema>,
              public detail::erase_prefix_ops<store<Schema, Backend>, Schema> {
  static_assert(detail::diagnose_schema<Schema>(),
                "keyschema::store: the schema is invalid; the error above names the keyspaces and segment "
                "position involved");
  static_assert(detail::check_backend<Backend>(),
                "keyschema::store: Backend does not meet the backend contract; see keyschema/backend.hpp");
  static_assert(detail::derived_checks<Schema>::value,
                "keyschema::store: a declared count or index of the schema does not match what it derives from; "
                "the error above names the keyspaces");

 public:
  using schema_type = Schema;
  using backend_type = Backend;
  using batch_type = store_batch<Schema, Backend>;
  using transaction_type = store_transaction<Schema, Backend>;
  using snapshot_type = store_snapshot<Schema, Backend>;

  // Keys per write when erase_range works in bounded batches: at most this many, and fewer when
  // the backend's limits (max_ops_per_write, max_bytes_per_write) demand it.
  static constexpr std::size_t erase_chunk = 1000;

  // Constructs the backend from args (a path and options for file-based backends) and checks or
  // records the schema record, comparing it keyspace by keyspace (detail/store/schema_check.hpp):
  //   - a database with this schema's record opens;
  //   - an empty database gets the record (written with sync; on a backend_with_compact_range,
  //     LevelDB's or RocksDB's, then compacted into a table of its own, see check_fingerprint);
  //   - a database whose record lacks some of this schema's keyspaces (the program added them)
  //     opens, and its record is rewritten to this schema's (with sync; on LMDB in the write
  //     transaction that read it), provided the database holds no key of an added keyspace
  //     (counted by a scan of the keyspace's range, which costs once, at the first open);
  //     a read-only backend opens it without rewriting the record;
  //   - a database whose record has a keyspace that differs from this schema's, or keyspaces
  //     this schema does not declare, is refused (schema_error); so is one with an unfinished
  //     ks::migrate (migrate.hpp);
  //   - a NON-EMPTY database without a record (written by another program, or by keyschema before
  //     it recorded schemas) is refused (schema_error), because nothing says its keys belong to
  //     this schema. A caller who knows they do takes it over with the adopting constructor:
  //       ks::store<broker, ks::leveldb_backend> db{ks::adopt, "/var/lib/broker/db"};
  //     which records the schema in it; every later open is then an ordinary one.
  // Errors:
  //   whatever the backend's constructor throws: backend_error, locked_error, wrong_engine_error
  //     (the path holds another engine's database), limit_error;
  //   schema_error "written with another schema layout: keyspace 'k': <difference>" (one line:
  //     "value codec packed<i64> stored, packed<u64> in this program", "segment 4: field
  //     id:string stored, field id:u64 in this program"; further differing keyspaces are named),
  //     "... it holds keyspace(s) 'a', 'b' that this program does not declare", or "... (stored
  //     fingerprint unreadable ...)" for a damaged record. Remedy: open it with the schema that
  //     wrote it, or convert it with ks::migrate;
  //   schema_error "keyspace 'k' is new in this program but already has N keys" (N+ past 1000;
  //     names a stored keyspace of the same layout, a likely rename): nothing is adopted.
  //     Remedy: erase those keys, or ks::migrate;
  //   schema_error "has an unfinished ks::migrate (...)" - run the same migration again;
  //   schema_error "holds N keys not written by keyschema" (N+ when there are more; names the
  //     path when the backend has one) - see above. Remedy: another path, or ks::adopt;
  //   schema_error "read-only open of a database that has no keyschema schema record; open it
  //     read-write once, or with adopt" - a backend opened read-only (lmdb_options::read_only)
  //     cannot record the schema. Remedy: open it read-write once (empty database) or with
  //     ks::adopt (non-empty one), then read-only;
  //   backend_error while reading, recording or compacting the record.
  template <class... Args>
    requires(!detail::starts_with_adopt<Args...>::value)
  explicit store(Args&&... args) : backend_(std::forward<Args>(args)...) {
    detail::place_schema<Schema>(backend_);  // backend_with_placements: where placed keyspaces go
    detail::long_key_schema<Schema>(backend_);  // backend_with_long_keys: which keyspaces take long keys
    check_fingerprint(false);
  }
  // The adopting constructor: as above, but a non-empty database without a schema record is
  // taken over: the store records this schema in it (with sync) and opens it. A database with a
  // record is treated exactly as above (a differing or undeclared keyspace is still a
  // schema_error).
  // REQUIRES: every key already in the database is a key of Schema (a key of no keyspace is
  // skipped by scans; one that does not decode as its keyspace's types raises decode_error when
  // read). Errors: as above, except "not written by keyschema"; a read-only backend raises
  // schema_error (adopting writes the record).
  template <class... Args>
  explicit store(adopt_t, Args&&... args) : backend_(std::forward<Args>(args)...) {
    detail::place_schema<Schema>(backend_);
    check_fingerprint(true);
  }
  store(const store&) = delete;
  store& operator=(const store&) = delete;
  // Closes the database. REQUIRES: no snapshot, batch, transaction or scan cursor (an iterator of
  // a scan, or a scan being iterated) made from this store is alive. Destroying the store while one
  // is alive would leave it pointing at a closed engine, so it prints one line to stderr naming
  // what is alive ("... destroyed while 1 snapshot and 2 scan cursors made from it are alive ...")
  // and calls std::abort() instead. Remedy: declare the store before (so it is destroyed after)
  // everything made from it, or end those first.
  ~store() {
    live_.check_none_alive(where(),
                           "declare the store before everything made from it, or end its snapshots, batches, "
                           "transactions and scans before destroying it");
  }

  // The backend, read-only: its limits, options, path and properties, and raw reads (get,
  // cursor, snapshot) of every key, the store's own records included. It offers no write: bytes
  // are written through write(write_batch) below, which keeps declared counts and index entries
  // exact and refuses the keys the store maintains (counts, indexes) and its own records (keys
  // starting with 0xff), naming the key and keyspace.
  const Backend& backend() const noexcept { return backend_; }

  // UNSAFE: the backend with its write paths and native handles, outside every guard of the
  // store. A write through it is not checked (a declared count, an index entry, the schema record
  // or a key that does not decode: all written as given), updates no count or index, and does
  // not take the store's writer lock, so it can also interleave with a store write that is
  // resolving counts. What it breaks, the store reports later as wrong counts, missing index
  // entries, decode_error or schema_error, or does not notice at all.
  // For what must reach the engine itself, and only that: compaction of the whole key space
  // (compact_range), native handles (backups, engine statistics and tuning), and checkers and
  // tests that damage a database on purpose to see that the damage is found. Everything else:
  // backend() to read, write(write_batch) to write bytes.
  Backend& unsafe_backend() noexcept { return backend_; }

  // A consistent view of the database as of now. REQUIRES: the store outlives it.
  snapshot_type snapshot() const { return snapshot_type(&backend_, backend_.snapshot(), &live_); }

  // An empty batch bound to this store. REQUIRES: the store outlives it.
  batch_type batch() { return batch_type(this); }

  // Begins a write transaction: blocks until no other write is in progress (on LMDB: also none
  // in another process).
  // Errors: usage_error when this thread already holds a transaction on this store;
  // backend_error / limit_error when the engine cannot begin one (see the backend's snapshot()
  // or begin_write()).
  transaction_type transaction() {
    auto lk = lock_writer();
    // Mark this thread as the writer only once the transaction exists: its snapshot can throw
    // (LMDB: no reader slot free), and the thread must then stay free to write.
    transaction_type tx(this, std::move(lk));
    writer_.store(detail::this_thread_tag(), std::memory_order_relaxed);
    return tx;
  }

  // Single-operation writes: each is its own atomic commit. Errors: those of basic_writer's put
  // and erase (limit_error, key_error: nothing written) and of write().
  // The key and value are encoded by the calling thread, into its own batch; only the commit
  // goes through the commit queue.
  template <class KS>
  void put(const key_arg<KS>& key, const typename KS::value_type& value, const write_options& opts = {}) {
    detail::commit_batch_lease lease;
    one_op w(this, &lease.get());
    w.template put<KS>(key, value);
    write_resolved(lease.get(), nullptr, opts);
  }
  template <class KS>
  void erase(const key_arg<KS>& key, const write_options& opts = {}) {
    detail::commit_batch_lease lease;
    one_op w(this, &lease.get());
    w.template erase<KS>(key);
    write_resolved(lease.get(), nullptr, opts);
  }
  // Adds delta to the integer stored under key in keyspace KS (a missing key counts as 0), in one
  // atomic write, read and written under the store's writer lock (on LMDB and SQLite inside the
  // engine's write transaction: exact across processes too). REQUIRES (compile time): KS's
  // value_type is an integer type and KS is not a declared count. Errors: overflow_error (the sum
  // does not fit the value type; names keyspace, key, value and delta), decode_error, key_error /
  // limit_error for the key, and those of write(); nothing is written then.
  template <class KS>
  void add(const key_arg<KS>& key, std::int64_t delta, const write_options& opts = {}) {
    static_assert(detail::check_add<Schema, KS>());
    detail::commit_batch_lease lease;  // stays empty: the add is resolved at commit
    one_op w(this, &lease.get());
    detail::pending_adds adds;
    adds.emplace(
        0, [&](std::string& b) { w.template encode_key<KS>(b, key); }, delta,
        &detail::derived_writes<Schema>::template apply_add<KS>);
    write_resolved(lease.get(), &adds, opts);
  }

  // Applies a byte-level batch atomically (what batch::commit does). Declared counts and index
  // entries of the records it writes are updated in the same atomic write (counters.hpp,
  // indexes.hpp).
  // Errors: key_error when b puts or erases a key of a keyspace the store maintains (a declared
  // count or an index; names the key, the keyspace and the records to write instead), or a
  // reserved key (one starting with 0xff: the schema record, a migration's progress, prepared
  // transactions; names the key), or when b puts a key that starts like a key of a keyspace but
  // does not decode as one (malformed, or cut short: every scan of that keyspace would refuse it;
  // names the key, the keyspace and why; erasing such a key is allowed, it is how one is removed);
  // limit_error
  // when b holds more operations or bytes than the backend's limits allow per atomic write (names
  // the keyspaces, the limit, the size and the maximum); decode_error when b erases such a key of
  // a declared count, an index or a keyspace they derive from (the store cannot tell which
  // record it was); backend_error / limit_error from the engine. Nothing was written then.
  void write(const write_batch& b, const write_options& opts = {}) {
    detail::derived_writes<Schema>::refuse_maintained("keyschema::store::write: the raw write_batch", b);
    detail::refuse_reserved("keyschema::store::write: the raw write_batch", b);
    detail::refuse_undecodable<Schema>("keyschema::store::write: the raw write_batch", b);
    write_resolved(b, nullptr, opts);
  }

  // Erases every entry the scan covers (its prefix, bounds and limit), in bounded batches of
  // at most erase_chunk keys (fewer under the backend's limits, which a chunk's count and index
  // updates share): each chunk is atomic, the whole is not (a crash midway leaves a suffix of
  // the range). Readers are never blocked for long. Returns how many entries it erased.
  // On a backend_with_erase_range (RocksDB) a range whose every key belongs to KS and that holds
  // no more keys than the scan's limit is instead counted and then erased natively, in one atomic
  // write (writers wait while it is counted).
  // Errors: decode_error (a key in the range that starts like one of KS's but does not decode as
  // one, see scan.hpp: names the keyspace and the key; the chunk it was met in is not written);
  // backend_error. What was erased before the error stays erased.
  template <class KS, std::size_t K, scan_mode M>
  std::size_t erase_range(const scan_view<KS, store, K, M>& view, const write_options& opts = {}) {
    static_assert(detail::check_writable<KS>());
    // A native range erase cannot update declared counts: such keyspaces are erased in batches.
    if constexpr (backend_with_erase_range<Backend> && !detail::derived_writes<Schema>::template has_dependents<KS>) {
      auto lk = lock_writer();
      const key_range whole{view.range().lower, view.range().upper, false};
      std::size_t n = 0;
      bool native = true;
      for (auto c = backend_.cursor(whole, nullptr); c.valid(); c.next()) {
        if (!detail::key_codec<KS>::matches(c.key()) || n == view.max_count()) {
          native = false;  // another keyspace's key, or more keys than the limit: erase in batches
          break;
        }
        ++n;
      }
      if (native) {
        if constexpr (backend_with_write_guards<Backend>) {
          if (n > 0 && !backend_.erase_range(whole, opts, schema_guards())) refuse_changed_schema();
        } else {
          if (n > 0) backend_.erase_range(whole, opts);
        }
        return n;
      }
    }
    key_range r = view.range();
    std::string lower(r.lower), upper(r.upper);
    const bool reverse = r.reverse;
    std::size_t left = view.max_count();
    std::size_t erased = 0;
    const backend_limits limits = backend_.limits();
    // A chunk's erases become more operations when KS has counts or indexes (their updates are
    // written with it): the chunk holds fewer keys so that the whole write stays within limits.
    constexpr std::size_t ops_per_key = detail::derived_writes<Schema>::template ops_per_write<KS>;
    std::size_t chunk = detail::erase_chunk_ops(limits, erase_chunk, ops_per_key);
    write_batch b;
    for (;;) {
      b.clear();
      std::string last;
      {
        auto lk = lock_writer();
        for (auto c = backend_.cursor(key_range{lower, upper, reverse}, nullptr);
             c.valid() && b.size() < chunk && left > 0; c.next()) {
          if (!detail::key_codec<KS>::matches(c.key())) continue;
          if (!detail::erase_chunk_fits(limits, b.byte_size() * ops_per_key, c.key().size() * ops_per_key)) break;
          b.erase(c.key());
          last.assign(c.key());
          --left;
        }
        if (b.empty()) return erased;
        try {
          commit_locked(b, nullptr, opts);  // with the chunk's count updates, when KS is counted
        } catch (const limit_error&) {
          // The chunk with what derives from it (the owned entries of its records, owned.hpp)
          // exceeds the backend's limits: nothing was written; take fewer keys.
          if (b.size() == 1) throw;
          chunk = std::max<std::size_t>(1, b.size() / 2);
          left += b.size();
          continue;
        }
      }
      erased += b.size();
      if (reverse) {
        upper = last;
      } else {
        lower = last;
        lower.push_back('\0');
      }
    }
  }
  // erase_prefix<KS>(prefix...) and erase_prefix_all<KS...>(prefix...): erase_range of
  // scan<KS>(prefix...), each keyspace in bounded atomic batches, not atomic as a whole
  // (detail::erase_prefix_ops).

  // Compacts the key range of scan<KS>(prefix...) on a backend_with_compact_range (LevelDB,
  // RocksDB): erased entries no snapshot can see are dropped, so the next scan of a drained
  // queue's prefix (its "first message" lookup) does not step over every erased key. Returns
  // true then; false, doing nothing, on other backends (LMDB, memory, SQLite: erased keys leave
  // no tombstones). Blocks until done (long on a large range); readers and writers go on.
  // Errors: what the backend's compact_range throws (RocksDB: backend_error).
  template <class KS, class... P>
  bool compact_prefix(const P&... prefix) {
    const auto view = this->template scan<KS>(prefix...);
    if constexpr (backend_with_compact_range<Backend>) {
      backend_.compact_range(key_range{view.range().lower, view.range().upper, false});
      return true;
    } else {
      return false;
    }
  }

 private:
  friend class store_transaction<Schema, Backend>;
  friend class store_batch<Schema, Backend>;
  friend detail::store_access;

  // Reader hooks (see basic_reader): the latest committed state.
  bool raw_get(std::string_view key, std::string& value) const { return backend_.get(key, value, nullptr); }
  static constexpr bool raw_get_keeps_value_ = backend_with_value_kept_on_miss<Backend>;
  detail::counted_cursor<typename Backend::cursor_type> raw_cursor(const key_range& r) const {
    return {[&] { return backend_.cursor(r, nullptr); }, &live_};
  }

  // The writer used by put/erase/add: encodes into the calling thread's batch.
  struct one_op : detail::basic_writer<one_op, Schema> {
    store* s;
    write_batch* out;
    one_op(store* st, write_batch* b) : s(st), out(b) {}
    template <class KW, class VW>
    void emplace_op(write_batch::op_kind kind, KW&& kw, VW&& vw) {
      out->emplace(kind, std::forward<KW>(kw), std::forward<VW>(vw));
    }
    backend_limits limits() const { return s->backend_.limits(); }
    template <class KS>
    void encode_key(std::string& b, const key_arg<KS>& key) {
      this->template encode_checked<KS>(b, key);
    }
  };

  // Writes ops and adds (see store_batch) atomically, through the commit queue: alone, or in a
  // group with the writes other threads commit at the same time (see the top of this file).
  // Errors: those of commit_locked, for this write alone; keyschema::error when this thread holds
  // an open transaction on this store.
  void write_resolved(const write_batch& ops, const detail::pending_adds* adds, const write_options& opts) {
    check_not_in_transaction();
    detail::queued_write w(ops, adds, opts);
    queue_.submit(w, group_limits_, [this](std::span<detail::queued_write* const> g) { commit_group(g); });
  }

  // Writes the operations of a store_batch held in the engine's batch d (store_batch on a
  // backend_with_direct_batch; none of them needs resolving) atomically, through the commit
  // queue as write_resolved: alone, d is written as it is (commit_direct); in a group, the
  // leader copies d's operations into ops (the batch's, unused meanwhile) and commits them as
  // any other write. Errors: as write_resolved.
  template <class Direct>
  void write_direct(Direct& d, write_batch& ops, const write_options& opts) {
    check_not_in_transaction();
    detail::queued_write w(
        &d, [](const void* p, write_batch& out) { static_cast<const Direct*>(p)->append_to(out); }, &ops, d.size(),
        d.byte_size(), opts);
    queue_.submit(w, group_limits_, [this](std::span<detail::queued_write* const> g) { commit_group(g); });
  }

  // REQUIRES: the writer lock is held; q is a direct write (write_direct). Commits q as
  // commit_locked commits a write with nothing to resolve: the batch's limits, then the write.
  void commit_direct(detail::queued_write& q) {
    if constexpr (detail::direct_batch_for<Backend>) {
      const backend_limits l = backend_.limits();
      if (q.op_count > l.max_ops_per_write || q.bytes > l.max_bytes_per_write) [[unlikely]] {
        materialize(q);
        check_batch(*q.ops);  // throws the error naming the batch's keyspaces
      }
      backend_.write_direct(*static_cast<detail::direct_batch_t<Backend>*>(q.direct), q.opts);
    }
  }
  // Copies a direct write's operations into its write_batch, once.
  static void materialize(detail::queued_write& q) {
    if (q.ops != nullptr) return;
    q.scratch->clear();
    q.materialize(q.direct, *q.scratch);
    q.ops = q.scratch;
  }

  // The commit queue's leader commits a group (commit_queue.hpp): each member's result goes to
  // its own error. The writer lock is held across the engine write, because correctness needs it:
  // a transaction (which holds it while open) must see no commit between its reads and its own
  // commit, and the queue's order must be the order writes reach the engine. Other writers are
  // not blocked by it: they queue, and the next group takes them.
  // On a backend_with_concurrent_writes (etcd) a group of plain writes (nothing to resolve: no
  // adds, counts or indexes) holds the writer lock shared instead, so that several such groups
  // are in flight at once (up to concurrent_writes()): they read nothing, so they cannot make each
  // other wrong, and a transaction or a group that resolves, holding it exclusively, still sees
  // no commit of this process between its reads and its commit (writer_mutex.hpp).
  void commit_group(std::span<detail::queued_write* const> g) {
    if constexpr (detail::direct_batch_for<Backend>) {
      if (g.size() == 1 && g[0]->direct != nullptr) {
        std::unique_lock<writer_mutex_type> lk(writer_mu_);
        g[0]->error = nullptr;
        try {
          commit_direct(*g[0]);
        } catch (...) {
          g[0]->error = std::current_exception();
        }
        return;
      }
      // In a group: every member as a write_batch (a failure to copy fails the whole group).
      for (detail::queued_write* q : g) materialize(*q);
    }
    if constexpr (backend_with_concurrent_writes<Backend>) {
      bool plain = true;
      for (const detail::queued_write* q : g)
        plain = plain && q->adds == nullptr && !detail::derived_writes<Schema>::needs(*q->ops);
      if (plain) {
        detail::shared_hold<writer_mutex_type> hold(writer_mu_);
        commit_group_locked(g);
        return;
      }
    }
    std::unique_lock<writer_mutex_type> lk(writer_mu_);
    commit_group_locked(g);
  }

  // REQUIRES: the writer lock is held (shared: only for a group of plain writes on a
  // backend_with_concurrent_writes).
  void commit_group_locked(std::span<detail::queued_write* const> g) {
    if (g.size() > 1) {
      try {
        commit_merged(g);
        return;
      } catch (...) {
        // The merged write failed as a whole (nothing of it was written): commit each write on
        // its own, so each gets its own result and one write's failure is not its neighbours'.
      }
    }
    for (detail::queued_write* q : g) {
      q->error = nullptr;
      try {
        commit_locked(*q->ops, q->adds, q->opts);
      } catch (...) {
        q->error = std::current_exception();
      }
    }
  }

  // REQUIRES: the writer lock is held; g.size() > 1. Commits g's writes in one atomic write, with
  // sync when any of them asked for it. Writes that need nothing resolved are concatenated in
  // queue order; otherwise every write is resolved in queue order over the state the writes before
  // it leave (in one engine write transaction on a backend_with_write_transaction), a write whose
  // resolution fails (overflow_error, decode_error) getting that error and leaving nothing, and the
  // result is written once. Throws (nothing written) when the merged write fails.
  void commit_merged(std::span<detail::queued_write* const> g) {
    using derived = detail::derived_writes<Schema>;
    write_options opts{.sync = false};
    bool simple = true;
    for (const detail::queued_write* q : g) {
      opts.sync = opts.sync || q->opts.sync;
      simple = simple && q->adds == nullptr && !derived::needs(*q->ops);
    }
    // The calling thread's: groups of plain writes may be committed by several threads at once.
    static thread_local write_batch group_batch;
    write_batch& out = group_batch;
    out.clear();
    if (simple) {
      for (const detail::queued_write* q : g) out.append(*q->ops);
      check_batch(out);
      write_guarded(out, opts);  // a failed guard: each write is then refused on its own
      return;
    }
    resolve_and_write([&](detail::write_overlay::base_reader read, detail::write_overlay::base_scanner scan_keys,
                          const void* ctx) { resolve_group(g, read, scan_keys, ctx, out); },
                      out, opts);
  }

  // Resolves each write of g in order over read(ctx) plus the writes resolved before it, into out
  // (one operation per key). A write whose resolution throws gets the exception as its error and
  // contributes nothing. Throws limit_error when out exceeds the backend's limits.
  void resolve_group(std::span<detail::queued_write* const> g, detail::write_overlay::base_reader read,
                     detail::write_overlay::base_scanner scan_keys, const void* ctx, write_batch& out) {
    struct layered {
      detail::pending_map* before;
      detail::write_overlay::base_reader read;
      detail::write_overlay::base_scanner scan_keys;
      const void* ctx;
      static void keys(const void* p, const key_range& r, std::vector<std::string>& out) {
        const auto* l = static_cast<const layered*>(p);
        detail::write_overlay(*l->before, l->read, l->ctx, l->scan_keys).keys_in(r, out);
      }
      static bool get(const void* p, std::string_view k, std::string& v) {
        const auto* l = static_cast<const layered*>(p);
        if (auto it = l->before->find(k); it != l->before->end()) {
          if (!it->second) return false;
          v.assign(*it->second);
          return true;
        }
        return l->read(l->ctx, k, v);
      }
    };
    detail::pending_map resolved;
    const layered base{&resolved, read, scan_keys, ctx};
    for (detail::queued_write* q : g) {
      q->error = nullptr;
      detail::pending_map mine;
      detail::write_overlay st(mine, &layered::get, &base, &layered::keys);
      try {
        detail::resolve_batch<Schema>(st, *q->ops, q->adds);
      } catch (...) {
        q->error = std::current_exception();
        continue;
      }
      for (auto& [k, v] : mine) resolved.insert_or_assign(k, std::move(v));
    }
    out.clear();
    detail::overlay_to_batch(resolved, out);
    check_batch(out);
  }

  // REQUIRES: the writer lock is held. Writes ops as is when nothing in it needs resolving;
  // otherwise resolves ops and adds (derived_writes.hpp) against the current state and writes
  // the result in one atomic write: on a backend_with_write_transaction inside one engine write
  // transaction (read through it, committed through it, so no other process interleaves; run
  // again when the engine reports a conflict), otherwise reading the latest committed state,
  // which the writer lock keeps current. Errors: overflow_error, decode_error, limit_error,
  // backend_error; nothing was written.
  void commit_locked(const write_batch& ops, const detail::pending_adds* adds, const write_options& opts) {
    using derived = detail::derived_writes<Schema>;
    if (adds == nullptr && !derived::needs(ops)) {
      check_batch(ops);
      write_guarded(ops, opts);
      return;
    }
    detail::pending_map writes;
    write_batch out;
    resolve_and_write(
        [&](detail::write_overlay::base_reader read, detail::write_overlay::base_scanner scan_keys, const void* ctx) {
          writes.clear();
          out.clear();
          detail::write_overlay st(writes, read, ctx, scan_keys);
          detail::resolve_batch<Schema>(st, ops, adds);
          detail::overlay_to_batch(writes, out);
          check_batch(out);
        },
        out, opts);
  }

  // REQUIRES: the writer lock is held. Writes b in one atomic write; on a
  // backend_with_write_guards guarded by schema_guards() (schema_error when they do not hold).
  void write_guarded(const write_batch& b, const write_options& opts) {
    if constexpr (backend_with_write_guards<Backend>) {
      if (!backend_.write(b, opts, schema_guards())) refuse_changed_schema();
    } else {
      backend_.write(b, opts);
    }
  }

  // REQUIRES: the writer lock is held. Calls resolve(read, ctx), which fills out from the state
  // read(ctx, key, value) gives, and writes out in one atomic write: on a
  // backend_with_write_transaction inside one engine write transaction (read through it,
  // committed through it, guarded on a backend_with_write_guards, so no other process
  // interleaves; resolved and written again, after a short random wait, when the engine reports
  // a conflict, at most 64 times), otherwise over the latest committed state, which the writer
  // lock keeps current. Errors: those of resolve, limit_error, backend_error, schema_error
  // (guards), conflict_error after the last attempt; nothing was written.
  template <class Resolve>
  void resolve_and_write(Resolve&& resolve, const write_batch& out, const write_options& opts) {
    if constexpr (backend_with_write_transaction<Backend>) {
      using txn = typename Backend::write_transaction_type;
      for (int attempt = 0;; ++attempt) {
        // Told the commit's options when the backend takes them (SQLite fixes a transaction's
        // durability level when it begins: begun without them, it would sync a {.sync = false}
        // write).
        txn t = [&] {
          if constexpr (requires { backend_.begin_write(opts); }) {
            return backend_.begin_write(opts);
          } else {
            return backend_.begin_write();
          }
        }();
        resolve([](const void* ctx, std::string_view k, std::string& v) { return static_cast<const txn*>(ctx)->get(k, v); },
                [](const void* ctx, const key_range& r, std::vector<std::string>& keys) {
                  for (auto c = static_cast<const txn*>(ctx)->cursor(key_range{r.lower, r.upper, false}); c.valid();
                       c.next())
                    keys.emplace_back(c.key());
                },
                &t);
        try {
          if constexpr (backend_with_write_guards<Backend>) {
            if (!t.commit(out, opts, schema_guards())) refuse_changed_schema();
          } else {
            t.commit(out, opts);
          }
          return;
        } catch (const conflict_error&) {
          // Another process committed over what was read (etcd), or while the engine let go of
          // its lock (LMDB): resolve again, after a short random wait.
          if (attempt == 64) throw;
        }
        detail::retry_backoff(retry_options{}, static_cast<unsigned>(attempt));
      }
    } else {
      resolve([](const void* ctx, std::string_view k, std::string& v) {
        return static_cast<const Backend*>(ctx)->get(k, v, nullptr);
      },
              [](const void* ctx, const key_range& r, std::vector<std::string>& keys) {
                for (auto c = static_cast<const Backend*>(ctx)->cursor(key_range{r.lower, r.upper, false}, nullptr);
                     c.valid(); c.next())
                  keys.emplace_back(c.key());
              },
              &backend_);
      backend_.write(out, opts);
    }
  }

  // On a backend other processes can write (backend_with_write_guards: LMDB, SQLite, etcd), every write
  // is guarded, inside the engine's write transaction, by these conditions: the schema record is
  // still the one this store opened the database with, and no ks::migrate is under way.
  std::array<write_guard, 2> schema_guards() const noexcept { return detail::schema_guards(schema_record_); }
  // The schema_error of a write whose schema_guards did not hold (names what changed).
  [[noreturn]] void refuse_changed_schema() const {
    throw detail::schema_changed_error<Schema>(
        where(), [&](std::string_view k, std::string& v) { return backend_.get(k, v, nullptr); });
  }

  // Throws limit_error when b exceeds the backend's per-write limits, naming b's keyspaces.
  void check_batch(const write_batch& b) const {
    detail::check_batch_limits(backend_.limits(), b, [&] { return batch_keyspaces(b); });
  }
  // As check_batch, for a batch the backend counts as ops operations.
  void check_batch(const write_batch& b, std::size_t ops) const {
    detail::check_batch_limits(backend_.limits(), b, [&] { return batch_keyspaces(b); }, ops);
  }
  // "'a', 'b'": the keyspaces whose keys b holds, in schema order ("other keys" for the rest); a
  // key that starts like one of a keyspace's but does not decode is named as that keyspace's.
  static std::string batch_keyspaces(const write_batch& b) {
    std::string names;
    bool other = false;
    for (const write_batch::op o : b) other = other || !key_in_schema(o.key);
    detail::for_each_keyspace<Schema>([&]<class KS>(std::type_identity<KS>) {
      for (const write_batch::op o : b) {
        if (detail::key_codec<KS>::claims(o.key)) {
          names += (names.empty() ? "'" : ", '") + std::string(KS::name) + "'";
          return;
        }
      }
    });
    if (other) names += names.empty() ? "(other keys)" : " and other keys";
    return names;
  }
  static bool key_in_schema(std::string_view key) {
    return detail::any_keyspace<Schema>(
        [&]<class KS>(std::type_identity<KS>) { return detail::key_codec<KS>::claims(key); });
  }

  void check_not_in_transaction() const {
    if (writer_.load(std::memory_order_relaxed) == detail::this_thread_tag()) {
      throw usage_error(
          "keyschema::store: this thread holds an open transaction on this store, so this write would "
          "deadlock; write through the transaction, or commit or roll it back first");
    }
  }
  using writer_mutex_type = detail::writer_mutex_for<Backend>;
  std::unique_lock<writer_mutex_type> lock_writer() {
    check_not_in_transaction();
    return std::unique_lock<writer_mutex_type>(writer_mu_);
  }

  // How large a commit group may grow (commit_queue.hpp): within the backend's limits per write,
  // and at most 1 MiB of keys and values beyond its leader's write, as LevelDB's own groups; and
  // how many groups may be in flight at once: one, or the backend's concurrent_writes().
  static detail::group_limits make_group_limits(const Backend& b) {
    const backend_limits l = b.limits();
    detail::group_limits g;
    g.max_ops = l.max_ops_per_write;
    g.max_bytes = std::min(l.max_bytes_per_write, g.max_bytes);
    if constexpr (backend_with_concurrent_writes<Backend>) g.max_in_flight = std::max<std::size_t>(1, b.concurrent_writes());
    return g;
  }

  // "keyschema::store: <path>" when the backend knows its path.
  std::string where() const {
    if constexpr (requires(const Backend& b) { std::string(b.path()); }) {
      return "keyschema::store: the database " + std::string(backend_.path());
    } else {
      return "keyschema::store: the database";
    }
  }

  bool backend_read_only() const {
    if constexpr (requires(const Backend& b) { static_cast<bool>(b.read_only()); }) {
      return backend_.read_only();
    } else {
      return false;
    }
  }

  // Checks or records the schema record (detail/store/schema_check.hpp). On a backend with write
  // transactions (LMDB) the reads and the write happen in one of them, so two processes creating
  // or extending one database with different schemas at the same moment cannot both record theirs.
  void check_fingerprint(bool adopting) {
    if constexpr (backend_with_write_guards<Backend>) schema_record_ = layout<Schema>::record();
    if constexpr (backend_with_write_transaction<Backend>) {
      if (!backend_read_only()) {
        for (int attempt = 0;; ++attempt) {
          auto t = backend_.begin_write();
          try {
            detail::check_schema_record<Schema>(
                where(), adopting, false, [&](std::string_view k, std::string& v) { return t.get(k, v); },
                [&](const key_range& r) { return t.cursor(r); },
                [&](const write_batch& b) { t.commit(b, write_options{.sync = true}); });
            return;  // an uncommitted t (record unchanged) is aborted here
          } catch (const conflict_error&) {
            // Another process recorded or changed the schema meanwhile (etcd): check again
            // against what it wrote.
            if (attempt == 16) throw;
          }
        }
      }
    }
    bool recorded = false;
    detail::check_schema_record<Schema>(
        where(), adopting, backend_read_only(),
        [&](std::string_view k, std::string& v) { return backend_.get(k, v, nullptr); },
        [&](const key_range& r) { return backend_.cursor(r, nullptr); },
        [&](const write_batch& b) {
          backend_.write(b, write_options{.sync = true});
          recorded = true;
        });
    if constexpr (backend_with_compact_range<Backend>) {
      // The schema record sorts after every keyspace's key (0xFF). In an LSM engine's table with
      // the first keys written after it, it would make that table's range overlap every later
      // table of keys written in ascending order (message ids), so that compactions would rewrite
      // those tables instead of moving them down a level: the record just written to a new
      // database goes to a table of its own (the engine flushes its memtable, which holds only
      // the record then). Publishing a million messages on LevelDB spent a fifth more background
      // CPU without this.
      if (recorded) backend_.compact_range(key_range{std::string(1, '\xff'), std::string(), false});
    }
  }

  Backend backend_;
  std::string schema_record_;  // what schema_guards() requires (backend_with_write_guards only)
  detail::live_count live_;  // what is alive of what was made from this store (see ~store)
  writer_mutex_type writer_mu_;
  std::atomic<const void*> writer_{nullptr};  // the this_thread_tag() of the thread holding an open transaction
  detail::commit_queue queue_;
  detail::group_limits group_limits_ = make_group_limits(backend_);
};

KEYSCHEMA_END_NAMESPACE
