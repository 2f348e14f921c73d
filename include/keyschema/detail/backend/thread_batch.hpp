// keyschema/detail/backend/thread_batch.hpp: a write batch kept per thread between commits, shared
// by the store's transaction commit (keyschema::write_batch) and the adapters that build an engine
// batch for each write (leveldb::WriteBatch, rocksdb::WriteBatch).
//
// Why: a fresh batch of megabytes (a transaction of 64 KiB chunks) is a fresh mapping from the
// allocator at every commit (glibc maps allocations of its mmap threshold and more), and touching
// its pages for the first time cost more than the engine's write (publishing 100 messages of
// 64 KiB per commit on LMDB: 80 ms per commit with a fresh buffer, 3.3 ms with a kept one).
//
// thread_batch_lease<Batch, Ops> lends the calling thread's Batch, empty, for the lease's
// lifetime; the lease empties it again when it ends (normally or by an exception), and gives a
// batch larger than 64 MiB back to the allocator instead of keeping it. Ops names two static
// functions: `std::size_t size(const Batch&)` (bytes held) and `void clear(Batch&)`.
//
// Thread-safety: each thread has its own batch per Batch type. REQUIRES: one lease per thread and
// Batch type at a time, and no user code runs while the lease is held (a nested commit on the
// same thread would take the same batch); the store and the adapters hold it only between
// statements that call no user code.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

template <class Batch, class Ops>
class thread_batch_lease {
 public:
  // The largest batch kept for the next lease; a larger one is given back.
  static constexpr std::size_t kept_limit = std::size_t{64} << 20;

  thread_batch_lease() : b_(slot()) { Ops::clear(b_); }
  ~thread_batch_lease() {
    if (Ops::size(b_) > kept_limit)
      b_ = Batch();
    else
      Ops::clear(b_);
  }
  thread_batch_lease(const thread_batch_lease&) = delete;
  thread_batch_lease& operator=(const thread_batch_lease&) = delete;

  // The thread's batch, empty when the lease began. Valid until the lease ends.
  Batch& get() noexcept { return b_; }

 private:
  static Batch& slot() noexcept {
    static thread_local Batch b;
    return b;
  }
  Batch& b_;
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
