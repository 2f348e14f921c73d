// keyschema/rocksdb/detail/status.hpp: turns a failed rocksdb::Status into a keyschema exception.
//
// Every RocksDB failure surfaces as keyschema::backend_error (or locked_error for a held LOCK
// file) whose native_call() names the RocksDB function, whose native_code() is the status code
// (rocksdb::Status::Code: 1 not found, 2 corruption, 3 not supported, 4 invalid argument, 5 IO
// error, 11 busy, ...), and whose what() carries RocksDB's own status text. An IO error caused by a
// full disk says so first: "disk full (N bytes free on the file system of <dir>)".
//
// Thread-safety: stateless functions.
#pragma once

#include <keyschema/detail/backend/lsm_adapter.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>

#include <rocksdb/status.h>

#include <cerrno>
#include <optional>
#include <string>
#include <system_error>

KEYSCHEMA_BEGIN_NAMESPACE
namespace rocksdb_detail {

inline int rocksdb_code(const ::rocksdb::Status& s) noexcept { return static_cast<int>(s.code()); }

// True when s is RocksDB's report that the database's LOCK file is held: by another open handle
// of this process ("IO error: lock hold by current process, ... <dir>/LOCK: No locks available")
// or by another process ("IO error: While lock file: <dir>/LOCK: Resource temporarily
// unavailable"). Failing to create the LOCK file itself (no permission) is not a lock conflict.
inline bool rocksdb_is_lock_conflict(const ::rocksdb::Status& s) {
  if (!s.IsIOError()) return false;
  const std::string text = s.ToString();
  if (text.find("LOCK") == std::string::npos) return false;
  return text.find("lock hold by current process") != std::string::npos ||
         text.find("Resource temporarily unavailable") != std::string::npos;
}

// For s, a failed write to the database directory dir: "disk full (...)" when the disk is the
// cause (see detail::disk_full: RocksDB's NoSpace subcode or strerror(ENOSPC) in the text, or
// any other IO error with less than detail::disk_full_margin bytes free), else nullopt.
inline std::optional<std::string> rocksdb_disk_full(const ::rocksdb::Status& s, const std::string& dir) {
  return detail::lsm_disk_full(s, dir, s.IsNoSpace());
}

// Throws backend_error("<context>: <status text>", native_call, rocksdb_code(s)); with a
// non-empty dir (the database directory, for a failed write, sync, flush or open) and a full
// disk, "<context>: disk full (...): <status text>".
// REQUIRES: !s.ok().
[[noreturn]] inline void throw_rocksdb_error(const ::rocksdb::Status& s, const std::string& context,
                                             const char* native_call, const std::string& dir = {}) {
  detail::throw_lsm_error(s, rocksdb_code(s), rocksdb_disk_full(s, dir), context, native_call);
}

}  // namespace rocksdb_detail
KEYSCHEMA_END_NAMESPACE
