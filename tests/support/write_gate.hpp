// tests/support/write_gate.hpp: a gate a test backend's write passes through, so that a test can
// hold one commit inside the engine until it has seen other writers queue behind it (the store's
// commit queue then has to carry them in its next engine write).
//
// A backend calls pass() at the start of each write: it counts the write as entered and, while
// the gate is closed, waits. The test calls close(), starts its writers, wait_entered(n) until n
// writes are inside, and open() to let them through.
//
// Thread-safety: every member may be called from any thread concurrently.
#pragma once

#include <condition_variable>
#include <mutex>

namespace keyschema::testing {

class write_gate {
 public:
  // Counts a write as entered and waits while the gate is closed.
  void pass() {
    std::unique_lock lk(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lk, [&] { return open_; });
  }
  // Closes the gate; wait_entered counts the writes that enter from now on (the store's own
  // writes before, its schema record, would otherwise count as the blocker's).
  void close() {
    std::lock_guard lk(mu_);
    open_ = false;
    entered_ = 0;
  }
  void open() {
    std::lock_guard lk(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits until n writes have entered since the gate was closed.
  void wait_entered(int n) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return entered_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int entered_ = 0;
};

}  // namespace keyschema::testing
