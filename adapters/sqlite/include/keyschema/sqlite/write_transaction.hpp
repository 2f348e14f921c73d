// keyschema/sqlite/write_transaction.hpp: keyschema::sqlite_write_transaction, SQLite's write
// lock held across reads and one commit.
//
// sqlite_backend::begin_write() returns one (sqlite_backend::write_transaction_type); keyschema::store
// runs its transactions on it, so they are serializable across processes. Reads see the state it
// locked, and commit() applies a write_batch in the same SQLite transaction (BEGIN IMMEDIATE on
// the backend's writer connection), over every placement's table.
//
// Thread-safety: begun, used, committed and destroyed by one thread. See the REQUIRES below.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/placement.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/sqlite/cursor.hpp>
#include <keyschema/sqlite/detail/backend_state.hpp>
#include <keyschema/sqlite/detail/connection.hpp>
#include <keyschema/write_batch.hpp>

#include <sqlite3.h>

#include <mutex>
#include <string>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class sqlite_backend;

// A write transaction of its own: SQLite's write lock (BEGIN IMMEDIATE on the writer
// connection), which serializes writers of every process, held from begin_write() until
// commit() or destruction. Reads through it see the state it locked; nobody else can commit
// meanwhile, so that state is still current at commit(). keyschema::store runs its
// transactions on it (see backend_with_write_transaction in <keyschema/backend.hpp>).
// Move-only; destroying an open one rolls it back.
// SQLite fixes a connection's synchronous level when a transaction begins ("Safety level may
// not be changed inside a transaction"), before commit() is told opts: a transaction begun with
// begin_write() commits with synchronous = FULL, also with {.sync = false}; one begun with
// begin_write(opts) commits at the level opts ask for (keyschema::store begins its own
// read-modify-writes that way, since it knows their options before it begins), and a commit
// told {.sync = true} of one begun with {.sync = false} syncs the log after committing.
// REQUIRES: begun, used, committed and destroyed by one thread, which meanwhile does not call
// write() or begin_write() of the same backend (it would wait for itself). Cursors from
// cursor() are destroyed before the transaction ends. Destroyed before the backend. While it
// is open, writers of this and every other process wait: keep it short.
class sqlite_write_transaction {
 public:
  sqlite_write_transaction(sqlite_write_transaction&& o) noexcept : s_(o.s_), lock_(std::move(o.lock_)), full_(o.full_) {}
  sqlite_write_transaction& operator=(sqlite_write_transaction&&) = delete;
  ~sqlite_write_transaction() { end(); }

  // True until commit() succeeded, or a failure or destruction ended the transaction.
  bool is_open() const noexcept { return lock_.owns_lock(); }

  // Reads key in the locked state (and the transaction's own state). False when absent.
  // REQUIRES: is_open(). Errors: backend_error "sqlite3_step" (a damaged page, an I/O error).
  bool get(std::string_view key, std::string& value) const {
    require_open();
    return s_->lookup(*s_->writer, key, value, sqlite_detail::lazy_where{"keyschema::sqlite_backend: reading ", &s_->path});
  }

  // A cursor over range in the locked state (see sqlite_cursor); over a range reaching several
  // placements (keyschema::placed), one per placement table, merged in key order.
  // REQUIRES: is_open(); the cursor is destroyed before the transaction ends.
  // Errors: as sqlite_cursor's constructor.
  detail::placement_cursor<sqlite_cursor> cursor(const key_range& range) const {
    require_open();
    if (s_->single()) [[likely]]
      return detail::placement_cursor<sqlite_cursor>(sqlite_cursor(*s_->writer, nullptr, range, &s_->path));
    return sqlite_cursor::merged(*s_->writer, nullptr, range, &s_->path, s_->router.reached(range));
  }

  // Applies batch and commits (durably: see above). On success the transaction has ended.
  // Errors (nothing was written in every case):
  //   limit_error - an operation larger than limits() allows; checked first, the transaction
  //       stays open. Remedy: shorten the key or value, or roll back.
  //   backend_error "sqlite3_step" - SQLite failed (disk full: what() says so; SQLITE_IOERR;
  //       SQLITE_CORRUPT). The transaction has been rolled back and ended.
  //   backend_error "sqlite3_file_control" - only for a transaction begun with {.sync = false}
  //       and committed with {.sync = true}: the batch was committed, but syncing the log after
  //       it failed, so it may not survive a power loss. The transaction has ended.
  // REQUIRES: is_open().
  void commit(const write_batch& batch, const write_options& opts) {
    require_open();
    s_->check_limits(batch);
    apply_and_commit(batch, opts);
    lock_.unlock();
  }

  // As commit(batch, opts), but first checks every condition of guards (backend.hpp,
  // write_guard) with a SELECT inside this transaction. Returns false when one does not hold:
  // nothing was written and the transaction has ended; true when batch was committed.
  // Errors: as commit(batch, opts). REQUIRES: is_open().
  bool commit(const write_batch& batch, const write_options& opts, write_guards guards) {
    require_open();
    s_->check_limits(batch);
    try {
      if (!s_->guards_hold(guards)) {
        end();
        return false;
      }
    } catch (...) {
      end();
      throw;
    }
    apply_and_commit(batch, opts);
    s_->remember_guards(guards, batch);  // still under the writer mutex
    lock_.unlock();
    return true;
  }

  // Ends the transaction without writing anything (also done by the destructor).
  void abort() noexcept { end(); }

  // The writer connection inside the transaction, for power users: valid while is_open().
  // Statements run through it commit with the transaction.
  sqlite3* native() const noexcept { return is_open() ? s_->writer->db() : nullptr; }

 private:
  friend class sqlite_backend;

  sqlite_write_transaction(sqlite_detail::backend_state* s, std::unique_lock<std::mutex> lock, bool sync)
      : s_(s), lock_(std::move(lock)), full_(sync) {
    s_->set_sync(full_);
    s_->begin_immediate();
  }

  void require_open() const {
    if (!is_open()) throw usage_error("keyschema::sqlite_backend: the write transaction has already ended");
  }

  // Applies batch and commits; the writer mutex stays held. On failure the transaction has been
  // rolled back and ended.
  // A commit at synchronous = NORMAL that opts ask to be durable syncs the log afterwards (still
  // under the writer mutex, so no other commit comes between).
  void apply_and_commit(const write_batch& batch, const write_options& opts) {
    try {
      s_->apply(batch);
      s_->writer->run(sqlite_detail::connection::commit_stmt, s_->where_write(batch));
    } catch (...) {
      end();
      throw;
    }
    if (full_) {
      s_->unsynced = false;  // a FULL commit syncs the whole log
    } else {
      s_->unsynced = true;
      if (opts.sync) {
        try {
          s_->sync_log();
        } catch (...) {
          lock_.unlock();  // committed, but not known durable: the error says the sync failed
          throw;
        }
      }
    }
  }

  void end() noexcept {
    if (!lock_.owns_lock()) return;
    s_->writer->rollback_quietly();
    lock_.unlock();
  }

  sqlite_detail::backend_state* s_;
  std::unique_lock<std::mutex> lock_;  // backend_state::write_mu
  bool full_ = true;                   // begun at synchronous = FULL
};

KEYSCHEMA_END_NAMESPACE
