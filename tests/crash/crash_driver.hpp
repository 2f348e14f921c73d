// tests/crash/crash_driver.hpp: what the crash harnesses (crash_harness.cpp, broker_crash_harness.cpp)
// share: the command line, the engines they open, and the driver that kills a writer process at
// random moments. A harness brings its writer, its acknowledgement record and its checker.
//
// The driver (kill_run) starts the writer with posix_spawn of the same program ("child ...", so no
// engine state is shared by a fork), reads the writer's acknowledgements from a pipe (fd 3 in the
// writer) with poll, and SIGKILLs it after a random delay: a fifth of the kills land within the
// writer's measured start-up time (spawn to first acknowledgement: exec, open and recovery), the
// others up to --max-delay-ms after it. After each kill it reaps the writer, reads what is left on
// the pipe and lets the harness check the store; every --reset-every kills the directory is deleted
// and started again, and 50 kills in a row without progress fail the run. At the end a writer runs
// a given number of commits to completion.
//
// Failures end the process: die() prints "<harness_name>: FAILED: <what>" on stderr and exits 1
// (the CTest tests match "FAILED"). Thread-safety: none needed and none given; each harness
// process is single-threaded, a kill_run and its harness state belong to the one driver thread.
#pragma once

#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>
#ifdef KEYSCHEMA_CRASH_WITH_SQLITE
#include <keyschema/sqlite.hpp>
#endif
#if defined(KEYSCHEMA_CRASH_WITH_ROCKSDB)
#include <keyschema/rocksdb.hpp>
#endif

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern char** environ;

namespace crash_driver {

namespace ks = keyschema;
namespace fs = std::filesystem;

// The program's name in failure messages ("crash_harness"): each harness defines it.
extern const char harness_name[];

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "%s: FAILED: %s\n", harness_name, what.c_str());
  std::fflush(stderr);
  std::exit(1);
}

inline std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// n bytes drawn from splitmix64 after state s: a stored value the checker derives again.
inline std::string random_bytes(std::size_t n, std::uint64_t s) {
  std::string b(n, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) s = mix(s);
    b[i] = static_cast<char>(s >> (8 * (i % 8)));
  }
  return b;
}

// A list of u64 as 8-byte big-endian each (inside a log entry), and back; unpack dies on a length
// that is no multiple of 8, naming what the list is ("log entry with <what> of N bytes").
inline std::string pack_u64s(const std::vector<std::uint64_t>& v) {
  std::string out;
  for (const std::uint64_t x : v)
    for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(x >> (8 * i)));
  return out;
}
inline std::vector<std::uint64_t> unpack_u64s(std::string_view s, std::string_view what) {
  if (s.size() % 8 != 0) die("log entry with " + std::string(what) + " of " + std::to_string(s.size()) + " bytes");
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < s.size(); i += 8) {
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < 8; ++k) v = (v << 8) | static_cast<unsigned char>(s[i + k]);
    out.push_back(v);
  }
  return out;
}

// --- the command line ---------------------------------------------------------------------------

struct driver_options {
  std::string backend;
  fs::path dir;
  std::uint64_t kills = 0;  // the harness sets its default
  std::uint64_t seed = 0;
  std::uint64_t reset_every = 40;
  unsigned max_delay_ms = 40;
  int ack_fd = -1;
  std::uint64_t commits = 0;  // child: commits (ops) to run, 0 = until killed
  // A deliberately broken writer, to show the checker catches it (the *.self_test.* tests).
  std::string fault;
};

