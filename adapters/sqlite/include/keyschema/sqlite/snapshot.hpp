// keyschema/sqlite/snapshot.hpp: keyschema::sqlite_snapshot, a shared handle to one SQLite read
// transaction.
//
// sqlite_backend::snapshot() returns one: a reader connection taken from the backend's pool, in
// which a read transaction was begun (BEGIN, then a first read, which is when SQLite fixes the
// state a WAL reader sees). Every copy refers to the same transaction; it is ended and the
// connection returned to the pool when the last copy (and the last cursor reading it) is
// destroyed. While it is open SQLite cannot checkpoint the write-ahead log past the state it
// reads, so the -wal file grows with every write: do not keep snapshots for long.
//
// Thread-safety: copies may be made, used and destroyed from any threads: every SQLite call on
// the shared connection is made under a mutex of the snapshot. One snapshot object is not shared
// between threads without external synchronization.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/sqlite/detail/connection.hpp>

#include <sqlite3.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class sqlite_backend;
class sqlite_cursor;

namespace sqlite_detail {

// What every copy of a snapshot (and every cursor over it) shares. With in_txn false it is the
// private view of one cursor: its single SELECT statement reads one consistent state by itself.
struct view_state {
  view_state(reader_pool::lease l, bool txn, const std::string* p) : conn(std::move(l)), in_txn(txn), path(p) {}
  view_state(const view_state&) = delete;
  view_state& operator=(const view_state&) = delete;
  ~view_state() = default;  // the lease rolls a read transaction back before pooling the connection

  reader_pool::lease conn;
  std::mutex mu;  // serializes SQLite calls on conn
  bool in_txn;
  const std::string* path;  // the backend's, for error messages
};

}  // namespace sqlite_detail

class sqlite_snapshot {
 public:
  // The connection holding the read transaction, for power users (sqlite3_prepare_v2 and friends
  // read the snapshot's state through it). Owned by this handle: valid while any copy lives.
  // REQUIRES: no other copy or cursor of this snapshot is used meanwhile.
  sqlite3* native() const noexcept { return v_->conn->db(); }

 private:
  friend class sqlite_backend;
  friend class sqlite_cursor;

  explicit sqlite_snapshot(std::shared_ptr<sqlite_detail::view_state> v) noexcept : v_(std::move(v)) {}

  std::shared_ptr<sqlite_detail::view_state> v_;
};

KEYSCHEMA_END_NAMESPACE
