// keyschema/detail/backend/disk_full.hpp: naming a full disk as the cause of a failed write, in
// the same words on every file backend.
//
// The engines report a disk that fills up in different ways: LMDB as EIO (pwrite() wrote only
// part of a page run and set no errno, "short write, filesystem full?"), LevelDB and RocksDB as
// an IO error status whose text carries strerror(ENOSPC) (RocksDB also as its NoSpace subcode),
// SQLite as SQLITE_FULL. An adapter that sees such a failure calls disk_full() with the
// directory it writes to; when the file system is the cause, the returned text goes into the
// error's what(): "disk full (12288 bytes free on the file system of /data/db)".
//
// Thread-safety: stateless; callable from any thread.
#pragma once

#include <keyschema/detail/config.hpp>

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// Free space below which a write failure whose cause is not known (EIO) is reported as a full
// disk. A write that failed because the file system ran out has just used its last free blocks,
// so what is left is far below this.
inline constexpr std::uint64_t disk_full_margin = std::uint64_t{1} << 20;

// Bytes of the file system holding `dir` that this process may still use (f_bfree for root,
// f_bavail otherwise); nullopt when statvfs(dir) fails.
inline std::optional<std::uint64_t> free_bytes(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return std::nullopt;
  const std::uint64_t blocks = ::geteuid() == 0 ? fs.f_bfree : fs.f_bavail;
  return blocks * static_cast<std::uint64_t>(fs.f_frsize);
}

// For err, the errno of a failed write under directory `dir` (EIO when the engine does not say
// which error it was): nullopt when the disk is not the cause, otherwise "disk full (N bytes
// free on the file system of DIR)". ENOSPC is always a full disk ("disk full (no space left on
// the file system of DIR)" when statvfs fails); EIO is one when statvfs(dir) shows less than
// disk_full_margin bytes free; any other err is not.
inline std::optional<std::string> disk_full(const std::string& dir, int err) {
  if (err != ENOSPC && err != EIO) return std::nullopt;
  const std::optional<std::uint64_t> free = free_bytes(dir);
  if (!free) {
    if (err == ENOSPC) return "disk full (no space left on the file system of " + dir + ")";
    return std::nullopt;
  }
  if (err == EIO && *free >= disk_full_margin) return std::nullopt;
  return "disk full (" + std::to_string(*free) + " bytes free on the file system of " + dir + ")";
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
