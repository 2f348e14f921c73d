// keyschema/lmdb.hpp: keyschema::lmdb_backend, the LMDB storage adapter.
//
// lmdb_backend meets the byte-level contract of <keyschema/backend.hpp> over one LMDB
// environment (a directory holding data.mdb and lock.mdb) and its unnamed main database. Keys are
// ordered by LMDB's default comparator (memcmp, then length), which is the unsigned
// lexicographic order every keyschema backend uses.
//
//   keyschema::lmdb_backend db("/var/lib/broker/store", {.map_size = 256 << 20});
//   keyschema::write_batch b;
//   b.put("k", "v");
//   db.write(b, {.sync = true});
//
// Mapping onto LMDB:
//   - write()        one write transaction per batch (mdb_put / mdb_del, mdb_txn_commit).
//   - snapshot()     one read-only transaction, shared by every copy of the snapshot and aborted
//                    when the last copy (or cursor reading it) is destroyed.
//   - cursor()       an MDB_cursor on the snapshot's transaction, or on a private read-only
//                    transaction taken at creation (the calling thread's, as get() uses, when
//                    no other cursor of the thread holds it; else one from a small pool).
//                    key() and value() point into the memory map (no copy) and stay valid until
//                    next(): the transaction pins the pages.
//   - get()          mdb_get in the snapshot's transaction, or in the calling thread's own
//                    read-only transaction, renewed before and reset after each read (as native
//                    code keeps one per thread; lmdb/detail/thread_reader.hpp). Each thread that
//                    reads keeps one reader slot (left to later threads when it exits, freed
//                    when the backend is destroyed or slots run out); threads beyond half of
//                    max_readers read with a pooled transaction.
//   - write(b, o, guards), commit(b, o, guards)  backend_with_write_guards: mdb_get of each
//                    guarded key in the write transaction, before the batch is applied.
//   - begin_write()  one LMDB write transaction, held until its commit() or destruction: LMDB's
//                    write lock serializes it against writers of every process. keyschema::store
//                    runs its transactions in it, so they are serializable across processes.
//   - long_keys()    backend_with_long_keys: a key longer than 502 bytes of a keyspace with long
//                    keys (keyschema::long_keys) is stored as its first 502 bytes + 0xFF + an
//                    8-byte tie-breaker, the rest of it in front of the value (long_keys()).
//   - place()        backend_with_placements: each placement (keyschema::placed) is a named
//                    database; write() and begin_write() stay one transaction over all of them,
//                    a snapshot one read transaction, and a cursor reaching several placements
//                    merges one MDB_cursor per named database (see docs/backends/lmdb.md).
// The environment is opened with MDB_NOTLS (a thread may hold several snapshots and cursors, and
// they may move between threads) and without MDB_NOSYNC: a commit is durable by default, through
// LMDB's own ordered flush (data pages, fdatasync, then the meta page through an O_DSYNC
// descriptor). A write with write_options{.sync = false} sets MDB_NOSYNC for that one commit.
// See docs/backends/lmdb.md.
//
// The map grows by itself: when a commit hits MDB_MAP_FULL the map is doubled (capped at
// lmdb_options::max_map_size; a batch of erases only may go 1/8 beyond it, so that a full
// database can still be cleaned up) with mdb_env_set_mapsize and the batch is retried. LMDB allows
// that only while no transaction of this process is active, so a resize waits (at most
// lmdb_options::resize_wait) for every snapshot and cursor to end, and holds new ones back
// meanwhile. A snapshot kept open across a write() that needs a larger map therefore makes that
// write fail with limit_error after the wait. To make that rare, a commit that leaves the map more
// than three quarters used schedules an early growth, done without waiting as soon as no
// transaction is open (when the last snapshot/cursor ends, or before the next write). MDB_MAP_RESIZED
// (another process grew the map) is handled the same way, transparently.
//
// Read transactions see states in commit order: one begun after another never sees an older
// state. LMDB 0.9 alone does not ensure that: a read transaction begun while one commit ends and
// the next writes its meta page (the reader preempted between reading the last transaction id
// and copying that transaction's meta page) gets the newer commit's state under the older id, and
// the read transaction after it may see the commit in between, an older state. Commits of this
// process are counted around mdb_txn_commit, and a read transaction whose begin overlapped the end
// of one and the start of the next is begun again (env_state::commit_events). Commits of another
// process on the same environment cannot be counted: across processes, successive snapshots can
// still go backwards by a commit in that window.
//
// Thread-safety: as the backend contract requires. get, snapshot and cursor may run concurrently
// from any number of threads and alongside write(); write() and begin_write() are serialized
// internally (and across processes by LMDB). A write_transaction_type belongs to the thread that
// began it. Copies
// of one snapshot may be used from different threads at the same time: they share one LMDB read
// transaction, and every LMDB call on it is serialized by a mutex of that snapshot. A single
// snapshot or cursor object still needs external synchronization.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/lmdb/cursor.hpp>
#include <keyschema/lmdb/detail/commit.hpp>
#include <keyschema/lmdb/detail/env_state.hpp>
#include <keyschema/lmdb/detail/lookup.hpp>
#include <keyschema/lmdb/detail/open_env.hpp>
#include <keyschema/lmdb/detail/status.hpp>
#include <keyschema/lmdb/detail/txn_handle.hpp>
#include <keyschema/lmdb/options.hpp>
#include <keyschema/lmdb/snapshot.hpp>
#include <keyschema/lmdb/write_transaction.hpp>
#include <keyschema/write_batch.hpp>

