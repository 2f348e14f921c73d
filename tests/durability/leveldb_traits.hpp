// tests/durability/leveldb_traits.hpp: the durability suite's traits for keyschema::leveldb_backend
// (durability.hpp says what traits provide).
//
// Power loss: simulated, through keyschema::testing::power_loss_env (leveldb_power_loss_env.hpp)
// with a 64 KiB write buffer, so that LevelDB switches logs every few dozen commits. Damage: a
// log record, the MANIFEST, CURRENT (missing, or naming a missing MANIFEST), a missing table file.
// Processes: one at a time (LevelDB's fcntl lock on LOCK). A full disk: the defaults, and 64 KiB
// memtables (the disk fills in a compaction).
// Thread-safety: stateless.
#pragma once

#include <durability/leveldb_power_loss_env.hpp>
#include <durability/power_loss_check.hpp>

#include <keyschema/leveldb.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#define KEYSCHEMA_DURABILITY_SHARED_BY_PROCESSES 0

namespace keyschema::durability {

// Fills path with 2000 records, one unsynced commit each; with to_tables compacted into table
// files, otherwise left in the write-ahead log (LevelDB does not flush the memtable on close).
inline void leveldb_fill(const fs::path& path, bool to_tables, const leveldb_options& o = {}) {
  leveldb_backend db(path, o);
  write_records(db, 0, 2000, false);
  if (to_tables) db.compact_range({});
}

// The refusal is LevelDB's corruption status from leveldb::DB::Open.
inline void leveldb_open_corruption(const refusal& r, const fs::path&) {
  CHECK(r.call == "leveldb::DB::Open");
  CHECK(r.code == leveldb_detail::leveldb_corruption);
}

struct leveldb_traits {
  using backend = leveldb_backend;
  using options = leveldb_options;
  static constexpr std::string_view name = "leveldb";

  static constexpr bool simulated_power_loss = true;
  using power_loss_env = keyschema::testing::power_loss_env;
  static options power_loss_options(power_loss_env& env) {
    options o;
    o.env = &env;
    o.write_buffer_bytes = 64 << 10;  // LevelDB's minimum: a new log every ~64 KiB of writes
    o.compression = false;
    o.cache_bytes = 256 << 10;
    return o;
  }
  static std::uint64_t power_loss_crash_points() { return keyschema::testing::power_loss_default_crash_points; }

  static std::vector<damage> damages() {
    return {
        {"a damaged write-ahead log record (paranoid_checks)",
         [](const fs::path& path) {
           leveldb_fill(path, false);
           const auto logs = files_with(path, "", ".log");
           REQUIRE(logs.size() == 1);
           const auto size = fs::file_size(logs.front());
           REQUIRE(size > 100000);  // all 2,000 records are in the log
           overwrite(logs.front(), size / 2, std::string(16, '\x5a'));
           return logs.front();
         },
         leveldb_open_corruption},
        {"a damaged MANIFEST",
         [](const fs::path& path) {
           leveldb_fill(path, true);
           const auto manifests = files_with(path, "MANIFEST-", "");
           REQUIRE(manifests.size() == 1);
           overwrite(manifests.front(), 10, std::string(16, '\x5a'));
           return manifests.front();
         },
         leveldb_open_corruption},
        {"CURRENT naming a missing MANIFEST",
         [](const fs::path& path) {
           leveldb_fill(path, true);
           std::ofstream(path / "CURRENT", std::ios::binary | std::ios::trunc) << "MANIFEST-999999\n";
           return path / "CURRENT";
         },
         leveldb_open_corruption},
        {"a missing table file",
         [](const fs::path& path) {
           leveldb_fill(path, true);
           const auto tables = files_with(path, "", ".ldb");
           REQUIRE_FALSE(tables.empty());
           fs::remove(tables.front());
           return tables.front();
         },
         leveldb_open_corruption},
        {"a missing CURRENT, next to tables and a log",
         [](const fs::path& path) {
           leveldb_fill(path, true);
           leveldb_fill(path, false);  // the records again, now also in a log
           REQUIRE_FALSE(files_with(path, "", ".ldb").empty());
           REQUIRE_FALSE(files_with(path, "", ".log").empty());
           fs::remove(path / "CURRENT");
           return path / "CURRENT";
         },
         [](const refusal& r, const fs::path&) {
           CHECK(r.call == "leveldb::Env::FileExists");
           CHECK(r.code == leveldb_detail::leveldb_corruption);
           CHECK(contains(r.what, "no CURRENT file"));
         }},
    };
  }

  static std::vector<not_damage> not_damaged() {
    return {torn_log(
        [](const fs::path& path) {
          leveldb_fill(path, false);
          const auto logs = files_with(path, "", ".log");
          REQUIRE(logs.size() == 1);
          return logs.front();
        },
        2000)};
  }

  static constexpr std::string_view open_call = "leveldb::DB::Open";

  static std::vector<disk_full_configuration<options>> disk_full_configurations() {
    return lsm_disk_full_configurations<options>("leveldb", "a compaction");
  }
};

}  // namespace keyschema::durability
