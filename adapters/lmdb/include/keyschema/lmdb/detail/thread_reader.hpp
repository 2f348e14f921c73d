// keyschema/lmdb/detail/thread_reader.hpp: the read transaction each thread keeps per LMDB
// environment for point reads (lmdb_backend::get without a snapshot).
//
// A thread_reader is one reset read-only transaction and the gate slot that registers it while
// it is live (txn_gate::slot): a get() marks the slot busy, renews the transaction, reads, resets
// it and marks the slot idle, writing no memory that another thread's get() writes (the shared
// pool and the gate's shared count did, and their cache lines bounced between the cores of
// concurrent readers). This is what native LMDB code does with one reset transaction per thread.
// A cursor without a snapshot takes its thread's reader the same way when it is idle, with the
// closed MDB_cursor the reader keeps for reuse, and gives both back when it is destroyed (on any
// thread: the busy slot is what it holds); while it lives, its thread's get()s use the pool.
//
// Ownership. A reader_registry holds every thread_reader of one environment (at most `cap`; a
// member of env_state). A thread finds its reader in a small thread-local cache (tls_readers)
// keyed by the environment's generation, a number no other environment of the process gets (so
// an environment destroyed and another created at the same address are told apart); on a miss
// it claims an unclaimed reader of the registry, or adds one. A thread gives its readers back
// (unclaimed, transaction kept reset for the next thread) when it exits or when its cache
// evicts them, through live_registries: the registries of the environments that exist, by
// generation, under one process-wide mutex. The environment's destructor, on whichever thread
// destroys it, first removes its registry from live_registries (a thread giving a reader back
// holds that mutex throughout, so none does afterwards), then aborts every reader's transaction
// (close()) before it closes the environment. A thread whose cache still names the destroyed
// environment never uses that entry again (no environment gets its generation).
//
// Locks: live_registries::mu is taken on open and close of an environment, on thread exit and on
// a cache miss, never on a get() whose thread has its reader cached; reader_registry::mu (guards
// `all`, `claimed` and `open`) when a thread claims or gives back a reader, by drains and by
// close(). The order is live_registries::mu, reader_registry::mu, then the gate's mutex
// (add_slot); none is taken the other way round, and no I/O happens under them.
//
// Thread-safety: a thread_reader's txn and cursor are read and written only by whoever holds its
// slot busy (its owner in a get(), a cursor its owner created, wherever that cursor is used and
// destroyed, or a drain that took it idle with txn_gate::try_take), and by close() when nothing
// is live (the acquire/release of the slot's state orders these).
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/lmdb/detail/txn_gate.hpp>

#include <lmdb.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

// One thread's reset read transaction on one environment, and its gate registration.
struct thread_reader : txn_gate::slot {
  MDB_txn* txn = nullptr;  // reset between reads; nullptr before the first one and after a drain
  MDB_cursor* cursor = nullptr;  // a closed read-only cursor kept for the next private cursor, or nullptr
  bool claimed = false;    // a thread holds it in its cache; guarded by reader_registry::mu
};

// The thread readers of one environment (see the header comment).
struct reader_registry {
  std::mutex mu;
  bool open = true;  // false once the environment closed: nothing is given back or claimed
  std::size_t cap = 0;  // set when the environment is opened, before it is shared
  std::vector<std::unique_ptr<thread_reader>> all;

  // An unclaimed reader, claimed now; a new one (added to gate) while fewer than cap exist;
  // nullptr otherwise. Errors: std::bad_alloc.
  thread_reader* claim(txn_gate& gate) {
    std::lock_guard lk(mu);
    if (!open) return nullptr;
    for (const auto& r : all) {
      if (!r->claimed) {
        r->claimed = true;
        return r.get();
      }
    }
    if (all.size() >= cap) return nullptr;
    all.reserve(all.size() + 1);  // nothing below throws once the gate knows the slot
    auto r = std::make_unique<thread_reader>();
    gate.add_slot(r.get());
    r->claimed = true;
    all.push_back(std::move(r));
    return all.back().get();
  }

  // Gives r back for another thread to claim (nothing when r is nullptr). r is idle (its owner
  // is not reading).
  void give_back(thread_reader* r) noexcept {
    if (r == nullptr) return;
    std::lock_guard lk(mu);
    if (open) r->claimed = false;
  }

  // Frees the reader slots of the idle readers' transactions (MDB_READERS_FULL); a busy one is
  // left alone. Their owners begin new transactions at their next read.
  void drain(txn_gate& gate) noexcept {
    std::lock_guard lk(mu);
    for (const auto& r : all) {
      if (!gate.try_take(*r)) continue;
      if (r->txn != nullptr) ::mdb_txn_abort(std::exchange(r->txn, nullptr));
      gate.leave(*r);
    }
  }

  // Aborts every reader's transaction; nothing is claimed or given back afterwards.
  // REQUIRES: no reader is busy (no get() runs; the backend is being destroyed).
  void close() noexcept {
    std::lock_guard lk(mu);
    open = false;
    for (const auto& r : all) {
      static_cast<void>(r->state.load(std::memory_order_acquire));  // after the owner's last leave
      if (r->cursor != nullptr) ::mdb_cursor_close(std::exchange(r->cursor, nullptr));
      if (r->txn != nullptr) ::mdb_txn_abort(std::exchange(r->txn, nullptr));
    }
  }
};

// A process-wide number per environment, never 0 (0 marks an empty cache entry).
inline std::uint64_t next_generation() noexcept {
  static std::atomic<std::uint64_t> n{0};
  return n.fetch_add(1, std::memory_order_relaxed) + 1;
}

// The registries of the environments open in the process, by generation: a thread giving its
// readers back finds a registry here only while its environment exists. Never destroyed (threads
// and static backends may end after static destruction began).
struct live_registries {
  std::mutex mu;  // taken on open, close, thread exit and cache eviction only; before reader_registry::mu
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

// The calling thread's cache of its readers: environment generation -> reader. Constant-
// initialized and trivially destructible, so that a get() reads it without a thread-local
// guard; tls_reader_owner gives the readers back when the thread exits.
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
    tls_readers_gone = true;  // a get() from a later thread-local destructor uses the pool
    live_registries& live = live_registries::instance();
    std::lock_guard lk(live.mu);
    for (std::size_t i = 0; i < cached_readers; ++i) evict_locked(live, i);
  }
  // Gives the reader of entry i back (when its environment still exists) and empties the entry.
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

// The calling thread's cache entry of the environment numbered gen, or nullptr. The entry's
// reader is nullptr when the environment had none left for this thread (claim_thread_reader).
KEYSCHEMA_ALWAYS_INLINE const cached_reader* cached_thread_reader(std::uint64_t gen) noexcept {
  for (const cached_reader& c : tls_readers) {
    if (c.gen == gen) return &c;
  }
  return nullptr;
}

// Claims a reader of registry (the environment numbered gen) for the calling thread and caches
// it in front (an entry of an environment that no longer exists is evicted first, else the least
// recently claimed one). Returns nullptr when none is available (the registry is at its cap, the
// thread is exiting, or memory ran out): the caller reads with a pooled transaction instead. At
// the cap the thread caches that (a null reader) and reads with the pool until the entry is
// evicted, rather than taking the registry's mutex on every read.
[[gnu::noinline]] inline thread_reader* claim_thread_reader(std::uint64_t gen, reader_registry& registry,
                                                            txn_gate& gate) noexcept {
  if (tls_readers_gone) return nullptr;
  try {
    tls_reader_owner::ensure();
    thread_reader* r = registry.cap != 0 ? registry.claim(gate) : nullptr;
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

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
