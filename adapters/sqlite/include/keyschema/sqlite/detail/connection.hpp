// keyschema/sqlite/detail/connection.hpp: one SQLite connection with its cached statements, and
// the pool of reader connections of one sqlite_backend.
//
// connection owns an sqlite3* opened with SQLITE_OPEN_NOMUTEX: it is used by one thread at a
// time, which the backend guarantees (the writer's mutex, a snapshot's mutex, or a pool lease).
// Statements prepared once per connection (BEGIN/COMMIT/ROLLBACK; per table of the backend, a
// point lookup, an insert, a delete and the cursors' range SELECTs) are kept in slots and reset
// after each use. The tables are the backend's placements (table_names: index 0 is kv, the
// default placement; then kv_<placement>, see sqlite.hpp), a list the connection reads when it
// first prepares a statement of a table.
//
// reader_pool hands out connections (lease); a lease returns its connection when destroyed, and
// the pool keeps at most `idle` of them open. A lease may also borrow a thread_reader (the
// connection a thread keeps for its reads, see thread_reader.hpp): its destruction ends a read
// transaction left open and marks the reader idle again, closing nothing.
//
// Thread-safety: a connection is not shared; reader_pool's acquire/release/take may run
// concurrently; a thread_reader's connection is used only by whoever holds it busy.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/sqlite/detail/status.hpp>

#include <sqlite3.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace sqlite_detail {

// The quoted SQL names of a backend's tables, by placement index (0: "kv", the default placement).
using table_names = std::vector<std::string>;

struct stmt_deleter {
  void operator()(sqlite3_stmt* s) const noexcept { ::sqlite3_finalize(s); }
};
using stmt_ptr = std::unique_ptr<sqlite3_stmt, stmt_deleter>;

// A pointer SQLite binds as a blob (never nullptr: a null pointer would bind SQL NULL).
inline const char* blob_data(std::string_view s) noexcept { return s.data() != nullptr ? s.data() : ""; }