#include <lmdb.h>

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

class lmdb_backend {
 public:
  // The handles the backend contract names; each is documented in its own header.
  using snapshot_type = lmdb_snapshot;                    // <keyschema/lmdb/snapshot.hpp>
  using cursor_type = lmdb_detail::full_cursor;  // <keyschema/lmdb/cursor.hpp>: merged over placements, long keys decoded
  using write_transaction_type = lmdb_write_transaction;  // <keyschema/lmdb/write_transaction.hpp>

  // Opens (creating when allowed) the LMDB environment in the directory `path`.
  //
  // Errors:
  //   backend_error "std::filesystem::create_directories" - the directory cannot be created
  //       (permissions, a file in the way). what() names the path. Remedy: fix the path.
  //   backend_error "mdb_env_open", ENOENT - the directory or its data.mdb is missing while
  //       create_if_missing is false or read_only is true. Remedy: create it first.
  //   backend_error "mdb_env_open", MDB_INVALID / MDB_VERSION_MISMATCH / MDB_CORRUPTED - data.mdb
  //       is checked before LMDB maps it: empty, shorter than its two meta pages or than the
  //       pages its latest meta page claims (what() names the path, the file size and the size
  //       needed), another kind of file (bad magic), another LMDB data format, or impossible
  //       figures (page size, root pages). Remedy: restore the database from a copy.
  //   backend_error "open"/"fstat"/"pread" (errno) - data.mdb exists but cannot be read.
  //   backend_error "mdb_env_open", other codes - LMDB cannot open the files: EACCES
  //       (permissions), ENOMEM (no address space for map_size). what() has LMDB's text.
  //   backend_error "mdb_env_set_maxreaders"/"mdb_env_set_mapsize" (EINVAL) - max_readers or
  //       map_size is 0, or max_map_size is below map_size (what() names both figures); nothing
  //       is created. Remedy: fix the options.
  //   locked_error - the environment is already open in this process (LMDB forbids a second
  //       handle: its locks belong to the process). Remedy: share the first backend (or its
  //       store), or destroy it first. Another process may open the same environment.
  //   limit_error - MDB_READERS_FULL while opening (every reader slot is taken).
  //   wrong_engine_error - `path` holds another engine's database (LevelDB, RocksDB, SQLite; see
  //       <keyschema/engine_probe.hpp>): what() names the engine, the file that shows it and the
  //       path; nothing was created. Remedy: open it with that engine's adapter.
  explicit lmdb_backend(const std::filesystem::path& path, const lmdb_options& options = {})
      : s_(lmdb_detail::open_env(path, options)) {}

  lmdb_backend(const lmdb_backend&) = delete;
  lmdb_backend& operator=(const lmdb_backend&) = delete;
  // A moved-from backend may only be destroyed or assigned to.
  lmdb_backend(lmdb_backend&&) noexcept = default;
  lmdb_backend& operator=(lmdb_backend&&) noexcept = default;
  // Closes the environment, first ending the read transactions other threads keep for get()
  // (from any thread). REQUIRES: every snapshot and cursor of this backend is destroyed and no
  // call on it runs.
  ~lmdb_backend() = default;

