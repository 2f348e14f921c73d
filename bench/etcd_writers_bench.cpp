// bench/etcd_writers_bench.cpp: concurrent writers on etcd, through one keyschema::store, through
// one store per thread, and through the adapter itself (etcd_backend::write, no store), side by
// side in one run.
//
// Each writer thread commits single messages: one message is two entries (its metadata and its
// body), one etcd Txn per commit on the adapter side. The "store" side shares one
// ks::store<broker, etcd_backend> between all threads (what a broker does); "store per thread"
// opens one store per thread (what users did to get writes in flight before); "adapter" calls
// etcd_backend::write from every thread on one shared backend: the most the store can reach,
// since etcd's durability is the cluster's (every write is durable, whatever write_options say).
// A "counted" variant also adds 1 to one shared counter in each commit (a read-modify-write the
// store resolves, the broker's message count).
//
//   etcd_writers_bench --endpoints http://127.0.0.1:23790,... [--threads 1,2,4,8] [--seconds S]
//                      [--rounds R] [--in-flight K]
//
// Start a cluster first, e.g. `scripts/etcd-cluster.sh start /tmp/etcd-bench` (it prints the
// endpoints). For every thread count it runs R rounds (default 3), each measuring every side for
// S seconds (default 2) in turn, and prints the median commits per second, the p99 commit latency
// of the median round, the store's ratio to the adapter and to one store per thread. --in-flight
// sets etcd_options::writes_in_flight (how many grouped Txns one store sends at once).
//
// Thread-safety: a program; every run writes under a key prefix of its own.
#include <keyschema/keyschema.hpp>
#include <keyschema/etcd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace ks = keyschema;

using message_metadata = ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">,
                                      ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">,
                                      ks::field<"message_id", std::uint64_t>>;
using message_content = ks::keyspace<"message_content", ks::bytes, ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>,
                                     ks::field<"offset", std::uint32_t>, ks::lit<"MESSAGE_CONTENT">>;
using message_count = ks::keyspace<"message_count", std::int64_t, ks::lit<"MESSAGE_COUNT">>;
using broker = ks::schema<message_metadata, message_content, message_count>;

const std::string metadata_value(64, 'm');
const std::string body_value(1024, 'b');

std::uint64_t message_id(int t, std::uint64_t i) { return (static_cast<std::uint64_t>(t) << 40) | i; }

struct result {
  double rate = 0;      // commits per second (wall time)
  double p99_ms = 0;    // 99th percentile commit latency
};

