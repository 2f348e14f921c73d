// tests/durability/cases/disk_full.cpp: durability cases: a full disk: a clear error, no abort,
// nothing lost.
//
// For each configuration of the engine's traits (disk_full_configurations(): the defaults, and for
// LevelDB and RocksDB also small memtables, so that the disk can run out in a background flush or
// compaction instead of the log) and each of several file system sizes, the test mounts a tmpfs of
// that size (needs root, or CAP_SYS_ADMIN) and, each step in a forked child so that an abort or a
// crash fails the test instead of ending the test runner (tests/support/child_process.hpp):
//   1. fills it with synced commits of incompressible values until one fails: the failure must
//      be a keyschema::backend_error whose what() says "disk full (N bytes free on the file
//      system of PATH)"; then, still full, another commit and a sync of earlier writes on the
//      same handle must fail with a keyschema::error or succeed, never abort; then, after the
//      file system was remounted larger (space freed), one more commit on the same handle: it
//      may fail or succeed, but if it is acknowledged it must survive (LevelDB appended it after
//      the torn record of the failed commit, where recovery dropped it without an error);
//   2. shrinks the file system to what is used (full again) and reopens the database: it either
//      opens and reads every acknowledged commit, or fails with a keyschema::error that says
//      "disk full";
//   3. after the file system has been remounted larger (space freed), reopens it: every
//      acknowledged commit reads back, the failed commit left nothing, and a new commit works.
// The sizes are not multiples of each other, so the disk runs out in different files (log,
// table, info log, MANIFEST) and at different points of a record. Where no tmpfs can be mounted
// it prints "KEYSCHEMA-SKIP: ..." and CTest reports it skipped.
//
// Compiled once per engine, into its unit_group_<engine> (see durability.hpp).
#include <durability/durability.hpp>

#include <support/scratch_tmpfs.hpp>

#include <sys/statvfs.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace keyschema::durability::disk_full {

namespace ks = keyschema;
using ks::testing::in_child;
using ks::testing::outcome;
using ks::testing::scratch_tmpfs;

// tmpfs sizes: from a little more than every engine needs for an empty database up to 4 MiB.
const std::vector<std::string> sizes = {"512k", "640k", "768k", "896k", "1m", "1280k", "1536k", "2m", "3m", "4m"};
// What a full file system is remounted to before the last reopen: room for every engine to
// replay its log into a table file next to the log.
const std::string freed_size = "32m";
constexpr int max_commits = 100000;  // far more than 4 MiB holds

std::string key_of(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%06d", i);
  return buf;
}

// 1000 to 5999 bytes of xorshift output seeded by i: Snappy cannot shrink them, so the data
// takes its full size on disk.
// REQUIRES: i >= 0.
std::string value_of(int i) {
  std::uint64_t x = 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(i) * 0xD1B54A32D192ED03ull);
  std::string v(1000 + static_cast<std::size_t>((i * 7919) % 5000), '\0');
  for (char& c : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 56);
  }
  return v;
}

// The commits made on the same handle after the failure: while the disk is still full, and
// after space was freed.
const std::string retry_key = "retry";
constexpr int retry_index = max_commits;  // value_of(retry_index) is the retried commit's value
const std::string freed_key = "retry-freed";
constexpr int freed_index = max_commits + 1;

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

// What the child that filled the disk saw, written to a file off the tmpfs: one field a line,
// what() of the failure last.
struct fill_report {
  int acknowledged = 0;
  std::string kind = "none";  // "backend_error", "keyschema::error" or "none" (no commit failed)
  std::string native_call;
  std::string retry;  // another commit after the failure: "acknowledged" or "error: <what()>"
  std::string sync;   // an empty synced batch after it: "ok" or "error: <what()>"
  std::string freed;  // another commit after space was freed: "acknowledged" or "error: <what()>"
  std::string what;
};

void save(const fill_report& r, const fs::path& file) {
  std::ofstream out(file);
  out << r.acknowledged << '\n'
      << r.kind << '\n'
      << one_line(r.native_call) << '\n'
      << one_line(r.retry) << '\n'
      << one_line(r.sync) << '\n'
      << one_line(r.freed) << '\n'
      << one_line(r.what) << '\n';
  if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
}

fill_report load(const fs::path& file) {
  std::ifstream in(file);
  fill_report r;
  std::string n;
  std::getline(in, n);
  r.acknowledged = std::stoi(n);
  std::getline(in, r.kind);
  std::getline(in, r.native_call);
  std::getline(in, r.retry);
  std::getline(in, r.sync);
  std::getline(in, r.freed);
  std::getline(in, r.what);
  return r;
}

void write_text(const fs::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
}

