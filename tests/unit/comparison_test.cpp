// comparison_test: the aggregation, output and runner of <keyschema/comparison.hpp> on the
// memory backend.
#include <keyschema/comparison.hpp>

#include <catch2/catch.hpp>
#include <unit/data/recorded_bench_runs.hpp>

#include <atomic>
#include <filesystem>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace comparison_test {

namespace ks = keyschema;
namespace cmp = keyschema::comparison;

TEST_CASE("percentile uses the nearest rank") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, unsorted
  CHECK(cmp::percentile(v, 50) == 50);
  CHECK(cmp::percentile(v, 99) == 99);
  CHECK(cmp::percentile(v, 100) == 100);
  CHECK(cmp::percentile(v, 0) == 1);
  CHECK(cmp::percentile({7.0}, 99) == 7);
  CHECK(cmp::percentile({}, 50) == 0);
  CHECK(cmp::percentile({1, 2, 3, 1000}, 99) == 1000);  // one slow call out of 4 is the p99
  CHECK(cmp::percentile({1, 2, 3, 1000}, 50) == 2);
}

TEST_CASE("median of odd and even counts") {
  CHECK(cmp::median({3, 1, 2}) == 2);
  CHECK(cmp::median({4, 1, 3, 2}) == 2.5);
  CHECK(cmp::median({}) == 0);
}

TEST_CASE("aggregate takes the median rate and pools latencies") {
  std::vector<cmp::sample> reps(3);
  reps[0] = {1.0, 100, 10, {1, 1, 1}};   // 100 items/s
  reps[1] = {2.0, 100, 10, {2, 2, 2}};   // 50 items/s
  reps[2] = {0.5, 100, 10, {9, 9, 90}};  // 200 items/s
  const cmp::result r = cmp::aggregate("memory", false, "w", reps);
  CHECK(r.ops_per_s == 100);
  CHECK(r.calls_per_s == 10);
  CHECK(r.p50_us == 2);
  CHECK(r.p99_us == 90);
  CHECK(r.backend == "memory");
  CHECK(r.workload == "w");
}

TEST_CASE("recommendations name the fastest durable store and its lead when it is significant") {
  std::vector<cmp::result> runs(3);
  runs[0] = {"memory", false, false, "w", 1e6};
  runs[1] = {"a", true, true, "w", 300};
  runs[2] = {"b", true, true, "w", 100};
  runs[1].samples = {300, 310, 290, 305, 295};
  runs[2].samples = {100, 104, 96, 101, 99};
  const auto rec = cmp::recommendations(runs);
  REQUIRE(rec.size() == 1);
  CHECK(rec[0].find("w, sync on: a, 3.00x b") == 0);
  CHECK(rec[0].find("p = 0.008") != std::string::npos);  // 2 / C(10, 5): every sample of a beats every one of b
}

TEST_CASE("recommendations say there is no clear winner when the samples do not separate") {
  std::vector<cmp::result> runs(2);
  runs[0] = {"a", true, true, "w", 310};
  runs[1] = {"b", true, true, "w", 300};
  runs[0].samples = {310, 250, 400, 280, 330};  // a's median leads by 3 %, its samples overlap b's
  runs[1].samples = {300, 350, 260, 320, 290};
  auto rec = cmp::recommendations(runs);
  REQUIRE(rec.size() == 1);
  CHECK(rec[0].find("w, sync on: no clear winner: a ~ b") == 0);
  // Three repetitions a side never decide (the smallest p is 0.1), however far apart.
  runs[0].samples = {1000, 1001, 1002};
  runs[1].samples = {1, 2, 3};
  rec = cmp::recommendations(runs);
  CHECK(rec[0].find("no clear winner") != std::string::npos);
  CHECK(rec[0].find("fewer than 5 repetitions") != std::string::npos);
}

