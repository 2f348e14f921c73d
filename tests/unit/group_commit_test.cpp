// tests/unit/group_commit_test.cpp: the store's commit queue (detail/store/commit_queue.hpp).
//
// Writers that commit while another commit is in the engine are committed together by the next
// leader, in one engine write. To make that happen deterministically, gated_backend (the memory
// backend with a gate in write()) holds the first commit inside the engine until the test has
// seen every other writer queue behind it; then the next engine write must carry all of them.
// Checked: how many engine writes there were (the grouping happened), what each writer got (its
// own result: an add that overflows fails alone, its neighbours commit), and that declared
// counts, index entries and adds resolved in a group equal what one-at-a-time commits give.
//
// Thread-safety: label concurrency (the ThreadSanitizer pass runs it).
#include <catch2/catch.hpp>
#include <keyschema/keyschema.hpp>

#include <support/write_gate.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace group_commit_test {

namespace ks = keyschema;

// The memory backend, counting its writes; while its gate is closed, write() waits there.
class gated_backend : public ks::memory_backend {
 public:
  void write(const ks::write_batch& b, const ks::write_options& opts) {
    gate_.pass();
    ks::memory_backend::write(b, opts);
    writes_.fetch_add(1);
  }
  void close_gate() { gate_.close(); }
  void open_gate() { gate_.open(); }
  void wait_entered(int n) { gate_.wait_entered(n); }
  int writes() const { return writes_.load(); }

 private:
  ks::testing::write_gate gate_;
  std::atomic<int> writes_{0};
};

using message = ks::keyspace<"message", std::uint64_t, ks::lit<"MSG">, ks::field<"queue", std::string>,
                             ks::field<"id", std::uint64_t>>;
using message_count =
    ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"COUNT">, ks::field<"queue", std::string>>;
struct by_value {
  std::optional<std::tuple<std::uint64_t, std::string, std::uint64_t>> operator()(const message::key_type& k,
                                                                                  const std::uint64_t& v) const {
    return std::tuple(v, std::get<0>(k), std::get<1>(k));
  }
};
using by_value_index = ks::keyspace<"by_value", ks::index_of<message, by_value>, ks::lit<"BYVAL">,
                                    ks::field<"value", std::uint64_t>, ks::field<"queue", std::string>,
                                    ks::field<"id", std::uint64_t>>;
using sequence = ks::keyspace<"sequence", std::int64_t, ks::lit<"SEQ">>;
using tiny = ks::keyspace<"tiny", std::int8_t, ks::lit<"TINY">>;
using schema = ks::schema<message, message_count, by_value_index, sequence, tiny>;
using store_type = ks::store<schema, gated_backend>;

// Holds the engine closed while `blocker` commits, starts `n` more writers (each runs
// write(i)) that queue behind it, gives them time to reach the queue (none can return meanwhile:
// checked), then opens the engine. Returns each writer's exception (nullptr: committed).
template <class Blocker, class Write>
std::vector<std::exception_ptr> run_grouped(store_type& db, Blocker&& blocker, int n, Write&& write) {
  gated_backend& be = db.unsafe_backend();  // the gate: no write through it
  be.close_gate();
  std::thread first([&] { blocker(); });
  be.wait_entered(1);  // the blocker is inside the engine, holding the writer lock
  std::vector<std::exception_ptr> results(static_cast<std::size_t>(n));
  std::atomic<int> returned{0};
  std::vector<std::thread> writers;
  for (int i = 0; i < n; ++i) {
    writers.emplace_back([&, i] {
      try {
        write(i);
      } catch (...) {
        results[static_cast<std::size_t>(i)] = std::current_exception();
      }
      returned.fetch_add(1);
    });
  }
  // Writers queue behind the blocker; none can return while it holds the engine. Give them time
  // to reach the queue (a writer that arrives late only makes a smaller group: the test then
  // checks the count of engine writes against what it can prove, see below).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(returned.load() == 0);
  be.open_gate();
  first.join();
  for (auto& t : writers) t.join();
  return results;
}

