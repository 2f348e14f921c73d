// keyschema/detail/store/writer_mutex.hpp: the store's writer lock on a backend whose writes may be
// in flight from several threads at once (backend_with_concurrent_writes: etcd).
//
// What: a lock held exclusively (lock/unlock: a transaction from its begin to its end, a range
// erase, a commit group whose writes need resolving) or shared (lock_shared/unlock_shared: a
// commit group of plain writes, several of which may be in flight at once). Exclusive lockers are
// preferred: once one waits, new shared lockers wait too, so a steady stream of plain writes
// cannot starve a transaction.
//
// Why shared: a plain write reads nothing, so two of them in flight at once cannot make each
// other wrong; only what reads before it writes (a transaction, an add, a declared count or
// index) must see no commit of this process between its reads and its commit, and it takes the
// lock exclusively. Held across the network round trip because that is the guarantee: a
// transaction's reads stay current until its commit.
//
// Thread-safety: any number of threads; lock() is not recursive. Meets Lockable (for
// std::unique_lock) and SharedLockable's lock_shared/unlock_shared.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/store/wake_signal.hpp>

#include <cstddef>
#include <mutex>
#include <type_traits>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

class writer_mutex {
 public:
  void lock() {
    std::unique_lock<std::mutex> lk(mu_);
    ++exclusive_waiting_;
    cv_.wait(lk, [&] { return !exclusive_ && shared_ == 0; });
    --exclusive_waiting_;
    exclusive_ = true;
  }
  bool try_lock() {
    std::lock_guard<std::mutex> lk(mu_);
    if (exclusive_ || shared_ != 0) return false;
    exclusive_ = true;
    return true;
  }
  void unlock() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      exclusive_ = false;
    }
    cv_.notify_all();
  }
  void lock_shared() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return !exclusive_ && exclusive_waiting_ == 0; });
    ++shared_;
  }
  void unlock_shared() {
    bool last = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      last = --shared_ == 0;
    }
    if (last) cv_.notify_all();
  }

 private:
  std::mutex mu_;
  wake_signal cv_;
  std::size_t shared_ = 0;             // shared holders
  std::size_t exclusive_waiting_ = 0;  // threads waiting in lock()
  bool exclusive_ = false;
};

// Holds m shared for its lifetime.
template <class M>
class shared_hold {
 public:
  explicit shared_hold(M& m) : m_(m) { m_.lock_shared(); }
  ~shared_hold() { m_.unlock_shared(); }
  shared_hold(const shared_hold&) = delete;
  shared_hold& operator=(const shared_hold&) = delete;

 private:
  M& m_;
};

// The store's writer lock on Backend: a writer_mutex on a backend_with_concurrent_writes, a plain
// std::mutex otherwise (every write holds it exclusively).
template <class Backend>
using writer_mutex_for = std::conditional_t<backend_with_concurrent_writes<Backend>, writer_mutex, std::mutex>;

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
