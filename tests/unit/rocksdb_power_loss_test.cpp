// tests/unit/rocksdb_power_loss_test.cpp: power-loss simulation of keyschema::rocksdb_backend.
//
// The same commit stream and prefix check as leveldb_power_loss_test.cpp (power_loss_check.hpp),
// through keyschema::testing::rocksdb_power_loss_env (a rocksdb::FileSystemWrapper): a power cut
// truncates every file to its last Sync()/Fsync() and deletes every file whose directory was not
// fsynced after it was created. A writer commits a random mix of synced and unsynced batches into
// a database with a 64 KiB write buffer (RocksDB switches write-ahead logs and flushes a table
// file every few dozen commits), the power is cut at random points, half of them right after the
// first synced commit that follows a log switch, and the reopened database must hold exactly
// commits 0..k-1, each batch whole, with k covering every synced commit that returned.
//
// Crash points: 100 by default, 24 under AddressSanitizer (two fifths of LevelDB's: a RocksDB open
// and close cost more); KEYSCHEMA_POWER_LOSS_CRASHES=<n> sets
// another count (the long mode) and KEYSCHEMA_POWER_LOSS_SEED=<n> the random seed. The figures
// are printed at the end.
#include <catch2/catch.hpp>

#include <keyschema/error.hpp>
#include <keyschema/rocksdb.hpp>
#include <keyschema/write_batch.hpp>

#include <support/temp_dir.hpp>

#include "power_loss_check.hpp"
#include "rocksdb_power_loss_env.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace rocksdb_power_loss_test {

using keyschema::rocksdb_backend;
using keyschema::rocksdb_options;
using keyschema::testing::power_loss_commit;
using keyschema::testing::power_loss_present_prefix;
using keyschema::testing::rocksdb_power_loss_env;

namespace {

rocksdb_options options_for(rocksdb_power_loss_env& env) {
  rocksdb_options o;
  o.env = env.env();
  o.write_buffer_bytes = 64 << 10;  // RocksDB's minimum: a new log and a flush every ~64 KiB of writes
  o.compression = false;
  o.cache_bytes = 256 << 10;
  return o;
}

}  // namespace

TEST_CASE("rocksdb_backend: after a power loss the commits present are a prefix covering every synced one",
          "[rocksdb][power-loss]") {
  keyschema::testing::check_power_loss_prefix<rocksdb_backend, rocksdb_power_loss_env>(
      "rocksdb", options_for, keyschema::testing::power_loss_default_crash_points * 2 / 5);
}

TEST_CASE("rocksdb_backend: closing the backend makes unsynced commits durable", "[rocksdb][power-loss]") {
  keyschema::testing::check_close_makes_durable<rocksdb_backend, rocksdb_power_loss_env>("rocksdb", options_for);
}

TEST_CASE("rocksdb_power_loss_env: unsynced writes and files whose directory was not synced are lost",
          "[rocksdb][power-loss]") {
  keyschema::testing::temp_dir dir("rocksdb-power");
  const auto path = dir.path() / "db";
  rocksdb_power_loss_env env;
  {
    rocksdb_backend db(path, options_for(env));
    power_loss_commit(db, 0, true);
    for (std::uint64_t i = 1; i < 10; ++i) power_loss_commit(db, i, false);
    env.cut_power();
  }
  env.restore_power();
  {
    rocksdb_backend db(path, options_for(env));
    CHECK(power_loss_present_prefix(db) == 1);  // the unsynced commits 1..9 are gone
  }
  // A synced file in a directory that was never fsynced does not survive.
  env.restore_power();
  const int dropped = env.unsynced_entries_dropped;
  {
    std::unique_ptr<::rocksdb::WritableFile> f;
    const ::rocksdb::EnvOptions eo;
    REQUIRE(env.env()->NewWritableFile((path / "probe.tmp").string(), &f, eo).ok());
    REQUIRE(f->Append("x").ok());
    REQUIRE(f->Sync().ok());
    REQUIRE(f->Close().ok());
  }
  env.cut_power();
  env.restore_power();
  CHECK(env.unsynced_entries_dropped == dropped + 1);
  CHECK(!std::filesystem::exists(path / "probe.tmp"));
}

// RocksDB 7.8 syncs the logs it switched away from at the next synced write. When that sync
// fails, the write fails, RocksDB refuses every later write, and the backend must not call
// SyncWAL again: on a log writer that holds an I/O error it fails an assertion in Debian's
// librocksdb and aborts the process (the destructor did, before the backend checked for it).
TEST_CASE("rocksdb_backend: a log that cannot be synced fails the synced commit, and the backend closes",
          "[rocksdb][power-loss]") {
  const bool cut = GENERATE(true, false);
  INFO((cut ? "with" : "without") << " a power cut after the failure");
  keyschema::testing::temp_dir dir("rocksdb-power");
  const auto path = dir.path() / "db";
  rocksdb_power_loss_env env;
  std::uint64_t i = 0;
  std::uint64_t failed = 0;  // the synced commit whose log sync failed
  {
    rocksdb_backend db(path, options_for(env));
    power_loss_commit(db, i++, true);
    const int logs_before = env.logs_created;
    env.fail_log_sync = true;
    while (env.logs_created == logs_before) {  // unsynced commits until RocksDB switches logs
      REQUIRE(i < 10000);
      power_loss_commit(db, i++, false);
    }
    failed = i++;
    try {
      power_loss_commit(db, failed, true);  // syncs the old log and the new one
      FAIL("a synced commit returned though its log could not be synced");
    } catch (const keyschema::backend_error& e) {
      CHECK(e.native_call() == "rocksdb::DB::Write");
      CHECK(std::string_view(e.what()).find("injected sync failure") != std::string_view::npos);
      CHECK(std::string_view(e.what()).find("a reopen may recover it") != std::string_view::npos);
    }
    env.fail_log_sync = false;  // the disk works again, but the handle does not promise anything
    CHECK_THROWS_AS(power_loss_commit(db, i++, true), keyschema::backend_error);
    try {
      db.write(keyschema::write_batch{}, keyschema::write_options{.sync = true});
      FAIL("an empty synced batch returned after a failed log sync");
    } catch (const keyschema::backend_error& e) {
      CHECK(e.native_call() == "rocksdb::DB::SyncWAL");
    }
    if (cut) env.cut_power();
  }  // closing must not call SyncWAL on the failed log writer
  if (cut) env.restore_power();
  rocksdb_backend db(path, options_for(env));
  const std::uint64_t k = power_loss_present_prefix(db);
  // With a power cut only the synced commit 0 is sure to survive; without one the log file holds
  // everything appended, also the commit whose sync failed (its error says a reopen may recover it).
  if (cut) {
    CHECK(k >= 1);
    CHECK(k <= failed + 1);
  } else {
    CHECK(k == failed + 1);
  }
}

}  // namespace rocksdb_power_loss_test