// The blob of column i of the current row (empty for a zero-length blob).
inline std::string_view column_view(sqlite3_stmt* st, int i) noexcept {
  const void* p = ::sqlite3_column_blob(st, i);  // before sqlite3_column_bytes, as SQLite asks
  const int n = ::sqlite3_column_bytes(st, i);
  return p != nullptr ? std::string_view(static_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string_view();
}

// The context of an error message, prefix + *path + suffix, made only when an error is raised (a
// read's hot path allocates nothing for it). The functions taking `Where` accept it or a std::string.
struct lazy_where {
  const char* prefix;
  const std::string* path;
  const char* suffix = "";
  explicit operator std::string() const { return prefix + *path + suffix; }
};

// Resets a statement and clears its bindings when it leaves scope.
struct stmt_reset {
  sqlite3_stmt* st;
  ~stmt_reset() {
    ::sqlite3_reset(st);
    ::sqlite3_clear_bindings(st);
  }
};

class connection {
 public:
  enum slot : std::size_t { begin_stmt, begin_immediate_stmt, commit_stmt, rollback_stmt, touch_stmt, slot_count };
  // The statements kept per table (table_stmt).
  enum table_slot : std::size_t { get_stmt, put_stmt, erase_stmt, table_slot_count };

  // Opens `file` with `flags` (| SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE), sets the busy
  // timeout and the page cache size. `where` prefixes error messages. `tables` names the tables
  // the statements of table_stmt and take_cursor_stmt read (kept by pointer: it outlives the
  // connection, and grows only while nothing uses the connection).
  // Errors: backend_error "sqlite3_open_v2" (SQLITE_CANTOPEN: no such file without create, no
  // permission); std::bad_alloc.
  connection(const std::string& file, int flags, std::chrono::milliseconds busy, std::size_t cache_bytes,
             const std::string& where, const table_names* tables)
      : tables_(tables) {
    const int rc = ::sqlite3_open_v2(file.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = describe(db_, rc, where + ": cannot open " + file);
      ::sqlite3_close_v2(db_);
      db_ = nullptr;
      throw backend_error(msg, "sqlite3_open_v2", rc);
    }
    ::sqlite3_extended_result_codes(db_, 1);
    ::sqlite3_busy_timeout(db_, static_cast<int>(busy.count()));
    try {
      exec("PRAGMA cache_size = -" + std::to_string(cache_bytes / 1024), where);
    } catch (...) {  // e.g. SQLITE_NOTADB: the destructor will not run, close here
      ::sqlite3_close_v2(db_);
      throw;
    }
  }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection() {
    for (auto& s : stmts_) s.reset();
    table_stmts_.clear();
    cursor_stmts_.clear();
    ::sqlite3_close_v2(db_);
  }

  sqlite3* db() const noexcept { return db_; }

  // Runs sql (no result rows wanted). Errors: as throw_sqlite_error, native_call "sqlite3_exec".
  void exec(const std::string& sql, const std::string& where) {
    const int rc = ::sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) throw_sqlite_error(db_, rc, where + " (" + sql + ")", "sqlite3_exec");
  }

  // A new statement. Errors: as throw_sqlite_error, native_call "sqlite3_prepare_v3".
  stmt_ptr prepare(std::string_view sql, const std::string& where) const {
    sqlite3_stmt* st = nullptr;
    const int rc = ::sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &st,
                                        nullptr);
    if (rc != SQLITE_OK) {
      ::sqlite3_finalize(st);
      throw_sqlite_error(db_, rc, where + " (preparing " + std::string(sql) + ")", "sqlite3_prepare_v3");
    }
    return stmt_ptr(st);
  }

  // The cached statement of slot s, prepared on first use.
  sqlite3_stmt* cached(slot s, const std::string& where) {
    static constexpr std::array<std::string_view, slot_count> sql = {
        "BEGIN",
        "BEGIN IMMEDIATE",
        "COMMIT",
        "ROLLBACK",
        "SELECT 1 FROM kv LIMIT 1",
    };
    if (!stmts_[s]) stmts_[s] = prepare(sql[s], where);
    return stmts_[s].get();
  }

  // Steps the cached statement of slot s to completion (BEGIN, COMMIT, ...).
  // Errors: as throw_sqlite_error, native_call "sqlite3_step".
  void run(slot s, const std::string& where) {
    sqlite3_stmt* st = cached(s, where);
    int rc;
    while ((rc = ::sqlite3_step(st)) == SQLITE_ROW) {
    }
    ::sqlite3_reset(st);
    if (rc != SQLITE_DONE) throw_sqlite_error(db_, rc, where + " (" + ::sqlite3_sql(st) + ")", "sqlite3_step");
  }

  // The cached statement of slot s over table t (an index of the table list), prepared on first
  // use: SELECT v ... WHERE k = ?1, INSERT OR REPLACE ... VALUES (?1, ?2), DELETE ... WHERE k = ?1.
  // Errors: as prepare().
  template <class Where>
  sqlite3_stmt* table_stmt(table_slot s, std::size_t t, const Where& where) {
    if (t >= table_stmts_.size()) table_stmts_.resize(t + 1);
    stmt_ptr& st = table_stmts_[t][s];
    if (!st) {
      const std::string& name = (*tables_)[t];
      static constexpr std::array<std::string_view, 2> parts[table_slot_count] = {
          {"SELECT v FROM ", " WHERE k = ?1"},
          {"INSERT OR REPLACE INTO ", " (k, v) VALUES (?1, ?2)"},
          {"DELETE FROM ", " WHERE k = ?1"},
      };
      st = prepare(std::string(parts[s][0]) + name + std::string(parts[s][1]), std::string(where));
    }
    return st.get();
  }

  // A cursor's SELECT over table t, in key order (reverse: descending), bounded below by ?1
  // and, with upper, above by ?2. The connection keeps one idle statement per table and shape for
  // reuse: a cursor takes it (or a newly prepared one when another cursor holds it) and gives it
  // back with give_back_cursor_stmt, so a scan costs no sqlite3_prepare once the shape has been
  // used. REQUIRES: the caller serializes use of this connection (as for every member).
  // Errors: as prepare().
  template <class Where>
  stmt_ptr take_cursor_stmt(std::size_t t, bool reverse, bool upper, const Where& where) {
    const std::size_t shape = (reverse ? 2u : 0u) + (upper ? 1u : 0u);
    if (t < cursor_stmts_.size() && cursor_stmts_[t][shape]) return std::move(cursor_stmts_[t][shape]);
    std::string sql = "SELECT k, v FROM " + (*tables_)[t] + (upper ? " WHERE k >= ?1 AND k < ?2" : " WHERE k >= ?1") +
                      (reverse ? " ORDER BY k DESC" : " ORDER BY k");
    return prepare(sql, std::string(where));
  }
  // Resets st (ending the read it holds: a statement left stepping keeps its read transaction,
  // and with it the WAL, alive) and keeps it for the next cursor of its table and shape, or
  // finalizes it when one is kept already (or memory runs out).
  void give_back_cursor_stmt(std::size_t t, bool reverse, bool upper, stmt_ptr st) noexcept {
    ::sqlite3_reset(st.get());
    ::sqlite3_clear_bindings(st.get());
    try {
      if (t >= cursor_stmts_.size()) cursor_stmts_.resize(t + 1);
    } catch (...) {
      return;  // st is finalized
    }
    stmt_ptr& kept = cursor_stmts_[t][(reverse ? 2u : 0u) + (upper ? 1u : 0u)];
    if (!kept) kept = std::move(st);
  }

  // Ends a transaction without throwing (after a failure); a no-op outside one.
  void rollback_quietly() noexcept {
    if (::sqlite3_get_autocommit(db_) == 0) ::sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

  // Point lookup of key in table t into value. Returns false when absent.
  // Errors: as throw_sqlite_error, native_call "sqlite3_step"/"sqlite3_bind_blob".
  template <class Where>
  bool lookup(std::size_t t, std::string_view key, std::string& value, const Where& where) {
    sqlite3_stmt* st = table_stmt(get_stmt, t, where);
    stmt_reset guard{st};
    int rc = ::sqlite3_bind_blob(st, 1, blob_data(key), static_cast<int>(key.size()), SQLITE_STATIC);
    if (rc != SQLITE_OK) throw_sqlite_error(db_, rc, std::string(where), "sqlite3_bind_blob");
    rc = ::sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      value.assign(column_view(st, 0));
      return true;
    }
    if (rc == SQLITE_DONE) return false;
    throw_sqlite_error(db_, rc, std::string(where), "sqlite3_step");
  }

 private:
  sqlite3* db_ = nullptr;
  const table_names* tables_;
  std::array<stmt_ptr, slot_count> stmts_;
  std::vector<std::array<stmt_ptr, table_slot_count>> table_stmts_;  // by table (table_stmt)
  std::vector<std::array<stmt_ptr, 4>> cursor_stmts_;  // idle cursor statements by table and shape (take_cursor_stmt)
};

