// tests/durability/rocksdb.cpp: the durability checks of keyschema::rocksdb_backend that have no
// counterpart in another engine (the shared ones: cases/, through rocksdb_traits.hpp).
//
// Power loss: the fault-injecting file system itself (unsynced writes, and files whose directory
// was not fsynced, are lost); a log whose sync fails fails the synced commit and every later
// write, and the backend still closes (RocksDB 7.8 syncs the logs it switched away from at the
// next synced write). Damaged files: the documented salvage (wal_recovery = point_in_time drops
// the damaged record and every record after it); a damaged table block is an error on read; what
// RocksDB cannot detect (a synced live log shortened by a storage fault rolls back silently);
// which file names count as data files.
//
// Compiled with the cases into unit_group_rocksdb (see durability.hpp).
#include <durability/durability.hpp>

#include <keyschema/rocksdb.hpp>

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace keyschema::durability::rocksdb_only {

using keyschema::testing::power_loss_commit;
using keyschema::testing::power_loss_present_prefix;
using keyschema::testing::rocksdb_power_loss_env;

// --- power loss ------------------------------------------------------------------------------------

namespace {

rocksdb_options options_for(rocksdb_power_loss_env& env) { return rocksdb_traits::power_loss_options(env); }

}  // namespace

TEST_CASE("rocksdb_power_loss_env: unsynced writes and files whose directory was not synced are lost",
          "[power_loss]") {
  temp_dir dir("rocksdb-power");
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
          "[power_loss]") {
  const bool cut = GENERATE(true, false);
  INFO((cut ? "with" : "without") << " a power cut after the failure");
  temp_dir dir("rocksdb-power");
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


// --- damaged files ---------------------------------------------------------------------------------

namespace {

constexpr int record_count = 2000;

}  // namespace

// The documented salvage (the refusal by default: cases/damaged_files.cpp).
TEST_CASE("rocksdb_backend: wal_recovery = point_in_time keeps the records before a damaged log record",
          "[damaged_files]") {
  temp_dir dir("rocksdb");
  const fs::path path = dir.path() / "db";
  rocksdb_fill(path, false);
  const fs::path log = rocksdb_live_log(path);
  overwrite(log, fs::file_size(log) / 2, std::string(8, '\xA5'));
  rocksdb_options o;
  o.wal_recovery = keyschema::rocksdb_wal_recovery::point_in_time;
  rocksdb_backend db(path, o);
  const std::vector<int> kept = present(db);
  CHECK(kept.size() > 0);
  CHECK(kept.size() < record_count);
  CHECK(kept == first_n(static_cast<int>(kept.size())));  // a prefix, never a hole
}

// Documents what RocksDB cannot detect (docs/backends/rocksdb.md, "What the engine cannot detect"):
// the live write-ahead log shortened by a storage fault after its records were synced and
// acknowledged looks like a log that a crash cut while appending (the MANIFEST tracks the synced
// size of closed logs only), so the database opens without an error and rolls back. Should this
// ever fail, the engine (or the backend) has learnt to detect it: update the docs.
TEST_CASE("rocksdb_backend: a synced live log shortened by a storage fault opens without an error and rolls back",
          "[damaged_files]") {
  temp_dir dir("rocksdb");
  const fs::path path = dir.path() / "db";
  constexpr int commits = 10;
  std::vector<std::uintmax_t> log_size;  // the live log's size after each acknowledged, synced commit
  fs::path log;
  {
    rocksdb_backend db(path);
    for (int i = 0; i < commits; ++i) {
      write_batch wb;
      wb.put(record_key(i), record_value(i));
      db.write(wb, write_options{.sync = true});
      log = rocksdb_live_log(path);
      log_size.push_back(fs::file_size(log));
    }
  }
  REQUIRE(fs::file_size(log) == log_size.back());

  SECTION("cut at a record boundary: the last three acknowledged commits are gone") {
    fs::resize_file(log, log_size[commits - 4]);
    rocksdb_backend db(path);
    CHECK(present(db) == first_n(commits - 3));
  }
  SECTION("cut inside the last record: the last acknowledged commit is gone") {
    fs::resize_file(log, log_size.back() - 10);
    rocksdb_backend db(path);
    CHECK(present(db) == first_n(commits - 1));
  }
}

TEST_CASE("rocksdb_backend: a damaged table block is an error on read", "[damaged_files]") {
  temp_dir dir("rocksdb");
  const fs::path path = dir.path() / "db";
  rocksdb_fill(path, true);
  const std::vector<fs::path> tables = files_with(path, "", ".sst");
  REQUIRE(tables.size() == 1);
  overwrite(tables[0], 100, std::string(16, '\xA5'));  // inside the first data block
  // The open may already refuse the table; if it opens, reading the block is an error.
  try {
    rocksdb_backend db(path);
    const auto e = thrown<keyschema::backend_error>([&] { static_cast<void>(present(db)); });
    REQUIRE(e);
    INFO(e->what());
    CHECK(e->native_call() == "rocksdb::Iterator");
    CHECK(e->native_code() == rocksdb_corruption);
    std::string v;
    const auto g = thrown<keyschema::backend_error>([&] { db.get(record_key(0), v, nullptr); });
    REQUIRE(g);
    CHECK(g->native_call() == "rocksdb::DB::Get");
  } catch (const keyschema::backend_error& e) {
    INFO(e.what());
    CHECK(e.native_call() == "rocksdb::DB::Open");
    CHECK(e.native_code() == rocksdb_corruption);
  }
}

TEST_CASE("rocksdb_backend: which file names count as RocksDB data files", "[damaged_files]") {
  using keyschema::rocksdb_detail::rocksdb_is_data_file;
  CHECK(rocksdb_is_data_file("000012.log"));
  CHECK(rocksdb_is_data_file("000012.sst"));
  CHECK(rocksdb_is_data_file("000012.blob"));
  CHECK_FALSE(rocksdb_is_data_file("LOG"));
  CHECK_FALSE(rocksdb_is_data_file("MANIFEST-000005"));
  CHECK_FALSE(rocksdb_is_data_file("OPTIONS-000007"));
  CHECK_FALSE(rocksdb_is_data_file("x12.log"));
  CHECK_FALSE(rocksdb_is_data_file(".log"));
}

}  // namespace keyschema::durability::rocksdb_only
