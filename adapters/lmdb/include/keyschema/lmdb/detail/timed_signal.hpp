// keyschema/lmdb/detail/timed_signal.hpp: a condition variable with deadlines (the waits of
// txn_gate.hpp, each bounded by lmdb_options::resize_wait), without <condition_variable>.
//
// Why not std::condition_variable: <condition_variable> brings <stop_token>, <semaphore> and
// std::thread's internals into every translation unit that includes the adapter. Why not the C++20
// atomic wait of the store's waits (detail/store/wake_signal.hpp): it cannot time out, and every
// wait of the gate must. What it is: a POSIX condition variable on the steady clock
// (CLOCK_MONOTONIC), waited on with the std::mutex's own pthread mutex (native_handle()), which is
// what std::condition_variable is on the platforms keyschema supports; <pthread.h> is already
// included by <mutex> there.
//
// Thread-safety: any number of threads; as std::condition_variable with one mutex. notify_all
// may be called with or without the mutex held.
#pragma once

#include <keyschema/detail/config.hpp>

#include <chrono>
#include <mutex>
#include <type_traits>

#include <pthread.h>
#include <time.h>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

class timed_signal {
 public:
  static_assert(std::is_same_v<std::mutex::native_handle_type, pthread_mutex_t*>,
                "keyschema::lmdb_backend: std::mutex is not a pthread mutex on this platform; the LMDB "
                "adapter's resize gate (lmdb/detail/timed_signal.hpp) needs one");

  timed_signal() noexcept {
    pthread_condattr_t a;
    ::pthread_condattr_init(&a);
    ::pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    ::pthread_cond_init(&cv_, &a);
    ::pthread_condattr_destroy(&a);
  }
  timed_signal(const timed_signal&) = delete;
  timed_signal& operator=(const timed_signal&) = delete;
  ~timed_signal() { ::pthread_cond_destroy(&cv_); }

  // Blocks until notified (or woken spuriously) or until deadline; returns false when the
  // deadline has passed. REQUIRES: lk owns its mutex; it owns it again on return.
  bool wait_until(std::unique_lock<std::mutex>& lk, std::chrono::steady_clock::time_point deadline) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= left.zero()) return false;
    // The deadline on CLOCK_MONOTONIC: now there plus what is left.
    ::timespec at{};
    ::clock_gettime(CLOCK_MONOTONIC, &at);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    at.tv_sec += static_cast<::time_t>(ns / 1'000'000'000);
    at.tv_nsec += static_cast<long>(ns % 1'000'000'000);
    if (at.tv_nsec >= 1'000'000'000) {
      at.tv_sec += 1;
      at.tv_nsec -= 1'000'000'000;
    }
    ::pthread_cond_timedwait(&cv_, lk.mutex()->native_handle(), &at);
    return std::chrono::steady_clock::now() < deadline;
  }

  // Returns pred() once it is true (true), or at the deadline (pred()'s value then), as
  // std::condition_variable::wait_until with a predicate.
  template <class Pred>
  bool wait_until(std::unique_lock<std::mutex>& lk, std::chrono::steady_clock::time_point deadline, Pred pred) {
    while (!pred())
      if (!wait_until(lk, deadline)) return pred();
    return true;
  }

  void notify_all() noexcept { ::pthread_cond_broadcast(&cv_); }

 private:
  pthread_cond_t cv_;
};

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