  // Reads key in *snap, or in the latest committed state when snap is nullptr. Returns false
  // when the key is absent (an empty key or one longer than limits().max_key_bytes is always absent).
  // Errors: backend_error "mdb_get" (corrupt page, I/O error); with snap == nullptr also those
  // of snapshot() (limit_error when no reader slot is free or a resize does not finish).
  // `value` is assigned only when the key is found: a miss or an error leaves it unchanged.
  KEYSCHEMA_ALWAYS_INLINE bool get(std::string_view key, std::string& value, const snapshot_type* snap) const {
    if (snap != nullptr) return get_in(key, value, *snap);
    const lmdb_detail::env_state& s = *s_;
    // The usual key is read plainly in the main database; the others are routed (lookup.hpp).
    const bool plain = lmdb_detail::plain_key(s, key);
    if (!plain && !lmdb_detail::storable_key(s, key)) [[unlikely]] return false;
    lmdb_detail::read_lease lease(*s_);
    return plain ? lmdb_detail::lookup_in(s, lease.txn, s.dbi, key, value)
                 : lmdb_detail::lookup_routed(s, lease.txn, key, value);
  }
  // get() leaves `value` unchanged when it returns false or throws (backend.hpp,
  // backend_with_value_kept_on_miss): a store's get_into reads straight into the caller's value.
  static constexpr bool get_keeps_value_on_miss = true;

  // Applies the batch atomically in one LMDB write transaction; later operations on the same
  // key win. opts.sync: the commit is on stable storage when write() returns (LMDB's synchronous
  // commit); otherwise it survives a crash of the process but not necessarily of the operating
  // system. An empty batch commits nothing; with opts.sync it flushes earlier commits
  // (mdb_env_sync). Nothing is applied when write() throws.
  //
  // Errors (nothing was written in every case):
  //   limit_error - a key is empty (LMDB cannot store it) or longer than limits().max_key_bytes, or a
  //       value is longer than 4 GiB - 1: what() names the size and the limit; checked before
  //       the database is touched. Remedy: shorten the key.
  //   limit_error - the map is full at lmdb_options::max_map_size (a batch of erases only may
  //       use 1/8 more). Remedy: raise max_map_size, or erase data.
  //   limit_error - the map must grow but snapshots or cursors of this process stayed open for
  //       lmdb_options::resize_wait. Remedy: do not keep snapshots open across large writes,
  //       start with a larger map_size, or raise resize_wait.
  //   limit_error - MDB_TXN_FULL: the batch dirties more pages than one transaction can hold.
  //       Remedy: split the batch.
  //   backend_error "mdb_txn_begin", EACCES - the backend was opened read_only.
  //   backend_error "mdb_txn_begin"/"mdb_put"/"mdb_del"/"mdb_txn_commit" - LMDB failed (for
  //       example ENOSPC: the disk is full; MDB_PANIC: an earlier fatal error, reopen).
  //   backend_error "mdb_env_set_mapsize" - growing the map failed (no address space); the
  //       environment cannot be used any more. Remedy: reopen with a smaller map_size.
  void write(const write_batch& batch, const write_options& opts) { static_cast<void>(write(batch, opts, {})); }

  // As write(batch, opts), but first checks every condition of guards (a key holds given bytes,
  // or is absent; backend_with_write_guards) with mdb_get in the write transaction, under LMDB's
  // write lock. Returns false, writing nothing, when one does not hold; true when batch was
  // committed. An empty batch checks nothing (and returns true). Errors: as write(batch, opts),
  // and backend_error "mdb_get" (reading a guarded key failed; nothing was written).
  bool write(const write_batch& batch, const write_options& opts, write_guards guards) {
    lmdb_detail::check_limits(*s_, batch);
    if (s_->read_only) {
      throw backend_error("keyschema::lmdb_backend::write: " + s_->path +
                              " was opened with lmdb_options::read_only; nothing was written",
                          "mdb_txn_begin", EACCES);
    }
    std::lock_guard wl(s_->write_mu);
    if (batch.empty()) {
      if (opts.sync) {
        s_->enter_gate();
        lmdb_detail::gate_lease lease(s_->gate);
        if (const int rc = ::mdb_env_sync(s_->env, 1); rc != MDB_SUCCESS) {
          lmdb_detail::throw_status("keyschema::lmdb_backend::write: cannot flush " + s_->path, "mdb_env_sync", rc);
        }
      }
      return true;
    }
    // The previous commit left the map more than 3/4 used: grow it now if nothing is open, so
    // that this commit records the new size and a later one rarely waits for snapshots.
    if (s_->grow_pending.load(std::memory_order_relaxed)) s_->try_grow_early();
    lmdb_detail::nosync_commit nosync(s_->env, opts.sync);
    for (int resized = 0;;) {
      bool refused = false;
      const int rc = lmdb_detail::commit_once(*s_, batch, guards, refused);
      if (rc == MDB_SUCCESS) return !refused;
      if (rc == MDB_MAP_FULL) {
        s_->grow_for_write(lmdb_detail::erases_only(batch));
      } else if (++resized <= lmdb_detail::max_resize_retries) {
        s_->adopt_external_size();  // MDB_MAP_RESIZED
      } else {
        lmdb_detail::throw_status("keyschema::lmdb_backend::write: the map of " + s_->path + " keeps being resized",
                             "mdb_txn_begin", rc);
      }
    }
  }

