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
  CHECK(power_loss_present_prefix(db) == 10);
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

}  // namespace leveldb_power_loss_test
