// keyschema/lmdb/detail/env_state.hpp: lmdb_detail::env_state, everything of one open LMDB
// environment, and gate_lease, which leaves its transaction gate at scope exit.
//
// One env_state per lmdb_backend, heap-allocated so that snapshots, cursors and write
// transactions keep a stable pointer to it while the backend object moves. It owns the MDB_env,
// the registration of its path (open_registry.hpp), the gate that keeps map resizes apart from
// live transactions (txn_gate.hpp), the read transactions kept per thread for point reads
// (thread_reader.hpp), the pool of reset read transactions for snapshots and cursors (one in a
// lock-free slot, the others in a vector under a mutex), one spare read-only cursor (a lock-free
// slot), the writer mutex, and the map-growth logic:
// doubling on MDB_MAP_FULL up to the ceiling, the early growth scheduled when a commit leaves the
// map more than 3/4 used, and adopting a map another process grew (MDB_MAP_RESIZED). Opened by
// open_env() (open_env.hpp).
//
// Thread-safety: enter_thread_reader, leave_thread_reader, acquire_read, release_read,
// drain_pool, enter_gate, try_grow_early and adopt_external_size may be called from any thread
// concurrently (the gate guards them; a point read of a thread with its reader cached writes only
// that reader's cache line; the pool has its own mutex and an atomic slot). The destructor runs
// on any thread, once no get(), snapshot or cursor of the environment is live; it ends every
// thread's cached transaction (thread_reader.hpp).
// begin_write_txn, grow_for_write and note_usage are called by the writer holding write_mu.
// gate_lease is a scope guard of one thread.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/detail/backend/open_registry.hpp>
#include <keyschema/detail/backend/placement.hpp>
#include <keyschema/lmdb/detail/status.hpp>
#include <keyschema/lmdb/detail/thread_reader.hpp>
#include <keyschema/lmdb/detail/txn_gate.hpp>
#include <keyschema/detail/this_thread.hpp>

#include <lmdb.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

#if defined(__SANITIZE_THREAD__)
#define KEYSCHEMA_LMDB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KEYSCHEMA_LMDB_TSAN 1
#endif
#endif
#ifndef KEYSCHEMA_LMDB_TSAN
#define KEYSCHEMA_LMDB_TSAN 0
#endif

inline constexpr int max_resize_retries = 16;
// The bytes of a long key kept in its LMDB key (long_keys.hpp, the long form); a key of a
// keyspace with long keys that is longer is stored in the long form.
inline constexpr std::size_t long_head = 502;
inline constexpr std::size_t default_page = 4096;           // rounding before the env is open

// One object of T kept for reuse in a lock-free slot: take() empties it, offer() fills it when
// it is empty. The thread that took an object owns it; acquire/release order its contents.
template <class T>
class spare_slot {
 public:
  T* take() noexcept { return p_.exchange(nullptr, std::memory_order_acq_rel); }
  // True when t was kept; false (t still the caller's) when the slot was full.
  bool offer(T* t) noexcept {
    T* none = nullptr;
    return p_.compare_exchange_strong(none, t, std::memory_order_acq_rel);
  }

 private:
  std::atomic<T*> p_{nullptr};
};

// The names of the placements' named databases start with this; LMDB keeps them as keys of the
// main database, which cursors step over (they are no keys of the store's).
inline constexpr std::string_view placement_db_prefix = "\xff" "keyschema/placement/";

// Everything of one open environment. Heap-allocated so that snapshots and cursors keep a
// stable pointer to it while the backend object moves.
struct env_state {
  explicit env_state(std::chrono::milliseconds wait) : gate(wait) { reader_cache::live().add(generation, &readers); }
  env_state(const env_state&) = delete;
  env_state& operator=(const env_state&) = delete;
  ~env_state() {
    // Other threads may still cache their readers: no thread gives one back after remove(), and
    // none uses one again (the generation is never seen again).
    reader_cache::live().remove(generation);
    readers.close();
    if (MDB_cursor* c = spare_cursor.take()) ::mdb_cursor_close(c);
    if (MDB_txn* t = spare.take()) ::mdb_txn_abort(t);
    for (MDB_txn* t : pool) ::mdb_txn_abort(t);
    if (env != nullptr) ::mdb_env_close(env);
  }

