// keyschema/lmdb/options.hpp: how keyschema::lmdb_backend opens and sizes an LMDB environment.
//
// lmdb_options is a plain aggregate handed to the lmdb_backend constructor; each field maps onto
// one LMDB setting (see docs/backends/lmdb.md). The options are read once, when the environment
// is opened. Does not include <lmdb.h>.
//
// Thread-safety: a plain value type.
#pragma once

#include <keyschema/detail/config.hpp>

#include <chrono>
#include <cstddef>

KEYSCHEMA_BEGIN_NAMESPACE

// Options of lmdb_backend. Every field has a usable default.
struct lmdb_options {
  // Initial size of the memory map, in bytes (rounded up to whole pages). The data file grows
  // only as pages are used; the map is address space. A larger existing map is kept.
  std::size_t map_size = std::size_t{64} << 20;
  // Ceiling of the transparent growth. A write that does not fit below it fails with
  // limit_error. Default: 64 GiB on 64-bit targets, 1 GiB on 32-bit ones (address space).
  std::size_t max_map_size =
      sizeof(std::size_t) >= 8 ? std::size_t{64} * 1024 * 1024 * 1024 : std::size_t{1} << 30;
  // Reader slots in the lock file (mdb_env_set_maxreaders): the most snapshots, cursors and
  // in-flight get() calls of all processes together. Fixed by the first process to open the
  // environment.
  unsigned max_readers = 126;
  // Open with MDB_RDONLY: write() fails with backend_error, nothing is created.
  bool read_only = false;
  // Create the directory (and the database in it) when missing. When false, a directory without
  // data.mdb is an error.
  bool create_if_missing = true;
  // Permissions of data.mdb and lock.mdb when they are created (before the umask).
  unsigned mode = 0644;
  // The most placements (keyschema::placed, one LMDB named database each) the environment can
  // hold besides the default one (mdb_env_set_maxdbs). A schema placing keyspaces in more fails
  // with limit_error when the store opens.
  unsigned max_placements = 16;
  // Longest time a map resize waits for open snapshots and cursors of this process to end, and
  // that a new snapshot, cursor or get() waits for a running resize.
  std::chrono::milliseconds resize_wait{10000};
};

KEYSCHEMA_END_NAMESPACE
