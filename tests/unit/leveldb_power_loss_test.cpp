// tests/unit/leveldb_power_loss_test.cpp: power-loss simulation of keyschema::leveldb_backend.
//
// A writer commits a stream of batches, a random mix of synced and unsynced, into a database
// with a small write buffer (LevelDB switches log files every few dozen commits). At random
// points the power is cut (keyschema::testing::power_loss_env drops everything not synced), the
// database is reopened and checked: the commits present are exactly 0..k-1 (a prefix of the
// stream, each batch whole and with its own contents), and k covers every commit up to the last
// synced one that returned. Half of the crash points are aimed at the dangerous moment: right
// after the first synced commit that follows a switch of log files.
//
// Crash points: 250 by default, 60 under AddressSanitizer; KEYSCHEMA_POWER_LOSS_CRASHES=<n> sets
// another count (the long mode) and KEYSCHEMA_POWER_LOSS_SEED=<n> the random seed. The figures
// are printed at the end.
#include <catch2/catch.hpp>

#include <keyschema/error.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/write_batch.hpp>

#include <support/temp_dir.hpp>

#include "leveldb_power_loss_env.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>

using keyschema::key_range;
using keyschema::leveldb_backend;
using keyschema::leveldb_options;
using keyschema::write_batch;
using keyschema::write_options;
using keyschema::testing::power_loss_env;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int default_crash_points = 60;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int default_crash_points = 60;
#else
constexpr int default_crash_points = 250;
#endif
#else
constexpr int default_crash_points = 250;
#endif

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

leveldb_options options_for(power_loss_env& env) {
  leveldb_options o;
  o.env = &env;
  o.write_buffer_bytes = 64 << 10;  // LevelDB's minimum: a new log every ~64 KiB of writes
  o.compression = false;
  o.cache_bytes = 256 << 10;
  return o;
}

std::string index_key(char tag, std::uint64_t i) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%c%010llu", tag, static_cast<unsigned long long>(i));
  return buf;
}

// Commit i's value: its index, then filler of a length that varies with i (100..1499 bytes).
std::string commit_value(std::uint64_t i) {
  return std::to_string(i) + ":" + std::string(100 + (i * 7919) % 1400, static_cast<char>('a' + i % 26));
}

// Commit i: a batch of two entries, both present or both absent after any crash.
void commit(leveldb_backend& db, std::uint64_t i, bool sync) {
  write_batch wb;
  wb.put(index_key('c', i), commit_value(i));
  wb.put(index_key('m', i), std::to_string(i));
  db.write(wb, write_options{.sync = sync});
}

// The number k of commits present, after checking that they are exactly commits 0..k-1, whole.
std::uint64_t present_prefix(const leveldb_backend& db) {
  std::uint64_t k = 0;
  for (auto c = db.cursor(key_range{"c", "d"}, nullptr); c.valid(); c.next(), ++k) {
    INFO("commit " << k << " of the prefix");
    REQUIRE(c.key() == index_key('c', k));  // a gap: a later commit survived an earlier one
    REQUIRE(c.value() == commit_value(k));
  }
  std::uint64_t m = 0;
  for (auto c = db.cursor(key_range{"m", "n"}, nullptr); c.valid(); c.next(), ++m) {
    REQUIRE(c.key() == index_key('m', m));
    REQUIRE(c.value() == std::to_string(m));
  }
  REQUIRE(m == k);  // every batch whole
  return k;
}

}  // namespace

