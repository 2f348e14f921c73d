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

#include <keyschema/detail/config.hpp>

#include <rocksdb/db.h>
#include <rocksdb/snapshot.h>

#include <memory>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class rocksdb_backend;

class rocksdb_snapshot {
 public:
  // The RocksDB snapshot, for use in a rocksdb::ReadOptions::snapshot of native() calls. Owned
  // by this handle: valid while any copy of it lives. Never nullptr.
  const ::rocksdb::Snapshot* native() const noexcept { return snap_.get(); }

 private:
  friend class rocksdb_backend;

  // Takes ownership of snap, taken from db; releases it with db->ReleaseSnapshot. If allocating
  // the shared count fails, snap is released before the exception propagates.
  // REQUIRES: snap was returned by db->GetSnapshot(); db outlives every copy.
  rocksdb_snapshot(::rocksdb::DB* db, const ::rocksdb::Snapshot* snap)
      : snap_(snap, [db](const ::rocksdb::Snapshot* s) { db->ReleaseSnapshot(s); }) {}

  std::shared_ptr<const ::rocksdb::Snapshot> snap_;
};

KEYSCHEMA_END_NAMESPACE
