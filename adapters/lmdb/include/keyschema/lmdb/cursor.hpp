// keyschema/lmdb/cursor.hpp: keyschema::lmdb_cursor, an ordered iterator over a key range of one
// LMDB transaction.
//
// lmdb_backend::cursor() (lmdb_backend::cursor_type) and lmdb_write_transaction::cursor() return
// one. It owns an MDB_cursor on the transaction of a snapshot (a copy of which it keeps alive), on
// a private read-only transaction taken at creation (the creating thread's reader when idle, else
// one from the environment's pool; returned when the cursor is destroyed, its MDB_cursor kept for
// the next such cursor), or on
// a write transaction, and a copy of the bound it checks while
// stepping (held in the cursor itself when short), so the key_range it was made from may go away. key() and value() point into the memory
// map (no copy) and stay valid until next(): the transaction pins the pages. It never steps past
// its bound: a forward cursor stops at the first key >= upper, a reverse one at the first key
// < lower.
//
// Thread-safety: a cursor is used by one thread at a time; distinct cursors may run concurrently.
// A cursor on a snapshot locks the snapshot's mutex around each LMDB call, since copies of the
// snapshot may be in use on other threads.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/placement.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/lmdb/detail/cursor_bound.hpp>
#include <keyschema/lmdb/detail/env_state.hpp>
#include <keyschema/lmdb/detail/long_keys.hpp>
#include <keyschema/lmdb/detail/status.hpp>
#include <keyschema/lmdb/detail/txn_handle.hpp>

#include <lmdb.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

class lmdb_backend;
class lmdb_write_transaction;

// Iterates the keys k with lower <= k < upper (no upper bound when upper is empty), ascending,
// or descending when the range is reversed. Reads one snapshot, or the state a
// lmdb_write_transaction locked. Move-only.
// REQUIRES: destroyed before the backend. A cursor of a write transaction is not used (only
// destroyed) once that transaction ended: its key() and value() pointed into pages the
// transaction owned.
class lmdb_cursor {
 public:
  lmdb_cursor(const lmdb_cursor&) = delete;
  lmdb_cursor& operator=(const lmdb_cursor&) = delete;
  lmdb_cursor(lmdb_cursor&& o) noexcept
      : txn_(std::move(o.txn_)),
        own_st_(std::exchange(o.own_st_, nullptr)),
        spare_(o.spare_),
        own_txn_(std::exchange(o.own_txn_, nullptr)),
        own_reader_(std::exchange(o.own_reader_, nullptr)),
        cur_(std::exchange(o.cur_, nullptr)),
        bound_(std::move(o.bound_)),
        op_(o.op_),
        shared_(o.shared_),
        write_(o.write_),
        reverse_(o.reverse_),
        check_(o.check_),
        valid_(std::exchange(o.valid_, false)),
        k_(o.k_),
        v_(o.v_) {}
  lmdb_cursor& operator=(lmdb_cursor&& o) noexcept {
    if (this != &o) {
      close();
      txn_ = std::move(o.txn_);
      own_st_ = std::exchange(o.own_st_, nullptr);
      spare_ = o.spare_;
      own_txn_ = std::exchange(o.own_txn_, nullptr);
      own_reader_ = std::exchange(o.own_reader_, nullptr);
      cur_ = std::exchange(o.cur_, nullptr);
      bound_ = std::move(o.bound_);
      op_ = o.op_;
      shared_ = o.shared_;
      write_ = o.write_;
      reverse_ = o.reverse_;
      check_ = o.check_;
      valid_ = std::exchange(o.valid_, false);
      k_ = o.k_;
      v_ = o.v_;
    }
    return *this;
  }
  ~lmdb_cursor() { close(); }

  // True while positioned on an entry inside the range.
  bool valid() const noexcept { return valid_; }
  // REQUIRES: valid(). Both point into the memory map; valid until next() or destruction.
  std::string_view key() const noexcept { return view(k_); }
  std::string_view value() const noexcept { return view(v_); }

  // Moves to the next entry in the cursor's direction; valid() turns false past the range.
  // REQUIRES: valid(). Errors: backend_error naming mdb_cursor_get (LMDB failed to read a page:
  // a corrupt file or an I/O error; the cursor is then invalid); usage_error when the
  // cursor belongs to a write transaction that has ended.
  KEYSCHEMA_ALWAYS_INLINE void next() {
    // own_txn_ is set exactly for a cursor on a private read transaction: nothing to check or lock.
    if (own_txn_ != nullptr) [[likely]] {
      settle(step(op_));
      return;
    }
    next_shared();
  }

  // The LMDB cursor, for power users. Valid while this cursor lives.
  MDB_cursor* native() const noexcept { return cur_; }

