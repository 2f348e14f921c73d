// keyschema/comparison.hpp: comparison benchmarks of your own schema over several backends.
//
// What it is: a small harness that runs one workload function, written once against
// ks::store<Schema, B> (a generic lambda taking `auto& db`), over a list of backends at both
// durabilities (write_options{} with sync = true, and {.sync = false}), with warm-up runs,
// repetitions, p50/p99 latency, ops/s, bytes on disk, and the same output as keyschema-bench: a
// table on stdout, `--json PATH`, an `--svg PATH` chart and a progress line on stderr.
//
//   ks::comparison::runner<my_schema> r(argc, argv);                 // parses --json, --svg, ...
//   auto work = [](auto& db, ks::comparison::probe& p) {
//     for (std::uint64_t i = 0; i < 1000; ++i)
//       p.op([&] { db.template put<my_ks>({i}, "v", p.write()); });   // one timed operation
//   };
//   r.run("writes", work, ks::comparison::backend<my_schema, ks::memory_backend>{"memory"},
//                         ks::comparison::backend<my_schema, ks::lmdb_backend>{"lmdb"});
//   return r.finish();                                             // table, JSON, SVG
//
// A workload may also be handed a class of the program's own that owns the store (its message
// store wrapper, say) instead of the store: backend<Schema, B, Owner> opens the Owner and lends the
// harness the store inside it (backend::store_of).
//
// Statistics (statistics.hpp): every repetition's rate is kept (result::samples); a cell is
// reported as the median with min..max and the count; the repetitions of the cells of one
// workload run round-robin, so a change of the machine's load hits every store alike; and a
// recommendation names a store faster only when the Mann-Whitney U test over the repetitions
// gives p < 0.01 and the medians are at least 5 % apart, else "no clear winner". Default: 1
// warm-up and 5 repetitions (fewer a side can never decide).
//
// Each repetition (and each warm-up run) opens a fresh store in a fresh directory under the data
// directory, calls the workload once, measures the directory's allocated bytes while the store is
// still open, closes the store and removes the directory. After the last repetition of a write
// workload it also compacts the store (backend::compact; LevelDB and RocksDB by default) and
// measures again: the disk size after compaction. Only the time spent inside probe::op
// counts, so a workload prepares its data outside op() (e.g. a preload before timed reads).
// A backend that is not durable (the memory backend) runs once, reported with sync = false.
// The backend's native API can be measured in the same run (runner::run_native) so that the
// table and JSON carry the keyschema/native ratio, against two baselines: the engine opened with
// the adapter's settings (baseline::same_settings: what the typed layer costs) and the plain
// engine with its own default options (baseline::user_view: what a user who would write the
// engine calls themselves gives up, the adapter's safety settings included).
//
// Thread-safety: a runner is used from one thread; the workload may start threads of its own but
// must call probe::op from the thread that runs the workload. Nothing here is shared between
// runners. Speed figures of runs on a loaded machine vary: compare backends measured side by side
// in one run, never figures from separate runs.
//
// Errors: a workload's exception (any ks::error) propagates out of run() after the directory is
// removed; I/O failures of the harness itself (directory creation, writing JSON/SVG, the fsync
// probe) throw std::runtime_error naming the path and the failed call. Bad command-line options
// throw std::invalid_argument naming the option.
#pragma once

#include <keyschema/comparison/statistics.hpp>
#include <keyschema/keyschema.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <exception>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