// Parses `[child] --flag value ...` into o and returns whether this process is the writer ("child").
// more(flag, value) takes a harness's own flags and returns false for one it does not know. Dies
// on a flag without its value, an unknown flag, or a missing --backend or --dir. --max-delay-ms 0
// becomes 1.
template <class More>
bool parse_options(int argc, char** argv, driver_options& o, More&& more) {
  int i = 1;
  const bool child = argc > 1 && std::string_view(argv[1]) == "child";
  if (child) ++i;
  for (; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) die("missing value after " + std::string(a));
    const std::string v = argv[++i];
    if (a == "--backend") o.backend = v;
    else if (a == "--dir") o.dir = v;
    else if (a == "--kills") o.kills = std::stoull(v);
    else if (a == "--seed") o.seed = std::stoull(v);
    else if (a == "--reset-every") o.reset_every = std::stoull(v);
    else if (a == "--max-delay-ms") o.max_delay_ms = static_cast<unsigned>(std::stoul(v));
    else if (a == "--ack-fd") o.ack_fd = std::stoi(v);
    else if (a == "--commits") o.commits = std::stoull(v);
    else if (a == "--fault") o.fault = v;
    else if (!more(a, v)) die("unknown argument " + std::string(a));
  }
  if (o.backend.empty() || o.dir.empty())
    die(std::string("usage: ") + harness_name + " --backend leveldb|lmdb|rocksdb|sqlite --dir <dir> [--kills N]");
  if (o.max_delay_ms == 0) o.max_delay_ms = 1;
  return child;
}

// main(): parse(argc, argv, child) gives the options; then the writer (child_main) or the driver
// (driver_main) runs, and an exception that escapes either fails the run.
template <class Parse, class Child, class Driver>
int run_main(int argc, char** argv, Parse&& parse, Child&& child_main, Driver&& driver_main) {
  bool child = false;
  const auto o = parse(argc, argv, child);
  try {
    return child ? child_main(o) : driver_main(o);
  } catch (const std::exception& e) {
    die(e.what());
  }
}

// --- the engines --------------------------------------------------------------------------------

// The map size the LMDB writer starts with, so that it grows while the writer runs.
constexpr std::size_t lmdb_start_map = std::size_t{64} << 10;

// open.template operator()<Backend>(engine options...) for the engine o.backend names, with the
// options that make a short run reach the engine's rare paths: 64 KiB write buffers for LevelDB
// and RocksDB (frequent log rotations, flushes and compactions), a 64 KiB map for LMDB (it grows
// while the writer runs). Dies on a backend this build lacks.
template <class Open>
auto with_engine(const driver_options& o, Open&& open) {
  if (o.backend == "leveldb") {
    ks::leveldb_options lo;
    lo.write_buffer_bytes = std::size_t{64} << 10;
    return open.template operator()<ks::leveldb_backend>(lo);
  }
  if (o.backend == "lmdb") {
    ks::lmdb_options lo;
    lo.map_size = lmdb_start_map;
    return open.template operator()<ks::lmdb_backend>(lo);
  }
#ifdef KEYSCHEMA_CRASH_WITH_SQLITE
  if (o.backend == "sqlite") return open.template operator()<ks::sqlite_backend>();
#endif
#if defined(KEYSCHEMA_CRASH_WITH_ROCKSDB)
  if (o.backend == "rocksdb") {
    ks::rocksdb_options ro;
    ro.write_buffer_bytes = std::size_t{64} << 10;
    return open.template operator()<ks::rocksdb_backend>(ro);
  }
#endif
  die("unknown backend '" + o.backend + "' (leveldb, lmdb, rocksdb or sqlite)");
}

// fn(store) with a store of Schema opened on o.dir (with_engine's engine and options).
template <class Schema, class Fn>
auto with_store(const driver_options& o, Fn&& fn) {
  return with_engine(o, [&]<class Backend>(const auto&... engine_options) {
    ks::store<Schema, Backend> db(o.dir, engine_options...);
    return fn(db);
  });
}

// --- the writer's side of the pipe --------------------------------------------------------------

