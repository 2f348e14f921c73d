// keyschema/detail/backend/thread_readers.hpp: the readers a thread keeps per backend (LMDB: a
// reset read transaction, SQLite: a reader connection), found again by the thread without a lock.
// Written once for the adapters that keep them (lmdb/detail/thread_reader.hpp,
// sqlite/detail/thread_reader.hpp say what their reader holds and how a read uses it).
//
// Ownership. A reader_registry holds every reader of one backend (at most `cap`; a member of the
// backend's state). A thread finds its reader in a small thread-local cache (thread_readers::tls)
// keyed by the backend's generation, a number no other backend of the process gets (so a backend
// destroyed and another created at the same address are told apart); on a miss it claims an
// unclaimed reader of the registry, or adds one. A thread gives its readers back (unclaimed, for
// the next thread to claim) when it exits or when its cache evicts them, through live_registries:
// the registries of the backends that exist, by generation, under one process-wide mutex per
// registry type. The backend's destructor, on whichever thread destroys it, first removes its
// registry from live_registries (a thread giving a reader back holds that mutex throughout, so
// none does afterwards), then closes its readers (the adapter's close()). A thread whose cache
// still names the destroyed backend never uses that entry again (no backend gets its generation).
// So a thread ending while the backend lives leaves its reader to the backend, and a backend
// destroyed while threads live frees every reader; neither leaks.
//
// Locks: live_registries::mu is taken on open and destruction of a backend, on thread exit and on
// a cache miss, never on a read whose thread has its reader cached; reader_registry::mu (guards
// `all`, each reader's `claimed` and `open`) when a thread claims or gives back a reader, and by
// the adapter's drains and close(). The order is live_registries::mu, then reader_registry::mu,
// then whatever the adapter's `added` hook takes; none is taken the other way round.
//
// Thread-safety: as above; what a reader holds is used only by whoever the adapter lets hold it.
#pragma once

#include <keyschema/detail/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// The readers of one backend (see the file comment). Reader has a `bool claimed` (guarded by mu)
// and a default constructor.
template <class Reader>
struct reader_registry {
  using reader_type = Reader;

  std::mutex mu;
  bool open = true;     // false once the backend closed: nothing is given back or claimed
  std::size_t cap = 0;  // set when the backend is opened, before it is shared
  std::vector<std::unique_ptr<Reader>> all;

  // An unclaimed reader, claimed now; a new one while fewer than cap exist; nullptr otherwise.
  // added(reader&) runs on a new reader under mu before it is kept (it may throw: the reader is
  // then dropped; once it returned, nothing below throws).
  // Errors: std::bad_alloc; what added throws.
  template <class Added>
  Reader* claim(const Added& added) {
    std::lock_guard lk(mu);
    if (!open) return nullptr;
    for (const auto& r : all) {
      if (!r->claimed) {
        r->claimed = true;
        return r.get();
      }
    }
    if (all.size() >= cap) return nullptr;
    all.reserve(all.size() + 1);
    auto r = std::make_unique<Reader>();
    added(*r);
    r->claimed = true;
    all.push_back(std::move(r));
    return all.back().get();
  }

  // Gives r back for another thread to claim (nothing when r is nullptr or the backend closed).
  void give_back(Reader* r) noexcept {
    if (r == nullptr) return;
    std::lock_guard lk(mu);
    if (open) r->claimed = false;
  }
};

// A process-wide number per backend, never 0 (0 marks an empty cache entry).
inline std::uint64_t next_reader_generation() noexcept {
  static std::atomic<std::uint64_t> n{0};
  return n.fetch_add(1, std::memory_order_relaxed) + 1;
}

// The thread-local caches and the live registries of one registry type (Registry: a
// reader_registry<R> or a class derived from one).
template <class Registry>
struct thread_readers {
  using reader = typename Registry::reader_type;

  // The registries of the backends open in the process, by generation: a thread giving its
  // readers back finds a registry here only while its backend exists. Never destroyed (threads
  // and static backends may end after static destruction began).
  struct live_registries {
    std::mutex mu;  // before Registry::mu
    std::vector<std::pair<std::uint64_t, Registry*>> list;

    // Errors: std::bad_alloc.
    void add(std::uint64_t gen, Registry* r) {
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
    Registry* find_locked(std::uint64_t gen) const noexcept {
      for (const auto& e : list) {
        if (e.first == gen) return e.second;
      }
      return nullptr;
    }
  };

  static live_registries& live() {
    static live_registries* const l = new live_registries;
    return *l;
  }

  // The calling thread's cache of its readers: backend generation -> reader (nullptr when the
  // backend had none left for this thread). Constant-initialized and trivially destructible, so
  // that a read finds it without a thread-local guard; owner gives the readers back when the
  // thread exits.
  static constexpr std::size_t cached = 8;
  struct cached_reader {
    std::uint64_t gen = 0;
    reader* r = nullptr;
  };
  static inline constinit thread_local cached_reader tls[cached]{};
  static inline constinit thread_local bool tls_gone = false;  // the thread's owner was destroyed

  // Gives the calling thread's readers back when the thread exits.
  struct owner {
    owner() = default;
    owner(const owner&) = delete;
    owner& operator=(const owner&) = delete;
    ~owner() {
      tls_gone = true;  // a read from a later thread-local destructor reads without a kept reader
      live_registries& l = live();
      std::lock_guard lk(l.mu);
      for (std::size_t i = 0; i < cached; ++i) evict_locked(l, i);
    }
    // Gives the reader of entry i back (when its backend still exists) and empties the entry.
    // REQUIRES: l.mu held.
    static void evict_locked(live_registries& l, std::size_t i) noexcept {
      if (tls[i].gen != 0) {
        if (Registry* r = l.find_locked(tls[i].gen)) r->give_back(tls[i].r);
      }
      tls[i] = cached_reader{};
    }
    // Registers the calling thread's owner (its destructor runs when the thread exits).
    static void ensure() { static thread_local owner o; }
  };

  // The calling thread's cache entry of the backend numbered gen, or nullptr.
  KEYSCHEMA_ALWAYS_INLINE static const cached_reader* find(std::uint64_t gen) noexcept {
    for (const cached_reader& c : tls) {
      if (c.gen == gen) return &c;
    }
    return nullptr;
  }

  // Claims a reader of registry (the backend numbered gen; `added` as for
  // reader_registry::claim) for the calling thread and caches it in front (an entry of a backend
  // that no longer exists is evicted first, else the least recently claimed one). Returns nullptr
  // when none is available (the registry is at its cap, the thread is exiting, or memory ran
  // out): the caller reads without a kept reader. At the cap the thread caches that (a null
  // reader) and reads so until the entry is evicted, rather than taking the registry's mutex on
  // every read.
  template <class Added>
  [[gnu::noinline]] static reader* claim(std::uint64_t gen, Registry& registry, const Added& added) noexcept {
    if (tls_gone) return nullptr;
    try {
      owner::ensure();
      reader* r = registry.cap != 0 ? registry.claim(added) : nullptr;
      live_registries& l = live();
      std::lock_guard lk(l.mu);
      std::size_t victim = cached - 1;
      for (std::size_t i = 0; i < cached; ++i) {
        if (tls[i].gen == 0 || l.find_locked(tls[i].gen) == nullptr) {
          victim = i;
          break;
        }
      }
      owner::evict_locked(l, victim);
      for (std::size_t i = victim; i > 0; --i) tls[i] = tls[i - 1];
      tls[0] = cached_reader{gen, r};
      return r;
    } catch (...) {
      return nullptr;
    }
  }
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