TEST_CASE("group commit: writers queued behind a commit are committed together, each with its own result",
          "[group_commit][concurrency]") {
  store_type db;
  const int writes_at_start = static_cast<const store_type&>(db).backend().writes();
  constexpr int n = 8;
  auto results = run_grouped(
      db, [&] { db.put<message>({"q0", 0}, 100); }, n,
      [&](int i) { db.put<message>({"q" + std::to_string(i % 2), static_cast<std::uint64_t>(i + 1)}, 200 + i); });
  for (const auto& r : results) CHECK(r == nullptr);
  // The blocker's write, then (at most) the queued ones: fewer engine writes than commits.
  const int engine_writes = static_cast<const store_type&>(db).backend().writes() - writes_at_start;
  INFO("engine writes for " << (n + 1) << " commits: " << engine_writes);
  CHECK(engine_writes < n + 1);
  CHECK(engine_writes >= 2);
  // Counts and index entries resolved in the group are exact.
  CHECK(db.get<message_count>({"q0"}) == std::optional<std::int64_t>(1 + n / 2));
  CHECK(db.get<message_count>({"q1"}) == std::optional<std::int64_t>(n / 2));
  std::size_t indexed = 0;
  for (const auto& e : db.scan<by_value_index>()) {
    CHECK(db.get<message>({e.get<"queue">(), e.get<"id">()}) == std::optional<std::uint64_t>(e.get<"value">()));
    ++indexed;
  }
  CHECK(indexed == n + 1);
}

TEST_CASE("group commit: an add that overflows fails alone; the group's other writes commit",
          "[group_commit][concurrency]") {
  store_type db;
  db.put<tiny>({}, std::int8_t{120});
  constexpr int n = 6;
  auto results = run_grouped(
      db, [&] { db.add<sequence>({}, 1); }, n,
      [&](int i) {
        if (i == 2) {
          db.add<tiny>({}, 100);  // 120 + 100 does not fit an int8_t
        } else {
          auto b = db.batch();
          b.add<sequence>({}, 1);
          b.put<message>({"q", static_cast<std::uint64_t>(i)}, static_cast<std::uint64_t>(i));
          b.commit();
        }
      });
  for (int i = 0; i < n; ++i) {
    INFO("writer " << i);
    if (i == 2) {
      REQUIRE(results[2] != nullptr);
      CHECK_THROWS_AS(std::rethrow_exception(results[2]), ks::overflow_error);
    } else {
      CHECK(results[static_cast<std::size_t>(i)] == nullptr);
    }
  }
  CHECK(db.get<tiny>({}) == std::optional<std::int8_t>(120));  // nothing of the failed add
  CHECK(db.get<sequence>({}) == std::optional<std::int64_t>(n));  // the blocker's 1 + n-1 batches
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(n - 1));
}

TEST_CASE("group commit: the same key written by several queued writers ends as the last one left it",
          "[group_commit][concurrency]") {
  store_type db;
  // Writers are queued in an order the test cannot fix, so each writes the same record and
  // adds 1: whatever the order, the record exists once (count 1, one index entry) and the adds sum.
  constexpr int n = 8;
  auto results = run_grouped(
      db, [&] { db.put<message>({"q", 7}, 1); }, n,
      [&](int i) {
        auto b = db.batch();
        b.put<message>({"q", 7}, static_cast<std::uint64_t>(10 + i));
        b.add<sequence>({}, 1);
        if (i % 2 == 0) b.erase<message>({"q", 7});
        if (i % 2 == 0) b.put<message>({"q", 7}, static_cast<std::uint64_t>(10 + i));
        b.commit({.sync = i % 3 == 0});
      });
  for (const auto& r : results) CHECK(r == nullptr);
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  CHECK(db.get<sequence>({}) == std::optional<std::int64_t>(n));
  const std::optional<std::uint64_t> v = db.get<message>({"q", 7});
  REQUIRE(v);
  std::size_t entries = 0;
  for (const auto& e : db.scan<by_value_index>()) {
    CHECK(e.get<"value">() == *v);
    ++entries;
  }
  CHECK(entries == 1);
}