KEYSCHEMA_BEGIN_NAMESPACE
namespace comparison {

// ---------------------------------------------------------------------------------------------
// Aggregation (public so that it can be tested and reused)

// One repetition's measurement: the items processed and the time spent inside probe::op, and the
// latency of every op() call in microseconds.
struct sample {
  double seconds = 0.0;
  std::uint64_t items = 0;
  std::uint64_t calls = 0;
  std::vector<double> latencies_us;
};

// What the native side of a comparison (runner::run_native) is measured against.
enum class baseline {
  same_settings,  // the engine opened with the adapter's settings (checksums, paranoid checks, ...)
  user_view,      // the plain engine with its own default options, as a user would open it
};

// One line of the report: a workload on a backend at one durability.
struct result {
  std::string backend;
  bool sync = false;
  bool durable = false;        // the backend keeps data on disk
  std::string workload;
  double ops_per_s = 0.0;      // items per second, median over the repetitions
  double calls_per_s = 0.0;    // op() calls (commits, for write workloads) per second, median
  double p50_us = 0.0;         // latency of one op() call, over all repetitions' calls
  double p99_us = 0.0;
  double native_ops_per_s = 0.0;  // the same workload on the native API with the adapter's
                                  // settings (baseline::same_settings); 0 when not measured
  double user_ops_per_s = 0.0;    // the same on the plain engine with its default options
                                  // (baseline::user_view); 0 when not measured
  std::uint64_t disk_bytes = 0;   // allocated bytes of the database directory (last repetition)
  std::uint64_t disk_bytes_compacted = 0;  // the same after backend::compact; 0: not measured
  bool reads = false;             // a read workload (run_reads): durability does not apply
  std::vector<double> samples{};        // ops/s of each repetition, in the order they ran
  std::vector<double> native_samples{}; // the native API's, when measured
  std::vector<double> user_samples{};   // the user view's, when measured
};

// Combines the repetitions of one (backend, sync, workload): ops/s and calls/s are medians of
// the per-repetition rates, the percentiles pool every call's latency.
inline result aggregate(std::string backend, bool sync, std::string workload, const std::vector<sample>& reps) {
  result r{std::move(backend), sync, false, std::move(workload)};
  std::vector<double> rates, call_rates, lat;
  for (const sample& s : reps) {
    if (s.seconds > 0) {
      rates.push_back(static_cast<double>(s.items) / s.seconds);
      call_rates.push_back(static_cast<double>(s.calls) / s.seconds);
    }
    lat.insert(lat.end(), s.latencies_us.begin(), s.latencies_us.end());
  }
  r.ops_per_s = median(rates);
  r.calls_per_s = median(call_rates);
  r.samples = rates;
  r.p50_us = percentile(lat, 50);
  r.p99_us = percentile(lat, 99);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Measuring

// Handed to a workload: times operations and says which durability this run uses.
class probe {
 public:
  explicit probe(bool sync) : sync_(sync) {}

  // Runs `fn` once and records it as one timed operation that processed `items` items (for
  // example 100 for a batch of 100 messages). When `fn` returns an integer, that is the number
  // of items instead (e.g. the entries a page of a scan returned). Exceptions of `fn` propagate;
  // the call is not recorded then.
  template <class F>
  void op(F&& fn, std::uint64_t items = 1) {
    const auto t0 = std::chrono::steady_clock::now();
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
      fn();
    } else {
      items = static_cast<std::uint64_t>(fn());
    }
    const auto t1 = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(t1 - t0).count();
    s_.seconds += s;
    s_.items += items;
    ++s_.calls;
    s_.latencies_us.push_back(s * 1e6);
  }

  // Runs fn(t, i) for i in [0, ops_per_thread) on each of `threads` threads (t in [0, threads))
  // at once, timing every call as one operation of one item. The threads are started first and
  // wait at a barrier; the run's time is the wall time from their release to the last one's end
  // (thread creation and start-up are not timed), so ops/s is the threads' combined rate;
  // p50/p99 are over every call of every thread. fn must be safe to call from several threads
  // (a store's reads are). The first exception of any thread is rethrown after all have ended;
  // nothing is recorded then. Errors: also std::system_error when a thread cannot be started
  // (the threads already started are released and joined first).
  template <class F>
  void parallel(unsigned threads, std::uint64_t ops_per_thread, F&& fn) {
    using clock = std::chrono::steady_clock;
    std::vector<std::vector<double>> lat(threads);
    std::vector<std::exception_ptr> failed(threads);
    std::vector<clock::time_point> ended(threads);
    std::atomic<unsigned> ready{0};
    std::atomic<bool> go{false};
    clock::time_point t0;
    {
      std::vector<std::thread> pool;
      auto release = [&] {
        go.store(true);
        go.notify_all();
      };
      try {
        for (unsigned t = 0; t < threads; ++t) {
          pool.emplace_back([&, t] {
            try {
              lat[t].reserve(ops_per_thread);
            } catch (...) {
              failed[t] = std::current_exception();
            }
            ready.fetch_add(1);
            ready.notify_one();
            go.wait(false);
            try {
              if (!failed[t]) {
                for (std::uint64_t i = 0; i < ops_per_thread; ++i) {
                  const auto a = clock::now();
                  fn(t, i);
                  lat[t].push_back(std::chrono::duration<double, std::micro>(clock::now() - a).count());
                }
              }
            } catch (...) {
              failed[t] = std::current_exception();
            }
            ended[t] = clock::now();
          });
        }
      } catch (...) {
        release();
        for (std::thread& th : pool) th.join();
        throw;
      }
      for (unsigned r = ready.load(); r < threads; r = ready.load()) ready.wait(r);
      t0 = clock::now();
      release();
      for (std::thread& th : pool) th.join();
    }
    for (const std::exception_ptr& e : failed)
      if (e) std::rethrow_exception(e);
    const clock::time_point t1 = threads == 0 ? t0 : *std::max_element(ended.begin(), ended.end());
    s_.seconds += std::chrono::duration<double>(t1 - t0).count();
    for (const auto& l : lat) {
      s_.items += l.size();
      s_.calls += l.size();
      s_.latencies_us.insert(s_.latencies_us.end(), l.begin(), l.end());
    }
  }

  // The durability of this run: write_options{.sync = sync()}; pass it to every commit.
  bool sync() const noexcept { return sync_; }
  write_options write() const noexcept { return write_options{.sync = sync_}; }

  // Closes the store the workload was given (db) and opens the same database again with the
  // backend's reopen function; returns the new store, which the workload uses from then on
  // (db and everything made from it are dangling). Not timed unless called inside op():
  //   p.op([&] { db2 = &p.reopen(*db2); });
  // REQUIRES: db is the store this run handed to the workload (or the last one reopen returned),
  // and nothing made from it (scan, snapshot, transaction, batch) is alive.
  // Errors: what opening the store throws (the old store is closed then; the run fails);
  // std::logic_error when the runner gave this probe no store (a native run) or db is another one.
  template <class Store>
  Store& reopen(Store& db) {
    if (!reopen_ || current_ != static_cast<const void*>(&db))
      throw std::logic_error("keyschema::comparison::probe::reopen: not the store this run handed to the workload");
    current_ = reopen_();
    return *static_cast<Store*>(current_);
  }

  const sample& measured() const noexcept { return s_; }

 private:
  template <class>
  friend class runner;
  bool sync_;
  sample s_;
  std::function<void*()> reopen_;
  void* current_ = nullptr;
};

// Allocated bytes (st_blocks * 512) of every regular file under `dir`, so that a sparse LMDB
// map counts what it occupies. Returns 0 for a missing directory.
inline std::uint64_t disk_bytes(const std::filesystem::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct ::stat st{};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_blocks) * 512u;
  }
  return total;
}

// Write + fsync of 4 KiB at offset 0 of a temporary file in `dir`, repeated for about `seconds`:
// the machine's durable-commit bound (commits per second). Throws std::runtime_error naming the
// file and the call ("open", "pwrite", "fsync") when one fails.
inline double measure_fsync_rate(const std::filesystem::path& dir, double seconds = 1.0) {
  const std::filesystem::path file = dir / "fsync-probe";
  const int fd = ::open(file.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0) throw std::runtime_error("keyschema::comparison: open " + file.string() + ": " + std::strerror(errno));
  std::vector<char> block(4096, 'x');
  std::uint64_t n = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds) {
    if (::pwrite(fd, block.data(), block.size(), 0) != static_cast<ssize_t>(block.size()) || ::fsync(fd) != 0) {
      const int e = errno;
      ::close(fd);
      throw std::runtime_error("keyschema::comparison: pwrite/fsync " + file.string() + ": " + std::strerror(e));
    }
    ++n;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  ::close(fd);
  std::filesystem::remove(file);
  return static_cast<double>(n) / elapsed;
}

// ---------------------------------------------------------------------------------------------
// Backends