 private:
  friend class lmdb_backend;
  friend class lmdb_write_transaction;

  // next() on a snapshot's or a write transaction's transaction.
  void next_shared() {
    if (write_ && txn_->txn == nullptr) {
      valid_ = false;
      throw usage_error("keyschema::lmdb_backend::cursor: the write transaction of this cursor has ended");
    }
    if (shared_) {  // a snapshot's transaction may be used by other threads' cursors
      std::lock_guard lk(txn_->mu);
      settle(step(op_));
    } else {
      settle(step(op_));
    }
  }

  // A cursor on the transaction of txn: a snapshot's (shared: its copies may be used on other
  // threads, so LMDB calls are locked) or a write transaction's.
  lmdb_cursor(std::shared_ptr<lmdb_detail::txn_handle> txn, bool shared, MDB_dbi dbi, const key_range& r,
              std::size_t max_key)
      : txn_(std::move(txn)), shared_(shared), write_(txn_->write) {
    init(r);
    auto lk = lock();
    open(txn_->txn, dbi, r, max_key);
  }

  // A cursor on a private read transaction taken now (no shared handle: nothing else reads it):
  // the calling thread's reader when it is idle (lmdb/detail/thread_reader.hpp), else one from
  // s's pool; close() returns it. It reads the named database dbi (the main one by default; only
  // a cursor on the main one reuses a spare MDB_cursor, the thread reader's or the
  // environment's). REQUIRES: s outlives the cursor.
  lmdb_cursor(lmdb_detail::env_state& s, const key_range& r) : lmdb_cursor(s, r, s.dbi) {}
  lmdb_cursor(lmdb_detail::env_state& s, const key_range& r, MDB_dbi dbi) {
    init(r);
    own_reader_ = s.enter_thread_reader();
    own_txn_ = own_reader_ != nullptr ? own_reader_->txn : s.acquire_read();
    own_st_ = &s;
    spare_ = dbi == s.dbi;
    try {
      open(own_txn_, dbi, r, s.max_key);
    } catch (...) {
      release_own();
      throw;
    }
  }

  // A cursor over r in the transaction of h reading every placement r reaches (s.router), one
  // LMDB cursor per named database, merged in key order (placement.hpp).
  static detail::placement_cursor<lmdb_cursor> merged(const lmdb_detail::env_state& s,
                                                      const std::shared_ptr<lmdb_detail::txn_handle>& h, bool shared,
                                                      const key_range& r) {
    std::vector<lmdb_cursor> subs;
    bool main_first = false;
    for (std::size_t i : s.router.reached(r)) {
      if (!s.present[i]) continue;  // a read-only environment lacking the placement: it holds nothing
      if (subs.empty()) main_first = i == 0;
      subs.push_back(lmdb_cursor(h, shared, s.dbis[i], r, s.max_key));
    }
    if (subs.empty()) subs.push_back(lmdb_cursor(h, shared, s.dbi, key_range{"\x01", "\x01", r.reverse}, s.max_key));
    lmdb_cursor first = std::move(subs.front());
    subs.erase(subs.begin());
    return detail::placement_cursor<lmdb_cursor>(std::move(first), std::move(subs), r.reverse,
                                                 main_first ? lmdb_detail::placement_db_prefix : std::string_view());
  }

  // Copies the bound checked while stepping: upper going forward, lower in reverse.
  void init(const key_range& r) {
    reverse_ = r.reverse;
    op_ = reverse_ ? MDB_PREV : MDB_NEXT;
    check_ = reverse_ ? bound_check::at_least : bound_check::below;
    bound_.assign(reverse_ ? r.lower : r.upper);
  }

  // Opens the LMDB cursor in txn and moves it to the first entry of r. The caller holds the lock.
  KEYSCHEMA_ALWAYS_INLINE void open(MDB_txn* txn, MDB_dbi dbi, const key_range& r, std::size_t max_key) {
    const int rc = own_st_ != nullptr && spare_ ? own_st_->open_read_cursor(txn, &cur_, own_reader_)
                                                : ::mdb_cursor_open(txn, dbi, &cur_);
    if (rc != MDB_SUCCESS) {
      cur_ = nullptr;
      lmdb_detail::throw_status("keyschema::lmdb_backend::cursor: cannot open a cursor", "mdb_cursor_open", rc);
    }
    try {
      seek(r, max_key);
    } catch (...) {
      close_cursor();  // the lock is held: not close()
      throw;
    }
  }

  // An empty MDB_val may carry a null mv_data: an empty range, valid for string_view.
  static std::string_view view(const MDB_val& v) noexcept {
    return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
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
    k_.mv_size = bound.size() < max_key ? bound.size() : max_key;
    k_.mv_data = const_cast<char*>(bound.data());
    return step(MDB_SET_RANGE);
  }

