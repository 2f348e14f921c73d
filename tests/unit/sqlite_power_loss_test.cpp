// tests/unit/sqlite_power_loss_test.cpp: a synced SQLite commit returns only after the
// write-ahead log holding it is on disk; an unsynced one flushes nothing.
//
// What a SIGKILL cannot show: whether a commit reached stable storage before write() returned.
// The test runs a probe (a hidden test case of this executable) under
//   strace -f -e trace=openat,close,pwrite64,pwritev,pwritev2,writev,write,fdatasync,fsync
// and reads the system calls between the probe's markers. In WAL mode a commit appends its pages
// as frames to keyschema.sqlite3-wal, the last one marked as the commit frame; SQLite's recovery
// keeps exactly the frames up to the last intact commit frame. Required for a commit made with
// write_options{} (synced, the default; PRAGMA synchronous = FULL), before its end marker:
//   1. its frames are written to the -wal file,
//   2. then that descriptor is flushed (fdatasync or fsync), with no frame written after it.
// So once write() returned, a power loss cannot take the commit away. For {.sync = false}
// (synchronous = NORMAL): frames are written and nothing is flushed; a following empty batch
// with {.sync = true} flushes the -wal file, which makes the unsynced commit durable too.
// Without strace the test prints "KEYSCHEMA-SKIP: ..." and CTest reports it skipped, not passed.
#include <keyschema/counters.hpp>
#include <keyschema/sqlite.hpp>
#include <keyschema/store.hpp>
#include <support/temp_dir.hpp>

#include "strace_probe.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace sqlite_power_loss_test {

namespace ks = keyschema;
using ks::testing::temp_dir;

namespace {

constexpr const char* probe_env = "KEYSCHEMA_SQLITE_PROBE_DIR";

using hits = ks::keyspace<"hits", std::int64_t, ks::lit<"HITS">>;
using counter_schema = ks::schema<hits>;

using ks::testing::strace_probe::marker;
using ks::testing::strace_probe::segment;
using ks::testing::strace_probe::describe;

// One system call on the -wal file (or a marker).
struct event {
  enum kind_t { marker, wal_write, wal_flush, other_flush } kind;
  std::string text;
};

// The markers, the writes and flushes of the -wal file, and flushes of any other descriptor.
std::vector<event> read_trace(const std::string& file) {
  std::vector<event> out;
  for (const ks::testing::strace_probe::traced& t : ks::testing::strace_probe::read_trace(file)) {
    if (t.is_marker) {
      out.push_back({event::marker, t.text});
      continue;
    }
    const bool wal = t.path.ends_with("-wal");
    const bool flush = t.call.find("sync") != std::string::npos;
    if (wal) out.push_back({flush ? event::wal_flush : event::wal_write, t.text});
    else if (flush) out.push_back({event::other_flush, t.text});
  }
  return out;
}

// The segment's -wal calls are a synced commit's: frames written, then flushed after the last one.
void check_flushed_after_frames(const std::vector<event>& s) {
  INFO("-wal calls of the synced commit:\n" << describe(s));
  std::size_t last_write = 0, last_flush = s.size();
  bool any_write = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].kind == event::wal_write) {
      any_write = true;
      last_write = i;
    }
    if (s[i].kind == event::wal_flush) last_flush = i;
  }
  REQUIRE(any_write);              // 1. frames written
  REQUIRE(last_flush < s.size());  // 2. flushed
  CHECK(last_write < last_flush);  //    after the last frame
}

// The segment's calls are an unsynced commit's: frames written, nothing flushed.
void check_no_flush(const std::vector<event>& s) {
  INFO("calls of the unsynced commit:\n" << describe(s));
  std::size_t writes = 0;
  for (const event& e : s) {
    CHECK(e.kind != event::wal_flush);
    CHECK(e.kind != event::other_flush);
    if (e.kind == event::wal_write) ++writes;
  }
  CHECK(writes >= 1);
}

}  // namespace

