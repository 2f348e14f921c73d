// tests/conformance/conformance_concurrency.hpp: the backend conformance suite, threaded cases.
//
// Included once by a backend's concurrency test program, after it defines
// KEYSCHEMA_CONFORMANCE_FACTORY (see conformance.hpp). These programs carry the CTest label
// `concurrency`, so the ThreadSanitizer pass runs exactly them.
//
// Catch2 assertions are not thread-safe: worker threads only record what they saw (counters and
// messages in a failure_log) and the test thread asserts on it after joining them. Every loop is
// bounded: readers run until the writer has finished its fixed number of commits (at least once,
// at most a fixed number of rounds); nothing sleeps or waits on time for correctness.
#pragma once

#ifndef KEYSCHEMA_CONFORMANCE_FACTORY
#error "define KEYSCHEMA_CONFORMANCE_FACTORY (the backend factory type) before including conformance_concurrency.hpp"
#endif

#include <conformance/broker_schema.hpp>
#include <conformance/conformance_support.hpp>

#include <catch2/catch.hpp>
#include <keyschema/keyschema.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace keyschema::conformance {

using backend_factory = KEYSCHEMA_CONFORMANCE_FACTORY;
using test_fixture = fixture<backend_factory>;

namespace {

// Failures seen by worker threads, asserted on by the test thread.
class failure_log {
 public:
  void add(std::string what) {
    std::lock_guard lk(mu_);
    if (messages_.size() < 20) messages_.push_back(std::move(what));
    ++count_;
  }
  // Runs f, recording any exception it throws.
  template <class F>
  void guard(const char* who, F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      add(std::string(who) + ": exception: " + e.what());
    } catch (...) {
      add(std::string(who) + ": unknown exception");
    }
  }
  std::size_t count() const {
    std::lock_guard lk(mu_);
    return count_;
  }
  std::string report() const {
    std::lock_guard lk(mu_);
    std::string out;
    for (const auto& m : messages_) out += m + "\n";
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> messages_;
  std::size_t count_ = 0;
};

std::string account(int i) { return "acct-" + std::to_string(100 + i); }

}  // namespace

TEST_CASE("a counter incremented in transactions by several threads loses no update",
          "[conformance][concurrency][transaction]") {
  test_fixture fx;
  auto& db = fx.db();
  constexpr int threads = 4;
  constexpr int increments = 500;
  failure_log failures;
  std::vector<std::vector<std::int64_t>> written(threads);
  std::atomic<int> finished{0};
  std::size_t regressions = 0;
  std::size_t reads = 0;

  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      failures.guard("incrementer", [&] {
        for (int i = 0; i < increments; ++i) {
          auto tx = db.transaction();
          const std::int64_t n = tx.get<message_count>({"q"}).value_or(0);
          tx.put<message_count>({"q"}, n + 1);
          // A second key in the same transaction: the pair must always move together.
          tx.put<message_expiration>({"q", 0}, n + 1);
          tx.commit({.sync = false});  // logic, not durability
          written[static_cast<std::size_t>(t)].push_back(n + 1);
        }
      });
      finished.fetch_add(1);
    });
  }
  // A reader on the test's own thread: the counter never goes backwards, and the two keys
  // written together are always seen together in a snapshot.
  failures.guard("reader", [&] {
    std::int64_t last = 0;
    do {
      const auto snap = db.snapshot();
      const std::int64_t n = snap.get<message_count>({"q"}).value_or(0);
      const std::int64_t m = snap.get<message_expiration>({"q", 0}).value_or(0);
      if (n < last) {
        ++regressions;
        failures.add("a snapshot saw counter " + std::to_string(n) + " after one that saw " + std::to_string(last));
      }
      if (n != m) failures.add("snapshot saw counter " + std::to_string(n) + " with its twin at " + std::to_string(m));
      last = n;
      ++reads;
    } while (finished.load() < threads && reads < 1000000);
  });
  for (auto& w : workers) w.join();

  INFO(failures.report());
  CHECK(failures.count() == 0);
  CHECK(regressions == 0);
  CHECK(reads > 0);
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(threads * increments));
  // Every committed transaction wrote a distinct successor: no two read the same value.
  std::vector<std::int64_t> all;
  for (const auto& w : written) all.insert(all.end(), w.begin(), w.end());
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> want(threads * increments);
  std::iota(want.begin(), want.end(), std::int64_t{1});
  CHECK(all == want);
}