  detail::open_registration registration;  // released last, after the env is closed
  std::string path;
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
  // The placements (keyschema::placed): router names them (index 0: the default placement, the
  // main database dbi); dbis[i] is the named database of placement i when present[i] (a
  // read-only environment may lack one: it then holds nothing). Set up at open and by
  // lmdb_backend::place(), before the backend is shared; read-only afterwards. Placements are
  // added through add_placement() only (it keeps plain_max right).
  detail::placement_router router;
  std::vector<MDB_dbi> dbis{0};
  std::vector<char> present{1};
  // The common fast case: no placement exists or is routed to.
  bool single() const noexcept { return dbis.size() == 1; }
  // The keyspaces with long keys (keyschema::long_keys), by key prefix: a key of one longer than
  // long_head bytes is stored in the long form (long_keys.hpp). Set by lmdb_backend::long_keys()
  // through set_long_routes() (it keeps plain_max right), before the backend is shared;
  // read-only afterwards.
  struct long_route {
    std::string prefix;
    bool encode = true;     // puts store the long form (false: plainly; ks::migrate taking the marker off)
    bool plain_too = false;  // keys may also be stored plainly (ks::migrate): read and erased in both forms
  };
  std::vector<long_route> long_routes;
  bool read_only = false;
  std::size_t max_key = 0;
  // The routing of point reads, decided once per change of the placements, the long-key routes
  // or max_key instead of per read: a key of 1 to plain_max bytes is read plainly in the main
  // database (lookup.hpp's fast path), any other key takes the routed path (empty or too long:
  // absent; a long key of a keyspace with long keys; a placement's key). plain_max is 0 while a
  // placement exists (every key is routed), else max_key, or at most long_head while a keyspace
  // has long keys (a longer key of it may be stored in the long form). Set by
  // routes_changed(), which add_placement(), set_long_routes() and open_env() call.
  std::size_t plain_max = 0;
  void routes_changed() noexcept {
    plain_max = !single() ? 0 : long_routes.empty() ? max_key : std::min(max_key, long_head);
  }
  // Adds placement `name`, read from dbi when `is_present` (see router, dbis, present).
  // Errors: std::bad_alloc (nothing is added then).
  void add_placement(std::string_view name, MDB_dbi db, bool is_present) {
    dbis.reserve(dbis.size() + 1);
    present.reserve(present.size() + 1);
    router.add(name);
    dbis.push_back(db);  // no longer throws: reserved
    present.push_back(static_cast<char>(is_present ? 1 : 0));
    routes_changed();
  }
  // Replaces the long-key routes.
  void set_long_routes(std::vector<long_route> routes) noexcept {
    long_routes = std::move(routes);
    routes_changed();
  }
  std::size_t page = default_page;
  std::size_t ceiling = 0;
  std::atomic<std::size_t> map_size{0};
  // This environment's number among the process's (thread_reader.hpp: the threads' caches).
  const std::uint64_t generation = detail::next_reader_generation();
  // The threads' readers; declared before the gate, whose slots they are, so they outlive it.
  reader_registry readers;
  lmdb_detail::txn_gate gate;
  // Reset read transactions for reuse, at most pool_cap in all: one in spare (taken and returned
  // without a lock), the others in pool (capacity reserved at open; guarded by pool_mu).
  spare_slot<MDB_txn> spare;
  std::vector<MDB_txn*> pool;
  std::mutex pool_mu;
  std::size_t pool_cap = 0;
  // A closed read-only cursor kept for reuse (mdb_cursor_renew instead of a malloc and a free per
  // private cursor). Its transaction may have ended or been reset: a read-only cursor is not
  // tracked by its transaction, and renewing it rebinds every pointer it holds.
  spare_slot<MDB_cursor> spare_cursor;
  std::mutex write_mu;
  // Commits of this process, counted twice (before and after mdb_txn_commit, under write_mu):
  // odd while one runs. LMDB 0.9 begins a read transaction by reading the last transaction id X
  // and then copying the meta page of X; when the commit of X + 1 ends and the one of X + 2 writes
  // its meta page (the same page as X's) in between, as when the reader is preempted there, the
  // reader gets X + 2's state under the id X, and the next read transaction may see X + 1: an
  // older state than the one before it (a counter read in two snapshots going backwards).
  // acquire_read begins again when two of these events fell during its begin; commits of other
  // processes cannot be seen here (see lmdb.hpp).
  std::atomic<std::uint64_t> commit_events{0};

