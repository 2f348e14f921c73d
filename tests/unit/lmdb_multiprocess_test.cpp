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
#include <support/migration_race.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace lmdb_multiprocess_test {

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
  CHECK(db.get<counter>({"c"}).value_or(-1) == std::int64_t{processes} * increments);
}

TEST_CASE("lmdb store: adds in batches of several processes lose no update", "[lmdb][multiprocess][counters]") {
  // A batch's add is resolved at commit inside LMDB's write transaction, which LMDB serializes
  // across processes; resolving it under the store's (per-process) writer lock alone would let
  // the other process commit between the read and the write.
  temp_dir dir("lmdb-mp-add");
  const auto path = dir.path() / "env";
  { lmdb_store db(path); }

  constexpr int processes = 2;
  constexpr int batches = 1000;
  const int ok = run_children(processes, [&](int p) {
    lmdb_store db(path);
    auto b = db.batch();
    for (int i = 0; i < batches; ++i) {
      b.add<counter>({"c"}, 1);
      b.put<item>({static_cast<std::uint32_t>(p), 0}, "last");
      b.commit({.sync = false});
    }
  });
  REQUIRE(ok == processes);

  lmdb_store db(path);
  CHECK(db.get<counter>({"c"}).value_or(-1) == std::int64_t{processes} * batches);
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

TEST_CASE("lmdb store: a transaction that outgrows the map is applied after growing it", "[lmdb][multiprocess]") {
  temp_dir dir("lmdb-mp-grow");
  ks::lmdb_options o;
  o.map_size = 64 * 1024;
  lmdb_store db(dir.path() / "env", o);
  const std::size_t before = db.backend().map_size();
  db.put<counter>({"c"}, 41);
  auto tx = db.transaction();
  const std::int64_t n = tx.get<counter>({"c"}).value_or(0);
  tx.put<counter>({"c"}, n + 1);
  for (std::uint32_t i = 0; i < 300; ++i) tx.put<item>({0, i}, std::string(2000, 'x'));
  tx.commit();  // MDB_MAP_FULL inside LMDB's write transaction: grown, begun again, replayed
  CHECK_FALSE(tx.is_open());
  CHECK(db.backend().map_size() > before);
  CHECK(db.get<counter>({"c"}) == 42);
  CHECK(db.get<item>({0, 299}) == std::string(2000, 'x'));
}

TEST_CASE("lmdb store: a transaction never commits over a state another process changed while the map grew",
          "[lmdb][multiprocess]") {
  temp_dir dir("lmdb-mp-conflict");
  const auto path = dir.path() / "env";
  ks::lmdb_options small;
  small.map_size = 64 * 1024;
  { lmdb_store db(path, small); }

  // The order is forced with pipes, no timing: (1) the parent's transaction reads "total";
  // (2) the child, told so, begins its own transaction and waits for LMDB's write lock;
  // (3) the parent's commit outgrows the map, which ends its LMDB write transaction, and the
  // growth waits for a snapshot the parent holds in another thread; (4) the child gets the lock,
  // increments "total", commits and says so; (5) the snapshot is released, the map grows, the
  // parent begins again and finds another transaction id: conflict_error, nothing written.
  int go[2], done[2];
  REQUIRE(::pipe(go) == 0);
  REQUIRE(::pipe(done) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(go[1]);
    ::close(done[0]);
    int rc = 0;
    try {
      lmdb_store db(path);
      char c = 0;
      if (::read(go[0], &c, 1) != 1) ::_exit(2);
      auto tx = db.transaction();  // waits for the parent's write lock
      tx.put<counter>({"total"}, tx.get<counter>({"total"}).value_or(0) + 1);
      tx.commit({.sync = false});
      if (::write(done[1], "d", 1) != 1) rc = 3;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      rc = 1;
    }
    ::_exit(rc);
  }

  ::close(go[0]);
  ::close(done[1]);  // a child that dies closes the last write end: the reader below sees EOF
  bool conflict = false;
  {
    lmdb_store db(path, small);
    auto snap = db.snapshot();  // holds back the map growth until the child has committed
    std::thread release([&, s = std::move(snap)]() mutable {
      char c = 0;
      (void)!::read(done[0], &c, 1);
      { auto gone = std::move(s); }
    });
    {
      auto tx = db.transaction();
      tx.put<counter>({"total"}, tx.get<counter>({"total"}).value_or(0) + 1);  // reads 0
      for (std::uint32_t i = 0; i < 200; ++i) tx.put<item>({7, i}, std::string(2000, 'y'));  // >> 64 KiB
      REQUIRE(::write(go[1], "g", 1) == 1);
      try {
        tx.commit({.sync = false});
      } catch (const ks::conflict_error& e) {
        conflict = true;
        CHECK_FALSE(tx.is_open());
        CHECK_THAT(e.what(), Catch::Contains("another process committed 1 transaction(s)"));
        CHECK_THAT(e.what(), Catch::Contains("Nothing was written: run the transaction again"));
      }
    }
    release.join();
    CHECK(conflict);
    CHECK(db.get<counter>({"total"}) == 1);  // the child's increment only
    CHECK_FALSE(db.contains<item>({7, 0}));

    // Run again: it reads the child's increment and commits.
    auto tx = db.transaction();
    tx.put<counter>({"total"}, tx.get<counter>({"total"}).value_or(0) + 1);
    for (std::uint32_t i = 0; i < 200; ++i) tx.put<item>({7, i}, std::string(2000, 'y'));
    tx.commit();
    CHECK(db.get<counter>({"total"}) == 2);
    CHECK(db.contains<item>({7, 199}));
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  ::close(go[1]);
  ::close(done[0]);
}

// Issue 30 case 3: a process holding a store open with the old schema kept acknowledging writes
// during and after a ks::migrate of another process, which the new schema could not read. Every
// write is now guarded, inside LMDB's write transaction, by the schema record the store opened
// with and the absence of a migration record (backend_with_write_guards).
TEST_CASE("lmdb store: a process open with the old schema is refused once another migrates, losing no "
          "acknowledged write",
          "[lmdb][multiprocess][migrate]") {
  temp_dir dir("lmdb-mp-migrate");
  const auto path = dir.path() / "env";
  ks::testing::migration_race::old_writer_during_migration<ks::lmdb_backend>(
      [&] { return ks::lmdb_backend(path); }, 4000, 20);
}

TEST_CASE("lmdb store: every write path of a store open with the old schema is refused during and after a "
          "migration",
          "[lmdb][multiprocess][migrate]") {
  temp_dir dir("lmdb-mp-migrate-paths");
  const auto path = dir.path() / "env";
  ks::testing::migration_race::every_write_path_refused<ks::lmdb_backend>([&] { return ks::lmdb_backend(path); });
}

TEST_CASE("lmdb: a ks::migrate whose progress another migration advanced is refused at its next batch",
          "[lmdb][multiprocess][migrate]") {
  temp_dir dir("lmdb-mp-migrate-two");
  const auto path = dir.path() / "env";
  ks::testing::migration_race::second_migrator_refused<ks::lmdb_backend>([&] { return ks::lmdb_backend(path); });
}

}  // namespace lmdb_multiprocess_test
