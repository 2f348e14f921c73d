// tests/durability/cases/processes.cpp: durability cases: several processes on one database.
//
// Two models (KEYSCHEMA_DURABILITY_SHARED_BY_PROCESSES, set by the engine's traits):
//   shared (LMDB, SQLite): any number of processes open and write one database, and the engine's
//     write lock (LMDB's write transaction, SQLite's BEGIN IMMEDIATE) serializes their writers.
//     keyschema::store runs its transactions and resolves a batch's adds inside that lock, so
//     read-modify-write increments from several processes add up exactly, and plain puts and
//     batches from several processes all land. A process holding a store open with the old schema
//     is refused once another migrates (support/migration_race.hpp). Children are forked before
//     the parent opens the database (engine handles must not cross fork()) and open their own.
//   locked (LevelDB, RocksDB): one process at a time; a second open, in this process or another,
//     is locked_error naming the database, and the first handle is unaffected.
//
// Compiled once per engine, into its unit_group_<engine> (see durability.hpp).
#include <durability/durability.hpp>

#include <support/migration_race.hpp>

#include <keyschema/keyschema.hpp>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace keyschema::durability::processes {

#if KEYSCHEMA_DURABILITY_SHARED_BY_PROCESSES

namespace ks = keyschema;

using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"COUNTER">, ks::field<"name", std::string>>;
using item = ks::keyspace<"item", std::string, ks::lit<"ITEM">, ks::field<"process", std::uint32_t>,
                          ks::field<"n", std::uint32_t>>;
using schema = ks::schema<counter, item>;
using store_type = ks::store<schema, backend_type>;

inline constexpr process_load load = engine::load;

// The store on path with engine::shared_options() (options for contention: a long busy timeout).
inline std::unique_ptr<store_type> open_store(const fs::path& path) {
  return std::make_unique<store_type>(path, engine::shared_options());
}
inline backend_type open_shared(const fs::path& path) { return backend_type(path, engine::shared_options()); }

