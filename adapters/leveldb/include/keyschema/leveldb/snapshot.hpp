// keyschema/leveldb/snapshot.hpp: keyschema::leveldb_snapshot, a shared handle to a
// leveldb::Snapshot.
//
// leveldb_backend::snapshot() returns one. Every copy refers to the same leveldb::Snapshot,
// which is released (leveldb::DB::ReleaseSnapshot) when the last copy is destroyed. While a
// snapshot is alive LevelDB keeps every version it can see, so a long-lived snapshot keeps
// overwritten and erased data on disk until it is released.
//
// Thread-safety: copies may be made and destroyed concurrently from any threads (the count is a
// std::shared_ptr's). One snapshot object is not shared between threads without external
// synchronization.
#pragma once

#include <keyschema/detail/backend/lsm_adapter.hpp>
#include <keyschema/detail/config.hpp>

#include <leveldb/db.h>

#include <memory>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class leveldb_backend;

class leveldb_snapshot : public detail::lsm_snapshot<::leveldb::DB, ::leveldb::Snapshot> {
  // Public: native(), the LevelDB snapshot for a leveldb::ReadOptions::snapshot of native() calls;
  // owned by this handle, valid while any copy of it lives, never nullptr (detail::lsm_snapshot).
 private:
  friend class leveldb_backend;

  // Takes ownership of snap, taken from db (see detail::lsm_snapshot).
  // REQUIRES: snap was returned by db->GetSnapshot(); db outlives every copy.
  leveldb_snapshot(::leveldb::DB* db, const ::leveldb::Snapshot* snap) : lsm_snapshot(db, snap) {}
};

KEYSCHEMA_END_NAMESPACE