TEST_CASE("adds in batches from two threads lose no update", "[conformance][concurrency][counters]") {
  // Each batch adds without reading: the store resolves the add at commit, under its writer lock
  // (and on LMDB/SQLite inside the engine's write transaction). Reading the count with db.get and
  // putting the sum in a batch instead loses updates whenever the two threads interleave, and
  // the barrier makes them interleave: both threads have built their batch before either
  // commits (that naive batch ends near 1,000 here, not 2,000).
  test_fixture fx;
  auto& db = fx.db();
  constexpr int threads = 2;
  constexpr int batches = 1000;
  failure_log failures;
  std::barrier both(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto b = db.batch();
      for (int i = 0; i < batches; ++i) {
        failures.guard("adder", [&] {
          b.add<message_count>({"q"}, 1);
          b.add<message_count>({"pair"}, 2);  // two adds in one batch move together
          b.put<message_expiration>({"adder", static_cast<std::uint64_t>(t)}, i);
        });
        both.arrive_and_wait();  // outside guard: both threads always reach it
        failures.guard("adder", [&] { b.commit({.sync = false}); });  // logic, not durability
      }
    });
  }
  for (auto& w : workers) w.join();
  INFO(failures.report());
  CHECK(failures.count() == 0);
  CHECK(db.get<message_count>({"q"}).value_or(-1) == threads * batches);
  CHECK(db.get<message_count>({"pair"}).value_or(-1) == 2 * threads * batches);
}

TEST_CASE("readers see consistent snapshots while a writer commits", "[conformance][concurrency][snapshot]") {
  test_fixture fx;
  auto& db = fx.db();
  constexpr int accounts = 16;
  constexpr std::int64_t initial = 1000;
  constexpr std::int64_t total = accounts * initial;
  constexpr int rounds = 2000;
  constexpr int readers = 3;
  // Readers stop early after this many rounds, so the case ends in bounded time even where a
  // backend's locks let readers crowd out the writer.
  constexpr std::size_t max_checks_per_reader = 1500;

  // Invariants every consistent state keeps:
  //   the message_count balances of the accounts sum to `total`;
  //   the ids under destination "log" are one contiguous run [lo, hi) (appends at hi and
  //   erasures at lo are committed together).
  std::vector<std::int64_t> balance(accounts, initial);
  std::uint64_t lo = 0, hi = 64;
  {
    auto b = db.batch();
    for (int i = 0; i < accounts; ++i) b.put<message_count>({account(i)}, initial);
    for (std::uint64_t id = lo; id < hi; ++id) b.put<message_metadata>({"log", id}, bin("entry"));
    b.commit();
  }

  failure_log failures;
  std::atomic<bool> done{false};
  std::atomic<std::size_t> snapshot_checks{0};

  auto check_state = [&](const auto& src, const char* what) {
    std::int64_t sum = 0;
    int n = 0;
    for (const auto& e : src.template scan<message_count>()) {
      sum += e.value;
      ++n;
    }
    if (n != accounts || sum != total) {
      failures.add(std::string(what) + ": " + std::to_string(n) + " accounts summing to " + std::to_string(sum));
    }
    std::vector<std::uint64_t> ids;
    for (const auto& e : src.template scan<message_metadata>("log")) ids.push_back(e.template get<"message_id">());
    if (ids.empty()) failures.add(std::string(what) + ": the log is empty");
    for (std::size_t i = 1; i < ids.size(); ++i) {
      if (ids[i] != ids[i - 1] + 1) {
        failures.add(std::string(what) + ": log ids jump from " + std::to_string(ids[i - 1]) + " to " +
                     std::to_string(ids[i]));
        break;
      }
    }
    return ids;
  };

  std::thread writer([&] {
    failures.guard("writer", [&] {
      std::mt19937_64 rng(1234);
      for (int round = 0; round < rounds; ++round) {
        const int a = static_cast<int>(rng() % accounts);
        const int b = static_cast<int>((static_cast<std::uint64_t>(a) + 1 + rng() % (accounts - 1)) % accounts);
        const std::int64_t amount = static_cast<std::int64_t>(rng() % 50);
        const bool shrink = round % 3 != 0;  // every third round the log only grows
        if (round % 2 == 0) {
          auto batch = db.batch();
          balance[static_cast<std::size_t>(a)] -= amount;
          balance[static_cast<std::size_t>(b)] += amount;
          batch.put<message_count>({account(a)}, balance[static_cast<std::size_t>(a)]);
          batch.put<message_count>({account(b)}, balance[static_cast<std::size_t>(b)]);
          batch.put<message_metadata>({"log", hi}, bin("entry"));
          if (shrink) batch.erase<message_metadata>({"log", lo});
          batch.commit({.sync = false});
        } else {
          auto tx = db.transaction();
          const std::int64_t va = tx.get<message_count>({account(a)}).value_or(-1);
          const std::int64_t vb = tx.get<message_count>({account(b)}).value_or(-1);
          if (va != balance[static_cast<std::size_t>(a)] || vb != balance[static_cast<std::size_t>(b)]) {
            failures.add("writer: a transaction read stale balances");
          }
          balance[static_cast<std::size_t>(a)] = va - amount;
          balance[static_cast<std::size_t>(b)] = vb + amount;
          tx.put<message_count>({account(a)}, va - amount);
          tx.put<message_count>({account(b)}, vb + amount);
          tx.put<message_metadata>({"log", hi}, bin("entry"));
          if (shrink) tx.erase<message_metadata>({"log", lo});
          tx.commit({.sync = false});
        }
        ++hi;
        if (shrink) ++lo;
      }
    });
    done.store(true);
  });

  std::vector<std::thread> reader_threads;
  for (int r = 0; r < readers; ++r) {
    reader_threads.emplace_back([&] {
      failures.guard("reader", [&] {
        std::size_t checks = 0;
        do {
          const auto snap = db.snapshot();
          const auto first = check_state(snap, "snapshot");
          // A second pass over the same snapshot sees exactly the same state, also backwards.
          std::vector<std::uint64_t> again;
          for (const auto& e : snap.scan<message_metadata>("log")) again.push_back(e.get<"message_id">());
          if (again != first) failures.add("two scans of one snapshot disagree");
          std::vector<std::uint64_t> backwards;
          for (const auto& e : snap.scan<message_metadata>("log").reverse()) backwards.push_back(e.get<"message_id">());
          std::reverse(backwards.begin(), backwards.end());
          if (backwards != first) failures.add("a reverse scan of a snapshot disagrees with the forward scan");
          std::int64_t sum = 0;
          for (int i = 0; i < accounts; ++i) sum += snap.get<message_count>({account(i)}).value_or(0);
          if (sum != total) failures.add("point reads on one snapshot sum to " + std::to_string(sum));
          // Without a snapshot each single scan still reads one consistent state.
          check_state(db, "store scan");
          snapshot_checks.fetch_add(1);
        } while (!done.load() && ++checks < max_checks_per_reader);
      });
    });
  }

  writer.join();
  for (auto& t : reader_threads) t.join();

  INFO(failures.report());
  CHECK(failures.count() == 0);
  CHECK(snapshot_checks.load() >= static_cast<std::size_t>(readers));
  const auto final_ids = check_state(db, "final");
  CHECK(failures.count() == 0);
  REQUIRE_FALSE(final_ids.empty());
  CHECK(final_ids.front() == lo);
  CHECK(final_ids.back() == hi - 1);
  for (int i = 0; i < accounts; ++i) {
    CHECK(db.get<message_count>({account(i)}) == std::optional<std::int64_t>(balance[static_cast<std::size_t>(i)]));
  }
}