// Writes one acknowledgement record (a trivially copyable struct, well under PIPE_BUF, so the
// write is atomic and a kill never tears it).
template <class Ack>
void send_ack(int fd, const Ack& a) {
  if (::write(fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) die("writing the acknowledgement");
}

// --- the driver ---------------------------------------------------------------------------------

struct child_process {
  pid_t pid = -1;
  int ack_fd = -1;
};

// Starts `<this program> child --backend B --dir D --ack-fd 3 --seed S --commits K <extra>
// [--fault F]`, its acknowledgement pipe's write end as fd 3.
inline child_process spawn_writer(const driver_options& o, std::uint64_t seed, std::uint64_t commits,
                                  const std::vector<std::string>& extra) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) die(std::string("pipe2: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // The child's copy of the write end, without O_CLOEXEC, as fd 3.
  posix_spawn_file_actions_adddup2(&fa, fds[1], 3);
  std::vector<std::string> args = {"/proc/self/exe", "child",     "--backend", o.backend,         "--dir",
                                   o.dir.string(),   "--ack-fd",  "3",         "--seed",          std::to_string(seed),
                                   "--commits",      std::to_string(commits)};
  args.insert(args.end(), extra.begin(), extra.end());
  if (!o.fault.empty()) {
    args.push_back("--fault");
    args.push_back(o.fault);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) die(std::string("posix_spawn: ") + std::strerror(rc));
  return {pid, fds[0]};
}

// Waits for the process to end and returns its wait status.
inline int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) die(std::string("waitpid: ") + std::strerror(errno));
  return status;
}

// One driver run. The harness state H provides:
//   using ack = ...;                         the writer's acknowledgement record
//   static constexpr const char* unit;        what the log counts ("commit", "op"), for messages
//   void absorb(const ack&);                  one acknowledgement, in the order the writer sent it
//   std::vector<std::string> child_args();    the writer's own flags (after --commits)
//   void reset();                             the directory was deleted: forget what was verified
//   std::uint64_t progress();                 the last commit the checks verified
//   bool progressed(std::uint64_t before);    whether the last check found new work since `before`
//   void verify();                            reopen the store and check it (die on a failure)
class kill_run {
 public:
  // Takes KEYSCHEMA_CRASH_KILLS (when set and not empty) over o.kills, draws a seed when o.seed is
  // 0, prints "<tag>: backend=B kills=N seed=S dir=D" and deletes o.dir.
  kill_run(driver_options& o, const char* tag) : o_(announce(o, tag)), tag_(tag), rng(o.seed) { fs::remove_all(o.dir); }

  // o.kills writers, each killed at a random moment and the store checked after it.
  template <class H>
  void kill_writers(H& h) {
    std::uint64_t idle_streak = 0;
    for (std::uint64_t kill = 1; kill <= o_.kills; ++kill) {
      if (o_.reset_every != 0 && kill % o_.reset_every == 0) {
        fs::remove_all(o_.dir);
        h.reset();
        ++resets;
      }
      const std::uint64_t before = h.progress();
      kill_writer(h, kill);
      h.verify();
      idle_streak = h.progressed(before) ? 0 : idle_streak + 1;
      if (idle_streak >= 50)
        die(std::string("50 kills in a row without a new ") + H::unit + ": the writer makes no progress");
    }
  }

