// keyschema/lmdb/snapshot.hpp: keyschema::lmdb_snapshot, a shared handle to one LMDB read
// transaction.
//
// lmdb_backend::snapshot() returns one (lmdb_backend::snapshot_type). Every copy shares the same
// read transaction, which ends when the last copy and the last cursor reading it are destroyed.
// While it lives, LMDB cannot reuse the pages it sees (the file may grow) and this process cannot
// resize the map (a write that must grow it waits, see <keyschema/lmdb.hpp>).
//
// Thread-safety: copies of one snapshot may be used from different threads at the same time:
// every LMDB call on the shared transaction is serialized by a mutex of the snapshot
// (native_mutex()). A single snapshot object still needs external synchronization.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/lmdb/detail/txn_handle.hpp>

#include <lmdb.h>

#include <memory>
#include <mutex>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class lmdb_backend;

// A consistent, read-only view of the database as of its creation: one LMDB read transaction.
// Copies share the transaction; it ends when the last copy and the last cursor on it are gone.
// While it lives, LMDB cannot reuse the pages it sees (the file may grow) and the map cannot
// be resized. REQUIRES: destroyed before the backend.
class lmdb_snapshot {
 public:
  // The LMDB transaction, for power users. Lock native_mutex() around calls when copies of
  // this snapshot are used from several threads. Valid while this snapshot lives.
  MDB_txn* native() const noexcept { return h_->txn; }
  std::mutex& native_mutex() const noexcept { return h_->mu; }

 private:
  friend class lmdb_backend;
  explicit lmdb_snapshot(std::shared_ptr<lmdb_detail::txn_handle> h) noexcept : h_(std::move(h)) {}
  std::shared_ptr<lmdb_detail::txn_handle> h_;
};

KEYSCHEMA_END_NAMESPACE
