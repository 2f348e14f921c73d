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
// Ownership and locks: detail/backend/thread_readers.hpp (the registry of one environment, a
// member of env_state; the threads' caches keyed by the environment's generation; readers given
// back when a thread exits; the environment's destructor removes its registry from the live
// registries, then aborts every reader's transaction (close()) before it closes the environment).
// Lock order: the live registries' mutex, reader_registry::mu, then the gate's mutex (add_slot,
// the registry's `added` hook); no I/O happens under them.
//
// Thread-safety: a thread_reader's txn and cursor are read and written only by whoever holds its
// slot busy (its owner in a get(), a cursor its owner created, wherever that cursor is used and
// destroyed, or a drain that took it idle with txn_gate::try_take), and by close() when nothing
// is live (the acquire/release of the slot's state orders these).
#pragma once

#include <keyschema/detail/backend/thread_readers.hpp>
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
struct reader_registry : detail::reader_registry<thread_reader> {
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

// The threads' caches of their readers and the live registries (thread_readers.hpp).
using reader_cache = detail::thread_readers<reader_registry>;

// The calling thread's reader of the environment numbered gen, claimed now on a miss (a new one
// registered with gate), or nullptr when the environment had none left for this thread.
KEYSCHEMA_ALWAYS_INLINE thread_reader* this_thread_reader(std::uint64_t gen, reader_registry& registry,
                                                          txn_gate& gate) noexcept {
  // The front entry first: the environment the thread read last (claim() puts a new one there).
  if (reader_cache::tls[0].gen == gen) [[likely]] return reader_cache::tls[0].r;
  if (const reader_cache::cached_reader* c = reader_cache::find(gen)) return c->r;
  return reader_cache::claim(gen, registry, [&gate](thread_reader& r) { gate.add_slot(&r); });
}

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