  KEYSCHEMA_ALWAYS_INLINE void seek(const key_range& r, std::size_t max_key) {
    int rc;
    if (!reverse_) {
      rc = r.lower.empty() ? step(MDB_FIRST) : seek_range(r.lower, max_key);
      // MDB_SET_RANGE lands at or after the bound it was given: only a cut bound can leave the
      // cursor on a key below r.lower.
      if (r.lower.size() > max_key)
        while (rc == MDB_SUCCESS && key() < r.lower) rc = step(MDB_NEXT);
    } else if (r.upper.empty()) {
      rc = step(MDB_LAST);
    } else {
      // The last key < upper: from the first key >= upper (or the end), step back.
      rc = seek_range(r.upper, max_key);
      if (rc == MDB_NOTFOUND) rc = step(MDB_LAST);
      while (rc == MDB_SUCCESS && key() >= r.upper) rc = step(MDB_PREV);
    }
    settle(rc);
  }

  // Applies the result of a move: end of data, an error, or an entry checked against the
  // bound in the direction of travel.
  KEYSCHEMA_ALWAYS_INLINE void settle(int rc) {
    if (rc != MDB_SUCCESS) [[unlikely]] {
      valid_ = false;
      if (rc == MDB_NOTFOUND) return;
      lmdb_detail::throw_status("keyschema::lmdb_backend: cursor step failed", "mdb_cursor_get", rc);
    }
    if (bound_.empty()) {  // no bound on this side (forward without an upper bound, reverse from the first key)
      valid_ = true;
      return;
    }
    const int c = lmdb_detail::before_sign(k_, bound_);
    valid_ = (c ^ static_cast<int>(check_)) < 0;  // below: c < 0; at_least: ~c < 0, i.e. c >= 0
  }

  // Closes cur_; a private read transaction's cursor goes back to its environment for reuse.
  void close_cursor() noexcept {
    MDB_cursor* c = std::exchange(cur_, nullptr);
    if (own_st_ != nullptr && spare_) own_st_->close_read_cursor(c, own_reader_);
    else ::mdb_cursor_close(c);
  }

  void close() noexcept {
    if (cur_ != nullptr) {
      auto lk = lock();
      if (own_txn_ != nullptr || txn_->txn != nullptr) close_cursor();  // else LMDB freed it with the write transaction
      cur_ = nullptr;
    }
    valid_ = false;
    if (own_txn_ != nullptr) release_own();
  }

  // Ends the private read transaction: the thread reader's is reset and its slot left, a pooled
  // one goes back to the pool. REQUIRES: own_txn_ set; the LMDB cursor closed.
  void release_own() noexcept {
    if (lmdb_detail::thread_reader* r = std::exchange(own_reader_, nullptr)) {
      own_st_->leave_thread_reader(*r);
    } else {
      own_st_->release_read(own_txn_);
    }
    own_txn_ = nullptr;
  }

  std::shared_ptr<lmdb_detail::txn_handle> txn_;  // a snapshot's or a write transaction's; empty when private
  lmdb_detail::env_state* own_st_ = nullptr;      // the private read transaction's environment
  bool spare_ = true;  // a private cursor on the main database: its MDB_cursor is the environment's spare
  MDB_txn* own_txn_ = nullptr;                    // the private read transaction, or nullptr
  lmdb_detail::thread_reader* own_reader_ = nullptr;  // the thread reader own_txn_ belongs to, or nullptr (pooled)
  MDB_cursor* cur_ = nullptr;
  lmdb_detail::cursor_bound bound_;  // upper (forward) or lower (reverse); the other was used by seek()
  MDB_cursor_op op_ = MDB_NEXT;
  bool shared_ = false;
  bool write_ = false;
  bool reverse_ = false;
  // The check of each entry the cursor moves to, when bound_ is not empty: below the upper bound
  // (forward), at or above the lower bound (reverse). The values flip the sign of the comparison
  // or not: the entry is in range when (before_sign(...) ^ check) < 0.
  enum class bound_check : signed char { below = 0, at_least = -1 };
  bound_check check_ = bound_check::below;
  bool valid_ = false;
  MDB_val k_{0, nullptr};
  MDB_val v_{0, nullptr};
};

namespace lmdb_detail {
// What lmdb_backend::cursor() and lmdb_write_transaction::cursor() return: the LMDB cursors of the
// placements a range reaches, merged (placement.hpp), with the groups of long keys decoded and
// ordered (long_keys.hpp).
using full_cursor = long_key_cursor<detail::placement_cursor<lmdb_cursor>>;
}  // namespace lmdb_detail

KEYSCHEMA_END_NAMESPACE
