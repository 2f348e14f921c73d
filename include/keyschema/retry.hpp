// keyschema/retry.hpp: keyschema::run_transaction, which runs a transaction function again until
// its transaction commits without a conflict.
//
// A store transaction fails with conflict_error when what it read changed before it could commit:
// on etcd whenever another writer (any process) changed a key or range it read; on LMDB when the
// map had to grow while another process committed. The remedy is always the same: run the whole
// transaction again, reads included. run_transaction does that:
//
//   ks::run_transaction(store, [&](auto& tx) {
//     const auto n = tx.template get<counter>("queue").value_or(0);
//     tx.template put<counter>("queue", n + 1);
//   });
//
// fn receives the open transaction; run_transaction commits it when fn returns. fn may run more
// than once, so it must not act outside the transaction (no I/O, no changes to variables it does
// not reset) until run_transaction returned; return what it computed instead. fn may roll the
// transaction back to abandon it: run_transaction then returns without committing.
//
// Thread-safety: as the store's transaction(): any number of threads may run it on one store
// (their transactions are serialized by the store's writer lock).
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/this_thread.hpp>
#include <keyschema/error.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

struct retry_options {
  // How many times fn runs at most; the last conflict_error is rethrown after that. At least 1.
  unsigned max_attempts = 32;
  // The wait before attempt k + 2 is a random time up to min(max_backoff, first_backoff * 2^k),
  // so that writers that conflicted do not meet again at once.
  std::chrono::microseconds first_backoff{200};
  std::chrono::microseconds max_backoff{100'000};
  // The durability of the commit.
  write_options write{};
};

namespace detail {
// A random wait up to min(max, first * 2^attempt) (xorshift, seeded per thread).
template <class = void>
inline void retry_backoff(const retry_options& o, unsigned attempt) {
  thread_local std::uint64_t state =
      0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(this_thread_tag())) ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  const std::int64_t first = o.first_backoff.count();
  const std::int64_t cap = o.max_backoff.count();
  const std::int64_t bound = attempt >= 20 ? cap : std::min<std::int64_t>(cap, first << attempt);
  if (bound <= 0) return;
  sleep_microseconds(static_cast<std::int64_t>(state % static_cast<std::uint64_t>(bound)));
}
}  // namespace detail

// Begins a transaction on s, calls fn(tx), commits tx with opts.write, and returns what fn
// returned. On conflict_error (from fn's reads or from the commit) it waits a little and runs it
// all again, at most opts.max_attempts times in all.
// REQUIRES: fn is callable with typename Store::transaction_type&; this thread holds no open
// transaction on s. opts.max_attempts >= 1 (0 counts as 1).
// Errors: conflict_error after opts.max_attempts attempts (what() of the last one, which names
// what changed); anything fn throws (the transaction is rolled back, no retry); the errors of
// store::transaction() and store_transaction::commit() (limit_error, backend_error: no retry).
template <class Store, class F>
decltype(auto) run_transaction(Store& s, F&& fn, const retry_options& opts = {}) {
  using tx_type = typename Store::transaction_type;
  static_assert(std::is_invocable_v<F&, tx_type&>,
                "keyschema::run_transaction: fn cannot be called with the store's transaction; take "
                "`auto& tx` (or typename Store::transaction_type&) as its parameter");
  using result = std::invoke_result_t<F&, tx_type&>;
  for (unsigned attempt = 0;; ++attempt) {
    try {
      tx_type tx = s.transaction();
      if constexpr (std::is_void_v<result>) {
        std::invoke(fn, tx);
        if (tx.is_open()) tx.commit(opts.write);
        return;
      } else {
        result r = std::invoke(fn, tx);
        if (tx.is_open()) tx.commit(opts.write);
        return r;
      }
    } catch (const conflict_error&) {
      if (attempt + 1 >= opts.max_attempts) throw;
    }
    detail::retry_backoff(opts, attempt);
  }
}

KEYSCHEMA_END_NAMESPACE
