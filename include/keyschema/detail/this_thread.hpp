// keyschema/detail/this_thread.hpp: what keyschema needs of the calling thread (who it is, a
// short sleep, a yield) without <thread>.
//
// <thread> brings std::thread, std::jthread and <stop_token> into every translation unit that
// includes the store, only for these three calls; POSIX offers them directly (std::this_thread's
// sleep_for and yield are nanosleep and sched_yield on the platforms keyschema supports).
//
// this_thread_tag(): an address that identifies the calling thread while it runs (a thread-local
// object's). Like std::thread::id, a finished thread's tag may be reused by a later thread.
//
// Thread-safety: each function acts on the calling thread only.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cerrno>
#include <cstdint>

#include <sched.h>
#include <time.h>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

inline const void* this_thread_tag() noexcept {
  static thread_local const char tag = 0;
  return &tag;
}

// Sleeps the calling thread for at least `us` microseconds (nothing when us <= 0); a signal that
// interrupts the sleep does not shorten it.
inline void sleep_microseconds(std::int64_t us) noexcept {
  if (us <= 0) return;
  ::timespec left{};
  left.tv_sec = static_cast<::time_t>(us / 1'000'000);
  left.tv_nsec = static_cast<long>((us % 1'000'000) * 1'000);
  while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

// Lets another thread run (std::this_thread::yield).
inline void yield_thread() noexcept { ::sched_yield(); }

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