TEST_CASE("the chart: one panel per workload, a star only over a significant winner") {
  std::vector<cmp::result> runs(4);
  runs[0] = {"leveldb", true, true, "publish", 300};
  runs[1] = {"lmdb", true, true, "publish", 100};
  runs[2] = {"leveldb", true, true, "consume", 310};
  runs[3] = {"lmdb", true, true, "consume", 300};
  runs[0].samples = {300, 310, 290, 305, 295};
  runs[1].samples = {100, 104, 96, 101, 99};
  runs[2].samples = {310, 250, 400, 280, 330};
  runs[3].samples = {300, 350, 260, 320, 290};
  runs[0].native_ops_per_s = 320;
  const std::string svg = cmp::to_svg(cmp::machine_info{}, runs);
  std::size_t panels = 0, stars = 0;
  for (std::size_t at = 0; (at = svg.find("<g>", at)) != std::string::npos; ++at) ++panels;
  for (std::size_t at = 0; (at = svg.find("&#9733;", at)) != std::string::npos; ++at) ++stars;
  CHECK(panels == 2);
  CHECK(stars == 1);  // publish: leveldb significantly faster; consume: no clear winner
  CHECK(svg.find(">publish</text>") != std::string::npos);
  CHECK(svg.find("fill=\"#4e79a7\"") != std::string::npos);  // LevelDB's fixed colour
  CHECK(cmp::significant_winner(runs, "publish", true) == &runs[0]);
  CHECK(cmp::significant_winner(runs, "consume", true) == nullptr);
}

TEST_CASE("mann_whitney_p: exact values") {
  CHECK(cmp::mann_whitney_p({4, 5, 6}, {1, 2, 3}) == Approx(0.1));          // 2 / C(6, 3)
  CHECK(cmp::mann_whitney_p({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}) == Approx(2.0 / 252));
  CHECK(cmp::mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}) == Approx(2.0 / 252));  // symmetric
  CHECK(cmp::mann_whitney_p({1, 3, 5}, {2, 4, 6}) == Approx(0.7));          // U = 3: P(U <= 3) = 7/20
  CHECK(cmp::mann_whitney_p({}, {1}) == 1.0);
  CHECK(cmp::mann_whitney_p({2, 2}, {2, 2}) == 1.0);                        // all tied
  // Large samples: the normal approximation agrees with the exact test where both apply.
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) {
    a.push_back(i * 2.0 + 1.5);
    b.push_back(i * 2.0);
  }
  const double exact = cmp::mann_whitney_p(a, b);
  a.push_back(b.front());  // a tie: the normal approximation
  b.push_back(1e9);
  const double approx = cmp::mann_whitney_p(a, b);
  CHECK(exact > 0.05);
  CHECK(approx > 0.05);
  CHECK(std::abs(exact - approx) < 0.2);
}

TEST_CASE("the decision rule: two runs of equal stores never name opposite winners; a real lead is found") {
  // Runs drawn from one distribution per store, with the noise of a shared machine (log-normal,
  // about 30 % spread), 5 repetitions a side, as keyschema-bench's default.
  std::mt19937_64 rng(20261205);
  std::lognormal_distribution<double> noise(0.0, 0.3);
  auto run = [&](double rate) {
    std::vector<double> v;
    for (int i = 0; i < 5; ++i) v.push_back(rate * noise(rng));
    return v;
  };
  int contradictions = 0, false_leads = 0;
  constexpr int pairs = 2000;
  for (int i = 0; i < pairs; ++i) {
    const cmp::comparison_result first = cmp::compare(run(1000), run(1000));
    const cmp::comparison_result second = cmp::compare(run(1000), run(1000));
    false_leads += (first.v != cmp::verdict::no_clear_winner) + (second.v != cmp::verdict::no_clear_winner);
    if ((first.v == cmp::verdict::first_faster && second.v == cmp::verdict::second_faster) ||
        (first.v == cmp::verdict::second_faster && second.v == cmp::verdict::first_faster))
      ++contradictions;
  }
  INFO("false leads: " << false_leads << " of " << 2 * pairs << " comparisons of equal stores");
  CHECK(contradictions == 0);
  CHECK(false_leads < 2 * pairs / 100);  // below alpha = 1 %
  // A real 1.5x lead under 10 % noise: found in most runs (every repetition of the faster store
  // beats every one of the slower in about 96 % of runs), and the slower store never named.
  std::lognormal_distribution<double> quiet(0.0, 0.1);
  auto quiet_run = [&](double rate) {
    std::vector<double> v;
    for (int i = 0; i < 5; ++i) v.push_back(rate * quiet(rng));
    return v;
  };
  int found = 0, wrong = 0;
  for (int i = 0; i < 1000; ++i) {
    const cmp::comparison_result r = cmp::compare(quiet_run(1500), quiet_run(1000));
    found += r.v == cmp::verdict::first_faster;
    wrong += r.v == cmp::verdict::second_faster;
  }
  CHECK(wrong == 0);
  CHECK(found > 900);
}

