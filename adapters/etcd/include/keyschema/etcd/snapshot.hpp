// keyschema/etcd/snapshot.hpp: keyschema::etcd_snapshot, a consistent read-only view of an etcd
// cluster: every read through it is made at one revision.
//
// etcd_backend::snapshot() returns one: the cluster's revision at that moment (the header of a
// linearizable read). Reads through it pass that revision (RangeRequest::revision), so they see
// exactly the writes committed up to it, from any member. It holds nothing on the server: it is
// a number and a reference to the backend's state. The cluster keeps old revisions until it is
// compacted (etcd --auto-compaction-retention, or `etcdctl compact`); once the snapshot's
// revision was compacted away, every read through it throws backend_error saying so (gRPC 11,
// OutOfRange, "required revision has been compacted").
//
// Thread-safety: a value type; copies may be made and destroyed concurrently from any threads.
// One snapshot object is not shared between threads without external synchronization.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstdint>

KEYSCHEMA_BEGIN_NAMESPACE

class etcd_backend;

class etcd_snapshot {
 public:
  // The etcd revision this snapshot reads at (for `etcdctl get --rev`). Always positive.
  std::int64_t revision() const noexcept { return revision_; }

 private:
  friend class etcd_backend;
  explicit etcd_snapshot(std::int64_t revision) noexcept : revision_(revision) {}

  std::int64_t revision_;
};

KEYSCHEMA_END_NAMESPACE