// How to open a store of `Schema` on backend `B` at a path, and whether it keeps data on disk.
// The default opener constructs store<Schema, B>{path} when B is constructible from a path, else
// store<Schema, B>{}. `open` must return a store that owns everything under the path it is given.
//
// Owner: what the workload is handed, by default the store itself. A program that wraps its store
// in a class of its own (which owns the store and offers the program's operations) names that class
// here: `open` (and `reopen`) return the wrapper, the workload is called with it (work(wrapper&,
// probe&), and probe::reopen(wrapper) hands back the reopened wrapper), and `store_of` lends the
// harness the store inside it for compact. The default opener constructs Owner{path}; the default
// store_of calls owner.store() when Owner has such a member returning store<Schema, B>&, else
// compaction is not measured unless store_of is set.
template <class Schema, class B, class Owner = store<Schema, B>>
struct backend {
  using store_type = store<Schema, B>;
  using owner_type = Owner;
  std::string name;
  std::function<std::unique_ptr<Owner>(const std::filesystem::path&)> open = default_open;
  bool durable = std::is_constructible_v<B, const std::filesystem::path&>;
  // The backend makes every commit durable whatever write_options::sync says (etcd): it runs at
  // sync on only.
  bool always_sync = false;
  // The bytes the store occupies, measured while it is still open (it is given the run's
  // directory); unset: the allocated bytes of that directory (disk_bytes). For a store that keeps
  // its data elsewhere (a server).
  std::function<std::uint64_t(const std::filesystem::path&)> measure_disk = {};
  // Opens the database a run's store was closed on again, for probe::reopen; unset: `open`.
  std::function<std::unique_ptr<Owner>(const std::filesystem::path&)> reopen = {};
  // Compacts the store (given with the run's directory) after the last repetition of a write
  // workload and returns the bytes it occupies then (result::disk_bytes_compacted); 0: not
  // measured. Default: the backend's compact_range over everything, then the directory's
  // allocated bytes, when the backend has one (LevelDB, RocksDB); unset for the others. It may
  // leave the store unusable (the store is closed and removed right after).
  std::function<std::uint64_t(store_type&, const std::filesystem::path&)> compact = default_compact();
  // The store an owner holds (borrowed for compact); unset: no compaction figure for an Owner
  // that is not the store.
  std::function<store_type&(Owner&)> store_of = default_store_of();

  static std::function<store_type&(Owner&)> default_store_of() {
    if constexpr (std::is_same_v<Owner, store_type>) {
      return [](Owner& o) -> store_type& { return o; };
    } else if constexpr (requires(Owner& o) { { o.store() } -> std::same_as<store_type&>; }) {
      return [](Owner& o) -> store_type& { return o.store(); };
    } else {
      return {};
    }
  }

  static std::function<std::uint64_t(store_type&, const std::filesystem::path&)> default_compact() {
    if constexpr (backend_with_compact_range<B>) {
      return [](store_type& db, const std::filesystem::path& dir) {
        db.unsafe_backend().compact_range(key_range{});
        return disk_bytes(dir);
      };
    } else {
      return {};
    }
  }

  static std::unique_ptr<Owner> default_open(const std::filesystem::path& p) {
    // The store forwards its arguments to B (it is constructible from anything): ask B.
    constexpr bool from_path = std::is_same_v<Owner, store_type> ? std::is_constructible_v<B, const std::filesystem::path&>
                                                                  : std::is_constructible_v<Owner, const std::filesystem::path&>;
    if constexpr (from_path) {
      return std::make_unique<Owner>(p);
    } else {
      return std::make_unique<Owner>();
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Options

struct options {
  int warmup = 1;                       // --warmup N: runs discarded before the measured ones
  int repetitions = 5;                  // --repetitions N (5 or more a side can decide: statistics.hpp)
  double scale = 1.0;                   // --quick (0.05, no warm-up, 1 repetition), --full (10), --scale F:
                                        // a factor for the workload's sizes (the workload reads it)
  bool quick = false;                   // --quick: the figures are indicative only
  std::string json;                     // --json PATH
  std::string svg;                      // --svg PATH
  std::filesystem::path dir;            // --dir PATH (default: a fresh temporary directory)
  std::vector<std::string> backends;    // --backends a,b (default: all)
  std::vector<std::string> workloads;   // --workloads a,b (default: all)
  bool sync_on = true, sync_off = true; // --sync on|off|both
  bool progress = ::isatty(STDERR_FILENO) != 0;  // --no-progress; never when stderr is no terminal
  std::vector<std::string> rest;        // arguments this parser does not know, in order

  static std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');)
      if (!item.empty()) out.push_back(item);
    return out;
  }

  // Parses the options above; unknown arguments go to `rest` (the caller's own options).
  // Throws std::invalid_argument naming an option whose value is missing or malformed.
  static options parse(int argc, const char* const* argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument("keyschema::comparison: option " + a + " needs a value");
        return argv[++i];
      };
      auto number = [&]() {
        const std::string v = value();
        try {
          const int n = std::stoi(v);
          if (n < 0) throw std::invalid_argument(v);
          return n;
        } catch (const std::exception&) {
          throw std::invalid_argument("keyschema::comparison: option " + a + " takes a count >= 0, not '" + v + "'");
        }
      };
      if (a == "--quick") {
        o.quick = true;
        o.scale = 0.05;
        o.warmup = 0;
        o.repetitions = 1;
      } else if (a == "--full") o.scale = 10;
      else if (a == "--scale") {
        const std::string v = value();
        try {
          std::size_t used = 0;
          o.scale = std::stod(v, &used);
          if (used != v.size() || !(o.scale > 0)) throw std::invalid_argument(v);
        } catch (const std::exception&) {
          throw std::invalid_argument("keyschema::comparison: option --scale takes a factor > 0, not '" + v + "'");
        }
      } else if (a == "--warmup") o.warmup = number();
      else if (a == "--repetitions") o.repetitions = std::max(1, number());
      else if (a == "--json") o.json = value();
      else if (a == "--svg") o.svg = value();
      else if (a == "--dir") o.dir = value();
      else if (a == "--backends") o.backends = split(value());
      else if (a == "--workloads") o.workloads = split(value());
      else if (a == "--no-progress") o.progress = false;
      else if (a == "--sync") {
        const std::string v = value();
        if (v != "on" && v != "off" && v != "both")
          throw std::invalid_argument("keyschema::comparison: option --sync takes on, off or both, not '" + v + "'");
        o.sync_on = v != "off";
        o.sync_off = v != "on";
      } else o.rest.push_back(a);
    }
    return o;
  }

  bool wants_backend(const std::string& n) const {
    return backends.empty() || std::find(backends.begin(), backends.end(), n) != backends.end();
  }
  bool wants_workload(const std::string& n) const {
    return workloads.empty() || std::find(workloads.begin(), workloads.end(), n) != workloads.end();
  }
};

// ---------------------------------------------------------------------------------------------
// Output

