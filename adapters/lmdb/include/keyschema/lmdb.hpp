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
//                    transaction taken at creation. key() and value() point into the memory map
//                    (no copy) and stay valid until next(): the transaction pins the pages.
//   - get()          mdb_get in the snapshot's transaction, or in a short read-only transaction
//                    (reset and renewed from a small pool rather than allocated each time).
//   - begin_write()  one LMDB write transaction, held until its commit() or destruction: LMDB's
//                    write lock serializes it against writers of every process. keyschema::store
//                    runs its transactions in it, so they are serializable across processes.
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
#include <keyschema/engine_probe.hpp>
#include <keyschema/error.hpp>
#include <keyschema/lmdb/detail/data_file.hpp>
#include <keyschema/lmdb/detail/disk_full.hpp>
#include <keyschema/lmdb/detail/open_registry.hpp>
#include <keyschema/lmdb/detail/status.hpp>
#include <keyschema/lmdb/detail/txn_gate.hpp>
#include <keyschema/lmdb/options.hpp>
#include <keyschema/write_batch.hpp>

#include <lmdb.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

class lmdb_backend {
  struct env_state;

  // One LMDB transaction, shared by the cursors that read it and by the copies of a snapshot
  // (read-only) or by a write_transaction_type (write). mu serializes LMDB calls on a read
  // transaction across threads. A write transaction is ended by its write_transaction_type, which
  // sets txn to nullptr: LMDB has then freed the cursors opened in it.
  struct txn_handle {
    txn_handle(env_state* s, MDB_txn* t, bool w) noexcept : st(s), txn(t), write(w) {}
    txn_handle(const txn_handle&) = delete;
    txn_handle& operator=(const txn_handle&) = delete;
    ~txn_handle() {
      if (txn == nullptr) return;
      if (write) {
        st->end_write(txn);
      } else {
        st->release_read(txn);
      }
    }
    env_state* st;
    MDB_txn* txn;
    const bool write;
    std::mutex mu;
  };

 public:
  // A consistent, read-only view of the database as of its creation: one LMDB read transaction.
  // Copies share the transaction; it ends when the last copy and the last cursor on it are gone.
  // While it lives, LMDB cannot reuse the pages it sees (the file may grow) and the map cannot
  // be resized. REQUIRES: destroyed before the backend.
  class snapshot_type {
   public:
    // The LMDB transaction, for power users. Lock native_mutex() around calls when copies of
    // this snapshot are used from several threads. Valid while this snapshot lives.
    MDB_txn* native() const noexcept { return h_->txn; }
    std::mutex& native_mutex() const noexcept { return h_->mu; }

   private:
    friend class lmdb_backend;
    explicit snapshot_type(std::shared_ptr<txn_handle> h) noexcept : h_(std::move(h)) {}
    std::shared_ptr<txn_handle> h_;
  };

  // Iterates the keys k with lower <= k < upper (no upper bound when upper is empty), ascending,
  // or descending when the range is reversed. Reads one snapshot, or the state a
  // write_transaction_type locked. Move-only.
  // REQUIRES: destroyed before the backend. A cursor of a write transaction is not used (only
  // destroyed) once that transaction ended: its key() and value() pointed into pages the
  // transaction owned.
  class cursor_type {
   public:
    cursor_type(const cursor_type&) = delete;
    cursor_type& operator=(const cursor_type&) = delete;
    cursor_type(cursor_type&& o) noexcept
        : txn_(std::move(o.txn_)),
          shared_(o.shared_),
          cur_(std::exchange(o.cur_, nullptr)),
          lower_(std::move(o.lower_)),
          upper_(std::move(o.upper_)),
          reverse_(o.reverse_),
          valid_(std::exchange(o.valid_, false)),
          k_(o.k_),
          v_(o.v_) {}
    cursor_type& operator=(cursor_type&& o) noexcept {
      if (this != &o) {
        close();
        txn_ = std::move(o.txn_);
        shared_ = o.shared_;
        cur_ = std::exchange(o.cur_, nullptr);
        lower_ = std::move(o.lower_);
        upper_ = std::move(o.upper_);
        reverse_ = o.reverse_;
        valid_ = std::exchange(o.valid_, false);
        k_ = o.k_;
        v_ = o.v_;
      }
      return *this;
    }
    ~cursor_type() { close(); }

    // True while positioned on an entry inside the range.
    bool valid() const noexcept { return valid_; }
    // REQUIRES: valid(). Both point into the memory map; valid until next() or destruction.
    std::string_view key() const noexcept { return view(k_); }
    std::string_view value() const noexcept { return view(v_); }

