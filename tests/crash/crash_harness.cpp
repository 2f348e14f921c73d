// tests/crash/crash_harness.cpp: kills a writer process at random moments and checks that the
// store it wrote is intact after every kill (see docs/reliability.md).
//
//   crash_harness --backend leveldb|lmdb|rocksdb|sqlite --dir <scratch> [--kills N] [--seed S] [--reset-every R]
//                 [--max-delay-ms D] [--fault split|early-ack]                          (driver)
//   crash_harness child --backend B --dir D --ack-fd FD --seed S [--commits K]          (writer)
//
// The writer commits, one after another, atomic batches and read-modify-write transactions over
// four keyspaces that must agree:
//   record  ("R", queue, id)  -> body (bytes, content and length derived from queue and id)
//   index   ("I", id, queue)  -> ()   one per record
//   counter ("C", queue)      -> i64  number of records of the queue, updated in the same commit
//   declared_count ("D", queue) -> i64 the same number, a count_of<record, 1> the store maintains
//   log     ("L", seq)        -> (queue, first id, inserted, erased ids, counter after)
// Commit seq inserts records seq*64 .. seq*64+inserted-1 of one queue and erases some older ones.
// Commits alternate between batch and transaction and between {.sync = true} and {.sync = false}
// (a SIGKILL must lose nothing acknowledged either way: the OS keeps the page cache). After
// commit() returns the writer acknowledges seq (and the LMDB map size) on a pipe.
//
// The driver starts the writer (posix_spawn of this program, so no engine state is shared by a
// fork), SIGKILLs it after a random delay (a fifth of them within the writer's measured start-up
// time: during exec, open and recovery; the others up to --max-delay-ms after it), and then
// reopens the store itself and checks:
//   - the log is exactly seq 1..N with N >= the last acknowledged commit, and at most one past
//     it or the previously verified log (a commit that returned but was not yet acknowledged):
//     every acknowledged commit is present;
//   - replaying the log gives exactly the records present (none partly applied, no lost or
//     extra record), each body intact, the index is a bijection with the records, every counter
//     and declared count equals its queue's record count, and each log entry's "counter after" matches the replay;
//   - the next writer makes progress: at the end a writer runs to completion for 50 commits,
//     all verified, and the run fails if 50 kills in a row saw no new commit.
// Every --reset-every kills the database is deleted and started again (so LMDB's map starts small
// and grows during the run again: the writer starts with a 64 KiB map). Closing line:
//   crash: backend=lmdb kills=200 acknowledged=12345 verified_commits=12400 map_growths=93 seconds=31.2
// KEYSCHEMA_CRASH_KILLS in the environment overrides --kills. Exit status 0 when every check held.
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
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

extern char** environ;

namespace crash {

namespace ks = keyschema;
namespace fs = std::filesystem;

using record = ks::keyspace<"record", ks::bytes, ks::lit<"R">, ks::field<"queue", std::string>,
                            ks::field<"id", std::uint64_t>>;
using index_entry = ks::keyspace<"index", std::tuple<>, ks::lit<"I">, ks::field<"id", std::uint64_t>,
                                 ks::field<"queue", std::string>>;
using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"C">, ks::field<"queue", std::string>>;
// (queue, first inserted id, inserted count, erased ids as 8-byte big-endian each, counter after)
using log_value = std::tuple<std::string, std::uint64_t, std::uint64_t, ks::bytes, std::int64_t>;
using log_entry = ks::keyspace<"log", log_value, ks::lit<"L">, ks::field<"seq", std::uint64_t>>;
// The same count, declared: maintained by the store in the same atomic write as the records.
using declared_count = ks::keyspace<"declared_count", ks::count_of<record, 1>, ks::lit<"D">, ks::field<"queue", std::string>>;
using crash_schema = ks::schema<record, index_entry, counter, log_entry, declared_count>;

// Queue names include an empty one, a NUL and non-ASCII text.
const std::vector<std::string> queues = {"orders", "", std::string("a\0b", 3), "\xc3\xa9t\xc3\xa9"};
constexpr std::uint64_t ids_per_commit = 64;
constexpr std::size_t queue_soft_limit = 300;  // past it, commits erase more than they insert

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "crash_harness: FAILED: %s\n", what.c_str());
  std::fflush(stderr);
  std::exit(1);
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t queue_hash(const std::string& q) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : q) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// The body of record (q, id): 16..2063 bytes, so the LMDB map has to grow.
ks::bytes body_of(const std::string& q, std::uint64_t id) {
  std::uint64_t s = mix(queue_hash(q) ^ mix(id));
  std::string b(16 + s % 2048, '\0');
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i % 8 == 0) s = mix(s);
    b[i] = static_cast<char>(s >> (8 * (i % 8)));
  }
  return ks::bytes(std::move(b));
}

