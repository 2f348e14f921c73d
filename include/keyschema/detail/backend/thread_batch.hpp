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
// functions: `std::size_t size(const Batch&)` (bytes held) and `void clear(Batch&)`, which must
// not throw once the batch has been used (both engines' Clear() keep the batch's capacity).
//
// Leases nest: the store's commit holds one while it calls the backend's write(), and a backend
// of the user's may itself commit through another store on the same thread. A lease taken while
// the thread's batch is lent out gets a fresh batch of its own (allocated as before this
// header existed), so an inner lease never empties the batch an outer one is still writing.
//
// Thread-safety: each thread has its own batch per Batch type.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>
#include <optional>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

template <class Batch, class Ops>
class thread_batch_lease {
 public:
  // The largest batch kept for the next lease; a larger one is given back.
  static constexpr std::size_t kept_limit = std::size_t{64} << 20;

  thread_batch_lease() {
    slot& s = thread_slot();
    if (!s.lent) {
      s.lent = true;
      kept_ = &s;
      b_ = &s.batch;
      Ops::clear(*b_);
    } else {
      b_ = &own_.emplace();
    }
  }
  ~thread_batch_lease() {
    if (kept_ == nullptr) return;  // a nested lease: its own batch goes with it
    if (Ops::size(*b_) > kept_limit) {
      try {
        *b_ = Batch();
      } catch (...) {  // no memory for a fresh batch: keep this one, emptied
        Ops::clear(*b_);
      }
    } else {
      Ops::clear(*b_);
    }
    kept_->lent = false;
  }
  thread_batch_lease(const thread_batch_lease&) = delete;
  thread_batch_lease& operator=(const thread_batch_lease&) = delete;

  // The batch lent, empty when the lease began. Valid until the lease ends.
  Batch& get() noexcept { return *b_; }

 private:
  struct slot {
    Batch batch;
    bool lent = false;
  };
  static slot& thread_slot() noexcept {
    static thread_local slot s;
    return s;
  }
  slot* kept_ = nullptr;       // the thread's slot, when this lease holds it
  std::optional<Batch> own_;   // the batch of a nested lease
  Batch* b_ = nullptr;
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