  // Begins a write transaction (see write_transaction_type): waits for this backend's other
  // writers, then for LMDB's write lock, which another process may hold.
  // Errors: backend_error "mdb_txn_begin", EACCES - the backend was opened read_only;
  //   backend_error "mdb_txn_begin" (MDB_PANIC: reopen; ENOMEM);
  //   limit_error - a map resize of this process did not finish within resize_wait, or the map
  //       grown by another process cannot be adopted while snapshots of this process stay open.
  write_transaction_type begin_write() {
    if (s_->read_only) {
      throw backend_error("keyschema::lmdb_backend::begin_write: " + s_->path +
                              " was opened with lmdb_options::read_only; it cannot be written",
                          "mdb_txn_begin", EACCES);
    }
    std::unique_lock wl(s_->write_mu);
    if (s_->grow_pending.load(std::memory_order_relaxed)) s_->try_grow_early();
    return write_transaction_type(s_.get(), std::move(wl));
  }

  // A view of the latest committed state.
  // Errors: limit_error - every reader slot is taken (MDB_READERS_FULL) even after releasing
  //     idle ones: too many live snapshots/cursors in all processes. Remedy: release some, or
  //     raise lmdb_options::max_readers (effective when the environment is next created).
  //   limit_error - a running map resize did not finish within lmdb_options::resize_wait.
  //   backend_error "mdb_txn_begin"/"mdb_txn_renew" - LMDB failed (MDB_PANIC, ENOMEM).
  snapshot_type snapshot() const { return snapshot_type(lmdb_detail::new_read_handle(*s_)); }

  // A cursor over range in *snap, or in a private snapshot taken now when snap is nullptr.
  // The bounds are copied. Errors: those of snapshot(), and backend_error "mdb_cursor_open" /
  // "mdb_cursor_get".
  // With placements (keyschema::placed): one LMDB cursor per named database the range reaches,
  // all in one read transaction (the snapshot's, or one taken now), merged in key order.
  // With long keys (keyschema::long_keys): the groups of long keys the range reaches are read
  // whole and sorted (see long_keys()).
  cursor_type cursor(const key_range& range, const snapshot_type* snap) const {
    if (s_->long_routes.empty()) [[likely]] return cursor_type(placed_cursor(range, snap));
    lmdb_detail::long_bounds b;
    const key_range raw = lmdb_detail::raw_range(*s_, range, b);
    auto inner = placed_cursor(raw, snap);  // copies the bounds it needs before b moves
    return cursor_type(std::move(inner), s_.get(), std::move(b), range.reverse);
  }