using kv = ks::keyspace<"kv", std::string, ks::lit<"KV">, ks::field<"k", std::uint64_t>>;
using schema = ks::schema<kv>;

TEST_CASE("the decision rule on the recorded samples of two back-to-back default runs: no contradiction") {
  // Every pair of stores of every cell (workload, sync) of two real runs (data/recorded_bench_runs.hpp):
  // a pair one run calls significantly faster one way must not be called faster the other way in
  // the other run; most pairs that one run decides, the other decides alike.
  using recorded_bench_runs::cell;
  auto verdicts = [](const std::vector<cell>& run) {
    std::map<std::string, std::vector<const cell*>> cells;
    for (const cell& c : run) cells[std::string(c.workload) + (c.sync ? "/on" : "/off")].push_back(&c);
    std::map<std::string, cmp::verdict> out;
    for (const auto& [name, stores] : cells)
      for (std::size_t i = 0; i < stores.size(); ++i)
        for (std::size_t j = i + 1; j < stores.size(); ++j)
          out[name + ":" + stores[i]->backend + "/" + stores[j]->backend] =
              cmp::compare(stores[i]->samples, stores[j]->samples).v;
    return out;
  };
  const auto first = verdicts(recorded_bench_runs::run1);
  const auto second = verdicts(recorded_bench_runs::run2);
  REQUIRE(first.size() == second.size());
  int contradictions = 0, decided_both = 0, same = 0;
  for (const auto& [pair, v] : first) {
    const cmp::verdict w = second.at(pair);
    if (v != cmp::verdict::no_clear_winner && w != cmp::verdict::no_clear_winner) {
      ++decided_both;
      if (v != w) {
        ++contradictions;
        UNSCOPED_INFO("contradiction: " << pair);
      }
    }
    same += v == w;
  }
  INFO(first.size() << " pairs, decided in both runs " << decided_both << ", same verdict " << same);
  CHECK(contradictions == 0);
  CHECK(decided_both > static_cast<int>(first.size()) / 2);  // the rule does decide on real runs
}

TEST_CASE("probe::parallel runs every call on every thread and records each") {
  cmp::probe p(false);
  std::atomic<std::uint64_t> sum{0};
  std::mutex mu;
  std::set<std::thread::id> ids;
  p.parallel(3, 100, [&](unsigned t, std::uint64_t i) {
    sum += t * 1000 + i;
    std::lock_guard lk(mu);
    ids.insert(std::this_thread::get_id());
  });
  CHECK(sum == 3 * 4950 + 100 * (0 + 1000 + 2000));
  CHECK(ids.size() == 3);
  CHECK(p.measured().items == 300);
  CHECK(p.measured().calls == 300);
  CHECK(p.measured().latencies_us.size() == 300);
  CHECK(p.measured().seconds > 0);
  // A failing call: rethrown once every thread has ended; nothing more is recorded.
  CHECK_THROWS_WITH(p.parallel(2, 10, [](unsigned t, std::uint64_t i) {
    if (t == 1 && i == 5) throw std::runtime_error("call 5 failed");
  }), "call 5 failed");
  CHECK(p.measured().items == 300);
}

