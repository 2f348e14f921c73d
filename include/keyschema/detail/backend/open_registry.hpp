// keyschema/detail/backend/open_registry.hpp: the process-wide set of database paths open here,
// shared by the adapters that allow one open per path and process (LMDB, SQLite).
//
// Every adapter gives one rule: a database is open in one backend object per process (the
// conformance suite's "a database is open in one store at a time"). LevelDB and RocksDB enforce
// it with their LOCK file. LMDB and SQLite do not, so their adapters register the canonical path
// of every database they open here and refuse a second open with keyschema::locked_error:
//   - LMDB forbids opening one environment twice in the same process: its POSIX fcntl() locks
//     belong to the process, so closing the second handle silently drops the locks the first one
//     relies on (lmdb.h, "Caveats");
//   - SQLite allows it, but two backend objects on one path would each serialize writers with
//     their own mutex, and a store transaction of one would make the other's writes wait on
//     SQLite's busy timeout instead of the store's writer lock.
// Other processes may open the database at the same time; the engines' locks serialize them.
//
// open_registration is the move-only token of one registered path; destroying it (or the
// backend that holds it) unregisters the path. The registry is one function-local static per
// program image: two shared libraries that each embed this header with hidden visibility get
// separate registries.
//
// Thread-safety: acquire() and the destructor may race freely; the set is guarded by a mutex.
#pragma once

#include <keyschema/detail/config.hpp>

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

class open_registration {
 public:
  open_registration() = default;
  open_registration(const open_registration&) = delete;
  open_registration& operator=(const open_registration&) = delete;
  open_registration(open_registration&& o) noexcept : key_(std::move(o.key_)) { o.key_.reset(); }
  open_registration& operator=(open_registration&& o) noexcept {
    if (this != &o) {
      release();
      key_ = std::move(o.key_);
      o.key_.reset();
    }
    return *this;
  }
  ~open_registration() { release(); }

  // Registers key (a canonical path). Returns nullopt when it is registered already.
  // Errors: std::bad_alloc only.
  static std::optional<open_registration> acquire(std::string key) {
    registry& r = instance();
    std::lock_guard lk(r.mu);
    if (!r.paths.insert(key).second) return std::nullopt;
    open_registration token;
    token.key_ = std::move(key);
    return token;
  }

 private:
  struct registry {
    std::mutex mu;
    std::set<std::string> paths;
  };

  static registry& instance() {
    static registry r;
    return r;
  }

  void release() noexcept {
    if (!key_) return;
    registry& r = instance();
    std::lock_guard lk(r.mu);
    r.paths.erase(*key_);
    key_.reset();
  }

  std::optional<std::string> key_;
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
