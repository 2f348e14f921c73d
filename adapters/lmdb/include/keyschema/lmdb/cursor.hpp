// keyschema/lmdb/cursor.hpp: keyschema::lmdb_cursor, an ordered iterator over a key range of one
// LMDB transaction.
//
// lmdb_backend::cursor() (lmdb_backend::cursor_type) and lmdb_write_transaction::cursor() return
// one. It owns an MDB_cursor on the transaction of a snapshot (a copy of which it keeps alive), on
// a private read-only transaction taken at creation, or on a write transaction, and copies of its
// bounds, so the key_range it was made from may go away. key() and value() point into the memory
// map (no copy) and stay valid until next(): the transaction pins the pages. It never steps past
// its bound: a forward cursor stops at the first key >= upper, a reverse one at the first key
// < lower.
//
// Thread-safety: a cursor is used by one thread at a time; distinct cursors may run concurrently.
// A cursor on a snapshot locks the snapshot's mutex around each LMDB call, since copies of the
// snapshot may be in use on other threads.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/lmdb/detail/status.hpp>
#include <keyschema/lmdb/detail/txn_handle.hpp>

#include <lmdb.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

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
        shared_(o.shared_),
        cur_(std::exchange(o.cur_, nullptr)),
        lower_(std::move(o.lower_)),
        upper_(std::move(o.upper_)),
        reverse_(o.reverse_),
        valid_(std::exchange(o.valid_, false)),
        k_(o.k_),
        v_(o.v_) {}
  lmdb_cursor& operator=(lmdb_cursor&& o) noexcept {
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
  ~lmdb_cursor() { close(); }

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
    const MDB_cursor_op op = reverse_ ? MDB_PREV : MDB_NEXT;
    if (shared_) {  // a snapshot's transaction may be used by other threads' cursors
      std::lock_guard lk(txn_->mu);
      settle(step(op));
    } else {
      settle(step(op));
    }
  }

  // The LMDB cursor, for power users. Valid while this cursor lives.
  MDB_cursor* native() const noexcept { return cur_; }

 private:
  friend class lmdb_backend;
  friend class lmdb_write_transaction;

  lmdb_cursor(std::shared_ptr<lmdb_detail::txn_handle> txn, bool shared, MDB_dbi dbi, const key_range& r,
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

  std::shared_ptr<lmdb_detail::txn_handle> txn_;
  bool shared_ = false;
  MDB_cursor* cur_ = nullptr;
  std::string lower_, upper_;
  bool reverse_ = false;
  bool valid_ = false;
  MDB_val k_{0, nullptr};
  MDB_val v_{0, nullptr};
};

KEYSCHEMA_END_NAMESPACE