    // Moves to the next entry in the cursor's direction; valid() turns false past the range.
    // REQUIRES: valid(). Errors: backend_error naming mdb_cursor_get (LMDB failed to read a page:
    // a corrupt file or an I/O error; the cursor is then invalid); keyschema::error when the
    // cursor belongs to a write transaction that has ended.
    void next() {
      if (txn_->txn == nullptr) {
        valid_ = false;
        throw error("keyschema::lmdb_backend::cursor: the write transaction of this cursor has ended");
      }
      auto lk = lock();
      settle(step(reverse_ ? MDB_PREV : MDB_NEXT));
    }

    // The LMDB cursor, for power users. Valid while this cursor lives.
    MDB_cursor* native() const noexcept { return cur_; }

   private:
    friend class lmdb_backend;

    cursor_type(std::shared_ptr<txn_handle> txn, bool shared, MDB_dbi dbi, const key_range& r,
                std::size_t max_key)
        : txn_(std::move(txn)), shared_(shared), lower_(r.lower), upper_(r.upper), reverse_(r.reverse) {
      auto lk = lock();
      if (const int rc = ::mdb_cursor_open(txn_->txn, dbi, &cur_); rc != MDB_SUCCESS) {
        cur_ = nullptr;
        lmdb_detail::throw_status("keyschema::lmdb_backend::cursor: cannot open a cursor", "mdb_cursor_open", rc);
      }
      try {
        seek(max_key);
      } catch (...) {
        ::mdb_cursor_close(std::exchange(cur_, nullptr));  // the lock is held: not close()
        throw;
      }
    }

    static std::string_view view(const MDB_val& v) noexcept {
      return v.mv_size == 0 ? std::string_view() : std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
    }

    // Serializes LMDB calls when the transaction belongs to a snapshot (its copies may be in
    // use on other threads); a private transaction needs no lock.
    std::unique_lock<std::mutex> lock() const {
      return shared_ && txn_ ? std::unique_lock<std::mutex>(txn_->mu) : std::unique_lock<std::mutex>();
    }

    int step(MDB_cursor_op op) noexcept { return ::mdb_cursor_get(cur_, &k_, &v_, op); }

    // Positions at MDB_SET_RANGE of `bound`. No stored key is longer than max_key, so a longer
    // bound is cut to max_key bytes; the callers then step over the one key that can be
    // ordered between the cut bound and the real one.
    int seek_range(std::string_view bound, std::size_t max_key) noexcept {
      bound = bound.substr(0, max_key);
      k_.mv_size = bound.size();
      k_.mv_data = const_cast<char*>(bound.data());
      return step(MDB_SET_RANGE);
    }

    void seek(std::size_t max_key) {
      int rc;
      if (!reverse_) {
        rc = lower_.empty() ? step(MDB_FIRST) : seek_range(lower_, max_key);
        while (rc == MDB_SUCCESS && key() < std::string_view(lower_)) rc = step(MDB_NEXT);
      } else if (upper_.empty()) {
        rc = step(MDB_LAST);
      } else {
        // The last key < upper: from the first key >= upper (or the end), step back.
        rc = seek_range(upper_, max_key);
        if (rc == MDB_NOTFOUND) rc = step(MDB_LAST);
        while (rc == MDB_SUCCESS && key() >= std::string_view(upper_)) rc = step(MDB_PREV);
      }
      settle(rc);
    }

    // Applies the result of a move: end of data, an error, or an entry checked against the
    // bound in the direction of travel.
    void settle(int rc) {
      valid_ = false;
      if (rc == MDB_NOTFOUND) return;
      if (rc != MDB_SUCCESS) lmdb_detail::throw_status("keyschema::lmdb_backend: cursor step failed", "mdb_cursor_get", rc);
      const std::string_view k = key();
      valid_ = reverse_ ? k >= std::string_view(lower_) : (upper_.empty() || k < std::string_view(upper_));
    }

    void close() noexcept {
      if (cur_ == nullptr) return;
      auto lk = shared_ && txn_ ? std::unique_lock<std::mutex>(txn_->mu) : std::unique_lock<std::mutex>();
      if (txn_->txn != nullptr) ::mdb_cursor_close(cur_);  // else LMDB freed it with the write transaction
      cur_ = nullptr;
      valid_ = false;
    }

    std::shared_ptr<txn_handle> txn_;
    bool shared_ = false;
    MDB_cursor* cur_ = nullptr;
    std::string lower_, upper_;
    bool reverse_ = false;
    bool valid_ = false;
    MDB_val k_{0, nullptr};
    MDB_val v_{0, nullptr};
  };

