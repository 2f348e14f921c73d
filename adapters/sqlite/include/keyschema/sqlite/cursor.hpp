// keyschema/sqlite/cursor.hpp: keyschema::sqlite_cursor, an ordered iterator over a key range of
// one SQLite view.
//
// sqlite_backend::cursor() and sqlite_backend::write_transaction_type::cursor() return one, or,
// over a range reaching several placements (keyschema::placed), one per placement table merged in
// key order (detail::placement_cursor). It holds one prepared SELECT over one table (kv, or a
// placement's kv_<name>: WHERE k >= lower [AND k < upper] ORDER BY k [DESC], a range scan of the
// table's b-tree), taken from its connection's idle statements and given back reset when the
// cursor ends, with its bounds bound as copies, so the key_range it was made from may go away. It
// reads one consistent state: the snapshot it was given (a copy of which it keeps alive), the
// state its own statement fixed when it first stepped (no snapshot), the read transaction the
// merged cursors share, or the write transaction it was made from.
//
// Thread-safety: a cursor is used by one thread at a time; distinct cursors may run concurrently
// with each other and with writers (cursors over one snapshot take turns on its connection).
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/placement.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/sqlite/detail/connection.hpp>
#include <keyschema/sqlite/detail/status.hpp>
#include <keyschema/sqlite/snapshot.hpp>

#include <sqlite3.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

class sqlite_cursor {
 public:
  // A moved-from cursor is not valid() and may only be destroyed or assigned to.
  sqlite_cursor(sqlite_cursor&& o) noexcept
      : view_(std::move(o.view_)),
        stmt_(std::move(o.stmt_)),
        conn_(o.conn_),
        reverse_(o.reverse_),
        upper_(o.upper_),
        table_(o.table_),
        path_(o.path_),
        key_(o.key_),
        value_(o.value_),
        valid_(std::exchange(o.valid_, false)) {}
  sqlite_cursor& operator=(sqlite_cursor&& o) noexcept {
    if (this != &o) {
      release();
      view_ = std::move(o.view_);
      stmt_ = std::move(o.stmt_);
      conn_ = o.conn_;
      reverse_ = o.reverse_;
      upper_ = o.upper_;
      table_ = o.table_;
      path_ = o.path_;
      key_ = o.key_;
      value_ = o.value_;
      valid_ = std::exchange(o.valid_, false);
    }
    return *this;
  }
  sqlite_cursor(const sqlite_cursor&) = delete;
  sqlite_cursor& operator=(const sqlite_cursor&) = delete;
  ~sqlite_cursor() { release(); }

  // True while positioned on an entry inside the range.
  bool valid() const noexcept { return valid_; }

  // The current key and value. They point into SQLite's row buffer: valid until next(), a move
  // or destruction of this cursor. REQUIRES: valid().
  std::string_view key() const noexcept { return key_; }
  std::string_view value() const noexcept { return value_; }

  // Moves to the next entry in the cursor's direction; valid() turns false past the bound.
  // REQUIRES: valid().
  // Errors:
  //   backend_error, native_call "sqlite3_step": SQLite could not read the next row
  //     (SQLITE_CORRUPT: a damaged page; SQLITE_IOERR_*: a failed read; SQLITE_NOMEM). The cursor
  //     is no longer valid(). Remedy: check the disk; the sqlite3 shell's .recover salvages a
  //     damaged database.
  void next() { step(); }

 private:
  friend class sqlite_backend;
  friend class sqlite_write_transaction;