// The reader connection one thread keeps for its reads on one backend (thread_reader.hpp owns
// them). busy: a lease holds it (its owner's get(), or a cursor its owner made, wherever that
// cursor is used and destroyed); only the owner sets it, the holder clears it (release, which the
// owner's next acquire load synchronizes with). conn is opened by the owner on first use and is
// read and written only by the holder of busy, or when nothing uses the backend (its destruction).
struct thread_reader {
  std::unique_ptr<connection> conn;
  std::atomic<bool> busy{false};
  bool claimed = false;  // a thread holds it in its cache; guarded by reader_registry::mu
};

// The reader connections of one backend.
class reader_pool {
 public:
  reader_pool(std::string file, std::chrono::milliseconds busy, std::size_t cache_bytes, std::size_t idle,
              std::string where, const table_names* tables)
      : file_(std::move(file)),
        busy_(busy),
        cache_bytes_(cache_bytes),
        idle_max_(idle),
        where_(std::move(where)),
        tables_(tables) {}

  // A connection of its own until the lease ends: a pooled one, or a thread's reader it borrows.
  class lease {
   public:
    lease(reader_pool* p, std::unique_ptr<connection> c) noexcept : pool_(p), c_(std::move(c)), conn_(c_.get()) {}
    // Borrows r. REQUIRES: the caller owns r and set r->busy; r->conn is open.
    explicit lease(thread_reader* r) noexcept : pool_(nullptr), conn_(r->conn.get()), borrowed_(r) {}
    lease(lease&& o) noexcept
        : pool_(o.pool_), c_(std::move(o.c_)), conn_(std::exchange(o.conn_, nullptr)),
          borrowed_(std::exchange(o.borrowed_, nullptr)) {}
    lease& operator=(lease&&) = delete;
    ~lease() {
      if (c_) {
        pool_->release(std::move(c_));
      } else if (borrowed_ != nullptr) {
        conn_->rollback_quietly();  // a read transaction begun for two tables, or a cursor's
        borrowed_->busy.store(false, std::memory_order_release);
      }
    }
    connection& operator*() const noexcept { return *conn_; }
    connection* operator->() const noexcept { return conn_; }
    // Whether it borrows a thread's reader (for tests and the documentation's claims).
    bool borrowed() const noexcept { return borrowed_ != nullptr; }

   private:
    reader_pool* pool_;
    std::unique_ptr<connection> c_;
    connection* conn_ = nullptr;
    thread_reader* borrowed_ = nullptr;
  };

  // An idle connection, or a new one (read-only by PRAGMA query_only).
  // Errors: backend_error "sqlite3_open_v2"/"sqlite3_exec"; std::bad_alloc.
  lease acquire() { return lease(this, take()); }

  // An idle connection (its page cache kept), or a new one, to keep: a thread_reader's.
  // Errors: as acquire().
  std::unique_ptr<connection> take() {
    {
      std::lock_guard lk(mu_);
      if (!idle_.empty()) {
        std::unique_ptr<connection> c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
    }
    auto c = std::make_unique<connection>(file_, SQLITE_OPEN_READWRITE, busy_, cache_bytes_, where_, tables_);
    c->exec("PRAGMA query_only = 1", where_);
    opened_.fetch_add(1, std::memory_order_relaxed);
    return c;
  }

  // How many reader connections this pool has opened (for tests: a thread keeps its reader).
  std::size_t opened() const noexcept { return opened_.load(std::memory_order_relaxed); }

 private:
  void release(std::unique_ptr<connection> c) noexcept {
    c->rollback_quietly();
    std::unique_lock lk(mu_);
    if (idle_.size() < idle_max_) {
      try {
        idle_.push_back(std::move(c));
      } catch (...) {  // out of memory: close it instead (outside the lock, below)
      }
    }
    lk.unlock();
    c.reset();
  }

  std::string file_;
  std::chrono::milliseconds busy_;
  std::size_t cache_bytes_;
  std::size_t idle_max_;
  std::string where_;
  const table_names* tables_;
  std::mutex mu_;
  std::vector<std::unique_ptr<connection>> idle_;
  std::atomic<std::size_t> opened_{0};
};

}  // namespace sqlite_detail
KEYSCHEMA_END_NAMESPACE