  // A writer that runs `commits` commits to completion, its acknowledgements read; dies unless it
  // exits with status 0. The harness checks the store after it.
  template <class H>
  void run_final_writer(H& h, std::uint64_t commits) {
    child_process c = spawn_writer(o_, rng(), commits, h.child_args());
    drain(c, h);
    const int status = reap(c.pid);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) die("the final writer failed (status " + std::to_string(status) + ")");
  }

  // Prints the closing line: "<tag>: backend=B kills=N early_kills=E resets=R <harness> startup_ms=T
  // seconds=S", <harness> the harness's own "name=value ..." figures.
  void print_closing(const std::string& harness) const {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::printf("%s: backend=%s kills=%llu early_kills=%llu resets=%llu %s startup_ms=%.1f seconds=%.1f\n", tag_,
                o_.backend.c_str(), static_cast<unsigned long long>(o_.kills), static_cast<unsigned long long>(early_kills),
                static_cast<unsigned long long>(resets), harness.c_str(), static_cast<double>(startup_us_) / 1000.0, seconds);
  }

 private:
  static driver_options& announce(driver_options& o, const char* tag) {
    if (const char* k = std::getenv("KEYSCHEMA_CRASH_KILLS"); k != nullptr && *k != '\0') o.kills = std::stoull(k);
    if (o.seed == 0) o.seed = std::random_device{}();
    std::printf("%s: backend=%s kills=%llu seed=%llu dir=%s\n", tag, o.backend.c_str(),
                static_cast<unsigned long long>(o.kills), static_cast<unsigned long long>(o.seed), o.dir.c_str());
    std::fflush(stdout);
    return o;
  }

  // Reads the acknowledgements available (waiting at most timeout_ms for the first) into h.
  // Returns false at end of file (the writer is gone).
  template <class H>
  bool read_acks(int fd, int timeout_ms, H& h) {
    using ack = typename H::ack;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return true;
    ack buf[256];
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got == 0) return false;
    if (got < 0) return errno == EINTR || errno == EAGAIN;
    if (got % static_cast<ssize_t>(sizeof(ack)) != 0) die("torn acknowledgement on the pipe");
    for (ssize_t i = 0; i < got / static_cast<ssize_t>(sizeof(ack)); ++i) h.absorb(buf[i]);
    received_ += static_cast<std::uint64_t>(got) / sizeof(ack);
    return true;
  }

  template <class H>
  void drain(child_process& c, H& h) {
    while (read_acks(c.ack_fd, 1000, h)) {
    }
    ::close(c.ack_fd);
  }

  template <class H>
  void kill_writer(H& h, std::uint64_t kill) {
    // The delays follow the writer's measured start-up time (spawn to first acknowledgement,
    // several times longer under sanitizers or on a loaded machine): a fifth of the kills land
    // within it (exec, open and recovery), the others up to max_delay_ms after it. The first
    // kill waits for the first acknowledgement to measure it.
    const bool early = kill > 1 && rng() % 5 == 0;
    const std::uint64_t delay_us = kill == 1 ? 30'000'000
                                   : early   ? rng() % startup_us_
                                             : startup_us_ + rng() % (std::uint64_t{o_.max_delay_ms} * 1000);
    early_kills += early;
    const std::uint64_t received_before = received_;
    bool first_seen = false;
    const auto spawned = std::chrono::steady_clock::now();
    child_process c = spawn_writer(o_, rng(), 0, h.child_args());
    const auto deadline = spawned + std::chrono::microseconds(delay_us);
    bool alive = true;
    while (alive) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      if (left.count() < 1000) {
        ::usleep(static_cast<useconds_t>(left.count()));
        break;
      }
      alive = read_acks(c.ack_fd, static_cast<int>(std::min<std::int64_t>(left.count() / 1000, 50)), h);
      if (received_ > received_before && !first_seen) {
        first_seen = true;
        const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - spawned);
        // The first measurement replaces the initial guess; later ones are averaged in.
        startup_us_ = kill == 1 ? static_cast<std::uint64_t>(took.count()) + 1
                                : (3 * startup_us_ + static_cast<std::uint64_t>(took.count())) / 4 + 1;
        if (kill == 1) break;
      }
    }
    // A late kill that saw no acknowledgement came before the writer's first commit: start-up
    // now takes longer than estimated (recovery grew, the machine got busier), and without this
    // every later kill would land in it too and the writer would never commit again.
    if (!early && kill > 1 && received_ == received_before) startup_us_ += startup_us_ / 2;
    ::kill(c.pid, SIGKILL);
    const int status = reap(c.pid);
    drain(c, h);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
      die("the writer ended by itself (status " + std::to_string(status) + ") before kill " + std::to_string(kill));
  }

  const driver_options& o_;
  const char* tag_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::uint64_t startup_us_ = 5000;  // running estimate of spawn-to-first-acknowledgement
  std::uint64_t received_ = 0;       // acknowledgements read in total

 public:
  std::mt19937_64 rng;
  std::uint64_t early_kills = 0;  // kills within the measured start-up time
  std::uint64_t resets = 0;       // times the directory was deleted and started again
};

}  // namespace crash_driver