// The threads of the process, from /proc/self/task (Linux).
static std::size_t process_threads() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST_CASE("probe::parallel starts every thread before the first call and before its clock") {
  // The first call of the run (on whichever thread) sees all of the run's threads alive: they
  // wait at a barrier, so thread start-up is neither timed nor overlapped with any call. (Later
  // first calls may see fewer: a released thread can finish before another one runs.)
  // Repeated: without the barrier the first call sometimes comes before the last thread's start.
  // The bound counts the calling thread and the run's (threads of earlier tests may come and go).
  constexpr unsigned threads = 8;
  cmp::probe p(false);
  for (int run = 0; run < 10; ++run) {
    std::atomic<bool> first{true}, counted{false};
    std::atomic<std::size_t> seen{0};
    p.parallel(threads, 3, [&](unsigned, std::uint64_t) {
      if (first.exchange(false)) {
        seen = process_threads();
        counted = true;
        counted.notify_all();
      }
      counted.wait(false);  // no thread ends while /proc lists them (an ending one can hide another)
    });
    INFO("run " << run);
    CHECK(seen >= 1 + threads);
  }
  CHECK(p.measured().items == 10 * threads * 3);
}

TEST_CASE("runner runs a workload and writes JSON and SVG") {
  const char* argv[] = {"t", "--repetitions", "2", "--warmup", "1", "--no-progress", "--mine"};
  // runner(argc, argv) refuses an option it does not know; a program with options of its own
  // parses first and hands the runner what it knows.
  CHECK_THROWS_WITH(cmp::runner<schema>(7, argv), Catch::Contains("unknown option '--mine'"));
  cmp::options o = cmp::options::parse(7, argv);
  REQUIRE(o.rest == std::vector<std::string>{"--mine"});
  o.rest.clear();
  cmp::runner<schema> r(o);
  int calls = 0;
  r.run("writes", [&](auto& db, cmp::probe& p) {
    ++calls;
    for (std::uint64_t i = 0; i < 50; ++i) p.op([&] { db.template put<kv>({i}, std::string("v"), p.write()); });
    CHECK(db.template get<kv>({49}) == std::string("v"));
  }, cmp::backend<schema, ks::memory_backend>{"memory"});
  CHECK(calls == 3);  // 1 warm-up + 2 repetitions
  REQUIRE(r.results().size() == 1);  // the memory backend is not durable: one run, sync off
  const cmp::result& res = r.results()[0];
  CHECK(res.backend == "memory");
  CHECK(!res.sync);
  CHECK(res.ops_per_s > 0);
  CHECK(res.p99_us >= res.p50_us);
  r.run_native("writes", "memory", [](const std::filesystem::path&, cmp::probe& p) {
    for (int i = 0; i < 10; ++i) p.op([] {});
  });
  CHECK(r.results()[0].native_ops_per_s > 0);
  CHECK(r.results()[0].samples.size() == 2);
  CHECK(r.results()[0].native_samples.size() == 2);
  const std::string json = cmp::to_json(r.machine(), r.results(), &r.opts());
  CHECK(json.find("{\"format_version\":2,\"keyschema_version\":\"") == 0);
  CHECK(json.find("\"settings\":{\"warmup\":1,\"repetitions\":2,") != std::string::npos);
  CHECK(json.find("\"samples\":[") != std::string::npos);
  CHECK(json.find("\"disk_bytes\":null") != std::string::npos);  // the memory backend keeps nothing on disk
  CHECK(json.find("\"runs\":[") != std::string::npos);
  CHECK(json.find("\"backend\":\"memory\"") != std::string::npos);
  const std::string svg = cmp::to_svg(r.machine(), r.results());
  CHECK(svg.find("<svg") == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
}

TEST_CASE("an always-durable backend runs at sync on only, and measure_disk gives its disk figure") {
  const char* argv[] = {"t", "--repetitions", "1", "--warmup", "0", "--no-progress", "--sync", "both"};
  cmp::runner<schema> r(8, argv);
  cmp::backend<schema, ks::memory_backend> server{"server"};
  server.durable = true;  // as a server's store (etcd) that keeps its data elsewhere
  server.always_sync = true;
  std::set<std::string> dirs;
  server.measure_disk = [&](const std::filesystem::path& dir) {
    dirs.insert(dir.string());
    return std::uint64_t{12345};
  };
  std::vector<bool> syncs;
  r.run("writes", [&](auto& db, cmp::probe& p) {
    syncs.push_back(p.sync());
    p.op([&] { db.template put<kv>({1}, std::string("v"), p.write()); });
  }, server);
  CHECK(syncs == std::vector<bool>{true});
  REQUIRE(r.results().size() == 1);
  CHECK(r.results()[0].sync);
  CHECK(r.results()[0].durable);
  CHECK(r.results()[0].disk_bytes == 12345);
  CHECK(dirs.size() == 1);
}

TEST_CASE("compact runs after the last repetition of a write workload only, and reopen hands out the reopened store") {
  const char* argv[] = {"t", "--repetitions", "2", "--warmup", "1", "--no-progress"};
  cmp::runner<schema> r(6, argv);
  cmp::backend<schema, ks::memory_backend> b{"memory"};
  int compactions = 0, reopens = 0;
  b.compact = [&](auto& db, const std::filesystem::path&) {
    ++compactions;
    CHECK(db.template get<kv>({1}) == std::optional<std::string>("v"));
    return std::uint64_t{777};
  };
  b.reopen = [&](const std::filesystem::path&) {
    ++reopens;
    return std::make_unique<ks::store<schema, ks::memory_backend>>();
  };
  r.run("writes", [&](auto& db, cmp::probe& p) { p.op([&] { db.template put<kv>({1}, std::string("v"), p.write()); }); }, b);
  CHECK(compactions == 1);
  REQUIRE(r.results().size() == 1);
  CHECK(r.results()[0].disk_bytes_compacted == 777);
  CHECK(cmp::to_json(r.machine(), r.results()).find("\"disk_bytes_compacted\":777") != std::string::npos);

  r.run_reads("reads", [&](auto& db, cmp::probe& p) {
    db.template put<kv>({1}, std::string("v"), p.write());
    auto* cur = &db;
    p.op([&] { cur = &p.reopen(*cur); });
    CHECK(!cur->template get<kv>({1}));  // the store b.reopen made (an empty memory store)
    cur->template put<kv>({2}, std::string("w"), p.write());  // is usable
    CHECK(cur->template get<kv>({2}) == std::optional<std::string>("w"));
    cur = &p.reopen(*cur);  // and may be reopened again
    ks::store<schema, ks::memory_backend> other;
    CHECK_THROWS_AS(p.reopen(other), std::logic_error);   // not the run's store
  }, b);
  CHECK(compactions == 1);  // not after a read workload
  CHECK(reopens == 6);      // twice in the warm-up and in each of 2 repetitions
  CHECK(r.results().back().disk_bytes_compacted == 0);
}

TEST_CASE("a --workloads or --backends name that no run offers is an error, not an empty report") {
  auto work = [](auto& db, cmp::probe& p) { p.op([&] { db.template put<kv>({1}, std::string("v"), p.write()); }); };
  const cmp::backend<schema, ks::memory_backend> b{"memory"};
  {
    const char* argv[] = {"t", "--repetitions", "1", "--warmup", "0", "--no-progress", "--workloads", "writes,wrties"};
    cmp::runner<schema> r(8, argv);
    r.run("writes", work, b);
    CHECK(r.results().size() == 1);  // the known name ran
    CHECK_THROWS_WITH(r.finish(), Catch::Contains("--workloads names 'wrties'") && Catch::Contains("writes"));
  }
  {
    const char* argv[] = {"t", "--repetitions", "1", "--warmup", "0", "--no-progress", "--backends", "memroy"};
    cmp::runner<schema> r(8, argv);
    r.run("writes", work, b);
    CHECK(r.results().empty());
    CHECK_THROWS_WITH(r.finish(), Catch::Contains("--backends names 'memroy'"));
  }
  {
    // A name offered by another runner whose results were added is known.
    const char* argv[] = {"t", "--repetitions", "1", "--warmup", "0", "--no-progress", "--workloads", "other"};
    cmp::runner<schema> r(8, argv), second(8, argv);
    second.run("other", work, b);
    r.add_results(second);
    CHECK(r.results().size() == 1);
    CHECK(r.finish() == 0);
  }
}

TEST_CASE("the user view is a second native baseline: its own ratio, JSON field and chart tick") {
  const char* argv[] = {"t", "--repetitions", "2", "--warmup", "0", "--no-progress"};
  cmp::runner<schema> r(6, argv);
  r.run("writes", [](auto& db, cmp::probe& p) {
    for (std::uint64_t i = 0; i < 20; ++i) p.op([&] { db.template put<kv>({i}, std::string("v"), p.write()); });
  }, cmp::backend<schema, ks::memory_backend>{"memory"});
  int user_runs = 0;
  r.run_native("writes", "memory", [&](const std::filesystem::path&, cmp::probe& p) {
    ++user_runs;
    for (int i = 0; i < 10; ++i) p.op([] {});
  }, cmp::baseline::user_view);
  CHECK(user_runs == 2);
  REQUIRE(r.results().size() == 1);
  const cmp::result& res = r.results()[0];
  CHECK(res.user_ops_per_s > 0);
  CHECK(res.user_samples.size() == 2);
  CHECK(res.native_ops_per_s == 0);  // the other baseline was not measured
  CHECK(res.native_samples.empty());
  const std::string json = cmp::to_json(r.machine(), r.results(), &r.opts());
  CHECK(json.find("\"native_ops_per_s\":null") != std::string::npos);
  CHECK(json.find("\"user_ops_per_s\":null") == std::string::npos);
  CHECK(json.find("\"user_ops_per_s\":") != std::string::npos);
  std::ostringstream table;
  cmp::print_table(table, r.machine(), r.results());
  const std::string t = table.str();
  CHECK(t.find(" native ") != std::string::npos);
  CHECK(t.find(" user ") != std::string::npos);
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", res.ops_per_s / res.user_ops_per_s);
  CHECK(t.find(ratio) != std::string::npos);
  const std::string svg = cmp::to_svg(r.machine(), r.results());
  CHECK(svg.find("stroke-dasharray") != std::string::npos);  // the user view's tick
  // Not measured: null in JSON, no tick.
  cmp::result none = res;
  none.user_ops_per_s = 0;
  none.user_samples.clear();
  CHECK(cmp::to_json(r.machine(), {none}).find("\"user_ops_per_s\":null") != std::string::npos);
  const std::string svg2 = cmp::to_svg(r.machine(), {none});
  CHECK(svg2.find("y1=\"36\" y2=\"36\" stroke=\"#c00000\"") != std::string::npos);  // the legend's sample only
  CHECK(svg2.find("stroke-dasharray", svg2.find("</text>", svg2.find("user view"))) == std::string::npos);
}

TEST_CASE("offer() registers a workload the program measures itself, so --workloads may name it") {
  const char* argv[] = {"t", "--repetitions", "1", "--warmup", "0", "--no-progress", "--workloads", "mixed"};
  cmp::runner<schema> r(8, argv);
  CHECK(r.offer("mixed"));
  CHECK(!r.offer("other"));
  r.add_results(std::vector<cmp::result>{cmp::aggregate("memory", false, "mixed_publishers", {cmp::sample{1.0, 10, 10, {}}})});
  CHECK(r.finish() == 0);  // "mixed" is known: no error
}

// A program's own class that owns its store and offers the program's operations.
class wrapped_store {
 public:
  explicit wrapped_store(const std::filesystem::path&) {}
  void publish(std::uint64_t i, ks::write_options wo) { db_.put<kv>({i}, std::string("m"), wo); }
  std::size_t published() const {
    std::size_t n = 0;
    for (const auto& e : db_.scan<kv>()) n += !e.value.empty();
    return n;
  }
  ks::store<schema, ks::memory_backend>& store() { return db_; }

 private:
  ks::store<schema, ks::memory_backend> db_;
};

TEST_CASE("a workload can be handed the program's own class that owns the store, which lends the store for compaction") {
  const char* argv[] = {"t", "--repetitions", "2", "--warmup", "0", "--no-progress"};
  cmp::runner<schema> r(6, argv);
  cmp::backend<schema, ks::memory_backend, wrapped_store> b{"wrapped"};
  std::set<const void*> borrowed;
  b.compact = [&](ks::store<schema, ks::memory_backend>& db, const std::filesystem::path&) -> std::uint64_t {
    borrowed.insert(&db);
    return 4096;
  };
  std::set<const void*> stores_seen;
  int runs = 0;
  r.run("publish", [&](wrapped_store& w, cmp::probe& p) {
    ++runs;
    stores_seen.insert(&w.store());
    for (std::uint64_t i = 0; i < 20; ++i) p.op([&] { w.publish(i, p.write()); });
    wrapped_store& again = p.reopen(w);  // the same class, opened again by the backend's opener
    CHECK(again.published() == 0);       // a memory store: nothing survives the reopen
    stores_seen.insert(&again.store());
  }, b);
  CHECK(runs == 2);
  REQUIRE(r.results().size() == 1);
  CHECK(r.results()[0].backend == "wrapped");
  CHECK(r.results()[0].samples.size() == 2);
  CHECK(r.results()[0].disk_bytes_compacted == 4096);
  REQUIRE(borrowed.size() == 1);                           // after the last repetition only
  CHECK(stores_seen.count(*borrowed.begin()) == 1);        // the store inside the wrapper
  // Without store_of (a wrapper that does not lend its store) no compaction figure is made up.
  cmp::runner<schema> r2(6, argv);
  b.store_of = {};
  r2.run("publish", [&](wrapped_store& w, cmp::probe& p) { p.op([&] { w.publish(1, p.write()); }); }, b);
  CHECK(r2.results()[0].disk_bytes_compacted == 0);
}

TEST_CASE("repetitions of the stores of a workload are interleaved round-robin") {
  const char* argv[] = {"t", "--repetitions", "3", "--warmup", "1", "--no-progress"};
  cmp::runner<schema> r(6, argv);
  std::vector<std::string> order;
  const cmp::backend<schema, ks::memory_backend> a{"a"}, b{"b"};
  int calls = 0;
  r.run("w", [&](auto& db, cmp::probe& p) {
    order.push_back(calls++ % 2 == 0 ? "first" : "second");
    p.op([&] { db.template put<kv>({1}, std::string("v"), p.write()); });
  }, a, b);
  // 4 runs of each (1 warm-up + 3), alternating between the two stores.
  CHECK(order == std::vector<std::string>{"first", "second", "first", "second", "first", "second", "first", "second"});
  REQUIRE(r.results().size() == 2);
  CHECK(r.results()[0].backend == "a");
  CHECK(r.results()[0].samples.size() == 3);
}

TEST_CASE("--quick, --full and --scale set the sizes' factor; --quick is marked indicative") {
  const char* q[] = {"t", "--quick"};
  const cmp::options o = cmp::options::parse(2, q);
  CHECK(o.quick);
  CHECK(o.scale == 0.05);
  CHECK(o.repetitions == 1);
  const char* f[] = {"t", "--scale", "2.5"};
  CHECK(cmp::options::parse(3, f).scale == 2.5);
  const char* bad[] = {"t", "--scale", "0"};
  CHECK_THROWS_WITH(cmp::options::parse(3, bad), Catch::Contains("--scale"));
  std::ostringstream table;
  cmp::print_table(table, cmp::machine_info{}, {}, true);
  CHECK(table.str().find("INDICATIVE ONLY") != std::string::npos);
}

TEST_CASE("expect() refuses a misspelt workload before anything runs") {
  const char* argv[] = {"t", "--no-progress", "--workloads", "pubish"};
  cmp::runner<schema> r(4, argv);
  CHECK_THROWS_WITH(r.expect({"publish", "consume"}, {"memory"}), Catch::Contains("--workloads names 'pubish'"));
}

TEST_CASE("bad options name the option") {
  const char* argv[] = {"t", "--repetitions", "x"};
  CHECK_THROWS_WITH(cmp::options::parse(3, argv), Catch::Contains("--repetitions"));
  const char* argv2[] = {"t", "--sync", "maybe"};
  CHECK_THROWS_WITH(cmp::options::parse(3, argv2), Catch::Contains("--sync"));
}

}  // namespace comparison_test