std::string pack_ids(const std::vector<std::uint64_t>& ids) {
  std::string out;
  for (const std::uint64_t id : ids)
    for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(id >> (8 * i)));
  return out;
}

std::vector<std::uint64_t> unpack_ids(std::string_view s) {
  if (s.size() % 8 != 0) die("log entry with erased ids of " + std::to_string(s.size()) + " bytes");
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < s.size(); i += 8) {
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < 8; ++k) v = (v << 8) | static_cast<unsigned char>(s[i + k]);
    ids.push_back(v);
  }
  return ids;
}

struct options {
  std::string backend;
  fs::path dir;
  std::uint64_t kills = 200;
  std::uint64_t seed = 0;
  std::uint64_t reset_every = 40;
  unsigned max_delay_ms = 40;
  int ack_fd = -1;
  std::uint64_t commits = 0;  // child: 0 = until killed
  // A deliberately broken writer, to show the checker catches it (the crash.self_test.* tests):
  // "split" commits a batch's records and index in one write and its counter and log in a
  // second; "early-ack" acknowledges before committing. Both pause 2 ms inside the broken
  // window so that kills land in it often.
  std::string fault;
};

// The map size the LMDB writer starts with, so that it grows while the writer runs.
constexpr std::size_t lmdb_start_map = std::size_t{64} << 10;

template <class Fn>
auto with_store(const options& o, Fn&& fn) {
  if (o.backend == "leveldb") {
    ks::leveldb_options lo;
    lo.write_buffer_bytes = std::size_t{64} << 10;  // frequent log rotations and compactions
    ks::store<crash_schema, ks::leveldb_backend> db(o.dir, lo);
    return fn(db);
  }
  if (o.backend == "lmdb") {
    ks::lmdb_options lo;
    lo.map_size = lmdb_start_map;
    ks::store<crash_schema, ks::lmdb_backend> db(o.dir, lo);
    return fn(db);
  }
#ifdef KEYSCHEMA_CRASH_WITH_SQLITE
  if (o.backend == "sqlite") {
    ks::store<crash_schema, ks::sqlite_backend> db(o.dir);
    return fn(db);
  }
#endif
#if defined(KEYSCHEMA_CRASH_WITH_ROCKSDB)
  if (o.backend == "rocksdb") {
    ks::rocksdb_options ro;
    ro.write_buffer_bytes = std::size_t{64} << 10;  // frequent log switches, flushes and compactions
    ks::store<crash_schema, ks::rocksdb_backend> db(o.dir, ro);
    return fn(db);
  }
#endif
  die("unknown backend '" + o.backend + "' (leveldb, lmdb, rocksdb or sqlite)");
}

template <class Store>
std::size_t map_size_of(Store& db) {
  if constexpr (requires { db.backend().map_size(); })
    return db.backend().map_size();
  else
    return 0;
}

// --- the writer ---------------------------------------------------------------------------------

struct ack {
  std::uint64_t seq;
  std::uint64_t map_size;
};