  // A write transaction of its own: LMDB's write lock (which serializes writers across every
  // process that opens the environment), held from begin_write() until commit() or destruction.
  // Reads through it see the state it locked; nobody else can commit meanwhile, so that state is
  // still current at commit(). keyschema::store runs its transactions on it (see
  // backend_with_write_transaction in <keyschema/backend.hpp>). Move-only; destroying an open
  // one aborts it.
  // REQUIRES: begun, used, committed and destroyed by one thread (LMDB binds a write transaction
  // and its lock to the thread that began it). The thread holding it does not call write() or
  // begin_write() of the same backend (it would wait for itself); get(), snapshot() and cursor()
  // are fine. Cursors from cursor() are not used after the transaction ended. Destroyed before the
  // backend. While it is open, write() and begin_write() in this and every other process wait:
  // keep it short.
  class write_transaction_type {
   public:
    write_transaction_type(write_transaction_type&&) noexcept = default;
    write_transaction_type& operator=(write_transaction_type&&) = delete;
    ~write_transaction_type() { end(); }

    // True until commit() succeeded, or a failure or destruction ended the transaction.
    bool is_open() const noexcept { return h_ != nullptr && h_->txn != nullptr; }

    // Reads key in the locked state. Returns false when it is absent.
    // REQUIRES: is_open(). Errors: backend_error "mdb_get" (a damaged page, an I/O error).
    bool get(std::string_view key, std::string& value) const {
      require_open();
      return lookup(*st_, h_->txn, key, value);
    }

    // A cursor over range in the locked state (see cursor_type).
    // REQUIRES: is_open(). Errors: backend_error "mdb_cursor_open" / "mdb_cursor_get".
    cursor_type cursor(const key_range& range) const {
      require_open();
      return cursor_type(h_, false, st_->dbi, range, st_->max_key);
    }

    // Applies batch atomically in this transaction and commits it with the durability of opts
    // (as lmdb_backend::write). On success the transaction has ended and LMDB's write lock is
    // released. When the map is full, LMDB ends the transaction: the map is grown and a new one
    // begun, and the batch is applied there only if no other process committed in between (the
    // new transaction's id, mdb_txn_id, equals the first one's); otherwise conflict_error.
    //
    // Errors (nothing was written in every case):
    //   limit_error - a key or value outside LMDB's limits (see write()); checked first, the
    //       transaction stays open. Remedy: shorten the key or value, or roll back.
    //   conflict_error - the map had to grow and another process committed meanwhile: what this
    //       transaction read may be stale. The transaction has ended. Remedy: run it again.
    //   limit_error - the map is full at max_map_size, or cannot grow while snapshots of this
    //       process stay open, or MDB_TXN_FULL (see write()). The transaction has ended.
    //   backend_error "mdb_put"/"mdb_del"/"mdb_txn_commit" - LMDB failed (disk full: what() says
    //       so; EIO; MDB_PANIC). The transaction has ended.
    //   backend_error "mdb_txn_begin"/"mdb_env_set_mapsize" - beginning again after a growth
    //       failed. The transaction has ended.
    // REQUIRES: is_open().
    void commit(const write_batch& batch, const write_options& opts) {
      require_open();
      check_limits(*st_, batch);
      try {
        commit_open(batch, opts);
      } catch (...) {
        end();
        throw;
      }
    }

    // Ends the transaction without writing anything (also done by the destructor).
    void abort() noexcept { end(); }

    // The LMDB write transaction, for power users: valid while is_open(). Writing through it
    // directly is not seen by commit()'s replay after a map growth: write through commit().
    MDB_txn* native() const noexcept { return h_ != nullptr ? h_->txn : nullptr; }

   private:
    friend class lmdb_backend;

    write_transaction_type(env_state* s, std::unique_lock<std::mutex> lock) : st_(s), lock_(std::move(lock)) {
      adopt(st_->begin_write_txn());
      id_ = ::mdb_txn_id(h_->txn);
    }

    void require_open() const {
      if (!is_open()) throw error("keyschema::lmdb_backend: the write transaction has already ended");
    }

    // Takes ownership of t (registered with the gate) in a new handle. On failure t is aborted.
    void adopt(MDB_txn* t) {
      try {
        h_ = std::make_shared<txn_handle>(st_, t, true);
      } catch (...) {
        st_->end_write(t);
        throw;
      }
    }

    // Ends the LMDB transaction (if still open; cursors of it then become unusable) and
    // releases the backend's writer mutex.
    void end() noexcept {
      abort_txn();
      if (lock_.owns_lock()) lock_.unlock();
    }

    // Ends the LMDB transaction only; the writer mutex stays held.
    void abort_txn() noexcept {
      if (!is_open()) return;
      st_->end_write(h_->txn);
      h_->txn = nullptr;
    }