  // mdb_txn_commit(txn), counted in commit_events. REQUIRES: write_mu is held.
  int commit_write(MDB_txn* txn) noexcept {
    commit_events.fetch_add(1);
    const int rc = ::mdb_txn_commit(txn);
    commit_events.fetch_add(1);
    return rc;
  }
  // The conditions of this process's last guarded commit that wrote none of their keys
  // (backend_with_write_guards), and that commit's transaction id (0: none). A write transaction
  // whose id is the next one reads the state that commit left (no commit of any process came
  // between), in which they still hold: lookup.hpp's guards_hold_since does not read them again.
  // Under write_mu.
  struct remembered_guard {
    std::string key;
    std::string value;
    bool exists = true;
  };
  std::vector<remembered_guard> guards;
  std::size_t guards_txn = 0;

  // The last commit left the map more than 3/4 used: grow it as soon as nothing is open.
  std::atomic<bool> grow_pending{false};

  // Enters the gate or throws: limit_error on timeout, backend_error once the map is lost.
  void enter_gate() {
    switch (gate.enter()) {
      case lmdb_detail::txn_gate::status::ok:
        return;
      case lmdb_detail::txn_gate::status::timed_out:
        throw limit_error("keyschema::lmdb_backend: a resize of the LMDB map of " + path +
                          " did not finish within " + std::to_string(gate.wait().count()) +
                          " ms because snapshots or cursors of this process stayed open; release "
                          "long-lived snapshots/cursors or raise lmdb_options::resize_wait");
      case lmdb_detail::txn_gate::status::poisoned:
        break;
    }
    throw_lost();
  }

  [[noreturn]] void throw_lost() const {
    throw backend_error("keyschema::lmdb_backend: the memory map of " + path +
                            " was lost when resizing it failed; destroy the backend and reopen",
                        "mdb_env_set_mapsize", 0);
  }

  // Renews t (begins a new read-only transaction into t when t is null) and tells whether a
  // commit ended and another began meanwhile (raced): LMDB may then have copied a meta page newer
  // than the transaction's id (see commit_events), and the caller resets t and begins again.
  // Returns LMDB's status; raced is false unless it is MDB_SUCCESS.
  KEYSCHEMA_ALWAYS_INLINE int begin_counted(MDB_txn*& t, bool& raced) noexcept {
    const std::uint64_t before = commit_events.load(std::memory_order_acquire);
    const int rc = t != nullptr ? ::mdb_txn_renew(t) : ::mdb_txn_begin(env, nullptr, MDB_RDONLY, &t);
    raced = rc == MDB_SUCCESS && raced_since(before);
    return rc;
  }

  // Whether a transaction begun or renewed after commit_events read `before` may hold an older
  // state than the latest commit's (two events: a commit began and ended meanwhile).
  KEYSCHEMA_ALWAYS_INLINE bool raced_since(std::uint64_t before) noexcept {
    return commit_events_after() - before >= 2;
  }

