// tests/unit/lmdb_multiprocess_test.cpp: several processes writing one LMDB environment.
//
// LMDB lets any number of processes open and write one environment. The store's own writer lock
// is a mutex of one process, so a store transaction on LMDB must run inside LMDB's write
// transaction, which LMDB serializes across processes: read-modify-write increments from several
// processes then add up exactly. Plain puts and batches from several processes must all land.
// Children are forked and open their own store: LMDB handles must not cross fork(), so the
// parent holds no environment open while they run.
#include <keyschema/keyschema.hpp>
#include <keyschema/lmdb.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ks = keyschema;
using ks::testing::temp_dir;

namespace {

using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"COUNTER">, ks::field<"name", std::string>>;
using item = ks::keyspace<"item", std::string, ks::lit<"ITEM">, ks::field<"process", std::uint32_t>,
                          ks::field<"n", std::uint32_t>>;
using schema = ks::schema<counter, item>;
using lmdb_store = ks::store<schema, ks::lmdb_backend>;

// Runs body(index) in `count` forked children at once and returns how many exited with 0. A child
// reports an exception on stderr and exits with 1.
int run_children(int count, const std::function<void(int)>& body) {
  std::vector<pid_t> pids;
  for (int i = 0; i < count; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) break;
    if (pid == 0) {
      int rc = 0;
      try {
        body(i);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
        rc = 1;
      }
      std::fflush(stderr);
      ::_exit(rc);  // no Catch2 teardown, no atexit handlers in the child
    }
    pids.push_back(pid);
  }
  int ok = 0;
  for (pid_t pid : pids) {
    int status = 0;
    if (::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) ++ok;
  }
  return ok;
}

}  // namespace

TEST_CASE("lmdb store: transactions of several processes lose no update", "[lmdb][multiprocess]") {
  temp_dir dir("lmdb-mp-counter");
  const auto path = dir.path() / "env";
  { lmdb_store db(path); }  // created (and its schema recorded) before the children start

  constexpr int processes = 3;
  constexpr int increments = 3000;
  const int ok = run_children(processes, [&](int) {
    lmdb_store db(path);
    for (int i = 0; i < increments; ++i) {
      auto tx = db.transaction();
      const std::int64_t n = tx.get<counter>({"c"}).value_or(0);
      tx.put<counter>({"c"}, n + 1);
      tx.commit({.sync = false});  // the count, not durability, is under test
    }
  });
  REQUIRE(ok == processes);

  lmdb_store db(path);
  CHECK(db.get<counter>({"c"}) == std::int64_t{processes} * increments);
}

TEST_CASE("lmdb store: puts and batches of several processes all land", "[lmdb][multiprocess]") {
  temp_dir dir("lmdb-mp-puts");
  const auto path = dir.path() / "env";
  { lmdb_store db(path); }

  constexpr int processes = 3;
  constexpr std::uint32_t per_process = 600;
  const int ok = run_children(processes, [&](int p) {
    lmdb_store db(path);
    const auto proc = static_cast<std::uint32_t>(p);
    for (std::uint32_t n = 0; n < per_process; n += 3) {
      db.put<item>({proc, n}, "put", {.sync = false});
      auto b = db.batch();
      b.put<item>({proc, n + 1}, "batch");
      b.put<item>({proc, n + 2}, "batch");
      b.commit({.sync = false});
    }
  });
  REQUIRE(ok == processes);

  lmdb_store db(path);
  for (std::uint32_t p = 0; p < processes; ++p) {
    std::uint32_t seen = 0;
    for (const auto& e : db.scan<item>(p)) {
      CHECK(e.value == (e.get<"n">() % 3 == 0 ? "put" : "batch"));
      ++seen;
    }
    CHECK(seen == per_process);
  }
}