    void commit_open(const write_batch& batch, const write_options& opts) {
      env_state& s = *st_;
      nosync_commit nosync(s.env, opts.sync);
      for (;;) {
        const char* call = nullptr;
        int rc = apply(s, h_->txn, batch, call);
        if (rc == MDB_SUCCESS) {
          call = "mdb_txn_commit";
          rc = ::mdb_txn_commit(h_->txn);  // frees the transaction whatever the outcome
          h_->txn = nullptr;
          if (rc == MDB_SUCCESS) {
            s.note_usage();  // still registered with the gate
            s.gate.leave();
            lock_.unlock();
            return;
          }
          s.gate.leave();
        } else {
          abort_txn();
        }
        if (rc != MDB_MAP_FULL) throw_write_failure(s, rc, call);
        // LMDB ended the transaction. Grow the map, then begin again; the writer mutex is held
        // throughout, so only another process can have committed meanwhile.
        s.grow_for_write(erases_only(batch));
        adopt(s.begin_write_txn());
        if (const std::size_t id = ::mdb_txn_id(h_->txn); id != id_) {
          throw conflict_error(
              "keyschema::lmdb_backend: the LMDB map of " + s.path +
              " had to grow, which ends the write transaction, and another process committed " +
              std::to_string(id - id_) + " transaction(s) before it could begin again; what this transaction "
              "read may be stale. Nothing was written: run the transaction again");
        }
      }
    }

    env_state* st_;
    std::unique_lock<std::mutex> lock_;  // env_state::write_mu
    std::shared_ptr<txn_handle> h_;
    std::size_t id_ = 0;  // mdb_txn_id of the first transaction: the state that was read
  };

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
      : s_(open(path, options)) {}

  lmdb_backend(const lmdb_backend&) = delete;
  lmdb_backend& operator=(const lmdb_backend&) = delete;
  // A moved-from backend may only be destroyed or assigned to.
  lmdb_backend(lmdb_backend&&) noexcept = default;
  lmdb_backend& operator=(lmdb_backend&&) noexcept = default;
  // Closes the environment. REQUIRES: every snapshot and cursor of this backend is destroyed.
  ~lmdb_backend() = default;