// Runs `threads` writers calling commit(t, i) until `seconds` have passed.
result run_writers(int threads, double seconds, const std::function<void(int, std::uint64_t)>& commit) {
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> lat(static_cast<std::size_t>(threads));
  std::vector<std::thread> ws;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    ws.emplace_back([&, t] {
      std::uint64_t i = 0;
      auto& mine = lat[static_cast<std::size_t>(t)];
      while (!stop.load(std::memory_order_relaxed)) {
        const auto a = std::chrono::steady_clock::now();
        commit(t, i++);
        mine.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& w : ws) w.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  result r;
  r.rate = static_cast<double>(all.size()) / elapsed;
  if (!all.empty()) {
    const std::size_t k = std::min(all.size() - 1, all.size() * 99 / 100);
    std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
    r.p99_ms = all[k];
  }
  return r;
}

std::size_t in_flight = ks::etcd_options{}.writes_in_flight;

ks::etcd_options options(const std::vector<std::string>& endpoints, const std::string& prefix) {
  ks::etcd_options o;
  o.writes_in_flight = in_flight;
  o.endpoints = endpoints;
  o.key_prefix = prefix;
  return o;
}

template <class Db>
void commit_message(Db& db, int t, std::uint64_t i, bool counted) {
  auto b = db.batch();
  const std::uint64_t id = message_id(t, i);
  b.template put<message_metadata>({"queue-" + std::to_string(t % 4), id}, ks::bytes(metadata_value));
  b.template put<message_content>({id, 0u}, ks::bytes(body_value));
  if (counted) b.template add<message_count>({}, 1);
  b.commit();
}

result store_side(const std::vector<std::string>& ep, const std::string& prefix, int threads, double seconds, bool counted) {
  ks::store<broker, ks::etcd_backend> db(options(ep, prefix));
  return run_writers(threads, seconds, [&](int t, std::uint64_t i) { commit_message(db, t, i, counted); });
}

result store_per_thread_side(const std::vector<std::string>& ep, const std::string& prefix, int threads, double seconds,
                             bool counted) {
  std::vector<std::unique_ptr<ks::store<broker, ks::etcd_backend>>> dbs;
  for (int t = 0; t < threads; ++t) dbs.push_back(std::make_unique<ks::store<broker, ks::etcd_backend>>(options(ep, prefix)));
  return run_writers(threads, seconds,
                     [&](int t, std::uint64_t i) { commit_message(*dbs[static_cast<std::size_t>(t)], t, i, counted); });
}

result adapter_side(const std::vector<std::string>& ep, const std::string& prefix, int threads, double seconds) {
  ks::etcd_backend db(options(ep, prefix));
  return run_writers(threads, seconds, [&](int t, std::uint64_t i) {
    const std::uint64_t id = message_id(t, i);
    ks::write_batch b;
    b.put(ks::tuple::pack("DESTINATION", "queue-" + std::to_string(t % 4), "MESSAGE_METADATA", id), metadata_value);
    b.put(ks::tuple::pack("MESSAGE", id, std::uint32_t{0}, "MESSAGE_CONTENT"), body_value);
    db.write(b, {});
  });
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> endpoints;
  std::vector<int> threads{1, 2, 4, 8};
  double seconds = 2;
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("etcd_writers_bench: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--endpoints") {
      endpoints = split(next());
    } else if (a == "--threads") {
      threads.clear();
      for (const auto& t : split(next())) threads.push_back(std::stoi(t));
    } else if (a == "--seconds") {
      seconds = std::stod(next());
    } else if (a == "--in-flight") {
      in_flight = static_cast<std::size_t>(std::stoul(next()));
    } else if (a == "--rounds") {
      rounds = std::stoi(next());
    } else {
      std::fprintf(stderr, "etcd_writers_bench: unknown option '%s'\nusage: %s --endpoints URL,... [--threads 1,2,4,8] "
                   "[--seconds S] [--rounds R] [--in-flight K]\n", a.c_str(), argv[0]);
      return 2;
    }
  }
  if (endpoints.empty()) {
    std::fprintf(stderr, "etcd_writers_bench: --endpoints is required (start a cluster with scripts/etcd-cluster.sh start DIR)\n");
    return 2;
  }
  const auto stamp = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  int run = 0;
  auto prefix = [&] { return "etcd_writers_bench/" + stamp + "/" + std::to_string(run++) + "/"; };
  std::printf("%-8s %-8s %12s %12s %12s %12s %9s %9s   p99 ms: store / per-thread / adapter\n", "threads", "counted",
              "store", "per-thread", "adapter", "", "st/adapt", "st/per-th");
  for (const int t : threads) {
    for (const bool counted : {false, true}) {
      std::vector<result> s, p, a;
      for (int r = 0; r < rounds; ++r) {
        s.push_back(store_side(endpoints, prefix(), t, seconds, counted));
        p.push_back(store_per_thread_side(endpoints, prefix(), t, seconds, counted));
        if (!counted) a.push_back(adapter_side(endpoints, prefix(), t, seconds));
      }
      auto rate = [](const std::vector<result>& v) {
        std::vector<double> x;
        for (const auto& e : v) x.push_back(e.rate);
        return median(x);
      };
      auto p99 = [](const std::vector<result>& v) {
        std::vector<double> x;
        for (const auto& e : v) x.push_back(e.p99_ms);
        return median(x);
      };
      const double sr = rate(s), pr = rate(p), ar = rate(a);
      std::printf("%-8d %-8s %12.0f %12.0f %12s %12s %9s %9.2f   %.1f / %.1f / %s\n", t, counted ? "yes" : "no", sr, pr,
                  counted ? "-" : std::to_string(static_cast<long>(ar)).c_str(), "",
                  counted ? "-" : std::to_string(sr / ar).substr(0, 4).c_str(), sr / pr, p99(s), p99(p),
                  counted ? "-" : std::to_string(p99(a)).substr(0, 5).c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