TEST_CASE("leveldb_backend: after a power loss the commits present are a prefix covering every synced one",
          "[leveldb][power-loss]") {
  const std::uint64_t crash_points = env_number("KEYSCHEMA_POWER_LOSS_CRASHES", default_crash_points);
  const std::uint64_t seed = env_number("KEYSCHEMA_POWER_LOSS_SEED", 20261201);
  std::mt19937_64 rng(seed);
  constexpr int crashes_per_database = 10;

  std::uint64_t crashes = 0, aimed = 0, commits = 0, synced = 0, checked = 0, lost = 0, log_switches = 0;
  const auto start = std::chrono::steady_clock::now();
  while (crashes < crash_points) {
    keyschema::testing::temp_dir dir("leveldb-power");
    const auto path = dir.path() / "db";
    power_loss_env env;
    std::uint64_t next = 0;      // commits issued in the history that survived
    std::uint64_t required = 0;  // commits that must survive the next crash
    for (int round = 0;; ++round) {
      env.restore_power();
      leveldb_backend db(path, options_for(env));
      if (round > 0) {
        INFO("seed " << seed << ", crash point " << crashes << ": " << next << " commits issued, the first "
                     << required << " must be present");
        const std::uint64_t k = present_prefix(db);
        REQUIRE(k >= required);
        REQUIRE(k <= next);
        ++crashes;
        checked += k;
        lost += next - k;
        next = required = k;  // recovery wrote what it found to synced table files
      }
      if (round == crashes_per_database || crashes >= crash_points) break;

      // 0: crash after a random number of commits; 1: right after the first synced commit that
      // follows a switch of log files.
      const bool aim = rng() % 2 == 1;
      const std::uint64_t n = aim ? 2000 : rng() % 300;
      const int logs_before = env.logs_created;
      for (std::uint64_t j = 0; j < n; ++j) {
        const bool switched = env.logs_created != logs_before;
        const bool sync = (aim && switched) || rng() % 5 == 0;
        commit(db, next, sync);
        ++commits;
        ++next;
        if (sync) {
          ++synced;
          required = next;
        }
        if (aim && switched && sync) break;
      }
      if (aim) ++aimed;
      log_switches += static_cast<std::uint64_t>(env.logs_created - logs_before);
      env.cut_power();
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "leveldb power loss: seed %llu, %llu crash points (%llu aimed after a log switch), %llu commits "
      "(%llu synced), %llu log switches, %llu commits verified present, %llu unsynced commits lost, %.2f s\n",
      static_cast<unsigned long long>(seed), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(aimed), static_cast<unsigned long long>(commits),
      static_cast<unsigned long long>(synced), static_cast<unsigned long long>(log_switches),
      static_cast<unsigned long long>(checked), static_cast<unsigned long long>(lost), seconds);
  // The simulation must actually drop data, or it proves nothing.
  CHECK(lost > 0);
  CHECK(log_switches > 0);
}

TEST_CASE("leveldb_backend: closing the backend makes unsynced commits durable", "[leveldb][power-loss]") {
  keyschema::testing::temp_dir dir("leveldb-power");
  const auto path = dir.path() / "db";
  power_loss_env env;
  {
    leveldb_backend db(path, options_for(env));
    for (std::uint64_t i = 0; i < 10; ++i) commit(db, i, false);
  }  // a clean close
  env.cut_power();
  env.restore_power();
  leveldb_backend db(path, options_for(env));
  CHECK(present_prefix(db) == 10);
}

TEST_CASE("leveldb_backend: a log that cannot be synced at a log switch fails the next synced commit",
          "[leveldb][power-loss]") {
  keyschema::testing::temp_dir dir("leveldb-power");
  const auto path = dir.path() / "db";
  power_loss_env env;
  leveldb_backend db(path, options_for(env));
  commit(db, 0, true);
  const int logs_before = env.logs_created;
  env.fail_log_sync = true;  // the old log's sync at the switch fails
  std::uint64_t i = 1;
  while (env.logs_created == logs_before) {
    REQUIRE(i < 10000);
    commit(db, i++, false);
  }
  env.fail_log_sync = false;  // the new log could be synced, but the prefix cannot be promised
  try {
    commit(db, i, true);
    FAIL("a synced commit returned though an earlier log was never synced");
  } catch (const keyschema::backend_error& e) {
    CHECK(e.native_call() == "leveldb::DB::Write");
    CHECK(std::string_view(e.what()).find("injected sync failure") != std::string_view::npos);
  }
}
