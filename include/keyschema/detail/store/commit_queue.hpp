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
// calls commit_group(group) without holding the queue's mutex (so writers keep queuing during the
// commit), pops the group, marks every member done and wakes the new head. The group's order is
// the queue's: writes are committed in the order they were submitted.
//
// Errors: commit_group records each member's result in its `error` (nullptr: committed). It must
// not throw; if it does anyway, every member of the group gets that exception.
//
// Thread-safety: submit may be called from any number of threads at once. One commit_group runs
// at a time (only the head of the queue runs one, and the next head is woken after it returns).
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/store/derived_writes.hpp>
#include <keyschema/write_batch.hpp>

#include <condition_variable>
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
      : ops(&o), adds(a), opts(w) {}
  const write_batch* ops;
  const pending_adds* adds;  // nullptr: none
  write_options opts;
  std::exception_ptr error;  // set by commit_group: the write's own failure
  bool done = false;         // guarded by the queue's mutex
  std::condition_variable cv;
};

// How large a group may grow. The leader's own write always joins, whatever its size.
struct group_limits {
  std::size_t max_writes = 128;                  // writes per group
  std::size_t max_ops = 100'000;                 // puts, erases and adds per group
  std::size_t max_bytes = std::size_t{1} << 20;  // key and value bytes per group
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
    while (!w.done && queue_.front() != &w) w.cv.wait(lk);
    if (!w.done) {
      // The leader: group_ is used by one leader at a time (the next is woken only after this
      // one has popped its group).
      group_.clear();
      std::size_t ops = 0, bytes = 0;
      for (queued_write* q : queue_) {
        const std::size_t q_ops = q->ops->size() + (q->adds != nullptr ? q->adds->size() : 0);
        const std::size_t q_bytes = q->ops->byte_size();
        if (!group_.empty()) {
          if (group_.size() == limits.max_writes || ops + q_ops > limits.max_ops || bytes + q_bytes > limits.max_bytes ||
              (q->opts.sync && !w.opts.sync))
            break;
        }
        group_.push_back(q);
        ops += q_ops;
        bytes += q_bytes;
      }
      lk.unlock();
      try {
        commit_group(std::span<queued_write* const>(group_));
      } catch (...) {
        for (queued_write* q : group_) q->error = std::current_exception();
      }
      lk.lock();
      for (std::size_t i = 0; i < group_.size(); ++i) queue_.pop_front();
      for (queued_write* q : group_) {
        q->done = true;
        if (q != &w) q->cv.notify_one();  // q's thread returns once lk is released
      }
      if (!queue_.empty()) queue_.front()->cv.notify_one();
    }
    lk.unlock();
    if (w.error) std::rethrow_exception(w.error);
  }

 private:
  std::mutex mu_;
  std::deque<queued_write*> queue_;
  std::vector<queued_write*> group_;  // the current leader's group
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
