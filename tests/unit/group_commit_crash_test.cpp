// tests/unit/group_commit_crash_test.cpp: a process whose writer threads commit in groups is
// SIGKILLed while commits are queued and in the engine; after every kill, each acknowledged commit
// is whole and nothing of an unacknowledged one is half-applied. On every file backend.
//
// The child opens the store and runs 8 writer threads. Thread t's commit i is one batch: the record
// (epoch, t, i) with a body derived from its key, its twin (the same key in another keyspace), and
// an add of 1 to a total; the store maintains a declared count of the records. Commits alternate
// sync on and off (a SIGKILL loses nothing either way: the page cache survives). After commit()
// returns, the thread acknowledges (epoch, t, i) on a pipe. The parent kills the child after a
// random delay, reads the acknowledgements, reopens the store and checks:
//   - every acknowledged record is present, with its body and its twin;
//   - per thread and epoch, the records present are exactly 0..k-1, k at least one past the last
//     acknowledged and at most one past it (one commit may have returned and not been
//     acknowledged): commits of a thread keep their order, none is lost;
//   - every record has its twin and every twin its record (no commit half-applied, also none
//     merged with its neighbours and cut);
//   - the declared count and the total equal the number of records.
// Every epoch writes new keys, so the database grows across the kills of one backend.
//
// Thread-safety: the test forks from the main thread only; the child's threads live in the child.
#include <catch2/catch.hpp>
#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>
#include <keyschema/rocksdb.hpp>
#include <keyschema/sqlite.hpp>
#include <support/temp_dir.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace group_commit_crash_test {

namespace ks = keyschema;

using record = ks::keyspace<"record", ks::bytes, ks::lit<"R">, ks::field<"epoch", std::uint32_t>,
                            ks::field<"thread", std::uint32_t>, ks::field<"i", std::uint64_t>>;
using twin = ks::keyspace<"twin", std::uint64_t, ks::lit<"T">, ks::field<"epoch", std::uint32_t>,
                          ks::field<"thread", std::uint32_t>, ks::field<"i", std::uint64_t>>;
using record_count = ks::keyspace<"record_count", ks::count_of<record, 0>, ks::lit<"N">>;
using total = ks::keyspace<"total", std::int64_t, ks::lit<"S">>;
using crash_schema = ks::schema<record, twin, record_count, total>;

constexpr std::uint32_t threads = 8;

std::string body_of(std::uint32_t epoch, std::uint32_t t, std::uint64_t i) {
  const std::uint64_t s = (std::uint64_t{epoch} * 1'000'003u + t) * 7'919u + i;
  std::string b(64 + s % 1500, '\0');
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<char>('a' + (s + k) % 26);
  return b;
}

struct ack {
  std::uint32_t epoch;
  std::uint32_t thread;
  std::uint64_t i;
};

template <class Backend>
struct opener;
template <>
struct opener<ks::leveldb_backend> {
  static constexpr const char* name = "leveldb";
};
template <>
struct opener<ks::lmdb_backend> {
  static constexpr const char* name = "lmdb";
};
template <>
struct opener<ks::rocksdb_backend> {
  static constexpr const char* name = "rocksdb";
};
template <>
struct opener<ks::sqlite_backend> {
  static constexpr const char* name = "sqlite";
};

// The child: writers until killed.
template <class Backend>
[[noreturn]] void run_child(const std::filesystem::path& path, std::uint32_t epoch, int ack_fd) {
  try {
    ks::store<crash_schema, Backend> db(path);
    std::vector<std::thread> ws;
    for (std::uint32_t t = 0; t < threads; ++t) {
      ws.emplace_back([&, t] {
        for (std::uint64_t i = 0;; ++i) {
          auto b = db.batch();
          b.template put<record>({epoch, t, i}, ks::bytes(body_of(epoch, t, i)));
          b.template put<twin>({epoch, t, i}, i);
          b.template add<total>({}, 1);
          b.commit({.sync = i % 2 == 0});
          const ack a{epoch, t, i};
          if (::write(ack_fd, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) ::_exit(5);
        }
      });
    }
    for (auto& w : ws) w.join();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
  }
  ::_exit(4);
}

template <class Backend>
void crash_rounds(int kills) {
  keyschema::testing::temp_dir dir;
  const std::filesystem::path path = dir.path() / "db";
  std::mt19937 rng(12345);
  std::uint64_t acknowledged = 0, verified = 0;
  for (int k = 0; k < kills; ++k) {
    const auto epoch = static_cast<std::uint32_t>(k);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      run_child<Backend>(path, epoch, fds[1]);
    }
    ::close(fds[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 80));
    ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    INFO(opener<Backend>::name << " kill " << k);
    REQUIRE(WIFSIGNALED(status));  // the child never ends on its own (4: it threw, see stderr)
    std::map<std::uint32_t, std::uint64_t> last_acked;  // thread -> last acknowledged i + 1
    ack a{};
    for (ssize_t n; (n = ::read(fds[0], &a, sizeof a)) == static_cast<ssize_t>(sizeof a);) {
      REQUIRE(a.epoch == epoch);
      auto& l = last_acked[a.thread];
      REQUIRE(a.i == l);  // a thread acknowledges its commits in order
      l = a.i + 1;
      ++acknowledged;
    }
    ::close(fds[0]);

    ks::store<crash_schema, Backend> db(path);
    for (std::uint32_t t = 0; t < threads; ++t) {
      INFO("thread " << t);
      std::uint64_t n = 0;
      for (const auto& e : db.template scan<record>(epoch, t)) {
        REQUIRE(e.template get<"i">() == n);  // a prefix 0..k-1: none lost in between
        REQUIRE(e.value.view() == body_of(epoch, t, n));
        REQUIRE(db.template get<twin>({epoch, t, n}) == std::optional<std::uint64_t>(n));
        ++n;
      }
      std::uint64_t twins = 0;
      for (const auto& e : db.template scan<twin>(epoch, t)) {
        (void)e;
        ++twins;
      }
      REQUIRE(twins == n);
      const std::uint64_t acked = last_acked.count(t) ? last_acked[t] : 0;
      CHECK(n >= acked);
      CHECK(n <= acked + 1);
      verified += n;
    }
    std::int64_t records = 0;
    for (const auto& e : db.template scan<record>().keys_only()) {
      (void)e;
      ++records;
    }
    REQUIRE(db.template get<record_count>({}).value_or(0) == records);
    REQUIRE(db.template get<total>({}).value_or(0) == records);
  }
  std::printf("group_commit_crash: backend=%s kills=%d acknowledged=%llu verified_commits=%llu\n",
              opener<Backend>::name, kills, static_cast<unsigned long long>(acknowledged),
              static_cast<unsigned long long>(verified));
  CHECK(acknowledged > 0);
}

int kills_per_backend() {
  if (const char* e = std::getenv("KEYSCHEMA_CRASH_KILLS")) return std::max(1, std::atoi(e) / 10);
  return 20;
}

TEST_CASE("group commit crash: leveldb", "[group_commit][crash]") { crash_rounds<ks::leveldb_backend>(kills_per_backend()); }
TEST_CASE("group commit crash: lmdb", "[group_commit][crash]") { crash_rounds<ks::lmdb_backend>(kills_per_backend()); }
TEST_CASE("group commit crash: rocksdb", "[group_commit][crash]") { crash_rounds<ks::rocksdb_backend>(kills_per_backend()); }
TEST_CASE("group commit crash: sqlite", "[group_commit][crash]") { crash_rounds<ks::sqlite_backend>(kills_per_backend()); }

}  // namespace group_commit_crash_test
