// keyschema/detail/store/wake_signal.hpp: a condition variable for the store's own waits (the
// commit queue's writers, the writer lock on etcd), made of a C++20 atomic's wait and notify.
//
// Why not std::condition_variable: <condition_variable> brings <stop_token>, <semaphore> and
// std::thread's internals into every translation unit that includes the store, for waits that a
// std::atomic (already included by the store) can do as well.
//
// How: a generation counter. wait(lk, pred) checks pred with the mutex held; when it is false,
// it reads the generation (still holding the mutex), releases the mutex and blocks until the
// generation differs from what it read, then takes the mutex again and checks pred anew. notify_*
// bump the generation, then wake the waiters. No wakeup is lost: whoever makes pred true does so
// holding the mutex and notifies after that change, so either the waiter checks pred after the
// change (and sees it), or it read the generation before the change, which the notify's bump
// then makes differ from what it read (atomic wait returns at once, or is woken).
//
// REQUIRES: the state pred reads is changed only with lk's mutex held, and each change that may
// make pred true is followed by notify_one (one waiter at most) or notify_all.
//
// Thread-safety: any number of threads; as std::condition_variable with one mutex. Like it,
// notify_* may be called with or without the mutex held; a waiter's wake_signal that lives in
// the waiter's own frame must be notified with the mutex held (the waiter cannot return, and
// destroy it, before the notifier releases the mutex).
#pragma once

#include <keyschema/detail/config.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

class wake_signal {
 public:
  // Returns with lk's mutex held and pred() true. REQUIRES: lk owns its mutex.
  template <class Pred>
  void wait(std::unique_lock<std::mutex>& lk, Pred pred) {
    while (!pred()) {
      const std::uint32_t seen = generation_.load(std::memory_order_relaxed);
      lk.unlock();
      generation_.wait(seen, std::memory_order_relaxed);
      lk.lock();
    }
  }
  void notify_one() noexcept {
    generation_.fetch_add(1, std::memory_order_relaxed);
    generation_.notify_one();
  }
  void notify_all() noexcept {
    generation_.fetch_add(1, std::memory_order_relaxed);
    generation_.notify_all();
  }

 private:
  std::atomic<std::uint32_t> generation_{0};
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