template <class Store>
void send_ack(const options& o, std::uint64_t seq, Store& db) {
  const ack a{seq, map_size_of(db)};
  if (::write(o.ack_fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) die("writing the acknowledgement");
}

template <class Store>
void run_writer(Store& db, const options& o) {
  std::mt19937_64 rng(o.seed);
  std::uint64_t seq = 0;
  for (const auto& e : db.template scan<log_entry>().reverse().limit(1)) seq = std::get<0>(e.key);
  for (std::uint64_t done = 0; o.commits == 0 || done < o.commits; ++done) {
    ++seq;
    const std::string& q = queues[rng() % queues.size()];
    const std::uint64_t first = seq * ids_per_commit;
    const std::uint64_t inserted = 1 + rng() % 6;
    const bool as_transaction = seq % 2 == 0;
    const ks::write_options wo{.sync = (seq / 2) % 2 == 0};
    auto plan = [&](auto& reader, std::int64_t current) {
      std::size_t erase_n = rng() % 3;
      if (current > static_cast<std::int64_t>(queue_soft_limit)) erase_n += inserted + 2;
      std::vector<std::uint64_t> erased;
      for (const auto& e : reader.template scan<record>(q).limit(erase_n)) erased.push_back(std::get<1>(e.key));
      return erased;
    };
    auto write_all = [&](auto& w, std::int64_t current, const std::vector<std::uint64_t>& erased) {
      for (std::uint64_t k = 0; k < inserted; ++k) {
        w.template put<record>({q, first + k}, body_of(q, first + k));
        w.template put<index_entry>({first + k, q}, {});
      }
      for (const std::uint64_t id : erased) {
        w.template erase<record>({q, id});
        w.template erase<index_entry>({id, q});
      }
      const std::int64_t after = current + static_cast<std::int64_t>(inserted) - static_cast<std::int64_t>(erased.size());
      w.template put<counter>({q}, after);
      w.template put<log_entry>({seq}, log_value{q, first, inserted, ks::bytes(pack_ids(erased)), after});
    };
    if (as_transaction) {
      auto tx = db.transaction();
      const std::int64_t current = tx.template get<counter>({q}).value_or(0);
      const auto erased = plan(tx, current);
      write_all(tx, current, erased);
      tx.commit(wo);
    } else if (o.fault == "split") {
      const std::int64_t current = db.template get<counter>({q}).value_or(0);
      auto b = db.batch();
      write_all(b, current, {});
      auto first_half = db.batch();
      for (std::uint64_t k = 0; k < inserted; ++k) first_half.template put<record>({q, first + k}, body_of(q, first + k));
      first_half.commit(wo);
      ::usleep(2000);  // widen the window, so that the self-test fails fast
      b.commit(wo);
    } else {
      // A batch reads outside itself: this process is the only writer, so nothing changes between.
      const std::int64_t current = db.template get<counter>({q}).value_or(0);
      const auto erased = plan(db, current);
      auto b = db.batch();
      write_all(b, current, erased);
      if (o.fault == "early-ack") {
        send_ack(o, seq, db);
        ::usleep(2000);  // widen the window, so that the self-test fails fast
      }
      b.commit(wo);
      if (o.fault == "early-ack") continue;
    }
    send_ack(o, seq, db);
  }
}

int child_main(const options& o) {
  try {
    with_store(o, [&](auto& db) {
      run_writer(db, o);
      return 0;
    });
  } catch (const std::exception& e) {
    die(std::string("writer: ") + e.what());
  }
  return 0;
}

// --- the checker --------------------------------------------------------------------------------

// The driver's replay of the log: what the database must hold after commit `seq`.
struct model {
  std::uint64_t seq = 0;
  std::map<std::string, std::set<std::uint64_t>> records;  // queue -> ids
};

struct check_result {
  std::uint64_t last_seq = 0;
  std::size_t records = 0;
};

template <class Store>
check_result check_store(Store& db, model& m, std::uint64_t acked) {
  // The log: 1..N, contiguous; entries past the model's seq are replayed into it. Each writer
  // may leave one commit that returned but was not acknowledged, so N is at most one past the
  // larger of the last acknowledged commit and the log verified before this writer started.
  const std::uint64_t base = std::max(acked, m.seq);
  std::uint64_t expect = 1;
  for (const auto& e : db.template scan<log_entry>()) {
    const std::uint64_t seq = std::get<0>(e.key);
    if (seq != expect) die("log holds seq " + std::to_string(seq) + " where " + std::to_string(expect) + " was expected");
    ++expect;
    if (seq <= m.seq) continue;
    const auto& [q, first, inserted, erased_raw, after] = e.value;
    auto& ids = m.records[q];
    for (std::uint64_t k = 0; k < inserted; ++k)
      if (!ids.insert(first + k).second) die("commit " + std::to_string(seq) + " inserts an id twice");
    for (const std::uint64_t id : unpack_ids(erased_raw.view()))
      if (ids.erase(id) != 1) die("commit " + std::to_string(seq) + " erases a record that did not exist");
    if (static_cast<std::int64_t>(ids.size()) != after)
      die("commit " + std::to_string(seq) + " logged counter " + std::to_string(after) + " but the replay has " +
          std::to_string(ids.size()));
    m.seq = seq;
  }
  const std::uint64_t n = expect - 1;
  if (n < acked) die("acknowledged commit " + std::to_string(acked) + " is missing: the log ends at " + std::to_string(n));
  if (n > base + 1)
    die("the log ends at " + std::to_string(n) + ", more than one commit past " + std::to_string(base) +
        " (the last acknowledged or previously verified commit)");
  if (m.seq != n) die("the log shrank below an already verified commit");

  // Records: exactly the replay, bodies intact.
  std::map<std::string, std::set<std::uint64_t>> seen;
  std::size_t total = 0;
  for (const auto& e : db.template scan<record>()) {
    const auto& [q, id] = e.key;
    if (!(e.value == body_of(q, id))) die("record (" + q + ", " + std::to_string(id) + ") has a damaged body");
    if (id / ids_per_commit > n) die("record " + std::to_string(id) + " of a commit not in the log (partly applied)");
    seen[q].insert(id);
    ++total;
  }
  for (const auto& [q, ids] : m.records) {
    if (ids.empty()) continue;
    const auto it = seen.find(q);
    if (it == seen.end() || it->second != ids)
      die("records of queue '" + q + "' differ from the log's replay (a commit partly applied or lost)");
  }
  for (const auto& [q, ids] : seen)
    if (m.records[q] != ids) die("queue '" + q + "' holds records the log does not explain");

  // Index: a bijection with the records.
  std::size_t index_count = 0;
  for (const auto& e : db.template scan<index_entry>()) {
    const auto& [id, q] = e.key;
    if (!m.records[q].contains(id)) die("index entry " + std::to_string(id) + " without its record");
    ++index_count;
  }
  if (index_count != total)
    die(std::to_string(total) + " records but " + std::to_string(index_count) + " index entries");

  // Counters: each equals its queue's record count.
  for (const auto& q : queues) {
    const auto c = db.template get<counter>({q});
    const auto want = static_cast<std::int64_t>(m.records[q].size());
    if (c.value_or(0) != want)
      die("counter of queue '" + q + "' is " + (c ? std::to_string(*c) : "absent") + ", it holds " + std::to_string(want));
    // The declared count (count_of): equal too, and erased rather than 0.
    const auto d = db.template get<declared_count>({q});
    if (d.value_or(0) != want || (d && *d == 0))
      die("declared count of queue '" + q + "' is " + (d ? std::to_string(*d) : "absent") + ", it holds " +
          std::to_string(want));
  }
  return {n, total};
}

// --- the driver ---------------------------------------------------------------------------------

struct child_process {
  pid_t pid = -1;
  int ack_fd = -1;
};

child_process spawn_writer(const options& o, std::uint64_t seed, std::uint64_t commits) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) die(std::string("pipe2: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // The child's copy of the write end, without O_CLOEXEC, as fd 3.
  posix_spawn_file_actions_adddup2(&fa, fds[1], 3);
  std::vector<std::string> args = {"/proc/self/exe", "child",     "--backend", o.backend,         "--dir",
                                   o.dir.string(),   "--ack-fd",  "3",         "--seed",          std::to_string(seed),
                                   "--commits",      std::to_string(commits)};
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

struct ack_state {
  std::uint64_t acked = 0;  // highest acknowledged seq since the last reset
  std::uint64_t acks = 0;   // acknowledgements received in total
  std::size_t map_size = 0;
  std::uint64_t map_growths = 0;
};

// Reads whatever acknowledgements are available (waiting at most timeout_ms for the first).
// Returns false at end of file (the writer is gone).
bool read_acks(int fd, int timeout_ms, ack_state& st) {
  pollfd p{fd, POLLIN, 0};
  const int r = ::poll(&p, 1, timeout_ms);
  if (r <= 0) return true;
  ack buf[256];
  const ssize_t got = ::read(fd, buf, sizeof buf);
  if (got == 0) return false;
  if (got < 0) return errno == EINTR || errno == EAGAIN;
  if (got % static_cast<ssize_t>(sizeof(ack)) != 0) die("torn acknowledgement on the pipe");
  for (ssize_t i = 0; i < got / static_cast<ssize_t>(sizeof(ack)); ++i) {
    if (buf[i].seq <= st.acked) die("acknowledgements out of order");
    st.acked = buf[i].seq;
    ++st.acks;
    if (st.map_size != 0 && buf[i].map_size > st.map_size) ++st.map_growths;
    st.map_size = buf[i].map_size;
  }
  return true;
}

int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) die(std::string("waitpid: ") + std::strerror(errno));
  return status;
}