// Runs body(index) in `count` forked children at once and returns how many exited with 0. A child
// reports an exception on stderr and exits with 1.
inline int run_children(int count, const std::function<void(int)>& body) {
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

TEST_CASE("processes: transactions of several processes lose no update", "[processes]") {
  temp_dir dir(std::string(engine::name) + "-mp-counter");
  const auto path = dir.path() / "db";
  open_store(path).reset();  // created (and its schema recorded) before the children start

  const int ok = run_children(load.transaction_processes, [&](int) {
    const auto db = open_store(path);
    for (int i = 0; i < load.transaction_increments; ++i) {
      auto tx = db->transaction();
      const std::int64_t n = tx.get<counter>({"c"}).value_or(0);
      tx.put<counter>({"c"}, n + 1);
      tx.commit({.sync = false});  // the count, not durability, is under test
    }
  });
  REQUIRE(ok == load.transaction_processes);

  const auto db = open_store(path);
  CHECK(db->get<counter>({"c"}).value_or(-1) == std::int64_t{load.transaction_processes} * load.transaction_increments);
}

TEST_CASE("processes: adds in batches of several processes lose no update", "[processes][counters]") {
  // A batch's add is resolved at commit inside the engine's write lock, which the engine
  // serializes across processes; resolving it under the store's (per-process) writer lock alone
  // would let the other process commit between the read and the write.
  temp_dir dir(std::string(engine::name) + "-mp-add");
  const auto path = dir.path() / "db";
  open_store(path).reset();

  const int ok = run_children(load.add_processes, [&](int p) {
    const auto db = open_store(path);
    auto b = db->batch();
    for (int i = 0; i < load.add_batches; ++i) {
      b.add<counter>({"c"}, 1);
      b.put<item>({static_cast<std::uint32_t>(p), 0}, "last");
      b.commit({.sync = false});
    }
  });
  REQUIRE(ok == load.add_processes);

  const auto db = open_store(path);
  CHECK(db->get<counter>({"c"}).value_or(-1) == std::int64_t{load.add_processes} * load.add_batches);
}

TEST_CASE("processes: puts and batches of several processes all land", "[processes]") {
  temp_dir dir(std::string(engine::name) + "-mp-puts");
  const auto path = dir.path() / "db";
  open_store(path).reset();

  const int ok = run_children(load.put_processes, [&](int p) {
    const auto db = open_store(path);
    const auto proc = static_cast<std::uint32_t>(p);
    for (std::uint32_t n = 0; n < load.puts_per_process; n += 3) {
      db->put<item>({proc, n}, "put", {.sync = false});
      auto b = db->batch();
      b.put<item>({proc, n + 1}, "batch");
      b.put<item>({proc, n + 2}, "batch");
      b.commit({.sync = false});
    }
  });
  REQUIRE(ok == load.put_processes);

  const auto db = open_store(path);
  for (std::uint32_t p = 0; p < static_cast<std::uint32_t>(load.put_processes); ++p) {
    std::uint32_t seen = 0;
    for (const auto& e : db->scan<item>(p)) {
      CHECK(e.value == (e.get<"n">() % 3 == 0 ? "put" : "batch"));
      ++seen;
    }
    CHECK(seen == load.puts_per_process);
  }
}

// Issue 30 case 3: a process holding a store open with the old schema kept acknowledging writes
// during and after a ks::migrate of another process, which the new schema could not read. Every
// write is now guarded, inside the engine's write lock, by the schema record the store opened
// with and the absence of a migration record (backend_with_write_guards).
TEST_CASE("processes: a process open with the old schema is refused once another migrates, losing no acknowledged "
          "write",
          "[processes][migrate]") {
  temp_dir dir(std::string(engine::name) + "-mp-migrate");
  const auto path = dir.path() / "db";
  ks::testing::migration_race::old_writer_during_migration<backend_type>([&] { return open_shared(path); },
                                                                         4000, 20);
}

TEST_CASE("processes: every write path of a store open with the old schema is refused during and after a migration",
          "[processes][migrate]") {
  temp_dir dir(std::string(engine::name) + "-mp-migrate-paths");
  const auto path = dir.path() / "db";
  ks::testing::migration_race::every_write_path_refused<backend_type>([&] { return open_shared(path); });
}

TEST_CASE("processes: a ks::migrate whose progress another migration advanced is refused at its next batch",
          "[processes][migrate]") {
  temp_dir dir(std::string(engine::name) + "-mp-migrate-two");
  const auto path = dir.path() / "db";
  ks::testing::migration_race::second_migrator_refused<backend_type>([&] { return open_shared(path); });
}

#else  // one process at a time

inline void put(backend_type& db, const std::string& k, const std::string& v) {
  write_batch wb;
  wb.put(k, v);
  db.write(wb, {});
}
inline std::string get(const backend_type& db, const std::string& k) {
  std::string v;
  return db.get(k, v, nullptr) ? v : "<missing>";
}

TEST_CASE("processes: a second open of the same path in this process is locked_error", "[processes]") {
  temp_dir dir(std::string(engine::name) + "-locked");
  const auto path = dir.path() / "db";
  {
    backend_type first(path);
    put(first, "k", "v");
    const auto e = thrown<locked_error>([&] { backend_type second(path); });
    REQUIRE(e);
    CHECK(e->native_call() == engine::open_call);
    CHECK(contains(e->what(), path.string()));
    CHECK(get(first, "k") == "v");  // the first handle is unaffected
  }
  backend_type again(path);  // the lock went with the first handle
  CHECK(get(again, "k") == "v");
}

TEST_CASE("processes: a database held by another process is locked_error", "[processes]") {
  temp_dir dir(std::string(engine::name) + "-locked");
  const auto path = dir.path() / "db";
  { backend_type create(path); }
  const std::string lock_file = (path / "LOCK").string();

  // The child takes the engine's fcntl lock on LOCK the way another process of the engine would.
  // It only makes async-signal-safe calls, so forking a process that has threads is fine.
  int to_parent[2], to_child[2];
  REQUIRE(::pipe(to_parent) == 0);
  REQUIRE(::pipe(to_child) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int fd = ::open(lock_file.c_str(), O_RDWR);
    struct flock fl = {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    const char status = (fd >= 0 && ::fcntl(fd, F_SETLK, &fl) == 0) ? '1' : '0';
    (void)!::write(to_parent[1], &status, 1);
    char c;
    (void)!::read(to_child[0], &c, 1);
    ::_exit(0);
  }
  struct release_child {
    int fd;
    pid_t pid;
    ~release_child() {
      (void)!::write(fd, "x", 1);
      int st = 0;
      ::waitpid(pid, &st, 0);
    }
  } guard{to_child[1], pid};

  char status = 0;
  REQUIRE(::read(to_parent[0], &status, 1) == 1);
  REQUIRE(status == '1');
  const auto e = thrown<locked_error>([&] { backend_type db(path); });
  REQUIRE(e);
  CHECK(e->native_call() == engine::open_call);
  CHECK(contains(e->what(), path.string()));
  for (int fd : {to_parent[0], to_parent[1], to_child[0]}) ::close(fd);
}

#endif

}  // namespace keyschema::durability::processes
