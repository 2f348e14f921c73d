// keyschema/rocksdb/snapshot.hpp: keyschema::rocksdb_snapshot, a consistent read-only view of a
// RocksDB database.
//
// rocksdb_backend::snapshot() returns one. It is a shared handle: copies share one
// rocksdb::Snapshot, which is released (rocksdb::DB::ReleaseSnapshot) when the last copy is
// destroyed. While a snapshot is alive RocksDB keeps every version it can see, so a long-lived
// snapshot keeps overwritten and erased data on disk until it is released.
//
// Thread-safety: copies may be made and destroyed concurrently from any threads (the count is a
// std::shared_ptr's). One snapshot object is not shared between threads without external
// synchronization.
#pragma once

#include <keyschema/detail/backend/lsm_adapter.hpp>
#include <keyschema/detail/config.hpp>

#include <rocksdb/db.h>
#include <rocksdb/snapshot.h>

#include <memory>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class rocksdb_backend;

class rocksdb_snapshot : public detail::lsm_snapshot<::rocksdb::DB, ::rocksdb::Snapshot> {
  // Public: native(), the RocksDB snapshot for a rocksdb::ReadOptions::snapshot of native() calls;
  // owned by this handle, valid while any copy of it lives, never nullptr (detail::lsm_snapshot).
 private:
  friend class rocksdb_backend;

  // Takes ownership of snap, taken from db (see detail::lsm_snapshot).
  // REQUIRES: snap was returned by db->GetSnapshot(); db outlives every copy.
  rocksdb_snapshot(::rocksdb::DB* db, const ::rocksdb::Snapshot* snap) : lsm_snapshot(db, snap) {}
};

KEYSCHEMA_END_NAMESPACE