void drain(child_process& c, ack_state& st) {
  while (read_acks(c.ack_fd, 1000, st)) {
  }
  ::close(c.ack_fd);
}

int driver_main(options o) {
  if (const char* k = std::getenv("KEYSCHEMA_CRASH_KILLS"); k != nullptr && *k != '\0') o.kills = std::stoull(k);
  if (o.seed == 0) o.seed = std::random_device{}();
  std::printf("crash: backend=%s kills=%llu seed=%llu dir=%s\n", o.backend.c_str(),
              static_cast<unsigned long long>(o.kills), static_cast<unsigned long long>(o.seed), o.dir.c_str());
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(o.seed);
  ack_state st;
  model m;
  std::uint64_t verified = 0, early_kills = 0, idle_streak = 0, resets = 0;
  std::uint64_t startup_us = 5000;  // running estimate of spawn-to-first-acknowledgement
  bool first_ack_seen = false;
  fs::remove_all(o.dir);

  auto verify = [&] {
    const check_result r = with_store(o, [&](auto& db) { return check_store(db, m, st.acked); });
    return r;
  };

  for (std::uint64_t kill = 1; kill <= o.kills; ++kill) {
    if (o.reset_every != 0 && kill % o.reset_every == 0) {
      fs::remove_all(o.dir);
      verified += m.seq;
      m = model{};
      st.acked = 0;
      st.map_size = 0;
      ++resets;
    }
    const std::uint64_t before = m.seq;
    // The delays follow the writer's measured start-up time (spawn to first acknowledgement,
    // several times longer under sanitizers or on a loaded machine): a fifth of the kills land
    // within it (exec, open and recovery), the others up to max_delay_ms after it. The first
    // kill waits for the first acknowledgement to measure it.
    const bool early = kill > 1 && rng() % 5 == 0;
    const std::uint64_t delay_us =
        kill == 1 ? 30'000'000
        : early   ? rng() % startup_us
                  : startup_us + rng() % (std::uint64_t{o.max_delay_ms} * 1000);
    early_kills += early;
    const std::uint64_t acks_before = st.acks;
    const auto spawned = std::chrono::steady_clock::now();
    child_process c = spawn_writer(o, rng(), 0);
    const auto deadline = spawned + std::chrono::microseconds(delay_us);
    bool alive = true;
    while (alive) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      if (left.count() < 1000) {
        ::usleep(static_cast<useconds_t>(left.count()));
        break;
      }
      alive = read_acks(c.ack_fd, static_cast<int>(std::min<std::int64_t>(left.count() / 1000, 50)), st);
      if (st.acks > acks_before && !first_ack_seen) {
        first_ack_seen = true;
        const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - spawned);
        // The first measurement replaces the initial guess; later ones are averaged in.
        startup_us = kill == 1 ? static_cast<std::uint64_t>(took.count()) + 1
                               : (3 * startup_us + static_cast<std::uint64_t>(took.count())) / 4 + 1;
        if (kill == 1) break;
      }
    }
    // A late kill that saw no acknowledgement came before the writer's first commit: start-up
    // now takes longer than estimated (recovery grew, the machine got busier), and without this
    // every later kill would land in it too and the writer would never commit again.
    if (!early && kill > 1 && st.acks == acks_before) startup_us += startup_us / 2;
    first_ack_seen = false;
    ::kill(c.pid, SIGKILL);
    const int status = reap(c.pid);
    drain(c, st);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
      die("the writer ended by itself (status " + std::to_string(status) + ") before kill " + std::to_string(kill));
    verify();
    idle_streak = m.seq > before ? 0 : idle_streak + 1;
    if (idle_streak >= 50) die("50 kills in a row without a new commit: the writer makes no progress");
  }

  // The next writer makes progress: 50 commits, run to completion.
  const std::uint64_t target = m.seq + 50;
  child_process c = spawn_writer(o, rng(), 50);
  drain(c, st);
  const int status = reap(c.pid);
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) die("the final writer failed (status " + std::to_string(status) + ")");
  if (st.acked != target) die("the final writer acknowledged up to " + std::to_string(st.acked) + ", not " + std::to_string(target));
  const check_result r = verify();
  if (r.last_seq != target) die("after the final writer the log ends at " + std::to_string(r.last_seq));
  verified += m.seq;

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "crash: backend=%s kills=%llu early_kills=%llu resets=%llu acknowledged=%llu verified_commits=%llu "
      "map_growths=%llu records_at_end=%zu startup_ms=%.1f seconds=%.1f\n",
      o.backend.c_str(), static_cast<unsigned long long>(o.kills), static_cast<unsigned long long>(early_kills),
      static_cast<unsigned long long>(resets), static_cast<unsigned long long>(st.acks),
      static_cast<unsigned long long>(verified), static_cast<unsigned long long>(st.map_growths), r.records,
      static_cast<double>(startup_us) / 1000.0, seconds);
  return 0;
}

options parse(int argc, char** argv, bool& child) {
  options o;
  int i = 1;
  child = argc > 1 && std::string_view(argv[1]) == "child";
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
    else die("unknown argument " + std::string(a));
  }
  if (o.backend.empty() || o.dir.empty()) die("usage: crash_harness --backend leveldb|lmdb|rocksdb|sqlite --dir <dir> [--kills N]");
  if (o.max_delay_ms == 0) o.max_delay_ms = 1;
  return o;
}

}  // namespace crash

int main(int argc, char** argv) {
  bool child = false;
  const crash::options o = crash::parse(argc, argv, child);
  try {
    return child ? crash::child_main(o) : crash::driver_main(o);
  } catch (const std::exception& e) {
    crash::die(e.what());
  }
}