  // commit_events, read after LMDB's reads of the meta page (in mdb_txn_renew/mdb_txn_begin):
  // an acquire fence orders those reads before the load (a load alone would not, on every
  // processor), and the load writes nothing, so concurrent readers share the cache line. TSan
  // does not understand fences (GCC warns): there a read-modify-write orders them instead.
  KEYSCHEMA_ALWAYS_INLINE std::uint64_t commit_events_after() noexcept {
#if KEYSCHEMA_LMDB_TSAN
    return commit_events.fetch_add(0, std::memory_order_acq_rel);
#else
    std::atomic_thread_fence(std::memory_order_acquire);
    return commit_events.load(std::memory_order_relaxed);
#endif
  }

  // Point reads (lmdb_backend::get without a snapshot) on the calling thread's own reader
  // (thread_reader.hpp): registers it with the gate and renews its transaction. Returns nullptr
  // when the thread has no reader (none free), the gate is closed or poisoned, or LMDB refused:
  // the caller reads with acquire_read()/release_read() instead, which waits or reports the
  // error. A non-null result is matched by leave_thread_reader().
  KEYSCHEMA_ALWAYS_INLINE thread_reader* enter_thread_reader() noexcept {
    thread_reader* r = this_thread_reader(generation, readers, gate);
    if (r == nullptr || !gate.try_enter(*r)) [[unlikely]] return nullptr;
    if (MDB_txn* const t = r->txn; t != nullptr) [[likely]] {
      // begin_counted's renewal, with the transaction known to exist.
      const std::uint64_t before = commit_events.load(std::memory_order_acquire);
      const int rc = ::mdb_txn_renew(t);
      if (rc == MDB_SUCCESS && !raced_since(before)) [[likely]] return r;
      if (rc == MDB_SUCCESS) {
        ::mdb_txn_reset(t);  // raced a commit: the slow path renews it again
      } else {
        ::mdb_txn_abort(std::exchange(r->txn, nullptr));  // the slow path begins a new one
      }
    }
    return begin_thread_reader(*r);
  }

  // enter_thread_reader() when the transaction is missing or its renewal raced a commit.
  // REQUIRES: r's slot busy (held by this thread).
  [[gnu::noinline]] thread_reader* begin_thread_reader(thread_reader& r) noexcept {
    for (int attempt = 0;; ++attempt) {
      const bool renewing = r.txn != nullptr;
      bool raced;
      const int rc = begin_counted(r.txn, raced);
      if (rc == MDB_SUCCESS && !raced) return &r;
      if (rc != MDB_SUCCESS) {
        if (renewing) ::mdb_txn_abort(r.txn);
        r.txn = nullptr;
        gate.leave(r);
        return nullptr;  // MDB_READERS_FULL, MDB_MAP_RESIZED, ...: acquire_read() handles them
      }
      ::mdb_txn_reset(r.txn);  // the state may be newer than the transaction's id: begin again
      if (attempt >= 16) keyschema::detail::yield_thread();
    }
  }

  // acquire_read() and release_read() out of line: a point read's fallback when its thread has no
  // reader free (keeps the inlined point read small).
  [[gnu::noinline]] MDB_txn* acquire_read_outlined() { return acquire_read(); }
  [[gnu::noinline]] void release_read_outlined(MDB_txn* t) noexcept { release_read(t); }

  // Ends a point read of enter_thread_reader(): resets the transaction and unregisters it.
  KEYSCHEMA_ALWAYS_INLINE void leave_thread_reader(thread_reader& r) noexcept {
    ::mdb_txn_reset(r.txn);
    gate.leave(r);
    if (grow_pending.load(std::memory_order_relaxed)) [[unlikely]] grow_after_release();
  }

  // Begins (or renews from the pool) a read-only transaction registered with the gate. The usual
  // case (the gate open, the spare transaction there, no commit racing the renewal) is inlined;
  // everything else takes acquire_read_slow().
  KEYSCHEMA_ALWAYS_INLINE MDB_txn* acquire_read() {
    MDB_txn* t = nullptr;
    if (gate.try_enter()) [[likely]] {
      t = spare.take();
      if (t != nullptr) [[likely]] {
        bool raced;
        const int rc = begin_counted(t, raced);
        if (rc == MDB_SUCCESS && !raced) [[likely]] return t;
        if (rc == MDB_SUCCESS) {
          ::mdb_txn_reset(t);  // handed to the slow path, which renews it again
        } else {
          ::mdb_txn_abort(t);  // the slow path begins a new one and reports what fails
          t = nullptr;
        }
      }
      gate.leave();
    }
    return acquire_read_slow(t);
  }

