// tests/support/scratch_tmpfs.hpp: a small tmpfs mounted for one test, for faults a plain
// directory cannot show when tests run as root (a full disk, a read-only file system).
//
// keyschema::testing::scratch_tmpfs mounts a tmpfs of the given size on a fresh temp_dir and
// unmounts it (MNT_DETACH) when it goes out of scope. Mounting needs root or CAP_SYS_ADMIN:
// mounted() is false otherwise and why() says why, so the test can report itself skipped
// ("KEYSCHEMA-SKIP: ...", see cmake/KeyschemaTesting.cmake) instead of passing.
//
// Thread-safety: one object per thread.
#pragma once

#include <support/temp_dir.hpp>

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace keyschema::testing {

class scratch_tmpfs {
 public:
  // size: tmpfs's size option ("1m", "16m").
  explicit scratch_tmpfs(const std::string& size) : dir_("tmpfs"), opts_(options_of(size)) {
    mounted_ = ::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, opts_.c_str()) == 0;
    if (!mounted_) why_ = std::strerror(errno);
  }
  scratch_tmpfs(const scratch_tmpfs&) = delete;
  scratch_tmpfs& operator=(const scratch_tmpfs&) = delete;
  ~scratch_tmpfs() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }

  bool mounted() const noexcept { return mounted_; }
  const std::string& why() const noexcept { return why_; }
  const std::filesystem::path& path() const noexcept { return dir_.path(); }

  // Remounts read-only (true) or read-write (false). Returns false (errno set) when it cannot.
  // REQUIRES: mounted().
  bool set_read_only(bool ro) {
    unsigned long flags = MS_REMOUNT;
    if (ro) flags |= MS_RDONLY;
    return ::mount("tmpfs", dir_.path().c_str(), "tmpfs", flags, opts_.c_str()) == 0;
  }

  // Remounts with a new size (tmpfs's size option), keeping the files: a larger size frees space
  // on a full file system. Returns false (errno set) when it cannot. REQUIRES: mounted().
  bool resize(const std::string& size) {
    const std::string opts = options_of(size);
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_REMOUNT, opts.c_str()) != 0) return false;
    opts_ = opts;
    return true;
  }

 private:
  static std::string options_of(const std::string& size) { return "size=" + size + ",mode=0755"; }

  temp_dir dir_;
  std::string opts_;
  bool mounted_ = false;
  std::string why_;
};

}  // namespace keyschema::testing
