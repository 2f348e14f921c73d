// keyschema/lmdb/detail/txn_gate.hpp: keeps LMDB map resizes apart from live transactions.
//
// mdb_env_set_mapsize() unmaps and remaps the database file, so it may only run while no
// transaction of this process is active: every pointer a transaction holds into the map would
// dangle (lmdb.h: "the caller must ensure it explicitly"). txn_gate is that guarantee. Every
// transaction, read or write, is registered before it begins and unregistered after it ended;
// exclusive(fn) waits until none is registered, keeps new ones out, and runs fn. All waits are
// bounded by the configured timeout so that a snapshot held for a long time (or by the resizing
// thread itself) turns into an error instead of a deadlock. Once poison_locked() was called (a
// remap failed and the environment has no map), every new registration is refused.
//
// Two kinds of registration, both without a lock while no resize runs:
//   - enter()/leave(): an atomic count of active transactions (active_), shared by every thread.
//     Snapshots, cursors and write transactions use it.
//   - try_enter(slot&)/leave(slot&): a slot is a padded flag (one cache line) owned by one
//     thread (env_state's thread readers, which serve get() without a snapshot): busy while its
//     transaction is live. A point read thus writes only its own thread's cache line, never a
//     line the other threads' reads write (the shared count bounced between the cores of
//     concurrent readers). The resizer reads every slot (slots_, guarded by mu_).
//
// Memory ordering. The resizer stores closed_ = true (seq_cst) and then loads active_ and every
// slot (seq_cst); a registration first makes itself visible (active_.fetch_add or the slot's
// exchange to busy, seq_cst) and then loads closed_ (seq_cst). In the single total order of
// these sequentially consistent operations, either the registration's write comes first, and the
// resizer sees the transaction and waits for it, or the resizer's store of closed_ comes first,
// and the registration sees the gate closed, withdraws and takes the locked path (enter()) or the
// shared path (a slot's owner falls back to enter()). A slot added to slots_ (under mu_) after
// the resizer read the list was added after the resizer's store of closed_ (mu_ orders them), so
// its owner sees the gate closed. Unregistering is a release store (leave(slot&)) or a seq_cst
// decrement (leave()): the transaction's reset or abort happens before the resizer, whose loads
// read it, calls fn. leave(slot&) is not sequentially consistent (a second locked instruction per
// read), so it may miss that a resizer just closed the gate and not wake it; the resizer
// therefore re-checks the slots at least every poll_interval while it waits, which bounds that
// delay. leave() of the shared count wakes the resizer when it was the last one.
//
// Lock: mu_ is held by the resizer while it checks and resizes (it is released while waiting on
// cv_, a condition variable with deadlines: timed_signal.hpp) and briefly by add_slot() and by
// the locked paths; never by a registration that finds the gate open.
//
// Thread-safety: every member may be called concurrently; a slot is made busy by its owner only
// (try_enter(slot&)) or by a thread that took it from idle with try_take(slot&) (a drain).
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/lmdb/detail/timed_signal.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

class txn_gate {
 public:
  enum class status { ok, timed_out, poisoned };

  // One thread's registration (see the header comment): busy while that thread's transaction is
  // live. Padded to a cache line of its own. Once added (add_slot) it is read by the gate until
  // the gate is destroyed: it must outlive the gate.
  struct alignas(64) slot {
    static constexpr unsigned idle = 0;
    static constexpr unsigned busy = 1;
    std::atomic<unsigned> state{idle};
  };

  // The longest a resizer sleeps before it checks the slots again (see the header comment).
  static constexpr std::chrono::milliseconds poll_interval{1};

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

  // Marks s busy when no resize runs and the gate is not poisoned; returns false otherwise, and
  // when s was busy already (held by a drain, try_take()): s is then as it was, and the caller
  // registers with enter() instead. A true result is matched by leave(s).
  // REQUIRES: s was added (add_slot) and the calling thread owns it.
  KEYSCHEMA_ALWAYS_INLINE bool try_enter(slot& s) noexcept {
    if (s.state.exchange(slot::busy) != slot::idle) [[unlikely]] return false;  // seq_cst: see the header
    if (!closed_.load()) [[likely]] return true;
    leave(s);
    return false;
  }

  // Marks s busy when it is idle, for a thread that is not its owner (env_state drains idle
  // thread readers); returns whether it did. A true result is matched by leave(s).
  bool try_take(slot& s) noexcept {
    unsigned expected = slot::idle;
    return s.state.compare_exchange_strong(expected, slot::busy);
  }

  // Unregisters the transaction of s. REQUIRES: try_enter(s) or try_take(s) returned true.
  KEYSCHEMA_ALWAYS_INLINE void leave(slot& s) noexcept {
    s.state.store(slot::idle, std::memory_order_release);
    if (closed_.load(std::memory_order_relaxed)) [[unlikely]] wake_resizer();
  }

  // Adds s to the slots exclusive() and try_exclusive() wait for. Errors: std::bad_alloc.
  void add_slot(slot* s) {
    std::lock_guard lk(mu_);
    slots_.push_back(s);
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
      still_active = active_locked();
      return status::timed_out;
    }
    if (poisoned_) return status::poisoned;
    close_locked();
    reopen_on_exit reopen{*this};
    for (;;) {
      if (active_locked() == 0) break;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        still_active = active_locked();
        return status::timed_out;
      }
      // Woken by the last leave(), or polling: a leave(slot&) may not wake (see the header).
      cv_.wait_until(lk, std::min(deadline, now + poll_interval));
    }
    fn();
    return status::ok;
  }

  // Calls fn() only if no transaction is active and no resize runs right now; never waits.
  // Returns whether fn ran. Exceptions from fn propagate.
  template <class Fn>
  bool try_exclusive(Fn&& fn) {
    std::lock_guard lk(mu_);
    if (resizing_ || poisoned_ || active_locked() != 0) return false;
    close_locked();  // then check again: an enter() may have counted itself before seeing it
    reopen_on_exit reopen{*this};
    if (active_locked() != 0) return false;
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
    if (resizing_ && !cv_.wait_until(lk, std::chrono::steady_clock::now() + wait_, [&] { return !resizing_; }))
      return status::timed_out;
    if (poisoned_) return status::poisoned;
    active_.fetch_add(1);  // no resize can start before mu_ is released: it would wait for this one
    return status::ok;
  }

  // The registered transactions: the shared count and the busy slots. REQUIRES: mu_ held.
  std::size_t active_locked() const noexcept {
    std::size_t n = active_.load();
    for (const slot* s : slots_) n += s->state.load() != slot::idle ? 1u : 0u;  // seq_cst: see the header
    return n;
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
  timed_signal cv_;  // not std::condition_variable: see timed_signal.hpp
  std::atomic<std::size_t> active_{0};
  std::atomic<bool> closed_{false};  // resizing_ || poisoned_, readable without mu_
  bool resizing_ = false;            // guarded by mu_
  bool poisoned_ = false;            // guarded by mu_
  std::vector<slot*> slots_;         // guarded by mu_
};

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