TEST_CASE("writers from many threads are serialized; none is lost", "[conformance][concurrency]") {
  test_fixture fx;
  auto& db = fx.db();
  constexpr int threads = 4;
  constexpr std::uint64_t per_thread = 600;
  failure_log failures;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      failures.guard("writer", [&] {
        const std::string dest = "w" + std::to_string(t);
        for (std::uint64_t i = 0; i < per_thread; ++i) {
          switch (i % 3) {
            case 0: db.put<message_metadata>({dest, i}, bin("single"), {.sync = false}); break;
            case 1: {
              auto b = db.batch();
              b.put<message_metadata>({dest, i}, bin("batch"));
              b.put<message_count>({dest}, static_cast<std::int64_t>(i));
              b.commit({.sync = false});
              break;
            }
            default: {
              auto tx = db.transaction();
              tx.put<message_metadata>({dest, i}, bin("tx"));
              tx.put<message_count>({"total"}, tx.get<message_count>({"total"}).value_or(0) + 1);
              tx.commit({.sync = false});
              break;
            }
          }
        }
      });
    });
  }
  for (auto& w : workers) w.join();
  INFO(failures.report());
  CHECK(failures.count() == 0);
  for (int t = 0; t < threads; ++t) {
    const std::string dest = "w" + std::to_string(t);
    INFO(dest);
    CHECK(count(db.scan<message_metadata>(dest)) == per_thread);
  }
  const std::int64_t per_thread_tx = static_cast<std::int64_t>(per_thread / 3);  // i % 3 == 2
  CHECK(db.get<message_count>({"total"}) == std::optional<std::int64_t>(threads * per_thread_tx));
}

TEST_CASE("a transaction keeps other writers out until it ends", "[conformance][concurrency][transaction]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_count>({"q"}, 0);
  failure_log failures;
  std::atomic<bool> other_started{false};
  std::atomic<bool> other_wrote{false};
  std::thread other;
  {
    auto tx = db.transaction();
    other = std::thread([&] {
      failures.guard("other writer", [&] {
        other_started.store(true);
        db.put<message_count>({"q"}, 2);  // blocks until tx ends
        other_wrote.store(true);
      });
    });
    while (!other_started.load()) std::this_thread::yield();
    // Work inside the transaction while the other thread is (most likely) waiting for the lock.
    std::int64_t n = 0;
    for (int i = 0; i < 2000; ++i) n = tx.get<message_count>({"q"}).value_or(-1);
    if (other_wrote.load()) failures.add("another thread wrote while a transaction was open");
    tx.put<message_count>({"q"}, n + 1);
    tx.commit();
  }
  other.join();
  INFO(failures.report());
  CHECK(failures.count() == 0);
  // The other write was ordered after the transaction, not lost under it.
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(2));
}

}  // namespace keyschema::conformance
