// keyschema/detail/store/commit_queue.hpp: group commit. Writers that commit at the same time
// hand their writes to one queue; the writer at its head (the leader) takes the writes queued
// behind it and commits them together, in one atomic engine write (one fsync), then wakes each
// writer with its own result.
//
// Why: a durable commit waits for the disk (an fsync: about a millisecond on an SSD, many on a
// disk or a loaded machine). One commit at a time, N writers wait N fsyncs; grouped, the writers
// queued during one fsync share the next one, as LevelDB's and RocksDB's own writer queues do
// (DBImpl::Write), and as LMDB and SQLite cannot do by themselves (one writer at a time, one
// fsync per commit).
//
// How: submit(w, ...) appends w to the queue and waits until w is either done (a leader committed
// it) or at the head (w's thread is the leader). The leader picks the group: w, then the writes
// behind it in queue order while the group stays within the limits (write count, operations,
// bytes), and a write that asked for sync is not added to a group whose leader did not (it would
// make the leader wait for a sync it did not ask for; it leads the next group instead). It then
// takes the group out of the queue and calls commit_group(group) without holding the queue's mutex
// (so writers keep queuing during the commit), then marks every member done. The head of the
// queue leads the next group once no group is being committed; with limits.max_in_flight above 1
// (a backend_with_concurrent_writes: etcd, where a commit is mostly a network round trip) also
// while fewer than that many are, but only when the writes queued fill a whole group: as long as
// one group in flight at a time carries every write that waits, more groups in flight would only
// make each smaller (more Txns for the same writes: measured on a 3-member etcd cluster, 8
// writers, 2,260 commits/s one group at a time, 1,493 with four groups in flight each taking
// whatever was queued). With max_in_flight 1 (every engine on one machine) groups are committed
// one after the other in the order their writes were submitted; groups in flight at once may be
// applied in either order (their writes were submitted by different threads at about the same
// time; a thread's own writes are always applied in its order, since it waits for each).
//
// Errors: commit_group records each member's result in its `error` (nullptr: committed). It must
// not throw; if it does anyway, every member of the group gets that exception.
//
// Thread-safety: submit may be called from any number of threads at once. At most
// limits.max_in_flight commit_group calls run at once (one unless the caller asks for more).
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/store/derived_writes.hpp>
#include <keyschema/detail/store/wake_signal.hpp>
#include <keyschema/write_batch.hpp>

#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <span>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// One writer's commit, waiting in the queue. Lives on the writer's stack until submit returns.
struct queued_write {
  queued_write(const write_batch& o, const pending_adds* a, const write_options& w) noexcept
      : ops(&o), adds(a), opts(w), op_count(o.size()), bytes(o.byte_size()) {}
  // A write held in the engine's own batch (store.hpp: a store_batch on a
  // backend_with_direct_batch): ops is nullptr until the committing leader needs the operations
  // as a write_batch, when materialize(direct, *scratch) copies them into *scratch (the
  // writer's, which it does not touch until submit returns) and ops points there.
  queued_write(void* d, void (*m)(const void*, write_batch&), write_batch* s, std::size_t n, std::size_t b,
               const write_options& w) noexcept
      : ops(nullptr), adds(nullptr), opts(w), op_count(n), bytes(b), direct(d), materialize(m), scratch(s) {}
  const write_batch* ops;
  const pending_adds* adds;  // nullptr: none
  write_options opts;
  std::size_t op_count;  // puts and erases
  std::size_t bytes;     // key and value bytes
  void* direct = nullptr;  // the engine's batch of a direct write, else nullptr
  void (*materialize)(const void*, write_batch&) = nullptr;
  write_batch* scratch = nullptr;
  std::exception_ptr error;  // set by commit_group: the write's own failure
  bool done = false;         // guarded by the queue's mutex
  wake_signal cv;            // notified with the queue's mutex held (w lives on its writer's stack)
};

// How large a group may grow. The leader's own write always joins, whatever its size.
struct group_limits {
  std::size_t max_writes = 128;                  // writes per group
  std::size_t max_ops = 100'000;                 // puts, erases and adds per group
  std::size_t max_bytes = std::size_t{1} << 20;  // key and value bytes per group
  std::size_t max_in_flight = 1;                 // groups committed at once
};

class commit_queue {
 public:
  // Commits w, alone or in a group with the writes queued with it, through commit_group
  // (callable as commit_group(std::span<queued_write* const>) noexcept in effect). Returns when
  // w is committed; rethrows w's own error.
  template <class CommitGroup>
  void submit(queued_write& w, const group_limits& limits, CommitGroup&& commit_group) {
    std::unique_lock<std::mutex> lk(mu_);
    queue_.push_back(&w);
    queued_ops_ += ops_of(w);
    queued_bytes_ += w.bytes;
    // With groups in flight, the head may lead another one once the queue fills a group.
    if (queue_.front() != &w && may_lead(limits)) queue_.front()->cv.notify_one();
    // w waits until it is done (a leader took it into a group; it is then no longer queued) or at
    // the head and allowed to lead.
    w.cv.wait(lk, [&] { return w.done || (!queue_.empty() && queue_.front() == &w && may_lead(limits)); });
    if (!w.done) {
      // The leader. Its group lives in a vector of its thread's (a thread leads one group at a
      // time), so that leaders in flight at once do not share one.
      static thread_local std::vector<queued_write*> group;
      group.clear();
      std::size_t ops = 0, bytes = 0;
      for (queued_write* q : queue_) {
        const std::size_t q_ops = ops_of(*q);
        const std::size_t q_bytes = q->bytes;
        if (!group.empty()) {
          if (group.size() == limits.max_writes || ops + q_ops > limits.max_ops || bytes + q_bytes > limits.max_bytes ||
              (q->opts.sync && !w.opts.sync))
            break;
        }
        group.push_back(q);
        ops += q_ops;
        bytes += q_bytes;
      }
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(group.size()));
      queued_ops_ -= ops;
      queued_bytes_ -= bytes;
      ++in_flight_;
      // The new head may lead the next group at once when more than one may be in flight.
      if (!queue_.empty() && may_lead(limits)) queue_.front()->cv.notify_one();
      lk.unlock();
      try {
        commit_group(std::span<queued_write* const>(group));
      } catch (...) {
        for (queued_write* q : group) q->error = std::current_exception();
      }
      lk.lock();
      --in_flight_;
      for (queued_write* q : group) {
        q->done = true;
        if (q != &w) q->cv.notify_one();  // q's thread returns once lk is released
      }
      if (!queue_.empty()) queue_.front()->cv.notify_one();
    }
    lk.unlock();
    if (w.error) std::rethrow_exception(w.error);
  }

 private:
  static std::size_t ops_of(const queued_write& q) noexcept {
    return q.op_count + (q.adds != nullptr ? q.adds->size() : 0);
  }
  // REQUIRES: mu_ held. Whether the head of the queue may lead a group now.
  bool may_lead(const group_limits& limits) const noexcept {
    if (in_flight_ == 0) return true;
    if (in_flight_ >= limits.max_in_flight) return false;
    return queue_.size() >= limits.max_writes || queued_ops_ >= limits.max_ops || queued_bytes_ >= limits.max_bytes;
  }

  std::mutex mu_;
  std::deque<queued_write*> queue_;
  std::size_t queued_ops_ = 0;    // operations of the writes in queue_
  std::size_t queued_bytes_ = 0;  // bytes of the writes in queue_
  std::size_t in_flight_ = 0;     // commit_group calls running
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
