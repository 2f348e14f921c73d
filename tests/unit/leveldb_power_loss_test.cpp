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
// Deterministic cases cover the old logs syncing_env syncs at the next synced write instead of at
// the switch: unsynced commits across 1, 2 and 5 log switches make no log sync, then one synced
// commit and a power cut must keep them all (table creation is held back from the last switch
// on, so the old log is certain to be still needed); a clean close keeps them too; and an old log
// that cannot be synced fails the synced commit that needed it, and the next one.
//
// Crash points: 250 by default, 60 under AddressSanitizer; KEYSCHEMA_POWER_LOSS_CRASHES=<n> sets
// another count (the long mode) and KEYSCHEMA_POWER_LOSS_SEED=<n> the random seed. The figures
// are printed at the end. The commit stream and the check are power_loss_check.hpp, shared with
// rocksdb_power_loss_test.cpp.
#include <catch2/catch.hpp>

#include <keyschema/error.hpp>
#include <keyschema/leveldb.hpp>

#include <support/temp_dir.hpp>

#include "leveldb_power_loss_env.hpp"
#include "power_loss_check.hpp"

#include <cstdint>
#include <string>
#include <string_view>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace leveldb_power_loss_test {

using keyschema::leveldb_backend;
using keyschema::leveldb_options;
using keyschema::testing::power_loss_env;
using keyschema::testing::power_loss_present_prefix;

namespace {

leveldb_options options_for(power_loss_env& env) {
  leveldb_options o;
  o.env = &env;
  o.write_buffer_bytes = 64 << 10;  // LevelDB's minimum: a new log every ~64 KiB of writes
  o.compression = false;
  o.cache_bytes = 256 << 10;
  return o;
}

void commit(leveldb_backend& db, std::uint64_t i, bool sync) { keyschema::testing::power_loss_commit(db, i, sync); }

}  // namespace

TEST_CASE("leveldb_backend: after a power loss the commits present are a prefix covering every synced one",
          "[leveldb][power-loss]") {
  keyschema::testing::check_power_loss_prefix<leveldb_backend, power_loss_env>("leveldb", options_for);
}

TEST_CASE("leveldb_backend: closing the backend makes unsynced commits durable", "[leveldb][power-loss]") {
  keyschema::testing::check_close_makes_durable<leveldb_backend, power_loss_env>("leveldb", options_for);
}

namespace {

// Commits unsynced from commit next on until LevelDB has created `switches` more log files; table
// files are held from the last switch on, so the log switched away from last is certain to exist
// (its memtable not yet in a table) when the caller's next commit runs. REQUIRES: switches >= 1;
// the caller calls env.release_tables() before destroying db.
void commit_unsynced_across_switches(leveldb_backend& db, power_loss_env& env, std::uint64_t& next, int switches) {
  const int logs_before = env.logs_created;
  while (env.logs_created - logs_before < switches - 1) {
    REQUIRE(next < 100000);
    commit(db, next++, false);
  }
  env.hold_tables_from_next_log();
  while (env.logs_created - logs_before < switches) {
    REQUIRE(next < 100000);
    commit(db, next++, false);
  }
}

}  // namespace

TEST_CASE("leveldb_backend: one synced commit after unsynced ones across log switches makes them all durable",
          "[leveldb][power-loss]") {
  for (const int switches : {1, 2, 5}) {
    for (const bool synced_before : {false, true}) {
      INFO(switches << " log switches, a synced commit before them: " << synced_before);
      keyschema::testing::temp_dir dir("leveldb-power");
      const auto path = dir.path() / "db";
      power_loss_env env;
      std::uint64_t next = 0;
      {
        leveldb_backend db(path, options_for(env));
        if (synced_before) commit(db, next++, true);
        const int syncs_before = env.log_syncs;
        commit_unsynced_across_switches(db, env, next, switches);
        CHECK(env.log_syncs == syncs_before);  // no write asked for a sync, none was made
        commit(db, next++, true);              // syncs the old logs still needed, then its own
        env.cut_power();
        env.release_tables();
      }
      env.restore_power();
      leveldb_backend db(path, options_for(env));
      CHECK(power_loss_present_prefix(db) == next);
    }
  }
}

TEST_CASE("leveldb_backend: closing the backend makes unsynced commits across log switches durable",
          "[leveldb][power-loss]") {
  keyschema::testing::temp_dir dir("leveldb-power");
  const auto path = dir.path() / "db";
  power_loss_env env;
  std::uint64_t next = 0;
  {
    leveldb_backend db(path, options_for(env));
    commit_unsynced_across_switches(db, env, next, 3);
    env.release_tables();
  }  // a clean close
  env.cut_power();
  env.restore_power();
  leveldb_backend db(path, options_for(env));
  CHECK(power_loss_present_prefix(db) == next);
}

TEST_CASE("leveldb_backend: an old log that cannot be synced fails the synced commit that needs it",
          "[leveldb][power-loss]") {
  keyschema::testing::temp_dir dir("leveldb-power");
  const auto path = dir.path() / "db";
  power_loss_env env;
  leveldb_backend db(path, options_for(env));
  std::uint64_t next = 0;
  commit(db, next++, true);
  const std::string old_log = env.last_log_created();
  commit_unsynced_across_switches(db, env, next, 1);
  REQUIRE(env.last_log_created() != old_log);
  env.fail_syncs_of(old_log);  // the new log could be synced, but the prefix cannot be promised
  for (int attempt = 0; attempt < 2; ++attempt) {  // nor by any later synced commit
    INFO("synced commit " << attempt << " after the failure");
    try {
      commit(db, next, true);
      FAIL("a synced commit returned though an earlier log could not be synced");
    } catch (const keyschema::backend_error& e) {
      CHECK(e.native_call() == "leveldb::DB::Write");
      CHECK(std::string_view(e.what()).find("injected sync failure") != std::string_view::npos);
      CHECK(std::string_view(e.what()).find(old_log) != std::string_view::npos);
    }
  }
  env.release_tables();
}

}  // namespace leveldb_power_loss_test