  // acquire_read() when its inline path did not succeed. `reset`: a reset transaction to renew
  // first (taken from the pool), or nullptr.
  [[gnu::noinline]] MDB_txn* acquire_read_slow(MDB_txn* reset) {
    bool drained = false;
    int resized = 0;
    for (;;) {
      enter_gate();
      MDB_txn* t = std::exchange(reset, nullptr);
      if (t == nullptr) t = spare.take();
      if (t == nullptr) {
        std::lock_guard lk(pool_mu);
        if (!pool.empty()) {
          t = pool.back();
          pool.pop_back();
        }
      }
      bool renewed = false;
      int rc;
      for (int attempt = 0;; ++attempt) {
        renewed = t != nullptr;  // mdb_txn_begin sets t only when it succeeds
        bool raced;
        rc = begin_counted(t, raced);
        if (!raced) break;
        ::mdb_txn_reset(t);  // the state may be newer than the transaction's id: begin again
        if (attempt >= 16) keyschema::detail::yield_thread();
      }
      if (rc == MDB_SUCCESS) return t;
      gate.leave();
      if (renewed) ::mdb_txn_abort(t);
      if (rc == MDB_MAP_RESIZED && ++resized <= max_resize_retries) {
        adopt_external_size();
        continue;
      }
      if (rc == MDB_READERS_FULL) {
        if (!drained) {
          // Idle pooled transactions and readers of dead processes hold slots: free them.
          drained = true;
          drain_pool();
          int dead = 0;
          ::mdb_reader_check(env, &dead);
          continue;
        }
        unsigned slots = 0;
        ::mdb_env_get_maxreaders(env, &slots);
        throw limit_error("keyschema::lmdb_backend: all " + std::to_string(slots) + " reader slots of " + path +
                          " are in use (MDB_READERS_FULL): too many live snapshots and cursors in all "
                          "processes; release some or raise lmdb_options::max_readers (takes effect "
                          "when the environment is next created)");
      }
      lmdb_detail::throw_status("keyschema::lmdb_backend: cannot begin a read transaction on " + path,
                           renewed ? "mdb_txn_renew" : "mdb_txn_begin", rc);
    }
  }

  // Ends a transaction from acquire_read(); keeps it for reuse when the pool has room. When
  // this was the last open transaction and the map is nearly full, grows it now: a writer that
  // holds a snapshot across its own commit (a read-modify-write transaction) could not.
  // The usual case (the spare slot empty) is inlined.
  KEYSCHEMA_ALWAYS_INLINE void release_read(MDB_txn* t) noexcept {
    ::mdb_txn_reset(t);
    if (pool_cap != 0 && spare.offer(t)) [[likely]] {
      gate.leave();
      if (grow_pending.load(std::memory_order_relaxed)) [[unlikely]] grow_after_release();
      return;
    }
    release_read_slow(t);
  }

  // release_read() of a reset transaction that the spare slot has no room for.
  [[gnu::noinline]] void release_read_slow(MDB_txn* t) noexcept {
    if (pool_cap != 0) {
      std::lock_guard lk(pool_mu);
      if (pool.size() + 1 < pool_cap) {  // spare holds one
        pool.push_back(t);  // never allocates: capacity reserved at open
        t = nullptr;
      }
    }
    gate.leave();
    if (t != nullptr) ::mdb_txn_abort(t);
    if (grow_pending.load(std::memory_order_relaxed)) grow_after_release();
  }

  [[gnu::noinline]] void grow_after_release() noexcept {
    try {
      try_grow_early();
    } catch (...) {
      // A failed remap poisoned the gate: the next operation reports it.
    }
  }