// Step 1 (in a child): synced commits until one fails, then another commit and a sync, then
// free_space() and one more commit.
template <class Backend, class Options>
void fill(const fs::path& dir, const Options& options, const fs::path& report, const std::function<void()>& free_space) {
  Backend db(dir, options);
  fill_report r;
  for (int i = 0; i < max_commits; ++i) {
    ks::write_batch b;
    b.put(key_of(i), value_of(i));
    try {
      db.write(b, {});
    } catch (const ks::backend_error& e) {
      r.kind = "backend_error";
      r.native_call = e.native_call();
      r.what = e.what();
      break;
    } catch (const ks::error& e) {
      r.kind = "keyschema::error";
      r.what = e.what();
      break;
    }
    r.acknowledged = i + 1;
  }
  ks::write_batch b;
  b.put(retry_key, value_of(retry_index));
  try {
    db.write(b, {});
    r.retry = "acknowledged";
  } catch (const ks::error& e) {
    r.retry = std::string("error: ") + e.what();
  }
  try {
    db.write(ks::write_batch{}, {});
    r.sync = "ok";
  } catch (const ks::error& e) {
    r.sync = std::string("error: ") + e.what();
  }
  free_space();
  ks::write_batch f;
  f.put(freed_key, value_of(freed_index));
  try {
    db.write(f, {});
    r.freed = "acknowledged";
  } catch (const ks::error& e) {
    r.freed = std::string("error: ") + e.what();
  }
  save(r, report);
}

// The acknowledged commits [0, n) that read back with their value.
template <class Backend>
int readable(const Backend& db, int n) {
  int ok = 0;
  std::string v;
  for (int i = 0; i < n; ++i) {
    if (db.get(key_of(i), v, nullptr) && v == value_of(i)) ++ok;
  }
  return ok;
}

// Step 2 (in a child): reopening while the disk is still full. Writes "opened <readable>" or
// "error <what()>".
template <class Backend, class Options>
void reopen_full(const fs::path& dir, const Options& options, int acknowledged, const fs::path& report) {
  std::string line;
  try {
    Backend db(dir, options);
    line = "opened " + std::to_string(readable(db, acknowledged));
  } catch (const ks::error& e) {
    line = std::string("error ") + e.what();
  }
  write_text(report, line);
}

// Step 3 (in a child): after space was freed every acknowledged commit is there, the failed one
// is not, and the database takes new commits. Throws (the child exits 3) on a violation.
template <class Backend, class Options>
void verify(const fs::path& dir, const Options& options, const fill_report& r) {
  Backend db(dir, options);
  std::string v;
  for (int i = 0; i < r.acknowledged; ++i) {
    if (!db.get(key_of(i), v, nullptr)) {
      throw std::runtime_error("acknowledged commit " + std::to_string(i) + " of " +
                               std::to_string(r.acknowledged) + " is missing");
    }
    if (v != value_of(i)) throw std::runtime_error("acknowledged commit " + std::to_string(i) + " reads back wrong");
  }
  if (db.get(key_of(r.acknowledged), v, nullptr)) {
    throw std::runtime_error("the failed commit " + std::to_string(r.acknowledged) + " is in the database");
  }
  const bool retry_present = db.get(retry_key, v, nullptr);
  if (r.retry == "acknowledged" && !(retry_present && v == value_of(retry_index))) {
    throw std::runtime_error("the commit acknowledged after the failure is missing or wrong");
  }
  if (r.retry != "acknowledged" && retry_present) {
    throw std::runtime_error("the commit refused after the failure is in the database");
  }
  const bool freed_present = db.get(freed_key, v, nullptr);
  if (r.freed == "acknowledged" && !(freed_present && v == value_of(freed_index))) {
    throw std::runtime_error("the commit acknowledged on the same handle after space was freed is missing or wrong");
  }
  if (r.freed != "acknowledged" && freed_present) {
    throw std::runtime_error("the commit refused on the same handle after space was freed is in the database");
  }
  ks::write_batch b;
  b.put("after", "freed");
  db.write(b, {});
  if (!db.get("after", v, nullptr) || v != "freed") throw std::runtime_error("a commit after freeing space is lost");
}

std::string describe(const outcome& o) {
  if (o.signal != 0) return "killed by signal " + std::to_string(o.signal) + " (" + strsignal(o.signal) + ")";
  return "exit code " + std::to_string(o.code);
}

// What one engine did over the sizes, printed by check_engine.
struct tally {
  int signalled = 0;           // a child ended by a signal (an abort, a crash)
  int reopened_full = 0;       // reopening while full worked
  int refused_full = 0;        // reopening while full failed with an error
  int freed_acknowledged = 0;  // a commit on the failed handle after space was freed was acknowledged
};