  // Routes the keys of placed keyspaces (backend_with_placements, <keyschema/backend.hpp>): each
  // placement is an LMDB named database, "\xffkeyschema/placement/<name>" (a key of the main
  // database, stepped over by cursors), created here in one write transaction when missing (a
  // read_only environment lacking one reads it as empty). Writes across placements stay one LMDB
  // transaction; a snapshot is one read transaction over all of them.
  // REQUIRES: nothing else uses the backend meanwhile (keyschema::store calls it from its
  // constructor). Errors: limit_error - more placements than lmdb_options::max_placements
  // (MDB_DBS_FULL); nothing was created. Remedy: raise max_placements. backend_error
  // "mdb_txn_begin"/"mdb_dbi_open"/"mdb_txn_commit" - LMDB failed; nothing was created.
  void place(std::span<const placement_route> routes) {
    const std::vector<std::string> missing = detail::missing_placements(s_->router, routes);
    std::vector<MDB_dbi> opened;
    if (!missing.empty() && !s_->read_only) {
      std::lock_guard wl(s_->write_mu);
      s_->enter_gate();
      lmdb_detail::gate_lease lease(s_->gate);
      lmdb_detail::write_txn w;
      if (const int rc = ::mdb_txn_begin(s_->env, nullptr, 0, &w.txn); rc != MDB_SUCCESS) {
        w.txn = nullptr;
        lmdb_detail::throw_status("keyschema::lmdb_backend::place: cannot begin a write transaction on " + s_->path,
                                  "mdb_txn_begin", rc);
      }
      for (const std::string& name : missing) {
        const std::string full = std::string(lmdb_detail::placement_db_prefix) + name;
        MDB_dbi dbi = 0;
        if (const int rc = ::mdb_dbi_open(w.txn, full.c_str(), MDB_CREATE, &dbi); rc != MDB_SUCCESS) {
          if (rc == MDB_DBS_FULL) {
            throw limit_error("keyschema::lmdb_backend::place: placement '" + name + "' does not fit: " + s_->path +
                              " was opened for at most " + std::to_string(s_->dbis.size() - 1) +
                              " placements (lmdb_options::max_placements); raise it. Nothing was created");
          }
          lmdb_detail::throw_status("keyschema::lmdb_backend::place: cannot create the named database of placement '" +
                                        name + "' in " + s_->path,
                                    "mdb_dbi_open", rc);
        }
        opened.push_back(dbi);
      }
      if (const int rc = s_->commit_write(w.release()); rc != MDB_SUCCESS) {
        lmdb_detail::throw_status("keyschema::lmdb_backend::place: cannot create placements in " + s_->path,
                                  "mdb_txn_commit", rc);
      }
    }
    for (std::size_t i = 0; i < missing.size(); ++i) {
      s_->add_placement(missing[i], opened.empty() ? s_->dbi : opened[i], !opened.empty());
    }
    s_->router.set_routes(routes);
  }

  // Tells which keys belong to keyspaces with long keys (backend_with_long_keys,
  // <keyschema/backend.hpp>; keyschema::long_keys): a key starting with a route's prefix and
  // longer than 502 bytes is stored in the long form of <keyschema/lmdb/detail/long_keys.hpp>:
  // its first 502 bytes, a marker byte 0xFF and an 8-byte tie-breaker as the LMDB key, its other
  // bytes in front of the value (after their 4-byte length). Order, lookups and uniqueness stay
  // exact; cost: a long key's get, put or erase reads its group (the stored keys sharing its first
  // 502 bytes), and a cursor reads each group it meets whole and sorts it (see
  // docs/backends/lmdb.md). Nothing is written here: the routes live in this backend object, so a
  // backend opened without them (a raw one, keyschema-dump) sees the stored form.
  // REQUIRES: nothing else uses the backend meanwhile (keyschema::store calls it from its
  // constructor, after place()).
  // Errors: limit_error - LMDB was built with a key limit below 511 bytes (mdb_env_get_maxkeysize):
  //     it cannot hold the long form; what() names the limit. Remedy: a default LMDB build.
  //   usage_error - a prefix is empty or longer than 502 bytes (a keyspace's leading literals are
  //     its prefix: shorten them). Nothing changed in either case.
  void long_keys(std::span<const long_key_route> routes) {
    for (const long_key_route& r : routes) {
      if (r.prefix.empty() || r.prefix.size() > lmdb_detail::long_head) {
        throw usage_error("keyschema::lmdb_backend::long_keys: a keyspace prefix of " + std::to_string(r.prefix.size()) +
                          " bytes; it must be 1 to " + std::to_string(lmdb_detail::long_head) +
                          " bytes (the leading literals of a keyspace with keyschema::long_keys)");
      }
    }
    if (!routes.empty() && s_->max_key < lmdb_detail::long_stored) {
      throw limit_error("keyschema::lmdb_backend::long_keys: LMDB's maximum key size on " + s_->path + " is " +
                        std::to_string(s_->max_key) + " bytes (mdb_env_get_maxkeysize), below the " +
                        std::to_string(lmdb_detail::long_stored) +
                        " bytes of the long form of keyschema::long_keys; use an LMDB built with the default "
                        "MDB_MAXKEYSIZE");
    }
    std::vector<lmdb_detail::env_state::long_route> out;
    for (const long_key_route& r : routes) out.push_back({std::string(r.prefix), r.encode, !r.encode || r.plain_too});
    s_->set_long_routes(std::move(out));
  }

