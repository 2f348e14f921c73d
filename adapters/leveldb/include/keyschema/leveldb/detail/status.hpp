// keyschema/leveldb/detail/status.hpp: turns a failed leveldb::Status into a keyschema exception.
//
// Every LevelDB failure surfaces as keyschema::backend_error (or locked_error for a held LOCK
// file) whose native_call() names the LevelDB function, whose native_code() is the status kind
// below, and whose what() carries LevelDB's own status text. An IO error caused by a full disk
// says so first: "disk full (N bytes free on the file system of <dir>)".
//
// Thread-safety: stateless functions.
#pragma once

#include <keyschema/detail/backend/lsm_adapter.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>

#include <leveldb/status.h>

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

KEYSCHEMA_BEGIN_NAMESPACE
namespace leveldb_detail {

// LevelDB's status kinds (leveldb::Status::Code, which LevelDB keeps private), reported as
// backend_error::native_code().
enum leveldb_status_code : int {
  leveldb_ok = 0,
  leveldb_not_found = 1,
  leveldb_corruption = 2,
  leveldb_not_supported = 3,
  leveldb_invalid_argument = 4,
  leveldb_io_error = 5,
};

inline int leveldb_code(const ::leveldb::Status& s) noexcept {
  if (s.ok()) return leveldb_ok;
  if (s.IsNotFound()) return leveldb_not_found;
  if (s.IsCorruption()) return leveldb_corruption;
  if (s.IsNotSupportedError()) return leveldb_not_supported;
  if (s.IsInvalidArgument()) return leveldb_invalid_argument;
  return leveldb_io_error;
}

// True when s is LevelDB's report that the database's LOCK file is held: by another open
// handle of this process ("IO error: lock <dir>/LOCK: already held by process") or by another
// process ("IO error: lock <dir>/LOCK: Resource temporarily unavailable"). Failing to create
// or open the LOCK file itself ("IO error: <dir>/LOCK: ...") is not a lock conflict.
inline bool leveldb_is_lock_conflict(const ::leveldb::Status& s) {
  if (!s.IsIOError()) return false;
  const std::string text = s.ToString();
  constexpr std::string_view prefix = "IO error: lock ";
  return text.compare(0, prefix.size(), prefix) == 0 && text.find("LOCK", prefix.size()) != std::string::npos;
}

// For s, a failed write to the database directory dir: "disk full (...)" when the disk is the
// cause (see detail::disk_full: strerror(ENOSPC) in LevelDB's text, which carries the errno's
// text only, or any other IO error with less than detail::disk_full_margin bytes free), else
// nullopt.
inline std::optional<std::string> leveldb_disk_full(const ::leveldb::Status& s, const std::string& dir) {
  return detail::lsm_disk_full(s, dir, false);
}

// Throws backend_error("<context>: <status text>", native_call, leveldb_code(s)); with a
// non-empty dir (the database directory, for a failed write or open) and a full disk,
// "<context>: disk full (...): <status text>".
// REQUIRES: !s.ok().
[[noreturn]] inline void throw_leveldb_error(const ::leveldb::Status& s, const std::string& context,
                                             const char* native_call, const std::string& dir = {}) {
  detail::throw_lsm_error(s, leveldb_code(s), leveldb_disk_full(s, dir), context, native_call);
}

}  // namespace leveldb_detail
KEYSCHEMA_END_NAMESPACE
