// examples/support/example_backend.hpp: the command line every broker example shares.
//
//   <example> [--backend memory|leveldb|lmdb] [--path DIR] [--<name> <value>]...
//
// --backend chooses the store the example runs on (default memory); --path the database
// directory for leveldb and lmdb (default: a fresh directory under the system temporary
// directory, removed at exit). Any other "--name value" pair is kept for the example to read
// (options::number). with_backend() opens the chosen store and hands the example a function that
// opens it (again): reopening a file backend closes nothing the example still holds, so the
// example drops its store before reopening; the memory backend cannot be reopened, so there
// open() returns the one store it made first (examples say where that skips a check).
//
// Thread-safety: plain functions, called from main().
#pragma once

#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>

namespace example {

namespace ks = keyschema;

struct options {
  std::string backend = "memory";
  std::filesystem::path path;  // empty: a fresh temporary directory
  std::map<std::string, std::string, std::less<>> extra;

  // The value of --name as a number, or fallback when it was not given.
  std::uint64_t number(std::string_view name, std::uint64_t fallback) const {
    const auto it = extra.find(name);
    return it == extra.end() ? fallback : std::stoull(it->second);
  }
};

// Parses argv. Exits with status 2 and a usage line on a malformed command line.
inline options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.size() < 3 || a.substr(0, 2) != "--" || i + 1 >= argc) {
      std::fprintf(stderr, "usage: %s [--backend memory|leveldb|lmdb] [--path DIR] [--<name> <value>]...\n", argv[0]);
      std::exit(2);
    }
    const std::string value = argv[++i];
    if (a == "--backend") {
      o.backend = value;
    } else if (a == "--path") {
      o.path = value;
    } else {
      o.extra.emplace(std::string(a.substr(2)), value);
    }
  }
  if (o.backend != "memory" && o.backend != "leveldb" && o.backend != "lmdb") {
    std::fprintf(stderr, "%s: unknown backend '%s' (memory, leveldb or lmdb)\n", argv[0], o.backend.c_str());
    std::exit(2);
  }
  return o;
}

// A directory removed when this object is destroyed, unless the user named it.
class scratch_dir {
 public:
  explicit scratch_dir(std::filesystem::path chosen) : path_(std::move(chosen)), owned_(path_.empty()) {
    if (owned_) {
      std::random_device rd;
      path_ = std::filesystem::temp_directory_path() / ("keyschema-example-" + std::to_string(rd()));
    }
    std::filesystem::create_directories(path_);
  }
  ~scratch_dir() {
    std::error_code ec;
    if (owned_) std::filesystem::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  bool owned_;
};

// Runs body(open, dir) on the backend o names, where open() returns a std::shared_ptr to a
// ks::store<Schema, B> over dir/"db" and dir is a scratch directory the example may use for other
// files. Returns body's result; an exception from body is printed and turned into status 1.
template <class Schema, class Body>
int with_backend(const options& o, Body&& body) {
  scratch_dir dir(o.path);
  const std::filesystem::path db = dir.path() / "db";
  try {
    if (o.backend == "leveldb") {
      return body([db] { return std::make_shared<ks::store<Schema, ks::leveldb_backend>>(db); }, dir.path());
    }
    if (o.backend == "lmdb") {
      return body([db] { return std::make_shared<ks::store<Schema, ks::lmdb_backend>>(db); }, dir.path());
    }
    auto memory = std::make_shared<ks::store<Schema, ks::memory_backend>>();
    return body([memory] { return memory; }, dir.path());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

// Counts what did not hold; main() returns failures() != 0.
inline int& failure_count() {
  static int n = 0;
  return n;
}
inline void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("UNEXPECTED: %s\n", what.c_str());
    ++failure_count();
  }
}

}  // namespace example
