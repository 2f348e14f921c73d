// keyschema/sqlite/detail/thread_reader.hpp: the reader connection each thread keeps per
// sqlite_backend for get() and cursors without a snapshot.
//
// A thread_reader (connection.hpp) is one reader connection a thread claims on its first read of
// a backend and keeps, with its prepared statements and its page cache, for its later reads: a
// read then takes no lock that other readers take and writes no memory they write (the shared
// reader pool took a mutex twice per read, and handed its connections out in turn, so a thread's
// page cache was not its own). This is what native SQLite code does with one connection per
// thread. The connection is opened on the thread's first read, or taken from the pool's idle
// connections (whose page caches are warm).
//
// Ownership and locks: detail/backend/thread_readers.hpp (the registry of one backend, a member
// of backend_state, at most sqlite_options::thread_readers readers; the threads' caches keyed by
// the backend's generation, so the same path reopened is told apart; connections given back,
// open, when a thread exits; the backend's destructor removes its registry from the live
// registries, then closes every connection). No I/O happens under their mutexes: a connection is
// opened by its thread outside both, and close() closes the connections after letting go of the
// registry's mutex.
#pragma once

#include <keyschema/detail/backend/thread_readers.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/sqlite/detail/connection.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace sqlite_detail {

// The thread readers of one backend (see the header comment).
struct reader_registry : detail::reader_registry<thread_reader> {
  // Closes every reader's connection; nothing is claimed or given back afterwards.
  // REQUIRES: no reader is busy (no read runs, every cursor ended: the backend is being
  // destroyed), and the registry was removed from reader_cache::live().
  void close() noexcept {
    std::vector<std::unique_ptr<thread_reader>> gone;
    {
      std::lock_guard lk(mu);
      open = false;
      gone.swap(all);
    }
    for (const auto& r : gone) static_cast<void>(r->busy.load(std::memory_order_acquire));  // after the last holder
    gone.clear();  // closes the connections, outside the lock
  }
};

// The threads' caches of their readers and the live registries (thread_readers.hpp).
using reader_cache = detail::thread_readers<reader_registry>;

// The calling thread's reader of the backend numbered gen (claimed now on a miss), or nullptr
// when it has none. Takes no lock once the thread has its reader cached.
KEYSCHEMA_ALWAYS_INLINE thread_reader* this_thread_reader(std::uint64_t gen, reader_registry& registry) noexcept {
  if (const reader_cache::cached_reader* c = reader_cache::find(gen)) return c->r;
  return reader_cache::claim(gen, registry, [](thread_reader&) {});
}

}  // namespace sqlite_detail
KEYSCHEMA_END_NAMESPACE
