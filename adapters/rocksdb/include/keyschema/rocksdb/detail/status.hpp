// keyschema/rocksdb/detail/status.hpp: turns a failed rocksdb::Status into a keyschema exception.
//
// Every RocksDB failure surfaces as keyschema::backend_error (or locked_error for a held LOCK
// file) whose native_call() names the RocksDB function, whose native_code() is the status code
// (rocksdb::Status::Code: 1 not found, 2 corruption, 3 not supported, 4 invalid argument, 5 IO
// error, 11 busy, ...), and whose what() carries RocksDB's own status text.
//
// Thread-safety: stateless functions.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>

#include <rocksdb/status.h>

#include <string>

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

// Throws backend_error("<context>: <status text>", native_call, rocksdb_code(s)).
// REQUIRES: !s.ok().
[[noreturn]] inline void throw_rocksdb_error(const ::rocksdb::Status& s, const std::string& context,
                                             const char* native_call) {
  throw backend_error(context + ": " + s.ToString(), native_call, rocksdb_code(s));
}

}  // namespace rocksdb_detail
KEYSCHEMA_END_NAMESPACE
