// tests/durability/rocksdb_traits.hpp: the durability suite's traits for keyschema::rocksdb_backend
// (durability.hpp says what traits provide).
//
// Power loss: simulated, through keyschema::testing::rocksdb_power_loss_env (a
// rocksdb::FileSystemWrapper, rocksdb_power_loss_env.hpp) with a 64 KiB write buffer (RocksDB
// switches logs and flushes a table file every few dozen commits); 100 crash points by default, 24
// under AddressSanitizer (two fifths of LevelDB's: a RocksDB open and close cost more). Damage: a
// log record (in the middle, and the last one), the MANIFEST, a missing CURRENT, a missing table
// file. Processes: one at a time (RocksDB's fcntl lock on LOCK). A full disk: the defaults, and
// 64 KiB memtables (the disk fills in a flush).
// Thread-safety: stateless.
#pragma once

#include <durability/power_loss_check.hpp>
#include <durability/rocksdb_power_loss_env.hpp>

#include <keyschema/rocksdb.hpp>

#include <rocksdb/status.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#define KEYSCHEMA_DURABILITY_SHARED_BY_PROCESSES 0

namespace keyschema::durability {

inline constexpr int rocksdb_corruption = static_cast<int>(::rocksdb::Status::kCorruption);

// Fills path with 2000 records, one unsynced commit each, uncompressed (damaged bytes land in
// plain data blocks); with to_tables compacted into table files, otherwise left in the
// write-ahead log (RocksDB does not flush the memtable on close while the log is on).
inline void rocksdb_fill(const fs::path& path, bool to_tables) {
  rocksdb_options o;
  o.compression = false;
  rocksdb_backend db(path, o);
  write_records(db, 0, 2000, false);
  if (to_tables) db.compact_range({});
}

// The one non-empty write-ahead log of path.
inline fs::path rocksdb_live_log(const fs::path& path) {
  std::vector<fs::path> logs;
  for (const fs::path& p : files_with(path, "", ".log")) {
    if (p.filename() != "LOG" && fs::file_size(p) > 0) logs.push_back(p);
  }
  REQUIRE(logs.size() == 1);
  return logs[0];
}

// The refusal is RocksDB's corruption status from rocksdb::DB::Open.
inline void rocksdb_open_corruption(const refusal& r, const fs::path&) {
  CHECK(r.call == "rocksdb::DB::Open");
  CHECK(r.code == rocksdb_corruption);
}

struct rocksdb_traits {
  using backend = rocksdb_backend;
  using options = rocksdb_options;
  static constexpr std::string_view name = "rocksdb";

  static constexpr bool simulated_power_loss = true;
  using power_loss_env = keyschema::testing::rocksdb_power_loss_env;
  static options power_loss_options(power_loss_env& env) {
    options o;
    o.env = env.env();
    o.write_buffer_bytes = 64 << 10;  // RocksDB's minimum: a new log and a flush every ~64 KiB of writes
    o.compression = false;
    o.cache_bytes = 256 << 10;
    return o;
  }
  static std::uint64_t power_loss_crash_points() {
    return keyschema::testing::power_loss_default_crash_points * 2 / 5;
  }

  static std::vector<damage> damages() {
    return {
        {"a damaged write-ahead log record",
         [](const fs::path& path) {
           rocksdb_fill(path, false);
           const fs::path log = rocksdb_live_log(path);
           overwrite(log, fs::file_size(log) / 2, std::string(8, '\xA5'));
           return log;
         },
         rocksdb_open_corruption},
        {"damage in the last write-ahead log record",
         [](const fs::path& path) {
           rocksdb_fill(path, false);
           const fs::path log = rocksdb_live_log(path);
           overwrite(log, fs::file_size(log) - 20, std::string(4, '\xA5'));  // inside the last record's value
           return log;
         },
         rocksdb_open_corruption},
        {"a damaged MANIFEST",
         [](const fs::path& path) {
           rocksdb_fill(path, true);
           const std::vector<fs::path> manifests = files_with(path, "MANIFEST-", "");
           REQUIRE(manifests.size() == 1);
           overwrite(manifests[0], 20, std::string(8, '\xA5'));
           return manifests[0];
         },
         rocksdb_open_corruption},
        {"a missing CURRENT",
         [](const fs::path& path) {
           rocksdb_fill(path, true);
           fs::remove(path / "CURRENT");
           return path / "CURRENT";
         },
         [](const refusal& r, const fs::path& path) {
           CHECK(r.call == "std::filesystem::exists");
           CHECK(r.code == rocksdb_corruption);
           CHECK(contains(r.what, "no CURRENT file"));
           CHECK(files_with(path, "", ".sst").size() == 1);  // nothing deleted
         }},
        {"a missing table file",
         [](const fs::path& path) {
           rocksdb_fill(path, true);
           const std::vector<fs::path> tables = files_with(path, "", ".sst");
           REQUIRE(tables.size() == 1);
           fs::remove(tables[0]);
           return tables[0];
         },
         [](const refusal& r, const fs::path&) { CHECK(r.call == "rocksdb::DB::Open"); }},
    };
  }

  static std::vector<not_damage> not_damaged() {
    return {torn_log(
        [](const fs::path& path) {
          rocksdb_fill(path, false);
          return rocksdb_live_log(path);
        },
        2000)};
  }

  static constexpr std::string_view open_call = "rocksdb::DB::Open";

  static std::vector<disk_full_configuration<options>> disk_full_configurations() {
    return lsm_disk_full_configurations<options>("rocksdb", "a flush");
  }
};

}  // namespace keyschema::durability
