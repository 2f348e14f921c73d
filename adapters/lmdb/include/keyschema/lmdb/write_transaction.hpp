// keyschema/lmdb/write_transaction.hpp: keyschema::lmdb_write_transaction, LMDB's write lock held
// across reads and one commit.
//
// lmdb_backend::begin_write() returns one (lmdb_backend::write_transaction_type); keyschema::store
// runs its transactions on it, so they are serializable across processes. Reads see the state it
// locked, and commit() applies a write_batch in the same LMDB write transaction, growing the map
// (and beginning again) when it is full.
//
// Thread-safety: begun, used, committed and destroyed by one thread (LMDB binds a write
// transaction and its lock to the thread that began it). See the REQUIRES below.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/lmdb/cursor.hpp>
#include <keyschema/lmdb/detail/commit.hpp>
#include <keyschema/lmdb/detail/env_state.hpp>
#include <keyschema/lmdb/detail/lookup.hpp>
#include <keyschema/lmdb/detail/txn_handle.hpp>
#include <keyschema/write_batch.hpp>

#include <lmdb.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class lmdb_backend;

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
class lmdb_write_transaction {
 public:
  lmdb_write_transaction(lmdb_write_transaction&&) noexcept = default;
  lmdb_write_transaction& operator=(lmdb_write_transaction&&) = delete;
  ~lmdb_write_transaction() { end(); }

  // True until commit() succeeded, or a failure or destruction ended the transaction.
  bool is_open() const noexcept { return h_ != nullptr && h_->txn != nullptr; }

  // Reads key in the locked state. Returns false when it is absent.
  // REQUIRES: is_open(). Errors: backend_error "mdb_get" (a damaged page, an I/O error).
  bool get(std::string_view key, std::string& value) const {
    require_open();
    return lmdb_detail::lookup(*st_, h_->txn, key, value);
  }

  // A cursor over range in the locked state (see lmdb_cursor).
  // REQUIRES: is_open(). Errors: backend_error "mdb_cursor_open" / "mdb_cursor_get".
  // With placements (keyschema::placed), one LMDB cursor per named database the range reaches,
  // merged in key order.
  // With long keys (keyschema::long_keys), the groups of long keys read whole and sorted.
  lmdb_detail::full_cursor cursor(const key_range& range) const {
    require_open();
    if (st_->long_routes.empty()) [[likely]] return lmdb_detail::full_cursor(placed_cursor(range));
    lmdb_detail::long_bounds b;
    const key_range raw = lmdb_detail::raw_range(*st_, range, b);
    auto inner = placed_cursor(raw);  // copies the bounds it needs before b moves
    return lmdb_detail::full_cursor(std::move(inner), st_, std::move(b), range.reverse);
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
    lmdb_detail::check_limits(*st_, batch);
    try {
      commit_open(batch, opts);
    } catch (...) {
      end();
      throw;
    }
  }

  // As commit(batch, opts), but first checks every condition of guards (backend.hpp,
  // write_guard) with mdb_get in this transaction. Returns false when one does not hold: nothing
  // was written and the transaction has ended; true when batch was committed. Errors: as
  // commit(batch, opts), and backend_error "mdb_get" (the transaction has ended).
  // REQUIRES: is_open().
  bool commit(const write_batch& batch, const write_options& opts, write_guards guards) {
    require_open();
    lmdb_detail::check_limits(*st_, batch);
    try {
      const bool same = !guards.empty() && lmdb_detail::same_guards(*st_, guards);
      if (!lmdb_detail::guards_hold_since(*st_, h_->txn, guards, same)) {
        end();
        return false;
      }
      commit_open(batch, opts, guards, same);
    } catch (...) {
      end();
      throw;
    }
    return true;
  }

  // Ends the transaction without writing anything (also done by the destructor).
  void abort() noexcept { end(); }

  // The LMDB write transaction, for power users: valid while is_open(). Writing through it
  // directly is not seen by commit()'s replay after a map growth: write through commit().
  MDB_txn* native() const noexcept { return h_ != nullptr ? h_->txn : nullptr; }

 private:
  friend class lmdb_backend;

  lmdb_write_transaction(lmdb_detail::env_state* s, std::unique_lock<std::mutex> lock)
      : st_(s), lock_(std::move(lock)) {
    adopt(st_->begin_write_txn());
    id_ = ::mdb_txn_id(h_->txn);
  }

  detail::placement_cursor<lmdb_cursor> placed_cursor(const key_range& range) const {
    if (st_->single()) [[likely]]
      return detail::placement_cursor<lmdb_cursor>(lmdb_cursor(h_, false, st_->dbi, range, st_->max_key));
    return lmdb_cursor::merged(*st_, h_, false, range);
  }

  void require_open() const {
    if (!is_open()) throw usage_error("keyschema::lmdb_backend: the write transaction has already ended");
  }

  // Takes ownership of t (registered with the gate) in a new handle. On failure t is aborted.
  void adopt(MDB_txn* t) {
    try {
      h_ = std::make_shared<lmdb_detail::txn_handle>(st_, t, true);
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

  // guards: the conditions that held (checked by the caller), remembered for the next write
  // (lmdb_detail::remember_guards; same: lmdb_detail::same_guards) while the writer mutex is
  // still held.
  void commit_open(const write_batch& batch, const write_options& opts, write_guards guards = {}, bool same = false) {
    lmdb_detail::env_state& s = *st_;
    lmdb_detail::nosync_commit nosync(s.env, opts.sync);
    for (;;) {
      const char* call = nullptr;
      int rc = lmdb_detail::apply_batch(s, h_->txn, batch, call);
      if (rc == MDB_SUCCESS) {
        call = "mdb_txn_commit";
        rc = s.commit_write(h_->txn);  // frees the transaction whatever the outcome
        h_->txn = nullptr;
        if (rc == MDB_SUCCESS) {
          lmdb_detail::remember_guards(s, id_, guards, batch, same);
          s.note_usage();  // still registered with the gate
          s.gate.leave();
          lock_.unlock();
          return;
        }
        s.gate.leave();
      } else {
        abort_txn();
      }
      if (rc != MDB_MAP_FULL) lmdb_detail::throw_write_failure(s, rc, call);
      // LMDB ended the transaction. Grow the map, then begin again; the writer mutex is held
      // throughout, so only another process can have committed meanwhile.
      s.grow_for_write(lmdb_detail::erases_only(batch));
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

  lmdb_detail::env_state* st_;
  std::unique_lock<std::mutex> lock_;  // lmdb_detail::env_state::write_mu
  std::shared_ptr<lmdb_detail::txn_handle> h_;
  std::size_t id_ = 0;  // mdb_txn_id of the first transaction: the state that was read
};

KEYSCHEMA_END_NAMESPACE
