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
// Ownership. A reader_registry holds every thread_reader of one backend (at most `cap`,
// sqlite_options::thread_readers; a member of backend_state). A thread finds its reader in a
// small thread-local cache (tls_readers) keyed by the backend's generation, a number no other
// backend of the process gets (so a backend destroyed and another opened at the same address, or
// the same path reopened, are told apart); on a miss it claims an unclaimed reader of the
// registry, or adds one. A thread gives its readers back when it exits or when its cache evicts
// them: unclaimed, connection open, for the next thread to claim. The registry closes the
// connections when the backend is destroyed, on whichever thread destroys it: first it is
// removed from live_registries (a thread giving a reader back holds that list's mutex
// throughout, so none does afterwards), then every connection is closed. A thread whose cache
// still names the destroyed backend never uses that entry again (no backend gets its generation).
// So a thread ending while the backend lives leaves its connection to the backend, and a backend
// destroyed while threads live frees every connection; neither leaks.
//
// Locks: live_registries::mu is taken on open and destruction of a backend, on thread exit and on
// a cache miss, never on a read whose thread has its reader cached; reader_registry::mu (guards
// `all`, `claimed` and `open`) when a thread claims or gives back a reader and by close(). The
// order is live_registries::mu, then reader_registry::mu; none is taken the other way round.
// No I/O happens under them: a connection is opened by its thread outside both, and close()
// closes the connections after letting go of the registry's mutex.
#pragma once

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
struct reader_registry {
  std::mutex mu;
  bool open = true;     // false once the backend closed: nothing is given back or claimed
  std::size_t cap = 0;  // set when the backend is opened, before it is shared
  std::vector<std::unique_ptr<thread_reader>> all;

  // An unclaimed reader, claimed now; a new one while fewer than cap exist; nullptr otherwise.
  // Errors: std::bad_alloc.
  thread_reader* claim() {
    std::lock_guard lk(mu);
    if (!open) return nullptr;
    for (const auto& r : all) {
      if (!r->claimed) {
        r->claimed = true;
        return r.get();
      }
    }
    if (all.size() >= cap) return nullptr;
    all.push_back(std::make_unique<thread_reader>());
    all.back()->claimed = true;
    return all.back().get();
  }

  // Gives r back for another thread to claim (nothing when r is nullptr). Its connection stays
  // open; a cursor may still hold it busy (the next owner reads with the pool until it ends).
  void give_back(thread_reader* r) noexcept {
    if (r == nullptr) return;
    std::lock_guard lk(mu);
    if (open) r->claimed = false;
  }

  // Closes every reader's connection; nothing is claimed or given back afterwards.
  // REQUIRES: no reader is busy (no read runs, every cursor ended: the backend is being
  // destroyed), and the registry was removed from live_registries.
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

// A process-wide number per backend, never 0 (0 marks an empty cache entry).
inline std::uint64_t next_generation() noexcept {
  static std::atomic<std::uint64_t> n{0};
  return n.fetch_add(1, std::memory_order_relaxed) + 1;
}

// The registries of the backends open in the process, by generation: a thread giving its readers
// back finds a registry here only while its backend exists. Never destroyed (threads and static
// backends may end after static destruction began).
struct live_registries {
  std::mutex mu;  // before reader_registry::mu
  std::vector<std::pair<std::uint64_t, reader_registry*>> list;

  static live_registries& instance() {
    static live_registries* const l = new live_registries;
    return *l;
  }
  // Errors: std::bad_alloc.
  void add(std::uint64_t gen, reader_registry* r) {
    std::lock_guard lk(mu);
    list.emplace_back(gen, r);
  }
  // After remove(gen) returned, no thread gives a reader back to gen's registry.
  void remove(std::uint64_t gen) noexcept {
    std::lock_guard lk(mu);
    for (auto& e : list) {
      if (e.first == gen) {
        e = list.back();
        list.pop_back();
        return;
      }
    }
  }
  // REQUIRES: mu held.
  reader_registry* find_locked(std::uint64_t gen) const noexcept {
    for (const auto& e : list) {
      if (e.first == gen) return e.second;
    }
    return nullptr;
  }
};

// The calling thread's cache of its readers: backend generation -> reader. Constant-initialized
// and trivially destructible, so that a read finds it without a thread-local guard;
// tls_reader_owner gives the readers back when the thread exits.
inline constexpr std::size_t cached_readers = 8;
struct cached_reader {
  std::uint64_t gen = 0;
  thread_reader* r = nullptr;
};
inline constinit thread_local cached_reader tls_readers[cached_readers]{};
inline constinit thread_local bool tls_readers_gone = false;  // the thread's owner was destroyed

// Gives the calling thread's readers back when the thread exits.
struct tls_reader_owner {
  tls_reader_owner() = default;
  tls_reader_owner(const tls_reader_owner&) = delete;
  tls_reader_owner& operator=(const tls_reader_owner&) = delete;
  ~tls_reader_owner() {
    tls_readers_gone = true;  // a read from a later thread-local destructor uses the pool
    live_registries& live = live_registries::instance();
    std::lock_guard lk(live.mu);
    for (std::size_t i = 0; i < cached_readers; ++i) evict_locked(live, i);
  }
  // Gives the reader of entry i back (when its backend still exists) and empties the entry.
  // REQUIRES: live.mu held.
  static void evict_locked(live_registries& live, std::size_t i) noexcept {
    if (tls_readers[i].gen != 0) {
      if (reader_registry* r = live.find_locked(tls_readers[i].gen)) r->give_back(tls_readers[i].r);
    }
    tls_readers[i] = cached_reader{};
  }
  // Registers the calling thread's owner (its destructor runs when the thread exits).
  static void ensure() { static thread_local tls_reader_owner owner; }
};

// Claims a reader of registry (the backend numbered gen) for the calling thread and caches it in
// front (an entry of a backend that no longer exists is evicted first, else the least recently
// claimed one). Returns nullptr when none is available (the registry is at its cap, the thread is
// exiting, or memory ran out): the caller reads with a pooled connection instead. At the cap the
// thread caches that (a null reader) and reads with the pool until the entry is evicted, rather
// than taking the registry's mutex on every read.
[[gnu::noinline]] inline thread_reader* claim_thread_reader(std::uint64_t gen, reader_registry& registry) noexcept {
  if (tls_readers_gone) return nullptr;
  try {
    tls_reader_owner::ensure();
    thread_reader* r = registry.cap != 0 ? registry.claim() : nullptr;
    live_registries& live = live_registries::instance();
    std::lock_guard lk(live.mu);
    std::size_t victim = cached_readers - 1;
    for (std::size_t i = 0; i < cached_readers; ++i) {
      if (tls_readers[i].gen == 0 || live.find_locked(tls_readers[i].gen) == nullptr) {
        victim = i;
        break;
      }
    }
    tls_reader_owner::evict_locked(live, victim);
    for (std::size_t i = victim; i > 0; --i) tls_readers[i] = tls_readers[i - 1];
    tls_readers[0] = cached_reader{gen, r};
    return r;
  } catch (...) {
    return nullptr;
  }
}

// The calling thread's reader of the backend numbered gen (claimed now on a miss), or nullptr
// when it has none. Takes no lock once the thread has its reader cached.
KEYSCHEMA_ALWAYS_INLINE thread_reader* this_thread_reader(std::uint64_t gen, reader_registry& registry) noexcept {
  for (const cached_reader& c : tls_readers) {
    if (c.gen == gen) return c.r;
  }
  return claim_thread_reader(gen, registry);
}

}  // namespace sqlite_detail
KEYSCHEMA_END_NAMESPACE
