// keyschema/sqlite/detail/open_registry.hpp: the process-wide set of SQLite databases open here.
//
// SQLite itself lets one process open a database file many times, but keyschema gives every
// backend the same rule: one database is open in one backend object per process (the
// conformance suite's "a database is open in one store at a time"). Two backend objects on one
// path would each serialize writers with their own mutex, and a store transaction of one would
// make the other's writes wait on SQLite's busy timeout instead of the store's writer lock.
// Other processes may open the database at the same time; SQLite's locks serialize their
// writers.
//
// open_registration is the move-only token of one registered path; destroying it (or the
// backend that holds it) unregisters the path. One registry per program image.
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
namespace sqlite_detail {

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

}  // namespace sqlite_detail
KEYSCHEMA_END_NAMESPACE
