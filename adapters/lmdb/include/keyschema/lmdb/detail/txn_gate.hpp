// keyschema/lmdb/detail/txn_gate.hpp: keeps LMDB map resizes apart from live transactions.
//
// mdb_env_set_mapsize() unmaps and remaps the database file, so it may only run while no
// transaction of this process is active: every pointer a transaction holds into the map would
// dangle (lmdb.h: "the caller must ensure it explicitly"). txn_gate is that guarantee. Every
// transaction, read or write, is bracketed by enter() and leave(); exclusive(fn) waits until none
// is active, keeps new ones out, and runs fn. enter() and leave() take no lock while no resize
// runs: an atomic count of active transactions and an atomic "closed" flag, both sequentially
// consistent, so that a resizer that closed the gate and then sees no active transaction knows
// that every later enter() sees the gate closed (and takes the locked path, which waits). All waits are bounded by the configured timeout so
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
#include <atomic>
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
    if (try_enter()) [[likely]] return status::ok;
    return enter_locked();  // a resize runs or the gate is poisoned: take the locked path
  }

  // Registers one transaction about to begin when no resize runs and the gate is not poisoned,
  // without a lock; returns false (nothing registered) otherwise. A true result is matched by a
  // leave() like enter()'s ok.
  KEYSCHEMA_ALWAYS_INLINE bool try_enter() noexcept {
    active_.fetch_add(1);  // seq_cst: ordered against closed_ below and in exclusive()
    if (!closed_.load()) [[likely]] return true;
    leave();
    return false;
  }

  // Unregisters a transaction registered by enter(). REQUIRES: a matching successful enter().
  KEYSCHEMA_ALWAYS_INLINE void leave() noexcept {
    if (active_.fetch_sub(1) == 1 && closed_.load()) [[unlikely]] wake_resizer();
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
      still_active = active_.load();
      return status::timed_out;
    }
    if (poisoned_) return status::poisoned;
    close_locked();
    reopen_on_exit reopen{*this};
    if (!cv_.wait_until(lk, deadline, [&] { return active_.load() == 0; })) {
      still_active = active_.load();
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
    if (resizing_ || poisoned_ || active_.load() != 0) return false;
    close_locked();  // then check again: an enter() may have counted itself before seeing it
    reopen_on_exit reopen{*this};
    if (active_.load() != 0) return false;
    fn();
    return true;
  }

  // Refuses every later enter()/exclusive(). Called with the gate held (inside fn).
  void poison_locked() noexcept {
    poisoned_ = true;
    closed_.store(true);
  }

  std::chrono::milliseconds wait() const noexcept { return wait_; }

 private:
  // The locked path of enter(): waits while a resize runs, then registers.
  status enter_locked() {
    std::unique_lock lk(mu_);
    if (resizing_ && !cv_.wait_for(lk, wait_, [&] { return !resizing_; })) return status::timed_out;
    if (poisoned_) return status::poisoned;
    active_.fetch_add(1);  // no resize can start before mu_ is released: it would wait for this one
    return status::ok;
  }

  // The last transaction left while a resize waits for that: wakes it.
  [[gnu::noinline]] void wake_resizer() noexcept {
    std::lock_guard lk(mu_);  // the resizer waits on cv_ under mu_: no lost wake-up
    cv_.notify_all();
  }

  // Holds new transactions back (they take enter_locked() and wait). REQUIRES: mu_ held.
  void close_locked() noexcept {
    resizing_ = true;
    closed_.store(true);
  }

  // Reopens the gate and wakes waiters when exclusive()/try_exclusive() return or throw. mu_ is
  // held then.
  struct reopen_on_exit {
    explicit reopen_on_exit(txn_gate& gate) noexcept : g(gate) {}
    reopen_on_exit(const reopen_on_exit&) = delete;
    reopen_on_exit& operator=(const reopen_on_exit&) = delete;
    ~reopen_on_exit() {
      g.resizing_ = false;
      g.closed_.store(g.poisoned_);
      g.cv_.notify_all();
    }
    txn_gate& g;
  };

  const std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<std::size_t> active_{0};
  std::atomic<bool> closed_{false};  // resizing_ || poisoned_, readable without mu_
  bool resizing_ = false;            // guarded by mu_
  bool poisoned_ = false;            // guarded by mu_
};

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