  // Opens a cursor on `dbi` in the read-only transaction txn: the spare one renewed (r's when the
  // transaction is the thread reader r's, else the environment's), or a new one. Returns
  // MDB_SUCCESS, or mdb_cursor_open's error (*out is then unchanged).
  int open_read_cursor(MDB_txn* txn, MDB_cursor** out, thread_reader* r) noexcept {
    if (MDB_cursor* c = r != nullptr ? std::exchange(r->cursor, nullptr) : spare_cursor.take()) {
      if (::mdb_cursor_renew(txn, c) == MDB_SUCCESS) [[likely]] {
        *out = c;
        return MDB_SUCCESS;
      }
      ::mdb_cursor_close(c);  // not with one dbi and a live read-only txn; mdb_cursor_open reports it
    }
    return ::mdb_cursor_open(txn, dbi, out);
  }

  // Closes a cursor from open_read_cursor(), before or after its transaction ended: kept as r's
  // spare (r: the thread reader whose transaction it read, still held) or the environment's when
  // that is empty.
  void close_read_cursor(MDB_cursor* c, thread_reader* r) noexcept {
    if (r != nullptr && r->cursor == nullptr) {
      r->cursor = c;
      return;
    }
    if (!spare_cursor.offer(c)) ::mdb_cursor_close(c);
  }

  // Frees the reader slots of the idle pooled transactions and of the idle threads' readers.
  void drain_pool() noexcept {
    readers.drain(gate);
    if (MDB_txn* t = spare.take()) ::mdb_txn_abort(t);
    std::lock_guard lk(pool_mu);
    for (MDB_txn* t : pool) ::mdb_txn_abort(t);
    pool.clear();  // keeps the reserved capacity
  }

  // mdb_env_set_mapsize(size) with the gate held exclusively. A failed remap leaves LMDB without
  // a map: the gate is poisoned so nothing touches it again.
  void resize_locked(std::size_t size) {
    if (const int rc = ::mdb_env_set_mapsize(env, size); rc != MDB_SUCCESS) {
      gate.poison_locked();
      lmdb_detail::throw_status("keyschema::lmdb_backend: cannot resize the memory map of " + path + " to " +
                               std::to_string(size) + " bytes",
                           "mdb_env_set_mapsize", rc);
    }
    MDB_envinfo info;
    ::mdb_env_info(env, &info);
    map_size.store(info.me_mapsize, std::memory_order_relaxed);
  }

  // The next map size after `cur`: doubled, page-aligned, at most `limit` (page-aligned).
  std::size_t next_size(std::size_t cur, std::size_t limit) const noexcept {
    std::size_t next = cur > limit / 2 ? limit : cur * 2;
    next -= next % page;
    return next > cur ? next : limit;
  }

  // The ceiling of a batch: max_map_size, or 1/8 more for a batch of erases only. Deleting
  // copies pages too, so without that headroom a database full at its ceiling could not even
  // be cleaned up.
  std::size_t limit_for(bool erases_only) const noexcept {
    if (!erases_only) return ceiling;
    const std::size_t extra = ceiling / 8 - (ceiling / 8) % page;
    return ceiling + std::max(extra, page);
  }

  // MDB_MAP_FULL: grows the map once (waiting for open transactions) or throws limit_error.
  void grow_for_write(bool erases_only) {
    std::size_t still_open = 0;
    const auto st = gate.exclusive(
        [&] {
          MDB_envinfo info;
          ::mdb_env_info(env, &info);
          const std::size_t limit = limit_for(erases_only);
          if (info.me_mapsize >= limit) {
            throw limit_error("keyschema::lmdb_backend::write: the LMDB map of " + path + " is full at " +
                              std::to_string(info.me_mapsize) + " bytes and lmdb_options::max_map_size is " +
                              std::to_string(ceiling) + " bytes; raise max_map_size or erase data. "
                              "Nothing was written");
          }
          resize_locked(next_size(info.me_mapsize, limit));
        },
        still_open);
    if (st == lmdb_detail::txn_gate::status::poisoned) throw_lost();
    if (st == lmdb_detail::txn_gate::status::timed_out) {
      throw limit_error("keyschema::lmdb_backend::write: the LMDB map of " + path + " is full at " +
                        std::to_string(map_size.load(std::memory_order_relaxed)) +
                        " bytes and cannot grow while " + std::to_string(still_open) +
                        " snapshot(s)/cursor(s) of this process stay open (waited " +
                        std::to_string(gate.wait().count()) +
                        " ms; mdb_env_set_mapsize needs them closed); release long-lived snapshots and "
                        "cursors, start with a larger lmdb_options::map_size or raise resize_wait. "
                        "Nothing was written");
    }
  }

