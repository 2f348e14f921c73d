// keyschema/lmdb/detail/disk_full.hpp: telling "disk full" apart from other LMDB write failures.
//
// LMDB reports a disk that fills up during a commit as EIO, not ENOSPC: when pwrite() writes
// only part of a page run (the file system ran out of blocks midway), mdb_page_flush() returns
// EIO ("short write, filesystem full?") because no errno was set. disk_full() looks at the file
// system holding the database after such a failure and says whether it is (almost) full, so that
// the error can name the cause.
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
namespace lmdb_detail {

// Free space below which an EIO from a commit is reported as a full disk. A commit that failed
// with a short write has just used the last free blocks, so what is left is far below this.
inline constexpr std::uint64_t disk_full_margin = std::uint64_t{1} << 20;

// For rc, the code of a failed LMDB write call on the environment directory `dir`: nullopt when
// the disk is not the cause, otherwise a description such as "12288 bytes free on the file system
// of /data/db". ENOSPC is always a full disk; EIO is one when statvfs(dir) shows less than
// disk_full_margin bytes available to this process (f_bfree for root, f_bavail otherwise).
inline std::optional<std::string> disk_full(const std::string& dir, int rc) {
  if (rc != ENOSPC && rc != EIO) return std::nullopt;
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) {
    if (rc == ENOSPC) return "no space left on the file system of " + dir;
    return std::nullopt;
  }
  const std::uint64_t blocks = ::geteuid() == 0 ? fs.f_bfree : fs.f_bavail;
  const std::uint64_t free_bytes = blocks * static_cast<std::uint64_t>(fs.f_frsize);
  if (rc == EIO && free_bytes >= disk_full_margin) return std::nullopt;
  return std::to_string(free_bytes) + " bytes free on the file system of " + dir;
}

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