TEST_CASE("sqlite power-loss probe", "[.sqlite_probe]") {
  const char* dir = std::getenv(probe_env);
  REQUIRE(dir != nullptr);
  ks::sqlite_backend db(dir);
  ks::write_batch b;
  b.put("warm-up", "v");
  db.write(b, {});  // the -wal file exists from here on
  b.clear();
  for (int i = 0; i < 50; ++i) b.put("key-" + std::to_string(i), std::string(300, 'v'));
  marker("sync-begin");
  db.write(b, {});
  marker("sync-end");
  b.clear();
  for (int i = 0; i < 50; ++i) b.put("other-" + std::to_string(i), std::string(300, 'w'));
  marker("nosync-begin");
  db.write(b, {.sync = false});
  marker("nosync-end");
  marker("flush-begin");
  db.write(ks::write_batch{}, {.sync = true});
  marker("flush-end");
  // A write transaction begun for an unsynced commit (what keyschema::store does for its
  // read-modify-writes: adds, counts, indexes), then one begun unsynced but committed synced.
  b.clear();
  b.put("txn-nosync", std::string(300, 't'));
  marker("txn-nosync-begin");
  {
    auto t = db.begin_write(ks::write_options{.sync = false});
    std::string v;
    (void)t.get("warm-up", v);
    t.commit(b, {.sync = false});
  }
  marker("txn-nosync-end");
  b.clear();
  b.put("txn-late-sync", std::string(300, 'u'));
  marker("txn-late-sync-begin");
  {
    auto t = db.begin_write(ks::write_options{.sync = false});
    t.commit(b, {.sync = true});
  }
  marker("txn-late-sync-end");
  // Through a store: an add (resolved in a write transaction) with {.sync = false}.
  {
    ks::store<counter_schema, ks::sqlite_backend> store(std::string(dir) + "-store");
    store.add<hits>({}, 1);  // its -wal file exists from here on
    marker("store-add-nosync-begin");
    store.add<hits>({}, 1, {.sync = false});
    marker("store-add-nosync-end");
  }
}

TEST_CASE("sqlite: a synced commit returns after its log frames are written and flushed", "[sqlite][power]") {
  if (!ks::testing::strace_probe::has_strace("the SQLite commit order")) return;
  temp_dir dir("sqlite-power");
  const std::string db = (dir.path() / "db").string();
  const std::string trace = (dir.path() / "trace.txt").string();
  ks::testing::strace_probe::run_under_strace("[.sqlite_probe]", probe_env, db,
                                              ks::testing::strace_probe::write_and_sync_calls, trace,
                                              (dir.path() / "probe.out").string());
  const std::vector<event> all = read_trace(trace);

  SECTION("synced (write_options{})") { check_flushed_after_frames(segment(all, "sync")); }
  SECTION("unsynced ({.sync = false}), then an empty synced batch") {
    check_no_flush(segment(all, "nosync"));
    const std::vector<event> f = segment(all, "flush");
    INFO("calls of the empty synced batch:\n" << describe(f));
    std::size_t flushes = 0;
    for (const event& e : f) flushes += e.kind == event::wal_flush ? 1 : 0;
    CHECK(flushes == 1);
  }
  // A read-modify-write with {.sync = false} waits for no disk (it did: SQLite's write
  // transactions always committed at synchronous = FULL), and a transaction begun unsynced but
  // committed synced flushes the log after its frames.
  SECTION("a write transaction begun for an unsynced commit, and a store's add with {.sync = false}, flush nothing") {
    for (const char* name : {"txn-nosync", "store-add-nosync"}) {
      INFO(name);
      check_no_flush(segment(all, name));
    }
  }
  SECTION("a write transaction begun unsynced and committed synced flushes after its last frame") {
    check_flushed_after_frames(segment(all, "txn-late-sync"));
  }
}

}  // namespace sqlite_power_loss_test
