// keyschema/rocksdb/detail/orphan_check.hpp: refuses to open a RocksDB directory that holds
// database files but no CURRENT file.
//
// RocksDB 7.8 with create_if_missing treats a directory without CURRENT as "no database": it
// writes a new empty one, and its obsolete-file sweep then deletes every table and write-ahead
// log file the new MANIFEST does not list, i.e. all the data. A lost CURRENT (a failed copy, a
// stray `rm`) would so become a silent, total loss. rocksdb_backend checks before DB::Open.
//
// Thread-safety: stateless functions.
#pragma once

#include <keyschema/detail/backend/lsm_adapter.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>

#include <rocksdb/status.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

KEYSCHEMA_BEGIN_NAMESPACE
namespace rocksdb_detail {

// True for the names of the RocksDB files that hold data: "<digits>.log" (write-ahead log),
// "<digits>.sst" (table) and "<digits>.blob" (blob file). A MANIFEST-<n> or IDENTITY alone holds
// no data (RocksDB writes them before CURRENT when it creates a database, so a crash in between
// leaves them): such a directory is still created anew.
inline bool rocksdb_is_data_file(std::string_view name) noexcept {
  return detail::lsm_is_numbered_file(name, {".log", ".sst", ".blob"});
}

// Throws backend_error (native_call "std::filesystem::exists", code rocksdb::Status::kCorruption)
// when directory dir holds RocksDB data files but no CURRENT file. Does nothing when CURRENT
// exists or the directory cannot be listed (DB::Open then reports what is wrong).
inline void refuse_database_without_current(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "CURRENT", ec) || ec) return;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!rocksdb_is_data_file(name)) continue;
    detail::throw_lsm_orphaned_files("keyschema::rocksdb_backend", "RocksDB", dir, name,
                                     "`ldb repair --db=" + dir + "`", "std::filesystem::exists",
                                     static_cast<int>(::rocksdb::Status::kCorruption));
  }
}

}  // namespace rocksdb_detail
KEYSCHEMA_END_NAMESPACE
