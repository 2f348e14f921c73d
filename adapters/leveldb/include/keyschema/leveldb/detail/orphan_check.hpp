// keyschema/leveldb/detail/orphan_check.hpp: refuses to open a LevelDB directory that holds
// database files but no CURRENT file.
//
// LevelDB 1.23 with create_if_missing treats a directory without CURRENT as "no database": it
// writes a new empty one, and its first RemoveObsoleteFiles() deletes every table and log file
// the new MANIFEST does not list, i.e. all the data. A lost CURRENT (a failed copy, a stray
// `rm`) would so become a silent, total loss. leveldb_backend checks before DB::Open.
//
// Thread-safety: stateless functions.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/leveldb/detail/status.hpp>

#include <leveldb/env.h>

#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace leveldb_detail {

// True for the names of the LevelDB files that hold data: "<digits>.log", "<digits>.ldb" and
// "<digits>.sst". A MANIFEST-<n> alone holds no data (LevelDB writes it, then CURRENT, when it
// creates a database, so a crash in between leaves one): such a directory is still created anew.
inline bool leveldb_is_data_file(std::string_view name) noexcept {
  return detail::lsm_is_numbered_file(name, {".log", ".ldb", ".sst"});
}

// Throws backend_error (native_call "leveldb::Env::FileExists", code leveldb_corruption) when
// directory dir, as env sees it, holds LevelDB data files but no CURRENT file. Does nothing when
// CURRENT exists or the directory cannot be listed (DB::Open then reports what is wrong).
inline void refuse_database_without_current(::leveldb::Env& env, const std::string& dir) {
  if (env.FileExists(dir + "/CURRENT")) return;
  std::vector<std::string> children;
  if (!env.GetChildren(dir, &children).ok()) return;
  for (const std::string& name : children) {
    if (!leveldb_is_data_file(name)) continue;
    detail::throw_lsm_orphaned_files("keyschema::leveldb_backend", "LevelDB", dir, name,
                                     "leveldb::RepairDB on the directory", "leveldb::Env::FileExists",
                                     leveldb_corruption);
  }
}

}  // namespace leveldb_detail
KEYSCHEMA_END_NAMESPACE
