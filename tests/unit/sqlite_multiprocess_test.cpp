// tests/unit/sqlite_multiprocess_test.cpp: several processes writing one SQLite database.
//
// SQLite lets any number of processes open and write one database; its write lock (BEGIN
// IMMEDIATE) serializes their writers. keyschema::store runs its transactions inside the
// backend's write transaction (backend_with_write_transaction), so read-modify-write increments
// from several processes add up exactly, and plain puts and batches from several processes all
// land. Children are forked before any connection is open in the parent (SQLite connections
// must not cross fork()) and open their own store.
#include <keyschema/keyschema.hpp>
#include <keyschema/sqlite.hpp>
#include <support/migration_race.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace sqlite_multiprocess_test {

namespace ks = keyschema;
using ks::testing::temp_dir;

namespace {

using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"COUNTER">, ks::field<"name", std::string>>;
using item = ks::keyspace<"item", std::string, ks::lit<"ITEM">, ks::field<"process", std::uint32_t>,
                          ks::field<"n", std::uint32_t>>;
using schema = ks::schema<counter, item>;
using sqlite_store = ks::store<schema, ks::sqlite_backend>;

ks::sqlite_options patient() {
  ks::sqlite_options o;
  o.busy_timeout = std::chrono::milliseconds(60000);  // contention, not the timeout, is under test
  return o;
}

// Runs body(index) in `count` forked children at once and returns how many exited with 0.
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
      ::_exit(rc);
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

TEST_CASE("sqlite store: transactions of several processes lose no update", "[sqlite][multiprocess]") {
  temp_dir dir("sqlite-mp-counter");
  const auto path = dir.path() / "db";
  { sqlite_store db(path, patient()); }  // created (and its schema recorded) before the children start

  constexpr int processes = 4;
  constexpr int increments = 250;
  const int ok = run_children(processes, [&](int) {
    sqlite_store db(path, patient());
    for (int i = 0; i < increments; ++i) {
      auto tx = db.transaction();
      const std::int64_t n = tx.get<counter>({"c"}).value_or(0);
      tx.put<counter>({"c"}, n + 1);
      tx.commit({.sync = false});
    }
  });
  REQUIRE(ok == processes);

  sqlite_store db(path, patient());
  CHECK(db.get<counter>({"c"}).value_or(-1) == std::int64_t{processes} * increments);
}

TEST_CASE("sqlite store: adds in batches of several processes lose no update", "[sqlite][multiprocess][counters]") {
  // Resolved at commit inside SQLite's write transaction (BEGIN IMMEDIATE), which SQLite
  // serializes across processes.
  temp_dir dir("sqlite-mp-add");
  const auto path = dir.path() / "db";
  { sqlite_store db(path, patient()); }

  constexpr int processes = 2;
  constexpr int batches = 250;
  const int ok = run_children(processes, [&](int p) {
    sqlite_store db(path, patient());
    auto b = db.batch();
    for (int i = 0; i < batches; ++i) {
      b.add<counter>({"c"}, 1);
      b.put<item>({static_cast<std::uint32_t>(p), 0}, "last");
      b.commit({.sync = false});
    }
  });
  REQUIRE(ok == processes);

  sqlite_store db(path, patient());
  CHECK(db.get<counter>({"c"}).value_or(-1) == std::int64_t{processes} * batches);
}

TEST_CASE("sqlite store: puts and batches of several processes all land", "[sqlite][multiprocess]") {
  temp_dir dir("sqlite-mp-puts");
  const auto path = dir.path() / "db";
  { sqlite_store db(path, patient()); }

  constexpr int processes = 3;
  constexpr std::uint32_t per_process = 300;
  const int ok = run_children(processes, [&](int p) {
    sqlite_store db(path, patient());
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

  sqlite_store db(path, patient());
  for (std::uint32_t p = 0; p < processes; ++p) {
    std::uint32_t seen = 0;
    for (const auto& e : db.scan<item>(p)) {
      CHECK(e.value == (e.get<"n">() % 3 == 0 ? "put" : "batch"));
      ++seen;
    }
    CHECK(seen == per_process);
  }
}

// Issue 30 case 3 (see lmdb_multiprocess_test.cpp): every write of a store is guarded, inside
// SQLite's BEGIN IMMEDIATE transaction, by the schema record it opened with and the absence of a
// migration record.
TEST_CASE("sqlite store: a process open with the old schema is refused once another migrates, losing no "
          "acknowledged write",
          "[sqlite][multiprocess][migrate]") {
  temp_dir dir("sqlite-mp-migrate");
  const auto path = dir.path() / "db";
  ks::testing::migration_race::old_writer_during_migration<ks::sqlite_backend>(
      [&] { return ks::sqlite_backend(path, patient()); }, 4000, 20);
}

TEST_CASE("sqlite store: every write path of a store open with the old schema is refused during and after a "
          "migration",
          "[sqlite][multiprocess][migrate]") {
  temp_dir dir("sqlite-mp-migrate-paths");
  const auto path = dir.path() / "db";
  ks::testing::migration_race::every_write_path_refused<ks::sqlite_backend>(
      [&] { return ks::sqlite_backend(path, patient()); });
}

TEST_CASE("sqlite: a ks::migrate whose progress another migration advanced is refused at its next batch",
          "[sqlite][multiprocess][migrate]") {
  temp_dir dir("sqlite-mp-migrate-two");
  const auto path = dir.path() / "db";
  ks::testing::migration_race::second_migrator_refused<ks::sqlite_backend>(
      [&] { return ks::sqlite_backend(path, patient()); });
}

}  // namespace sqlite_multiprocess_test
