// keyschema/lmdb/detail/txn_gate.hpp: keeps LMDB map resizes apart from live transactions.
//
// mdb_env_set_mapsize() unmaps and remaps the database file, so it may only run while no
// transaction of this process is active: every pointer a transaction holds into the map would
// dangle (lmdb.h: "the caller must ensure it explicitly"). txn_gate is that guarantee. Every
// transaction, read or write, is bracketed by enter() and leave(); exclusive(fn) waits until none
// is active, keeps new ones out, and runs fn. All waits are bounded by the configured timeout so
// that a snapshot held for a long time (or by the resizing thread itself) turns into an error
// instead of a deadlock.
//
// Once poison() was called (a remap failed and the environment has no map), enter() refuses
// every new transaction.
//
// Thread-safety: every member may be called concurrently.
#pragma once

#include <keyschema/detail/config.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

class txn_gate {
 public:
  enum class status { ok, timed_out, poisoned };

  explicit txn_gate(std::chrono::milliseconds wait) : wait_(wait) {}
  txn_gate(const txn_gate&) = delete;
  txn_gate& operator=(const txn_gate&) = delete;

  // Registers one transaction about to begin, waiting while a resize runs. Returns ok (the
  // caller must call leave() once the transaction ended, also when beginning it failed),
  // timed_out (a resize did not finish in time) or poisoned; nothing is registered then.
  status enter() {
    return enter([] {});
  }
  // As enter(), and runs fn() under the gate's lock once the transaction is registered (the LMDB
  // adapter takes a pooled read transaction there, saving a lock of its own). fn must not throw.
  template <class Fn>
  status enter(Fn&& fn) {
    std::unique_lock lk(mu_);
    if (resizing_ && !cv_.wait_for(lk, wait_, [&] { return !resizing_; })) return status::timed_out;
    if (poisoned_) return status::poisoned;
    ++active_;
    fn();
    return status::ok;
  }

  // Unregisters a transaction registered by enter(). REQUIRES: a matching successful enter().
  void leave() noexcept {
    leave([] {});
  }
  // As leave(), and runs fn() under the gate's lock first (the LMDB adapter returns a read
  // transaction to its pool there). fn must not throw.
  template <class Fn>
  void leave(Fn&& fn) noexcept {
    std::lock_guard lk(mu_);
    fn();
    --active_;
    if (active_ == 0 && resizing_) cv_.notify_all();
  }

  // Runs fn() under the gate's lock (what the pool of read transactions is guarded by).
  template <class Fn>
  void with_lock(Fn&& fn) noexcept {
    std::lock_guard lk(mu_);
    fn();
  }

  // Waits (bounded) until no transaction is active and no other resize runs, then calls fn()
  // with new transactions held back. Returns timed_out without calling fn when the wait ran out;
  // `still_active` then holds the number of transactions that stayed open. Exceptions from fn
  // propagate; the gate is reopened either way.
  template <class Fn>
  status exclusive(Fn&& fn, std::size_t& still_active) {
    std::unique_lock lk(mu_);
    const auto deadline = std::chrono::steady_clock::now() + wait_;
    if (!cv_.wait_until(lk, deadline, [&] { return !resizing_; })) {
      still_active = active_;
      return status::timed_out;
    }
    if (poisoned_) return status::poisoned;
    resizing_ = true;
    reopen_on_exit reopen{*this};
    if (!cv_.wait_until(lk, deadline, [&] { return active_ == 0; })) {
      still_active = active_;
      return status::timed_out;
    }
    fn();
    return status::ok;
  }

  // Calls fn() only if no transaction is active and no resize runs right now; never waits.
  // Returns whether fn ran. Exceptions from fn propagate.
  template <class Fn>
  bool try_exclusive(Fn&& fn) {
    std::lock_guard lk(mu_);
    if (resizing_ || poisoned_ || active_ != 0) return false;
    fn();
    return true;
  }

  // Refuses every later enter()/exclusive(). Called with the gate held (inside fn).
  void poison_locked() noexcept { poisoned_ = true; }

  std::chrono::milliseconds wait() const noexcept { return wait_; }

 private:
  // Clears resizing_ and wakes waiters when exclusive() returns or throws. mu_ is held then.
  struct reopen_on_exit {
    explicit reopen_on_exit(txn_gate& gate) noexcept : g(gate) {}
    reopen_on_exit(const reopen_on_exit&) = delete;
    reopen_on_exit& operator=(const reopen_on_exit&) = delete;
    ~reopen_on_exit() {
      g.resizing_ = false;
      g.cv_.notify_all();
    }
    txn_gate& g;
  };

  const std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t active_ = 0;
  bool resizing_ = false;
  bool poisoned_ = false;
};

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
