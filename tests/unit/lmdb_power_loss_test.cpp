// tests/unit/lmdb_power_loss_test.cpp: a synced LMDB commit returns only after it is on disk.
//
// What a SIGKILL cannot show: whether a commit reached stable storage before write() returned.
// The test runs a probe (a hidden test case of this executable) under
//   strace -f -e trace=openat,close,pwrite64,pwritev,pwritev2,writev,write,fdatasync,fsync,msync
// and reads the system calls between the probe's markers. The probe commits one batch with
// write_options{} (synced, the default) and one with {.sync = false}. Required order for the
// synced commit, all before its end marker:
//   1. the data pages are written to data.mdb (LMDB 0.9.24: lseek + writev; pwrite64 / pwritev
//      count too) on LMDB's read-write descriptor,
//   2. that descriptor is flushed (fdatasync, or fsync),
//   3. the meta page is written through the descriptor LMDB opened with O_DSYNC (so the write
//      returns only once it is on stable storage), and nothing is written to data.mdb after it.
// For the unsynced commit: data and meta pages are written, nothing is flushed, and the meta page
// does not go through the O_DSYNC descriptor.
// Without strace the test prints "KEYSCHEMA-SKIP: ..." and CTest reports it skipped, not passed.
#include <keyschema/lmdb.hpp>
#include <support/temp_dir.hpp>

#include "strace_probe.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace lmdb_power_loss_test {

namespace ks = keyschema;
using ks::testing::temp_dir;

namespace {

constexpr const char* probe_env = "KEYSCHEMA_LMDB_PROBE_DIR";

using ks::testing::strace_probe::marker;
using ks::testing::strace_probe::segment;
using ks::testing::strace_probe::describe;

// One system call of the trace that concerns data.mdb (or a marker).
struct event {
  enum kind_t { marker, data_write, meta_write, flush } kind;
  std::string text;  // the marker, or the line
};

// The markers and the calls on descriptors of data.mdb; the O_DSYNC (or O_SYNC) descriptor's
// writes are the meta page's.
std::vector<event> read_trace(const std::string& file) {
  std::vector<event> out;
  for (const ks::testing::strace_probe::traced& t : ks::testing::strace_probe::read_trace(file)) {
    if (t.is_marker) {
      out.push_back({event::marker, t.text});
      continue;
    }
    if (!t.path.ends_with("/data.mdb")) continue;
    const bool dsync = t.flags.find("O_DSYNC") != std::string::npos || t.flags.find("O_SYNC") != std::string::npos;
    if (t.call.find("write") != std::string::npos) out.push_back({dsync ? event::meta_write : event::data_write, t.text});
    else out.push_back({event::flush, t.text});
  }
  return out;
}

}  // namespace

// The probe: run only by the test below, under strace (hidden tag).
TEST_CASE("lmdb power-loss probe", "[.lmdb_probe]") {
  const char* dir = std::getenv(probe_env);
  REQUIRE(dir != nullptr);
  ks::lmdb_backend db(dir);
  ks::write_batch b;
  for (int i = 0; i < 50; ++i) b.put("key-" + std::to_string(i), std::string(300, 'v'));
  marker("sync-begin");
  db.write(b, {});
  marker("sync-end");
  b.clear();
  for (int i = 0; i < 50; ++i) b.put("other-" + std::to_string(i), std::string(300, 'w'));
  marker("nosync-begin");
  db.write(b, {.sync = false});
  marker("nosync-end");
}

TEST_CASE("lmdb: a synced commit returns after its data pages, a flush and its meta page", "[lmdb][power]") {
  if (!ks::testing::strace_probe::has_strace("the LMDB commit order")) return;
  temp_dir dir("lmdb-power");
  const std::string env = (dir.path() / "env").string();
  const std::string trace = (dir.path() / "trace.txt").string();
  ks::testing::strace_probe::run_under_strace(
      "[.lmdb_probe]", probe_env, env, std::string(ks::testing::strace_probe::write_and_sync_calls) + ",msync", trace,
      (dir.path() / "probe.out").string());
  const std::vector<event> all = read_trace(trace);

  SECTION("synced (write_options{})") {
    const std::vector<event> s = segment(all, "sync");
    INFO("data.mdb calls of the synced commit:\n" << describe(s));
    std::size_t first_flush = s.size(), last_data = 0, meta = s.size();
    bool any_data = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i].kind == event::flush && first_flush == s.size()) first_flush = i;
      if (s[i].kind == event::data_write) {
        any_data = true;
        last_data = i;
      }
      if (s[i].kind == event::meta_write) meta = i;
    }
    REQUIRE(any_data);                // 1. data pages written
    REQUIRE(first_flush < s.size());  // 2. flushed
    CHECK(last_data < first_flush);   //    after every data page
    REQUIRE(meta < s.size());         // 3. the meta page through the O_DSYNC descriptor
    CHECK(first_flush < meta);        //    after the flush
    CHECK(meta == s.size() - 1);      //    and nothing of data.mdb after it
  }
  SECTION("unsynced ({.sync = false})") {
    const std::vector<event> s = segment(all, "nosync");
    INFO("data.mdb calls of the unsynced commit:\n" << describe(s));
    std::size_t writes = 0;
    for (const event& e : s) {
      CHECK(e.kind != event::flush);
      CHECK(e.kind != event::meta_write);
      if (e.kind == event::data_write) ++writes;
    }
    CHECK(writes >= 2);  // data pages and the meta page, unflushed
  }
}

}  // namespace lmdb_power_loss_test