// One engine on one file system size, counted into t.
template <class Backend, class Options>
void check_size(const char* engine, const Options& options, const std::string& size, tally& t) {
  scratch_tmpfs tmpfs(size);
  REQUIRE(tmpfs.mounted());
  temp_dir out("disk-full-report");
  const fs::path dir = tmpfs.path() / "db";
  INFO(engine << " on a " << size << " tmpfs");

  const outcome filled = in_child([&] {
    fill<Backend>(dir, options, out.path() / "fill", [&] {
      if (!tmpfs.resize(freed_size)) throw std::runtime_error("cannot remount the tmpfs larger");
    });
  });
  INFO("filling: " << describe(filled) << "; stderr: " << filled.err);
  CHECK(filled.exited);
  CHECK(filled.code == 0);
  if (!filled.exited || filled.code != 0) {
    if (filled.signal != 0) ++t.signalled;
    return;
  }
  const fill_report r = load(out.path() / "fill");
  INFO("acknowledged " << r.acknowledged << "; failure (" << r.kind << ", " << r.native_call << "): " << r.what
                       << "; retry: " << r.retry << "; sync: " << r.sync << "; after freeing space: " << r.freed);
  CHECK(r.kind == "backend_error");
  CHECK_THAT(r.what, Catch::Contains("disk full (") && Catch::Contains(" bytes free on the file system of "));
  CHECK(r.acknowledged > 0);
  CHECK((r.retry == "acknowledged" || r.retry.rfind("error: ", 0) == 0));
  CHECK((r.sync == "ok" || r.sync.rfind("error: ", 0) == 0));
  CHECK((r.freed == "acknowledged" || r.freed.rfind("error: ", 0) == 0));
  if (r.freed == "acknowledged") ++t.freed_acknowledged;

  // Full again: the file system shrunk to the bytes its files use.
  struct statvfs st {};
  REQUIRE(::statvfs(tmpfs.path().c_str(), &st) == 0);
  const std::uint64_t used = static_cast<std::uint64_t>(st.f_blocks - st.f_bfree) * st.f_frsize;
  REQUIRE(tmpfs.resize(std::to_string(used)));

  const outcome reopened = in_child([&] { reopen_full<Backend>(dir, options, r.acknowledged, out.path() / "full"); });
  INFO("reopening while full: " << describe(reopened) << "; stderr: " << reopened.err);
  CHECK(reopened.exited);
  CHECK(reopened.code == 0);
  bool signalled = reopened.signal != 0;
  if (reopened.exited && reopened.code == 0) {
    const std::string full = read_all(out.path() / "full");
    INFO("reopened while full: " << full);
    if (full.rfind("opened ", 0) == 0) {
      ++t.reopened_full;
      CHECK(full == "opened " + std::to_string(r.acknowledged));
    } else {
      ++t.refused_full;
      CHECK_THAT(full, Catch::StartsWith("error ") && Catch::Contains("disk full ("));
    }
  }

  REQUIRE(tmpfs.resize(freed_size));
  const outcome verified = in_child([&] { verify<Backend>(dir, options, r); });
  INFO("reopening after freeing space: " << describe(verified) << "; stderr: " << verified.err);
  CHECK(verified.exited);
  CHECK(verified.code == 0);
  if (signalled || verified.signal != 0) ++t.signalled;
}

template <class Backend, class Options>
void check_engine(const char* engine, const Options& options) {
  {
    scratch_tmpfs probe("64k");
    if (!probe.mounted()) {
      std::printf("KEYSCHEMA-SKIP: cannot mount a tmpfs to fill (%s; needs root or CAP_SYS_ADMIN); disk-full "
                  "behaviour was not checked\n",
                  probe.why().c_str());
      WARN("no tmpfs: not checked");
      return;
    }
  }
  tally t;
  for (const std::string& size : sizes) check_size<Backend>(engine, options, size, t);
  std::printf("durability disk_full: %s, %zu file system sizes: a child ended by a signal on %d; reopening while full "
              "worked on %d, failed with an error on %d; a commit on the failed handle after freeing space was "
              "acknowledged on %d\n",
              engine, sizes.size(), t.signalled, t.reopened_full, t.refused_full, t.freed_acknowledged);
  CHECK(t.signalled == 0);
}

TEST_CASE("disk full: the write fails with a clear error, the process survives, nothing committed is lost",
          "[disk_full]") {
  for (const auto& c : engine::disk_full_configurations()) check_engine<backend_type>(c.label.c_str(), c.options);
}

}  // namespace keyschema::durability::disk_full
