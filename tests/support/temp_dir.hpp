// tests/support/temp_dir.hpp: a scratch directory for one test, removed when it goes out of scope.
//
// keyschema::testing::temp_dir creates a fresh, empty directory under
// std::filesystem::temp_directory_path() (CTest points TMPDIR at the test's own work directory,
// <build>/tests/work/<test>), named after the given tag plus a unique suffix. The destructor
// removes the directory and everything in it; errors while removing are ignored so a failing test
// still reports its own failure.
//
// Thread-safety: distinct objects may be used from different threads; creation is safe to race
// (each object gets its own directory).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace keyschema::testing {

class temp_dir {
 public:
  // Creates <temp>/<tag>-<unique>. Throws std::runtime_error if no directory could be created.
  explicit temp_dir(std::string_view tag = "keyschema") {
    static std::atomic<std::uint64_t> counter{0};
    const auto base = std::filesystem::temp_directory_path();
    std::random_device rd;
    for (int attempt = 0; attempt < 100; ++attempt) {
      const std::uint64_t n = (static_cast<std::uint64_t>(rd()) << 20) ^ counter.fetch_add(1);
      auto candidate = base / (std::string(tag) + "-" + std::to_string(n));
      std::error_code ec;
      if (std::filesystem::create_directory(candidate, ec) && !ec) {
        path_ = std::move(candidate);
        return;
      }
    }
    throw std::runtime_error("keyschema::testing::temp_dir: cannot create a directory under " +
                             base.string());
  }

  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  // The directory. Valid until this object is destroyed.
  const std::filesystem::path& path() const noexcept { return path_; }

  // path() / name, as a string (for APIs that take a path string).
  std::string operator/(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace keyschema::testing