struct machine_info {
  unsigned cores = std::thread::hardware_concurrency();
  double fsync_per_s = 0.0;  // 0 when not measured
  double load_average = -1;  // 1-minute load average at the start (-1 when unknown)
  std::string cpu;
  std::string note;          // free text, e.g. "shared with other builds"
};

inline machine_info describe_machine() {
  machine_info m;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) m.cpu = line.substr(std::min(line.size(), colon + 2));
      break;
    }
  }
  std::ifstream loadavg("/proc/loadavg");
  if (!(loadavg >> m.load_average)) m.load_average = -1;
  return m;
}

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

inline std::string format_rate(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (v >= 1e4) std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

inline std::string format_bytes(std::uint64_t b) {
  char buf[32];
  if (b >= (1u << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.0f KiB", static_cast<double>(b) / 1024);
  return buf;
}

// The store the decision rule names fastest for (workload, sync) among those that keep data on
// disk, or nullptr when there is none (no clear winner, or one store only).
inline const result* significant_winner(const std::vector<result>& runs, const std::string& workload, bool sync,
                                        const decision_rule& rule = {}) {
  const result* best = nullptr;
  const result* second = nullptr;
  for (const result& r : runs) {
    if (r.workload != workload || r.sync != sync || !r.durable || r.ops_per_s <= 0) continue;
    if (best == nullptr || r.ops_per_s > best->ops_per_s) {
      second = best;
      best = &r;
    } else if (second == nullptr || r.ops_per_s > second->ops_per_s) {
      second = &r;
    }
  }
  if (best == nullptr || second == nullptr) return nullptr;
  return compare(best->samples, second->samples, rule).v == verdict::first_faster ? best : nullptr;
}

// For each workload and durability: the fastest store that keeps data on disk, and its lead over
// the next, named only when the decision rule (statistics.hpp: Mann-Whitney U over the
// repetitions' rates, p < 0.01, medians at least 5 % apart) says the lead is not noise;
// otherwise "no clear winner: A ~ B". One line per (workload, sync).
inline std::vector<std::string> recommendations(const std::vector<result>& runs, const decision_rule& rule = {}) {
  std::vector<std::string> workloads;
  for (const result& r : runs)
    if (std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end()) workloads.push_back(r.workload);
  std::vector<std::string> out;
  for (const std::string& w : workloads) {
    for (const bool sync : {true, false}) {
      std::vector<const result*> c;
      for (const result& r : runs)
        if (r.workload == w && r.sync == sync && r.durable && r.ops_per_s > 0) c.push_back(&r);
      if (c.empty()) continue;
      const char* dur = c[0]->reads ? "reads" : sync ? "sync on" : "sync off";
      std::sort(c.begin(), c.end(), [](const result* a, const result* b) { return a->ops_per_s > b->ops_per_s; });
      char buf[320];
      if (c.size() == 1) {
        std::snprintf(buf, sizeof buf, "%s, %s: %s (%s ops/s; no other store measured)", w.c_str(), dur,
                      c[0]->backend.c_str(), format_rate(c[0]->ops_per_s).c_str());
      } else {
        const comparison_result cr = compare(c[0]->samples, c[1]->samples, rule);
        const std::size_t n0 = c[0]->samples.size(), n1 = c[1]->samples.size();
        if (cr.v == verdict::first_faster) {
          std::snprintf(buf, sizeof buf, "%s, %s: %s, %.2fx %s (%s vs %s ops/s; p = %.3f, n = %zu + %zu)", w.c_str(), dur,
                        c[0]->backend.c_str(), cr.ratio, c[1]->backend.c_str(), format_rate(c[0]->ops_per_s).c_str(),
                        format_rate(c[1]->ops_per_s).c_str(), cr.p, n0, n1);
        } else {
          std::snprintf(buf, sizeof buf, "%s, %s: no clear winner: %s ~ %s (%.2fx, p = %.2f, n = %zu + %zu%s)", w.c_str(), dur,
                        c[0]->backend.c_str(), c[1]->backend.c_str(), c[0]->ops_per_s / c[1]->ops_per_s, cr.p, n0, n1,
                        std::min(n0, n1) < 5 ? "; fewer than 5 repetitions a side cannot decide" : "");
        }
      }
      out.emplace_back(buf);
    }
  }
  return out;
}

// The JSON document, format 2:
//   {"format_version":2, "keyschema_version":"0.1.0", "timestamp":"2026-12-05T13:20:00Z",
//    "settings":{"warmup":1,"repetitions":5,"sync":"both","backends":[...],"workloads":[...]},
//    "machine":{...}, "runs":[{..., "ops_per_s":median, "min_ops_per_s", "max_ops_per_s",
//    "samples":[each repetition's ops/s], "native_ops_per_s":median or null,
//    "native_samples":[...], "user_ops_per_s":median or null, "user_samples":[...],
//    "disk_bytes_compacted":bytes or null}, ...],
//    "recommendations":["...", ...]}
// A figure that was not measured is null (never 0). settings is absent when opt is null.
inline std::string to_json(const machine_info& m, const std::vector<result>& runs, const options* opt = nullptr) {
  std::ostringstream o;
  o.precision(6);
  auto list = [&](const std::vector<double>& v) {
    o << "[";
    for (std::size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << v[i];
    o << "]";
  };
  auto names = [&](const std::vector<std::string>& v) {
    o << "[";
    for (std::size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << "\"" << json_escape(v[i]) << "\"";
    o << "]";
  };
  char stamp[32] = "";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (::gmtime_r(&now, &utc) != nullptr) std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  o << "{\"format_version\":2,\"keyschema_version\":\"" << KEYSCHEMA_VERSION_MAJOR << "." << KEYSCHEMA_VERSION_MINOR << "."
    << KEYSCHEMA_VERSION_PATCH << "\",\"timestamp\":\"" << stamp << "\",";
  if (opt != nullptr) {
    o << "\"settings\":{\"warmup\":" << opt->warmup << ",\"repetitions\":" << opt->repetitions << ",\"scale\":"
      << opt->scale << ",\"quick\":" << (opt->quick ? "true" : "false") << ",\"sync\":\""
      << (opt->sync_on && opt->sync_off ? "both" : opt->sync_on ? "on" : "off") << "\",\"backends\":";
    names(opt->backends);
    o << ",\"workloads\":";
    names(opt->workloads);
    o << "},";
  }
  o << "\"machine\":{\"cores\":" << m.cores << ",\"fsync_per_s\":";
  if (m.fsync_per_s > 0) o << m.fsync_per_s; else o << "null";
  o << ",\"load_average\":";
  if (m.load_average >= 0) o << m.load_average; else o << "null";
  o << ",\"cpu\":\"" << json_escape(m.cpu) << "\",\"note\":\"" << json_escape(m.note) << "\"},\"runs\":[";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const result& r = runs[i];
    const spread sp = summarize(r.samples);
    o << (i ? "," : "") << "\n{\"backend\":\"" << json_escape(r.backend) << "\",\"sync\":" << (r.sync ? "true" : "false")
      << ",\"durable\":" << (r.durable ? "true" : "false") << ",\"reads\":" << (r.reads ? "true" : "false")
      << ",\"workload\":\"" << json_escape(r.workload) << "\",\"ops_per_s\":" << r.ops_per_s
      << ",\"min_ops_per_s\":" << sp.min << ",\"max_ops_per_s\":" << sp.max << ",\"samples\":";
    list(r.samples);
    o << ",\"calls_per_s\":" << r.calls_per_s << ",\"p50_us\":" << r.p50_us << ",\"p99_us\":" << r.p99_us
      << ",\"native_ops_per_s\":";
    if (r.native_ops_per_s > 0) o << r.native_ops_per_s; else o << "null";
    o << ",\"native_samples\":";
    list(r.native_samples);
    o << ",\"user_ops_per_s\":";
    if (r.user_ops_per_s > 0) o << r.user_ops_per_s; else o << "null";
    o << ",\"user_samples\":";
    list(r.user_samples);
    o << ",\"disk_bytes\":";
    if (r.durable) o << r.disk_bytes; else o << "null";
    o << ",\"disk_bytes_compacted\":";
    if (r.disk_bytes_compacted > 0) o << r.disk_bytes_compacted; else o << "null";
    o << "}";
  }
  o << "],\n\"recommendations\":";
  names(recommendations(runs));
  o << "}\n";
  return o.str();
}

// The table: one row per result, then the recommendations.
inline void print_table(std::ostream& os, const machine_info& m, const std::vector<result>& runs, bool quick = false) {
  char buf[512];
  std::string fsync = "not measured";
  if (m.fsync_per_s > 0) fsync = std::to_string(static_cast<long long>(m.fsync_per_s)) + "/s";
  std::snprintf(buf, sizeof buf, "machine: %u cores, %s, load %.1f at start, fsync %s%s%s\n", m.cores,
                m.cpu.empty() ? "cpu unknown" : m.cpu.c_str(), m.load_average, fsync.c_str(),
                m.note.empty() ? "" : "; ", m.note.c_str());
  os << buf;
  if (quick) os << "--quick: INDICATIVE ONLY (small sizes, one repetition: no store is named faster)\n";
  std::snprintf(buf, sizeof buf, "%-24s %-11s %-4s %10s %19s %10s %10s %8s %8s %8s %10s %10s\n", "workload", "backend", "sync",
                "ops/s", "min..max (n)", "p50 us", "p99 us", "native", "user", "x fsync", "disk", "compacted");
  os << buf;
  for (const result& r : runs) {
    std::string ratio = "-", user = "-";
    if (r.native_ops_per_s > 0) {
      std::snprintf(buf, sizeof buf, "%.2f", r.ops_per_s / r.native_ops_per_s);
      ratio = buf;
    }
    if (r.user_ops_per_s > 0) {
      std::snprintf(buf, sizeof buf, "%.2f", r.ops_per_s / r.user_ops_per_s);
      user = buf;
    }
    std::string fs = "-";
    if (r.sync && r.durable && !r.reads && m.fsync_per_s > 0) {
      std::snprintf(buf, sizeof buf, "%.2f", r.calls_per_s / m.fsync_per_s);
      fs = buf;
    }
    const spread sp = summarize(r.samples);
    const std::string range = format_rate(sp.min) + ".." + format_rate(sp.max) + " (" + std::to_string(sp.n) + ")";
    std::snprintf(buf, sizeof buf, "%-24s %-11s %-4s %10s %19s %10.1f %10.1f %8s %8s %8s %10s %10s\n", r.workload.c_str(),
                  r.backend.c_str(), r.durable && !r.reads ? (r.sync ? "on" : "off") : "-", format_rate(r.ops_per_s).c_str(),
                  range.c_str(), r.p50_us, r.p99_us, ratio.c_str(), user.c_str(), fs.c_str(), r.durable ? format_bytes(r.disk_bytes).c_str() : "-",
                  r.disk_bytes_compacted > 0 ? format_bytes(r.disk_bytes_compacted).c_str() : "-");
    os << buf;
  }
  os << "ops/s: median of the repetitions (min..max and their count beside it); "
        "native: keyschema ops/s divided by the native API's with the adapter's settings, same workload, same run; "
        "user: the same divided by the plain engine's with its default options (a user's own code); "
        "x fsync: commits/s divided by the machine's fsync/s; compacted: disk after the engine's compaction\n";
  os << "recommendation (fastest store that keeps data on disk, and its lead over the next when it is significant:\n"
        "Mann-Whitney U over the repetitions, p < 0.01, medians >= 5 % apart; otherwise no clear winner):\n";
  for (const std::string& line : recommendations(runs)) os << "  " << line << "\n";
}

// The chart, small multiples: one panel per workload (4 to a row, 1200 px wide), each with its
// own linear axis from 0 in the workload's unit (items per second: messages, entries or
// transactions, as the workload counts them), one bar per (store, durability) with the stores in
// fixed colours (memory grey, LevelDB blue, LMDB orange, RocksDB green, SQLite red, etcd
// purple) and sync off beside sync on in a lighter shade, the spread of the repetitions as an
// error bar (min..max), the native API's rate as a black tick (with the adapter's settings) and a
// dashed red tick (the plain engine with its default options: the user view), and a star over the store the
// recommendation names (only when its lead is significant: see recommendations()).
inline std::string to_svg(const machine_info& m, const std::vector<result>& runs) {
  static const char* const palette[] = {"#b07aa1", "#9c755f", "#76b7b2", "#edc948"};
  auto colour = [](const std::string& b) -> std::string {
    if (b == "memory") return "#8c8c8c";
    if (b == "leveldb") return "#4e79a7";
    if (b == "lmdb") return "#f28e2b";
    if (b == "rocksdb") return "#59a14f";
    if (b == "sqlite") return "#e15759";
    if (b == "etcd") return "#7b4fa8";
    std::size_t h = 0;
    for (const char c : b) h = h * 31 + static_cast<unsigned char>(c);
    return palette[h % 4];
  };
  std::vector<std::string> workloads, backends;
  for (const result& r : runs) {
    if (std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end()) workloads.push_back(r.workload);
    if (std::find(backends.begin(), backends.end(), r.backend) == backends.end()) backends.push_back(r.backend);
  }
  const int cols = 4, panel_w = 290, panel_h = 210, gap = 10, left_axis = 46, head = 56;
  const int rows = static_cast<int>((workloads.size() + cols - 1) / cols);
  const int width = cols * (panel_w + gap) + gap;
  const int height = head + rows * (panel_h + gap) + gap;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "items/s per workload (own linear scale); bar: median, whisker: min..max of the repetitions; "
                "light: sync off; star: significantly fastest; %u cores, fsync %.0f/s",
                m.cores, m.fsync_per_s);
  o << "<text x=\"" << gap << "\" y=\"18\" font-size=\"12\">" << buf << "</text>\n";
  int lx = gap;
  const int ly = 30;
  for (std::size_t bi = 0; bi < backends.size(); ++bi, lx += 90) {
    o << "<rect x=\"" << lx << "\" y=\"" << ly << "\" width=\"12\" height=\"12\" fill=\"" << colour(backends[bi])
      << "\"/><text x=\"" << lx + 16 << "\" y=\"" << ly + 10 << "\">" << backends[bi] << "</text>\n";
  }
  // The two native baselines' ticks.
  o << "<line x1=\"" << lx << "\" x2=\"" << lx + 18 << "\" y1=\"" << ly + 6 << "\" y2=\"" << ly + 6
    << "\" stroke=\"black\" stroke-width=\"2\"/><text x=\"" << lx + 22 << "\" y=\"" << ly + 10
    << "\">native, adapter's settings</text>\n";
  lx += 190;
  o << "<line x1=\"" << lx << "\" x2=\"" << lx + 18 << "\" y1=\"" << ly + 6 << "\" y2=\"" << ly + 6
    << "\" stroke=\"#c00000\" stroke-width=\"2\" stroke-dasharray=\"3,2\"/><text x=\"" << lx + 22 << "\" y=\""
    << ly + 10 << "\">native, engine's default options (user view)</text>\n";
  for (std::size_t wi = 0; wi < workloads.size(); ++wi) {
    const int px = gap + static_cast<int>(wi % cols) * (panel_w + gap);
    const int py = head + static_cast<int>(wi / cols) * (panel_h + gap);
    std::vector<const result*> bars;
    double top = 0;
    for (const result& r : runs) {
      if (r.workload != workloads[wi]) continue;
      bars.push_back(&r);
      const spread sp = summarize(r.samples);
      top = std::max({top, r.ops_per_s, sp.max, r.native_ops_per_s, r.user_ops_per_s});
    }
    if (top <= 0) top = 1;
    // A round axis top: 1, 2 or 5 times a power of ten.
    const double mag = std::pow(10.0, std::floor(std::log10(top)));
    double axis = mag;
    for (const double f : {1.0, 2.0, 5.0, 10.0}) {
      axis = f * mag;
      if (axis >= top * 1.05) break;
    }
    const int plot_x = px + left_axis, plot_y = py + 22, plot_w = panel_w - left_axis - 6, plot_h = panel_h - 22 - 30;
    auto y_of = [&](double v) { return plot_y + plot_h - static_cast<int>(std::lround(v / axis * plot_h)); };
    o << "<g>\n<rect x=\"" << px << "\" y=\"" << py << "\" width=\"" << panel_w << "\" height=\"" << panel_h
      << "\" fill=\"none\" stroke=\"#ccc\"/>\n<text x=\"" << px + 6 << "\" y=\"" << py + 15 << "\" font-weight=\"bold\">"
      << workloads[wi] << "</text>\n";
    for (int t = 0; t <= 4; ++t) {
      const double v = axis * t / 4;
      const int y = y_of(v);
      o << "<line x1=\"" << plot_x << "\" x2=\"" << plot_x + plot_w << "\" y1=\"" << y << "\" y2=\"" << y
        << "\" stroke=\"#eee\"/><text x=\"" << plot_x - 3 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\" font-size=\"9\">"
        << format_rate(v) << "</text>\n";
    }
    const int n = static_cast<int>(bars.size());
    const int slot = n > 0 ? std::max(6, plot_w / n) : plot_w;
    const int bw = std::max(4, slot - 4);
    for (int i = 0; i < n; ++i) {
      const result& r = *bars[static_cast<std::size_t>(i)];
      const int x = plot_x + i * slot + 2;
      const int y = y_of(r.ops_per_s);
      const bool light = r.durable && !r.reads && !r.sync;
      o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << bw << "\" height=\"" << plot_y + plot_h - y
        << "\" fill=\"" << colour(r.backend) << "\" fill-opacity=\"" << (light ? "0.45" : "1") << "\"><title>"
        << r.backend << (r.durable && !r.reads ? (r.sync ? " sync on" : " sync off") : "") << ": "
        << format_rate(r.ops_per_s) << "/s</title></rect>\n";
      const spread sp = summarize(r.samples);
      if (sp.n > 1) {
        const int cx = x + bw / 2;
        o << "<line x1=\"" << cx << "\" x2=\"" << cx << "\" y1=\"" << y_of(sp.min) << "\" y2=\"" << y_of(sp.max)
          << "\" stroke=\"#333\"/><line x1=\"" << cx - 3 << "\" x2=\"" << cx + 3 << "\" y1=\"" << y_of(sp.max) << "\" y2=\""
          << y_of(sp.max) << "\" stroke=\"#333\"/><line x1=\"" << cx - 3 << "\" x2=\"" << cx + 3 << "\" y1=\""
          << y_of(sp.min) << "\" y2=\"" << y_of(sp.min) << "\" stroke=\"#333\"/>\n";
      }
      if (r.native_ops_per_s > 0) {
        const int ny = y_of(r.native_ops_per_s);
        o << "<line x1=\"" << x - 1 << "\" x2=\"" << x + bw + 1 << "\" y1=\"" << ny << "\" y2=\"" << ny
          << "\" stroke=\"black\" stroke-width=\"2\"/>\n";
      }
      if (r.user_ops_per_s > 0) {
        const int uy = y_of(r.user_ops_per_s);
        o << "<line x1=\"" << x - 1 << "\" x2=\"" << x + bw + 1 << "\" y1=\"" << uy << "\" y2=\"" << uy
          << "\" stroke=\"#c00000\" stroke-width=\"2\" stroke-dasharray=\"3,2\"/>\n";
      }
      if (const result* w = significant_winner(runs, r.workload, r.sync); w == &r) {
        o << "<text x=\"" << x + bw / 2 << "\" y=\"" << std::min(y, y_of(sp.max)) - 3
          << "\" text-anchor=\"middle\" font-size=\"13\">&#9733;</text>\n";
      }
      std::string label = r.backend.substr(0, 7);
      if (r.durable && !r.reads) label += r.sync ? "" : " off";
      o << "<text x=\"" << x + bw / 2 << "\" y=\"" << plot_y + plot_h + 12 << "\" text-anchor=\"middle\" font-size=\""
        << (n > 8 ? 7 : 9) << "\">" << label << "</text>\n";
    }
    o << "</g>\n";
  }
  o << "</svg>\n";
  return o.str();
}

// ---------------------------------------------------------------------------------------------
// The runner

// Runs workloads over backends and collects results. Owns the data directory: a fresh
// temporary directory unless --dir is given, removed by the destructor when it created it.
template <class Schema>
class runner {
 public:
  // Parses the common options (see `options`); the caller reads its own from options().rest.
  // Throws std::invalid_argument for a malformed option, std::runtime_error when the data
  // directory cannot be created.
  // Parses argc/argv (options::parse) and refuses, with std::invalid_argument naming it, any
  // argument it does not know. A program with options of its own parses them first and passes
  // the rest: runner(options) after options::parse, handling options::rest itself.
  runner(int argc, const char* const* argv) : runner(strict(options::parse(argc, argv))) {}
  explicit runner(options o) : opt_(std::move(o)) {
    if (opt_.dir.empty()) {
      std::string tmpl = (std::filesystem::temp_directory_path() / "keyschema-bench-XXXXXX").string();
      if (::mkdtemp(tmpl.data()) == nullptr)
        throw std::runtime_error("keyschema::comparison: mkdtemp " + tmpl + ": " + std::strerror(errno));
      opt_.dir = tmpl;
      owned_ = true;
    } else {
      std::filesystem::create_directories(opt_.dir);
    }
    machine_ = describe_machine();
  }
  runner(const runner&) = delete;
  runner& operator=(const runner&) = delete;
  static options strict(options o) {
    if (!o.rest.empty())
      throw std::invalid_argument("keyschema::comparison: unknown option '" + o.rest.front() +
                                  "' (known: --quick, --full, --scale F, --repetitions N, --warmup N, --sync on|off|both, "
                                  "--backends a,b, --workloads a,b, --json PATH, --svg PATH, --dir PATH, --no-progress)");
    return o;
  }
  ~runner() {
    if (owned_) {
      std::error_code ec;
      std::filesystem::remove_all(opt_.dir, ec);
    }
  }

  const options& opts() const noexcept { return opt_; }
  machine_info& machine() noexcept { return machine_; }
  const std::vector<result>& results() const noexcept { return results_; }
  const std::filesystem::path& data_dir() const noexcept { return opt_.dir; }

  // Appends results measured elsewhere (e.g. by a runner of another schema) to this report.
  void add_results(const std::vector<result>& more) { results_.insert(results_.end(), more.begin(), more.end()); }
  // Adds the results of another runner (of another schema), and the workload and backend names
  // it offered, so that finish() checks --workloads and --backends against every runner's.
  template <class Other>
  void add_results(const runner<Other>& other) {
    add_results(other.results());
    known_workloads_.insert(other.known_workloads().begin(), other.known_workloads().end());
    known_backends_.insert(other.known_backends().begin(), other.known_backends().end());
  }
  // Declares every workload and backend name the program will run, and checks --workloads and
  // --backends against them now, before anything runs (finish() checks the names run() was
  // given). Throws std::invalid_argument naming a selected name that is not among them.
  void expect(const std::vector<std::string>& workloads, const std::vector<std::string>& backends) {
    const std::set<std::string> w(workloads.begin(), workloads.end()), b(backends.begin(), backends.end());
    check_selected("--workloads", opt_.workloads, w);
    check_selected("--backends", opt_.backends, b);
  }
  // Registers `workload` as one the program measures itself, outside run() (e.g. a workload
  // whose concurrent roles are timed separately; its results join through add_results()), so
  // that --workloads may name it, and says whether the options select it.
  bool offer(const std::string& workload) {
    known_workloads_.insert(workload);
    return opt_.wants_workload(workload);
  }
  // The workload and backend names passed to run() / run_reads() or offer(), selected or not.
  const std::set<std::string>& known_workloads() const noexcept { return known_workloads_; }
  const std::set<std::string>& known_backends() const noexcept { return known_backends_; }

  // Measures the fsync rate in the data directory (about `seconds`) and records it.
  double measure_fsync(double seconds = 1.0) {
    progress("measuring fsync rate");
    machine_.fsync_per_s = measure_fsync_rate(opt_.dir, seconds);
    return machine_.fsync_per_s;
  }

  // Runs `work(db, probe&)` on every backend the options select, at each selected durability
  // (once, sync off, for a backend that is not durable), `warmup` + `repetitions` times, each on
  // a fresh store. Skipped entirely when the options do not select `workload`.
  template <class Work, class... Bs, class... Os>
  void run(const std::string& workload, Work&& work, const backend<Schema, Bs, Os>&... bs) {
    known_workloads_.insert(workload);
    (known_backends_.insert(bs.name), ...);
    if (!opt_.wants_workload(workload)) return;
    run_cells(workload, work, false, bs...);
  }

  // Like run() for a workload that only reads (whatever it writes before its first op() is
  // preparation, written with probe::write()): every backend runs once, with probe::sync()
  // false, and the result is marked `reads` (no sync column, no fsync fraction).
  template <class Work, class... Bs, class... Os>
  void run_reads(const std::string& workload, Work&& work, const backend<Schema, Bs, Os>&... bs) {
    known_workloads_.insert(workload);
    (known_backends_.insert(bs.name), ...);
    if (!opt_.wants_workload(workload)) return;
    run_cells(workload, work, true, bs...);
  }

  // Runs `native(dir, probe&)` (the same workload on the backend's own API, at the durability
  // probe::sync() says) and stores its ops/s as native_ops_per_s (baseline::same_settings) or
  // user_ops_per_s (baseline::user_view) of the matching result of run(): call it after run()
  // for that workload. Does nothing when no such result exists.
  template <class Native>
  void run_native(const std::string& workload, const std::string& backend_name, Native&& native,
                  baseline which = baseline::same_settings) {
    for (result& r : results_) {
      if (r.workload != workload || r.backend != backend_name) continue;
      std::vector<sample> reps;
      for (int i = 0; i < opt_.warmup + opt_.repetitions; ++i) {
        progress(workload + " " + backend_name + (which == baseline::user_view ? " user view" : " native") + " sync " +
                 (r.sync ? "on" : "off"));
        const std::filesystem::path dir = fresh_dir();
        probe p(r.sync);
        native(dir, p);
        std::filesystem::remove_all(dir);
        if (i >= opt_.warmup) reps.push_back(p.measured());
      }
      const result n = aggregate("", r.sync, "", reps);
      (which == baseline::user_view ? r.user_ops_per_s : r.native_ops_per_s) = n.ops_per_s;
      (which == baseline::user_view ? r.user_samples : r.native_samples) = n.samples;
    }
  }

  // Prints the table to stdout, writes --json and --svg when given (and says where on stdout).
  // Returns 0, for `return r.finish();` in main. Throws std::runtime_error when a file cannot be
  // written.
  // Throws std::invalid_argument, before printing anything, when --workloads or --backends
  // names something no run() offered (a misspelt name would otherwise measure nothing and say
  // nothing).
  int finish() {
    check_selected("--workloads", opt_.workloads, known_workloads_);
    check_selected("--backends", opt_.backends, known_backends_);
    if (opt_.progress) std::cerr << "\r\033[K" << std::flush;
    print_table(std::cout, machine_, results_, opt_.quick);
    if (!opt_.json.empty()) {
      write_file(opt_.json, to_json(machine_, results_, &opt_));
      std::cout << "json: " << std::filesystem::absolute(opt_.json).string() << "\n";
    }
    if (!opt_.svg.empty()) {
      write_file(opt_.svg, to_svg(machine_, results_));
      std::cout << "chart: " << std::filesystem::absolute(opt_.svg).string() << "\n";
    }
    return 0;
  }

  void progress(const std::string& what) {
    if (!opt_.progress) return;
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::cerr << "\r\033[K[" << static_cast<int>(t) << " s] " << what << std::flush;
  }

 private:
  // One (backend, durability) of a workload: its repetitions so far and what it measured.
  struct cell {
    std::function<sample(int rep, bool last, std::uint64_t& bytes, std::uint64_t& compacted)> run;
    std::string backend;
    bool sync = false, durable = false, always_sync = false;
    std::vector<sample> reps;
    std::uint64_t bytes = 0, compacted = 0;
  };

  // Runs every cell of the workload (each selected backend at each durability) warmup +
  // repetitions times, round-robin: repetition i of every cell before repetition i + 1 of any,
  // so that a change in the machine's load during the workload hits every store alike.
  template <class Work, class... Bs, class... Os>
  void run_cells(const std::string& workload, Work& work, bool reads, const backend<Schema, Bs, Os>&... bs) {
    std::vector<cell> cells;
    (add_cells(cells, workload, work, bs, reads), ...);
    const int total = opt_.warmup + opt_.repetitions;
    for (int i = 0; i < total; ++i) {
      for (cell& c : cells) {
        progress(workload + " " + c.backend + " sync " + (c.sync ? "on" : "off") + " " +
                 (i < opt_.warmup ? "warm-up" : "rep " + std::to_string(i - opt_.warmup + 1) + "/" +
                                                    std::to_string(opt_.repetitions)));
        sample s = c.run(i, i + 1 == total, c.bytes, c.compacted);
        if (i >= opt_.warmup) c.reps.push_back(std::move(s));
      }
    }
    for (cell& c : cells) {
      result r = aggregate(c.backend, c.sync, workload, c.reps);
      r.durable = c.durable;
      r.reads = reads;
      r.disk_bytes = c.bytes;
      r.disk_bytes_compacted = c.compacted;
      results_.push_back(std::move(r));
    }
  }

  template <class Work, class B, class O>
  void add_cells(std::vector<cell>& cells, const std::string& workload, Work& work, const backend<Schema, B, O>& b,
                 bool reads) {
    (void)workload;
    if (!opt_.wants_backend(b.name)) return;
    std::vector<bool> syncs;
    if (!b.durable || reads) syncs.push_back(false);
    else if (b.always_sync) syncs.push_back(true);
    else {
      if (opt_.sync_on) syncs.push_back(true);
      if (opt_.sync_off) syncs.push_back(false);
    }
    for (const bool sync : syncs) {
      cell c;
      c.backend = b.name;
      c.sync = sync;
      c.durable = b.durable;
      c.run = [this, &work, &b, sync, reads](int, bool last, std::uint64_t& bytes, std::uint64_t& compacted) {
        const std::filesystem::path dir = fresh_dir();
        probe p(sync);
        {
          auto db = b.open(dir);
          try {
            p.current_ = db.get();
            p.reopen_ = [&]() -> void* {
              db.reset();
              db = b.reopen ? b.reopen(dir) : b.open(dir);
              return db.get();
            };
            work(*db, p);
            p.reopen_ = {};
            bytes = b.measure_disk ? b.measure_disk(dir) : disk_bytes(dir);
            if (last && !reads && b.compact && b.store_of) compacted = b.compact(b.store_of(*db), dir);
          } catch (...) {
            db.reset();
            std::filesystem::remove_all(dir);
            throw;
          }
        }
        std::filesystem::remove_all(dir);
        return p.measured();
      };
      cells.push_back(std::move(c));
    }
  }
  std::filesystem::path fresh_dir() {
    const std::filesystem::path d = opt_.dir / ("run-" + std::to_string(++counter_));
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
  }

  static void write_file(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) throw std::runtime_error("keyschema::comparison: cannot write " + path);
  }

  static void check_selected(const char* option, const std::vector<std::string>& asked,
                             const std::set<std::string>& known) {
    for (const std::string& n : asked) {
      if (known.count(n) != 0) continue;
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ",") + k;
      throw std::invalid_argument(std::string("keyschema::comparison: ") + option + " names '" + n +
                                  "', which this program does not run; it runs: " + list);
    }
  }

  options opt_;
  std::set<std::string> known_workloads_, known_backends_;
  bool owned_ = false;
  machine_info machine_;
  std::vector<result> results_;
  std::uint64_t counter_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace comparison
KEYSCHEMA_END_NAMESPACE