  // Reads key in *snap, or in the latest committed state when snap is nullptr. Returns false
  // when the key is absent (an empty key or one longer than limits().max_key_bytes is always absent).
  // Errors: backend_error "mdb_get" (corrupt page, I/O error); with snap == nullptr also those
  // of snapshot() (limit_error when no reader slot is free or a resize does not finish).
  bool get(std::string_view key, std::string& value, const snapshot_type* snap) const {
    if (key.empty() || key.size() > s_->max_key) return false;
    if (snap != nullptr) {
      std::lock_guard lk(snap->h_->mu);
      return lookup(*s_, snap->h_->txn, key, value);
    }
    read_lease lease(*s_);
    return lookup(*s_, lease.txn, key, value);
  }

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
  void write(const write_batch& batch, const write_options& opts) {
    check_limits(*s_, batch);
    if (s_->read_only) {
      throw backend_error("keyschema::lmdb_backend::write: " + s_->path +
                              " was opened with lmdb_options::read_only; nothing was written",
                          "mdb_txn_begin", EACCES);
    }
    std::lock_guard wl(s_->write_mu);
    if (batch.empty()) {
      if (opts.sync) {
        s_->enter_gate();
        gate_lease lease(s_->gate);
        if (const int rc = ::mdb_env_sync(s_->env, 1); rc != MDB_SUCCESS) {
          lmdb_detail::throw_status("keyschema::lmdb_backend::write: cannot flush " + s_->path, "mdb_env_sync", rc);
        }
      }
      return;
    }
    // The previous commit left the map more than 3/4 used: grow it now if nothing is open, so
    // that this commit records the new size and a later one rarely waits for snapshots.
    if (s_->grow_pending.load(std::memory_order_relaxed)) s_->try_grow_early();
    nosync_commit nosync(s_->env, opts.sync);
    for (int resized = 0;;) {
      const int rc = commit_once(batch);
      if (rc == MDB_SUCCESS) return;
      if (rc == MDB_MAP_FULL) {
        s_->grow_for_write(erases_only(batch));
      } else if (++resized <= max_resize_retries) {
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
  snapshot_type snapshot() const { return snapshot_type(new_read_handle()); }

  // A cursor over range in *snap, or in a private snapshot taken now when snap is nullptr.
  // The bounds are copied. Errors: those of snapshot(), and backend_error "mdb_cursor_open" /
  // "mdb_cursor_get".
  cursor_type cursor(const key_range& range, const snapshot_type* snap) const {
    if (snap != nullptr) return cursor_type(snap->h_, true, s_->dbi, range, s_->max_key);
    return cursor_type(new_read_handle(), false, s_->dbi, range, s_->max_key);
  }

  // What write() accepts: max_key_bytes = mdb_env_get_maxkeysize (511 bytes in a default LMDB
  // build); max_value_bytes = 4 GiB - 1 (LMDB's MAXDATASIZE; the map ceiling, max_map_size, bounds
  // them together). No limit on operations or bytes per write as such: LMDB's real bound is the
  // number of pages one write transaction may dirty (MDB_TXN_FULL, about 128k pages), which
  // depends on the tree shape, so it is reported by write() as limit_error instead.
  backend_limits limits() const noexcept {
    backend_limits l;
    l.max_key_bytes = s_->max_key;
    l.max_value_bytes = max_value_size;
    return l;
  }

  // The current size of the memory map in bytes (grows as data is written).
  std::size_t map_size() const noexcept { return s_->map_size.load(std::memory_order_relaxed); }

  // The canonical path of the environment directory.
  const std::string& path() const noexcept { return s_->path; }

  // Whether the environment was opened with lmdb_options::read_only (write() then fails).
  bool read_only() const noexcept { return s_->read_only; }

  // The LMDB environment and the database handle, for power users. Transactions begun on them
  // directly are invisible to the resize logic: end them before the next write().
  MDB_env* native() const noexcept { return s_->env; }
  MDB_dbi native_dbi() const noexcept { return s_->dbi; }

 private:
  static constexpr int max_resize_retries = 16;
  static constexpr std::size_t max_value_size = 0xffffffffu;  // LMDB's MAXDATASIZE
  static constexpr std::size_t default_page = 4096;           // rounding before the env is open

  static std::size_t round_up(std::size_t n, std::size_t page) noexcept {
    const std::size_t r = n % page;
    return r == 0 ? n : n + (page - r);
  }

  // Everything of one open environment. Heap-allocated so that snapshots and cursors keep a
  // stable pointer to it while the backend object moves.
  struct env_state {
    explicit env_state(std::chrono::milliseconds wait) : gate(wait) {}
    env_state(const env_state&) = delete;
    env_state& operator=(const env_state&) = delete;
    ~env_state() {
      for (MDB_txn* t : pool) ::mdb_txn_abort(t);
      if (env != nullptr) ::mdb_env_close(env);
    }

    lmdb_detail::open_registration registration;  // released last, after the env is closed
    std::string path;
    MDB_env* env = nullptr;
    MDB_dbi dbi = 0;
    bool read_only = false;
    std::size_t max_key = 0;
    std::size_t page = default_page;
    std::size_t ceiling = 0;
    std::atomic<std::size_t> map_size{0};
    lmdb_detail::txn_gate gate;
    std::mutex pool_mu;
    std::vector<MDB_txn*> pool;  // reset read transactions, capacity reserved at open
    std::size_t pool_cap = 0;
    std::mutex write_mu;
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

    // Begins (or renews from the pool) a read-only transaction registered with the gate.
    MDB_txn* acquire_read() {
      bool drained = false;
      int resized = 0;
      for (;;) {
        enter_gate();
        MDB_txn* t = nullptr;
        {
          std::lock_guard lk(pool_mu);
          if (!pool.empty()) {
            t = pool.back();
            pool.pop_back();
          }
        }
        const bool renewed = t != nullptr;
        const int rc = renewed ? ::mdb_txn_renew(t) : ::mdb_txn_begin(env, nullptr, MDB_RDONLY, &t);
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
    void release_read(MDB_txn* t) noexcept {
      ::mdb_txn_reset(t);
      gate.leave();
      {
        std::lock_guard lk(pool_mu);
        if (pool.size() < pool_cap) {
          pool.push_back(t);  // never allocates: capacity reserved at open
          t = nullptr;
        }
      }
      if (t != nullptr) ::mdb_txn_abort(t);
      if (grow_pending.load(std::memory_order_relaxed)) {
        try {
          try_grow_early();
        } catch (...) {
          // A failed remap poisoned the gate: the next operation reports it.
        }
      }
    }

    // Frees the reader slots of the idle pooled transactions.
    void drain_pool() noexcept {
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

  // A short read transaction from the pool, released at scope exit.
  struct read_lease {
    explicit read_lease(env_state& s) : st(s), txn(s.acquire_read()) {}
    read_lease(const read_lease&) = delete;
    read_lease& operator=(const read_lease&) = delete;
    ~read_lease() { st.release_read(txn); }
    env_state& st;
    MDB_txn* txn;
  };

  // Leaves the gate at scope exit (write transactions).
  struct gate_lease {
    explicit gate_lease(lmdb_detail::txn_gate& g) noexcept : gate(g) {}
    gate_lease(const gate_lease&) = delete;
    gate_lease& operator=(const gate_lease&) = delete;
    ~gate_lease() { gate.leave(); }
    lmdb_detail::txn_gate& gate;
  };

  // Aborts a write transaction at scope exit unless it was handed to mdb_txn_commit.
  struct write_txn {
    write_txn() = default;
    write_txn(const write_txn&) = delete;
    write_txn& operator=(const write_txn&) = delete;
    ~write_txn() {
      if (txn != nullptr) ::mdb_txn_abort(txn);
    }
    MDB_txn* release() noexcept { return std::exchange(txn, nullptr); }
    MDB_txn* txn = nullptr;
  };

  // Sets MDB_NOSYNC for one commit made with write_options{.sync = false} and clears it again
  // afterwards: the environment is opened without it, so every other commit is LMDB's durable
  // one. LMDB documents that MDB_NOSYNC may be changed at any time; only the writer (holding
  // env_state::write_mu) changes it.
  struct nosync_commit {
    nosync_commit(MDB_env* e, bool sync) noexcept : env(e), on(!sync) {
      if (on) ::mdb_env_set_flags(env, MDB_NOSYNC, 1);
    }
    nosync_commit(const nosync_commit&) = delete;
    nosync_commit& operator=(const nosync_commit&) = delete;
    ~nosync_commit() {
      if (on) ::mdb_env_set_flags(env, MDB_NOSYNC, 0);
    }
    MDB_env* env;
    bool on;
  };

  // One attempt at committing batch. Returns MDB_SUCCESS, or MDB_MAP_FULL / MDB_MAP_RESIZED
  // (nothing applied; the caller resizes and retries). Throws for every other failure.
  // Sets s_->grow_pending when the committed state uses more than 3/4 of the map.
  int commit_once(const write_batch& batch) {
    env_state& s = *s_;
    s.enter_gate();
    gate_lease lease(s.gate);
    write_txn w;
    int rc = ::mdb_txn_begin(s.env, nullptr, 0, &w.txn);
    if (rc == MDB_MAP_RESIZED) return rc;
    if (rc != MDB_SUCCESS) {
      w.txn = nullptr;
      lmdb_detail::throw_status("keyschema::lmdb_backend::write: cannot begin a write transaction on " + s.path,
                           "mdb_txn_begin", rc);
    }
    const char* call = nullptr;
    rc = apply(s, w.txn, batch, call);
    if (rc == MDB_MAP_FULL) return rc;
    if (rc != MDB_SUCCESS) throw_write_failure(s, rc, call);
    rc = ::mdb_txn_commit(w.release());  // frees the transaction whatever the outcome
    if (rc == MDB_MAP_FULL) return rc;
    if (rc != MDB_SUCCESS) throw_write_failure(s, rc, "mdb_txn_commit");
    s.note_usage();  // still registered with the gate: the map cannot move meanwhile
    return MDB_SUCCESS;
  }

  // Applies every operation of batch in the write transaction txn. Returns MDB_SUCCESS, or the
  // first failure with `call` naming the LMDB function (the transaction must then be aborted).
  static int apply(const env_state& s, MDB_txn* txn, const write_batch& batch, const char*& call) noexcept {
    for (write_batch::op o : batch) {
      MDB_val k{o.key.size(), const_cast<char*>(o.key.data())};
      int rc;
      if (o.kind == write_batch::op_kind::put) {
        MDB_val v{o.value.size(), const_cast<char*>(o.value.data())};
        rc = ::mdb_put(txn, s.dbi, &k, &v, 0);
        call = "mdb_put";
      } else {
        rc = ::mdb_del(txn, s.dbi, &k, nullptr);
        if (rc == MDB_NOTFOUND) rc = MDB_SUCCESS;
        call = "mdb_del";
      }
      if (rc != MDB_SUCCESS) return rc;
    }
    return MDB_SUCCESS;
  }

  static bool erases_only(const write_batch& batch) noexcept {
    for (write_batch::op o : batch) {
      if (o.kind != write_batch::op_kind::erase) return false;
    }
    return true;
  }

  [[noreturn]] static void throw_write_failure(const env_state& s, int rc, const char* call) {
    if (rc == MDB_TXN_FULL) {
      throw limit_error("keyschema::lmdb_backend::write: the batch touches more pages than one LMDB transaction "
                        "can hold (MDB_TXN_FULL); split it into smaller batches. Nothing was written");
    }
    const std::string what = "keyschema::lmdb_backend::write: " + std::string(call) + " failed on " + s.path;
    if (const auto full = lmdb_detail::disk_full(s.path, rc)) {
      throw backend_error(lmdb_detail::lmdb_message(what + ": disk full (" + *full + ")", rc) + "; nothing was written",
                          call, rc);
    }
    lmdb_detail::throw_status(what + "; nothing was written", call, rc);
  }

  static void check_limits(const env_state& s, const write_batch& batch) {
    std::size_t i = 0;
    for (write_batch::op o : batch) {
      if (o.key.empty()) {
        throw limit_error("keyschema::lmdb_backend::write: operation " + std::to_string(i) +
                          " of the batch has an empty key, which LMDB cannot store (limit: 1 to " +
                          std::to_string(s.max_key) + " bytes). Nothing was written");
      }
      if (o.key.size() > s.max_key) {
        throw limit_error("keyschema::lmdb_backend::write: a key of " + std::to_string(o.key.size()) +
                          " bytes exceeds LMDB's maximum key size of " + std::to_string(s.max_key) +
                          " bytes (mdb_env_get_maxkeysize); shorten the key. Nothing was written");
      }
      if (o.kind == write_batch::op_kind::put && o.value.size() > max_value_size) {
        throw limit_error("keyschema::lmdb_backend::write: a value of " + std::to_string(o.value.size()) +
                          " bytes exceeds LMDB's maximum value size of " + std::to_string(max_value_size) +
                          " bytes. Nothing was written");
      }
      ++i;
    }
  }

  static bool lookup(const env_state& s, MDB_txn* txn, std::string_view key, std::string& value) {
    if (key.empty() || key.size() > s.max_key) return false;
    MDB_val k{key.size(), const_cast<char*>(key.data())};
    MDB_val v{0, nullptr};
    const int rc = ::mdb_get(txn, s.dbi, &k, &v);
    if (rc == MDB_NOTFOUND) return false;
    if (rc != MDB_SUCCESS) lmdb_detail::throw_status("keyschema::lmdb_backend::get: read failed on " + s.path, "mdb_get", rc);
    value.assign(static_cast<const char*>(v.mv_data), v.mv_size);
    return true;
  }

  std::shared_ptr<txn_handle> new_read_handle() const {
    MDB_txn* t = s_->acquire_read();
    try {
      return std::make_shared<txn_handle>(s_.get(), t, false);
    } catch (...) {
      s_->release_read(t);
      throw;
    }
  }

  static std::unique_ptr<env_state> open(const std::filesystem::path& path, const lmdb_options& options) {
    namespace fs = std::filesystem;
    const std::string where = "keyschema::lmdb_backend: ";
    require_engine(path, storage_engine::lmdb, "keyschema::lmdb_backend");  // before LMDB creates anything
    if (options.max_map_size < options.map_size) {
      throw backend_error(where + "lmdb_options::max_map_size (" + std::to_string(options.max_map_size) +
                              " bytes) is below lmdb_options::map_size (" + std::to_string(options.map_size) +
                              " bytes) for " + path.string() + "; raise max_map_size or lower map_size",
                          "mdb_env_set_mapsize", EINVAL);
    }
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      if (fs::exists(path, ec)) {
        throw backend_error(where + path.string() + " exists and is not a directory", "mdb_env_open", ENOTDIR);
      }
      if (options.read_only || !options.create_if_missing) {
        throw backend_error(where + path.string() + " does not exist (" +
                                (options.read_only ? "opened read-only" : "lmdb_options::create_if_missing is false") + ")",
                            "mdb_env_open", ENOENT);
      }
      fs::create_directories(path, ec);
      if (ec) {
        throw backend_error(where + "cannot create the directory " + path.string() + ": " + ec.message(),
                            "std::filesystem::create_directories", ec.value());
      }
    } else if ((options.read_only || !options.create_if_missing) && !fs::exists(path / "data.mdb", ec)) {
      throw backend_error(where + path.string() + " holds no LMDB database (data.mdb) and " +
                              (options.read_only ? "it was opened read-only" : "lmdb_options::create_if_missing is false"),
                          "mdb_env_open", ENOENT);
    }
    const fs::path canonical = fs::canonical(path, ec);
    if (ec) {
      throw backend_error(where + "cannot resolve " + path.string() + ": " + ec.message(), "std::filesystem::canonical",
                          ec.value());
    }

    auto registration = lmdb_detail::open_registration::acquire(canonical.string());
    if (!registration) {
      throw locked_error(where + canonical.string() +
                             " is already open in this process; LMDB forbids a second handle on one "
                             "environment (its locks belong to the process): share the open backend or "
                             "destroy it first",
                         "mdb_env_open", 0);
    }

    auto s = std::make_unique<env_state>(options.resize_wait);
    s->registration = std::move(*registration);
    s->path = canonical.string();
    s->read_only = options.read_only;

    // A truncated or impossible data.mdb would crash the process once mapped: refuse it first.
    lmdb_detail::check_data_file(s->path);

    int rc = ::mdb_env_create(&s->env);
    if (rc != MDB_SUCCESS) {
      s->env = nullptr;
      lmdb_detail::throw_status(where + "cannot create an LMDB environment handle", "mdb_env_create", rc);
    }
    ::mdb_env_set_assert(s->env, &lmdb_detail::report_assert);
    if (rc = ::mdb_env_set_maxreaders(s->env, options.max_readers); rc != MDB_SUCCESS) {
      lmdb_detail::throw_status(where + "invalid lmdb_options::max_readers " + std::to_string(options.max_readers),
                           "mdb_env_set_maxreaders", rc);
    }
    const std::size_t wanted = round_up(options.map_size, default_page);
    if (rc = options.map_size == 0 ? EINVAL : ::mdb_env_set_mapsize(s->env, wanted); rc != MDB_SUCCESS) {
      lmdb_detail::throw_status(where + "invalid lmdb_options::map_size " + std::to_string(options.map_size),
                           "mdb_env_set_mapsize", rc);
    }
    const unsigned flags = MDB_NOTLS | (options.read_only ? MDB_RDONLY : 0u);
    rc = ::mdb_env_open(s->env, s->path.c_str(), flags, static_cast<mdb_mode_t>(options.mode));
    if (rc != MDB_SUCCESS) {
      ::mdb_env_close(s->env);  // required after a failed mdb_env_open
      s->env = nullptr;
      if (rc == EAGAIN || rc == EBUSY) {
        throw locked_error(lmdb_detail::lmdb_message(where + "the LMDB environment " + s->path + " is locked", rc),
                           "mdb_env_open", rc);
      }
      lmdb_detail::throw_status(where + "cannot open the LMDB environment " + s->path, "mdb_env_open", rc);
    }

    int dead = 0;
    ::mdb_reader_check(s->env, &dead);  // frees reader slots of crashed processes
    MDB_stat stat;
    if (rc = ::mdb_env_stat(s->env, &stat); rc != MDB_SUCCESS) {
      lmdb_detail::throw_status(where + "cannot read the environment of " + s->path, "mdb_env_stat", rc);
    }
    s->page = stat.ms_psize != 0 ? stat.ms_psize : default_page;

    // Keep a larger map recorded in the file (another process or an earlier run grew it); LMDB
    // would otherwise shrink the map to the configured size. No transaction exists yet.
    if (rc = ::mdb_env_set_mapsize(s->env, 0); rc == MDB_SUCCESS) {
      MDB_envinfo info;
      ::mdb_env_info(s->env, &info);
      if (info.me_mapsize < wanted) rc = ::mdb_env_set_mapsize(s->env, wanted);
    }
    if (rc != MDB_SUCCESS) lmdb_detail::throw_status(where + "cannot map " + s->path, "mdb_env_set_mapsize", rc);
    MDB_envinfo info;
    ::mdb_env_info(s->env, &info);
    s->map_size.store(info.me_mapsize, std::memory_order_relaxed);
    s->ceiling = std::max(options.max_map_size - options.max_map_size % s->page, info.me_mapsize);
    s->max_key = static_cast<std::size_t>(::mdb_env_get_maxkeysize(s->env));

    // The unnamed database, opened once. A map grown meanwhile by another process is adopted.
    for (int attempt = 0;; ++attempt) {
      MDB_txn* txn = nullptr;
      rc = ::mdb_txn_begin(s->env, nullptr, options.read_only ? MDB_RDONLY : 0u, &txn);
      if (rc == MDB_MAP_RESIZED && attempt < max_resize_retries) {
        if (rc = ::mdb_env_set_mapsize(s->env, 0); rc != MDB_SUCCESS) {
          lmdb_detail::throw_status(where + "cannot map " + s->path, "mdb_env_set_mapsize", rc);
        }
        continue;
      }
      if (rc == MDB_READERS_FULL) {
        throw limit_error(where + "all reader slots of " + s->path +
                          " are in use (MDB_READERS_FULL); release snapshots/cursors in other processes or "
                          "raise lmdb_options::max_readers");
      }
      if (rc != MDB_SUCCESS) lmdb_detail::throw_status(where + "cannot begin a transaction on " + s->path, "mdb_txn_begin", rc);
      if (rc = ::mdb_dbi_open(txn, nullptr, 0, &s->dbi); rc != MDB_SUCCESS) {
        ::mdb_txn_abort(txn);
        lmdb_detail::throw_status(where + "cannot open the main database of " + s->path, "mdb_dbi_open", rc);
      }
      if (rc = ::mdb_txn_commit(txn); rc != MDB_SUCCESS) {
        lmdb_detail::throw_status(where + "cannot open the main database of " + s->path, "mdb_txn_commit", rc);
      }
      break;
    }
    ::mdb_env_info(s->env, &info);
    s->map_size.store(info.me_mapsize, std::memory_order_relaxed);

    unsigned readers = 0;
    ::mdb_env_get_maxreaders(s->env, &readers);
    s->pool_cap = std::min<std::size_t>(4, readers / 4);
    s->pool.reserve(s->pool_cap);
    return s;
  }

  std::unique_ptr<env_state> s_;
};

static_assert(backend<lmdb_backend>, "keyschema::lmdb_backend: does not meet the backend contract; see <keyschema/backend.hpp>");

KEYSCHEMA_END_NAMESPACE