  // A cursor over range in table `table` (a placement's index: 0 is kv) on conn: with view (a
  // snapshot's, or a private one) its calls are serialized by view->mu; without (a write
  // transaction's connection) the caller owns conn.
  // REQUIRES: conn outlives the cursor (view keeps it, or the write transaction does).
  // Errors: as next() (the first row is read here); backend_error "sqlite3_prepare_v3" /
  // "sqlite3_bind_blob"; std::bad_alloc.
  sqlite_cursor(sqlite_detail::connection& conn, std::shared_ptr<sqlite_detail::view_state> view,
                const key_range& range, const std::string* path, std::size_t table = 0)
      : view_(std::move(view)),
        conn_(&conn),
        reverse_(range.reverse),
        upper_(!range.upper.empty()),
        table_(table),
        path_(path) {
    std::unique_lock<std::mutex> lk;
    if (view_) lk = std::unique_lock(view_->mu);
    try {
      stmt_ = conn.take_cursor_stmt(table_, reverse_, upper_,
                                    sqlite_detail::lazy_where{"keyschema::sqlite_backend: reading ", path_, " through a cursor"});
      bind(1, range.lower);
      if (upper_) bind(2, range.upper);
      step_locked();
    } catch (...) {
      // The destructor will not run: finalize under the view's mutex here.
      if (lk.owns_lock()) lk.unlock();
      release();
      throw;
    }
  }

  // One cursor per table of `on` (placement indexes, at least one) over range on conn, merged in
  // key order. Errors: as the constructor.
  static detail::placement_cursor<sqlite_cursor> merged(sqlite_detail::connection& conn,
                                                        const std::shared_ptr<sqlite_detail::view_state>& view,
                                                        const key_range& range, const std::string* path,
                                                        const std::vector<std::size_t>& on) {
    sqlite_cursor first(conn, view, range, path, on.front());
    if (on.size() == 1) return detail::placement_cursor<sqlite_cursor>(std::move(first));
    std::vector<sqlite_cursor> rest;
    rest.reserve(on.size() - 1);
    for (std::size_t i = 1; i < on.size(); ++i) rest.push_back(sqlite_cursor(conn, view, range, path, on[i]));
    return detail::placement_cursor<sqlite_cursor>(std::move(first), std::move(rest), range.reverse, {});
  }

  std::string where() const { return "keyschema::sqlite_backend: reading " + *path_ + " through a cursor"; }

  void bind(int i, std::string_view s) {
    const int rc = ::sqlite3_bind_blob(stmt_.get(), i, sqlite_detail::blob_data(s), static_cast<int>(s.size()),
                                       SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) sqlite_detail::throw_sqlite_error(::sqlite3_db_handle(stmt_.get()), rc, where(), "sqlite3_bind_blob");
  }

  void step() {
    std::unique_lock<std::mutex> lk;
    if (view_) lk = std::unique_lock(view_->mu);
    step_locked();
  }

  void step_locked() {
    const int rc = ::sqlite3_step(stmt_.get());
    if (rc == SQLITE_ROW) {
      key_ = sqlite_detail::column_view(stmt_.get(), 0);
      value_ = sqlite_detail::column_view(stmt_.get(), 1);
      valid_ = true;
      return;
    }
    valid_ = false;
    key_ = value_ = {};
    if (rc != SQLITE_DONE) sqlite_detail::throw_sqlite_error(::sqlite3_db_handle(stmt_.get()), rc, where(), "sqlite3_step");
  }

  // Gives the statement back to its connection, reset (under the view's mutex: it touches the
  // shared connection), before the view is let go.
  void release() noexcept {
    if (stmt_) {
      std::unique_lock<std::mutex> lk;
      if (view_) lk = std::unique_lock(view_->mu);
      conn_->give_back_cursor_stmt(table_, reverse_, upper_, std::move(stmt_));
    }
    view_.reset();
    valid_ = false;
  }

  std::shared_ptr<sqlite_detail::view_state> view_;  // keeps the connection (and snapshot) alive
  sqlite_detail::stmt_ptr stmt_;
  sqlite_detail::connection* conn_ = nullptr;  // stmt_'s connection, kept alive by view_ or the write transaction
  bool reverse_ = false, upper_ = false;        // stmt_'s shape
  std::size_t table_ = 0;                       // stmt_'s table (a placement's index)
  const std::string* path_;
  std::string_view key_, value_;
  bool valid_ = false;
};

KEYSCHEMA_END_NAMESPACE