  // Grows the map if it is more than 3/4 used and nothing is open right now; never waits.
  // Errors: backend_error when the remap fails (the gate is poisoned).
  void try_grow_early() {
    gate.try_exclusive([&] {
      grow_pending.store(false, std::memory_order_relaxed);
      MDB_envinfo info;
      ::mdb_env_info(env, &info);
      if (used_beyond_three_quarters(info) && info.me_mapsize < ceiling) {
        resize_locked(next_size(info.me_mapsize, ceiling));
      }
    });
  }

  bool used_beyond_three_quarters(const MDB_envinfo& info) const noexcept {
    return (info.me_last_pgno + 1) * page > info.me_mapsize / 4 * 3;
  }

  // After a commit, while still registered with the gate (the map cannot move): schedules an
  // early growth when the committed state uses more than 3/4 of the map.
  void note_usage() noexcept {
    MDB_envinfo info;
    ::mdb_env_info(env, &info);
    if (used_beyond_three_quarters(info)) grow_pending.store(true, std::memory_order_relaxed);
  }

  // Begins a write transaction registered with the gate, adopting a map grown by another
  // process. Blocks while another process (or a native transaction) holds LMDB's write lock.
  // REQUIRES: write_mu is held. Errors: those of enter_gate(), backend_error "mdb_txn_begin".
  MDB_txn* begin_write_txn() {
    for (int resized = 0;;) {
      enter_gate();
      MDB_txn* t = nullptr;
      const int rc = ::mdb_txn_begin(env, nullptr, 0, &t);
      if (rc == MDB_SUCCESS) return t;
      gate.leave();
      if (rc == MDB_MAP_RESIZED && ++resized <= max_resize_retries) {
        adopt_external_size();
        continue;
      }
      lmdb_detail::throw_status("keyschema::lmdb_backend: cannot begin a write transaction on " + path, "mdb_txn_begin",
                           rc);
    }
  }

  // Aborts a write transaction from begin_write_txn() and leaves the gate.
  void end_write(MDB_txn* t) noexcept {
    ::mdb_txn_abort(t);
    gate.leave();
  }

  // MDB_MAP_RESIZED: another process grew the map; adopt its size.
  void adopt_external_size() {
    std::size_t still_open = 0;
    const auto st = gate.exclusive([&] { resize_locked(0); }, still_open);
    if (st == lmdb_detail::txn_gate::status::poisoned) throw_lost();
    if (st == lmdb_detail::txn_gate::status::timed_out) {
      throw limit_error("keyschema::lmdb_backend: another process grew the LMDB map of " + path +
                        " and this process cannot follow while " + std::to_string(still_open) +
                        " snapshot(s)/cursor(s) stay open (waited " + std::to_string(gate.wait().count()) +
                        " ms); release long-lived snapshots and cursors or raise lmdb_options::resize_wait");
    }
  }
};

// Leaves the gate at scope exit (write transactions).
struct gate_lease {
  explicit gate_lease(lmdb_detail::txn_gate& g) noexcept : gate(g) {}
  gate_lease(const gate_lease&) = delete;
  gate_lease& operator=(const gate_lease&) = delete;
  ~gate_lease() { gate.leave(); }
  lmdb_detail::txn_gate& gate;
};

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