  // What write() accepts: max_key_bytes = mdb_env_get_maxkeysize (511 bytes in a default LMDB
  // build); max_long_key_bytes (keyspaces with long keys, long_keys()) = 4 GiB - 1 - 4 + 502, as
  // the key's bytes beyond the first 502 share the LMDB value with the value (checked together by
  // write()); max_value_bytes = 4 GiB - 1 (LMDB's MAXDATASIZE; the map ceiling, max_map_size, bounds
  // them together). No limit on operations or bytes per write as such: LMDB's real bound is the
  // number of pages one write transaction may dirty (MDB_TXN_FULL, about 128k pages), which
  // depends on the tree shape, so it is reported by write() as limit_error instead.
  backend_limits limits() const noexcept {
    backend_limits l;
    l.max_key_bytes = s_->max_key;
    l.max_value_bytes = lmdb_detail::max_value_size;
    l.max_long_key_bytes = lmdb_detail::max_value_size - lmdb_detail::long_len + lmdb_detail::long_head;
    return l;
  }

  // The current size of the memory map in bytes (grows as data is written).
  std::size_t map_size() const noexcept { return s_->map_size.load(std::memory_order_relaxed); }

  // The canonical path of the environment directory.
  const std::string& path() const noexcept { return s_->path; }

  // Whether the environment was opened with lmdb_options::read_only (write() then fails).
  bool read_only() const noexcept { return s_->read_only; }

  // The LMDB environment and the database handle, for power users. Transactions begun on them
  // directly are invisible to the resize logic: end them before the next write(). The
  // environment can write, so it is not given through a const backend (a store's backend()),
  // as the other adapters' native handles are not.
  MDB_env* native() noexcept { return s_->env; }
  MDB_dbi native_dbi() const noexcept { return s_->dbi; }

 private:
  // The cursors of the placements range reaches in *snap (or a private snapshot), merged.
  using placed = detail::placement_cursor<lmdb_cursor>;
  placed placed_cursor(const key_range& range, const snapshot_type* snap) const {
    if (s_->single()) [[likely]] {
      if (snap != nullptr) return placed(lmdb_cursor(snap->h_, true, s_->dbi, range, s_->max_key));
      return placed(lmdb_cursor(*s_, range));
    }
    if (snap != nullptr) return lmdb_cursor::merged(*s_, snap->h_, true, range);
    // A range within one placement (a store's scan of a keyspace) that cannot reach the main
    // database's entries of the named databases (0xff...): one cursor on a private transaction.
    if (const std::vector<std::size_t> on = s_->router.reached(range);
        on.size() == 1 && s_->present[on[0]] &&
        (on[0] != 0 || (!range.upper.empty() && range.upper <= lmdb_detail::placement_db_prefix.substr(0, 1))))
      return placed(lmdb_cursor(*s_, range, s_->dbis[on[0]]));
    return lmdb_cursor::merged(*s_, lmdb_detail::new_read_handle(*s_), false, range);
  }

  // get() in *snap.
  [[gnu::noinline]] bool get_in(std::string_view key, std::string& value, const snapshot_type& snap) const {
    if (!lmdb_detail::plain_key(*s_, key) && !lmdb_detail::storable_key(*s_, key)) return false;
    std::lock_guard lk(snap.h_->mu);
    return lmdb_detail::lookup(*s_, snap.h_->txn, key, value);
  }

  std::unique_ptr<lmdb_detail::env_state> s_;
};

static_assert(backend<lmdb_backend>, "keyschema::lmdb_backend: does not meet the backend contract; see <keyschema/backend.hpp>");
static_assert(backend_with_placements<lmdb_backend>,
              "keyschema::lmdb_backend: does not model backend_with_placements; see <keyschema/backend.hpp>");
static_assert(backend_with_long_keys<lmdb_backend>,
              "keyschema::lmdb_backend: does not model backend_with_long_keys; see <keyschema/backend.hpp>");
static_assert(backend_with_write_guards<lmdb_backend>,
              "keyschema::lmdb_backend: other processes can open its environment, so it must guard writes "
              "(backend_with_write_guards); see <keyschema/backend.hpp>");

KEYSCHEMA_END_NAMESPACE