TEST_CASE("group commit: a transaction sees no commit between its reads and its commit", "[group_commit][concurrency]") {
  store_type db;
  db.put<sequence>({}, 0);
  std::atomic<bool> stop{false};
  std::vector<std::int64_t> adds(4, 0);
  std::vector<std::thread> adders;
  for (std::size_t t = 0; t < adds.size(); ++t) {
    adders.emplace_back([&, t] {
      while (!stop.load()) {
        db.add<sequence>({}, 1, {.sync = false});
        ++adds[t];
      }
    });
  }
  int unchanged = 0;
  constexpr int transactions = 200;
  for (int i = 0; i < transactions; ++i) {
    auto tx = db.transaction();
    const std::int64_t n = tx.get<sequence>({}).value_or(0);
    std::this_thread::yield();
    if (db.snapshot().get<sequence>({}).value_or(0) == n) ++unchanged;  // no commit in between
    tx.put<sequence>({}, n + 1000);
    tx.commit({.sync = false});
  }
  stop.store(true);
  for (auto& t : adders) t.join();
  CHECK(unchanged == transactions);
  // No add lost under a transaction's read-modify-write, and none of the transactions' writes.
  std::int64_t added = 0;
  for (const std::int64_t a : adds) added += a;
  CHECK(db.get<sequence>({}) == std::optional<std::int64_t>(added + 1000 * transactions));
}

// --- several groups in flight (backend_with_concurrent_writes: etcd) -------------------------------

// Runs `writers` threads submitting one write of `ops` puts each to q with the given limits, while
// the first group is held inside commit_group until every writer has queued. Returns the most
// commit_group calls seen running at once, and checks every write was committed exactly once.
int peak_in_flight(const ks::detail::group_limits& limits, int writers, int ops) {
  ks::detail::commit_queue q;
  std::mutex mu;
  std::condition_variable cv;
  int running = 0, peak = 0, committed = 0;
  bool release = false;
  std::atomic<int> queued{0};
  auto commit = [&](std::span<ks::detail::queued_write* const> g) {
    std::unique_lock lk(mu);
    ++running;
    peak = std::max(peak, running);
    cv.notify_all();
    // Every group waits until all writers have queued (or timed out: the test then sees a lower
    // peak, which can only fail it, never pass it wrongly).
    cv.wait_for(lk, std::chrono::seconds(5), [&] { return release; });
    committed += static_cast<int>(g.size());
    --running;
  };
  ks::write_batch one;
  for (int i = 0; i < ops; ++i) one.put("k" + std::to_string(i), "v");
  std::vector<std::thread> ts;
  for (int i = 0; i < writers; ++i) {
    ts.emplace_back([&] {
      ks::detail::queued_write w(one, nullptr, ks::write_options{.sync = false});
      queued.fetch_add(1);
      q.submit(w, limits, commit);
    });
  }
  while (queued.load() < writers) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let them reach the queue
  {
    std::lock_guard lk(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : ts) t.join();
  CHECK(committed == writers);
  return peak;
}

TEST_CASE("group commit: a second group is in flight at once only when the queued writes fill a group",
          "[group_commit][concurrency]") {
  ks::detail::group_limits limits;
  limits.max_ops = 8;  // a group holds 4 writes of 2 puts
  SECTION("one group in flight at a time by default (every engine on one machine)") {
    CHECK(peak_in_flight(limits, 24, 2) == 1);
  }
  SECTION("up to max_in_flight when the queue holds more than one group's writes") {
    limits.max_in_flight = 3;
    CHECK(peak_in_flight(limits, 24, 2) == 3);
  }
  SECTION("one when all queued writes fit in one group: more groups would only be smaller") {
    limits.max_in_flight = 3;
    limits.max_ops = 1000;
    CHECK(peak_in_flight(limits, 24, 2) == 1);
  }
}

TEST_CASE("group commit: the writer lock of concurrent-write backends lets plain groups share it, and prefers "
          "exclusive lockers", "[group_commit][concurrency]") {
  ks::detail::writer_mutex m;
  m.lock_shared();
  m.lock_shared();  // shared holders do not exclude each other
  CHECK_FALSE(m.try_lock());
  std::atomic<bool> exclusive{false};
  std::thread x([&] {
    m.lock();
    exclusive.store(true);
    m.unlock();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(exclusive.load());  // waits for the shared holders
  // A new shared locker waits behind the waiting exclusive one (no starvation of transactions).
  std::atomic<bool> late_shared{false};
  std::thread y([&] {
    m.lock_shared();
    late_shared.store(exclusive.load());  // true only if the exclusive locker went first
    m.unlock_shared();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  m.unlock_shared();
  m.unlock_shared();
  x.join();
  y.join();
  CHECK(exclusive.load());
  CHECK(late_shared.load());
}

}  // namespace group_commit_test
