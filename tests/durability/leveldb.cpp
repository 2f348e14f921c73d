// tests/durability/leveldb.cpp: the durability checks of keyschema::leveldb_backend that have no
// counterpart in another engine (the shared ones: cases/, through leveldb_traits.hpp).
//
// Power loss: the old logs syncing_env syncs at the next synced write instead of at the switch:
// unsynced commits across 1, 2 and 5 log switches make no log sync, then one synced commit and a
// power cut must keep them all (table creation is held back from the last switch on, so the old
// log is certain to be still needed); a clean close keeps them too; and an old log that cannot be
// synced fails the synced commit that needed it, and the next one.
// Damaged files: the documented opt-out (paranoid_checks = false drops damaged log blocks); a
// damaged table block is an error on read (verify_checksums), and a cursor never steps over a
// damaged block or a table that cannot be opened silently; what LevelDB cannot detect (a synced
// log or a MANIFEST shortened by a storage fault rolls back silently); a missing CURRENT in full;
// which file names count as logs and data files.
//
// Compiled with the cases into unit_group_leveldb (see durability.hpp).
#include <durability/durability.hpp>

#include <keyschema/leveldb.hpp>

#include <leveldb/env.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyschema::durability::leveldb_only {

using keyschema::testing::power_loss_env;
using keyschema::testing::power_loss_present_prefix;

// --- power loss ------------------------------------------------------------------------------------

namespace {

leveldb_options options_for(power_loss_env& env) { return leveldb_traits::power_loss_options(env); }

void commit(leveldb_backend& db, std::uint64_t i, bool sync) { keyschema::testing::power_loss_commit(db, i, sync); }

}  // namespace

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
          "[power_loss]") {
  for (const int switches : {1, 2, 5}) {
    for (const bool synced_before : {false, true}) {
      INFO(switches << " log switches, a synced commit before them: " << synced_before);
      temp_dir dir("leveldb-power");
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
          "[power_loss]") {
  temp_dir dir("leveldb-power");
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
          "[power_loss]") {
  temp_dir dir("leveldb-power");
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


// --- damaged files ---------------------------------------------------------------------------------

namespace {

constexpr int record_count = 2000;

// Opening path with o fails with a corruption error of leveldb::DB::Open naming the path.
void require_open_corruption(const fs::path& path, const leveldb_options& o = {}) {
  const auto e = thrown<keyschema::backend_error>([&] { leveldb_backend db(path, o); });
  REQUIRE(e);
  INFO(e->what());
  CHECK(e->native_call() == "leveldb::DB::Open");
  CHECK(e->native_code() == keyschema::leveldb_detail::leveldb_corruption);
  CHECK(contains(e->what(), path.string()));
}

// A full scan of the records, forward or reverse, that stops at the first entry not adjacent to
// the one before it (entries are missing and no error was raised: what a scan stopped early would
// return). Requires that the cursor threw (leveldb::Iterator) before any such entry; returns the
// error and the number of entries read before it.
struct gap_scan {
  keyschema::backend_error error;
  int read;
};
gap_scan require_error_before_gap(const leveldb_backend& db, bool reverse) {
  int previous = -1, read = 0;
  bool gap_seen = false;
  const auto e = thrown<keyschema::backend_error>([&] {
    for (auto c = db.cursor(key_range{"", "", reverse}, nullptr); c.valid(); c.next()) {
      const int i = std::stoi(std::string(c.key().substr(1)));
      if (previous >= 0 && i != (reverse ? previous - 1 : previous + 1)) {
        gap_seen = true;  // entries are missing before this one and no error was raised
        break;            // a scan that stops here never reaches the end of the range
      }
      previous = i;
      ++read;
    }
  });
  CHECK_FALSE(gap_seen);
  REQUIRE(e);
  CHECK(e->native_call() == "leveldb::Iterator");
  return gap_scan{*e, read};
}

// Options whose tables hold their blocks as written (no compression, no filter block), so that a
// test can find a block by its offset and damage it; env: a test Env, or LevelDB's default.
leveldb_options raw_table_options(::leveldb::Env* env = nullptr) {
  leveldb_options o;
  o.compression = false;
  o.bloom_bits_per_key = 0;
  if (env != nullptr) o.env = env;
  return o;
}

}  // namespace

// The documented opt-out (the refusal by default: cases/damaged_files.cpp).
TEST_CASE("leveldb_backend: paranoid_checks = false skips a damaged log block and opens", "[damaged_files]") {
  temp_dir dir("leveldb-corrupt");
  const auto path = dir.path() / "db";
  leveldb_fill(path, false);
  const auto logs = files_with(path, "", ".log");
  REQUIRE(logs.size() == 1);
  const auto size = fs::file_size(logs.front());
  overwrite(logs.front(), size / 2, std::string(16, '\x5a'));
  leveldb_options o;
  o.paranoid_checks = false;
  leveldb_backend db(path, o);
  const std::vector<int> found = present(db);
  CHECK(found.size() < record_count);
  CHECK(found.size() > record_count / 2);
  // The loss is a hole, not a tail: records written after the lost ones survive.
  REQUIRE_FALSE(found.empty());
  CHECK(found.back() == record_count - 1);
  CHECK(static_cast<int>(found.size()) != found.back() + 1);
}


// Documents what LevelDB cannot detect (docs/backends/leveldb.md, "What the engine cannot detect"):
// a log that a storage fault shortened after its records were synced and acknowledged looks like
// a log that a crash cut while appending, so the database opens without an error and rolls back.
// Should this ever fail, the engine (or the backend) has learnt to detect it: update the docs.
TEST_CASE("leveldb_backend: a synced log shortened by a storage fault opens without an error and rolls back",
          "[damaged_files]") {
  temp_dir dir("leveldb-corrupt");
  const auto path = dir.path() / "db";
  constexpr int commits = 10;
  std::vector<std::uintmax_t> log_size;  // the log's size after each acknowledged, synced commit
  {
    leveldb_backend db(path);
    for (int i = 0; i < commits; ++i) {
      write_batch wb;
      wb.put(record_key(i), record_value(i));
      db.write(wb, write_options{.sync = true});
      const auto logs = files_with(path, "", ".log");
      REQUIRE(logs.size() == 1);
      log_size.push_back(fs::file_size(logs.front()));
    }
  }
  const fs::path log = files_with(path, "", ".log").front();
  REQUIRE(fs::file_size(log) == log_size.back());

  SECTION("cut at a record boundary: the last three acknowledged commits are gone") {
    fs::resize_file(log, log_size[commits - 4]);
    leveldb_backend db(path);
    CHECK(present(db) == std::vector<int>{0, 1, 2, 3, 4, 5, 6});
  }
  SECTION("cut inside the last record: the last acknowledged commit is gone") {
    fs::resize_file(log, log_size.back() - 10);
    leveldb_backend db(path);
    CHECK(present(db) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  }
}

// Documents the same for the MANIFEST: its last record (the version edit of a compaction) cut
// short is taken for an interrupted append and dropped, so the database opens in the state before
// that compaction, whose log LevelDB had already deleted: the compacted commits are gone, without
// an error (the table now listed nowhere is deleted as obsolete).
TEST_CASE("leveldb_backend: a MANIFEST shortened by a storage fault opens without an error and rolls back",
          "[damaged_files]") {
  temp_dir dir("leveldb-corrupt");
  const auto path = dir.path() / "db";
  constexpr int commits = 20;
  {
    leveldb_backend db(path);
    for (int i = 0; i < commits; ++i) {
      write_batch wb;
      wb.put(record_key(i), record_value(i));
      db.write(wb, write_options{.sync = true});
      if (i == commits / 2 - 1) db.compact_range({});  // the first half into a table, its log deleted
    }
    CHECK(present(db).size() == commits);
  }
  const auto manifests = files_with(path, "MANIFEST-", "");
  REQUIRE(manifests.size() == 1);
  fs::resize_file(manifests.front(), fs::file_size(manifests.front()) - 1);
  leveldb_backend db(path);
  const std::vector<int> found = present(db);
  CHECK(found == std::vector<int>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19});  // 0 to 9 lost, no error
}

TEST_CASE("leveldb_backend: a damaged table block is an error on read by default", "[damaged_files]") {
  temp_dir dir("leveldb-corrupt");
  const auto path = dir.path() / "db";
  const leveldb_options o = raw_table_options();
  leveldb_fill(path, true, o);
  const auto tables = files_with(path, "", ".ldb");
  REQUIRE_FALSE(tables.empty());
  for (const auto& t : tables) overwrite(t, 40, "XXXXXXXX");  // inside the first data block

  leveldb_backend db(path, o);
  const auto ge = thrown<keyschema::backend_error>([&] {
    std::string v;
    (void)db.get(record_key(0), v, nullptr);
  });
  REQUIRE(ge);
  CHECK(ge->native_call() == "leveldb::DB::Get");
  CHECK(ge->native_code() == keyschema::leveldb_detail::leveldb_corruption);
  CHECK(contains(ge->what(), path.string()));
  for (const bool reverse : {false, true}) {
    const auto ce = thrown<keyschema::backend_error>([&] {
      for (auto c = db.cursor(key_range{"", "", reverse}, nullptr); c.valid(); c.next()) {
      }
    });
    REQUIRE(ce);
    CHECK(ce->native_call() == "leveldb::Iterator");
    CHECK(ce->native_code() == keyschema::leveldb_detail::leveldb_corruption);
    CHECK(contains(ce->what(), path.string()));
  }
}

// The refusal with the defaults: cases/damaged_files.cpp.
TEST_CASE("leveldb_backend: a damaged MANIFEST fails the open with paranoid_checks off too", "[damaged_files]") {
  temp_dir dir("leveldb-corrupt");
  const auto path = dir.path() / "db";
  leveldb_fill(path, true);
  const auto manifests = files_with(path, "MANIFEST-", "");
  REQUIRE(manifests.size() == 1);
  overwrite(manifests.front(), 10, std::string(16, '\x5a'));
  leveldb_options lax;
  lax.paranoid_checks = false;
  require_open_corruption(path, lax);  // LevelDB checks the MANIFEST either way
}

TEST_CASE("leveldb_backend: a missing CURRENT is refused, not replaced by an empty database", "[damaged_files]") {
  temp_dir dir("leveldb-corrupt");
  const auto path = dir.path() / "db";
  leveldb_fill(path, true);
  leveldb_fill(path, false);  // the records again, now also in a log
  REQUIRE_FALSE(files_with(path, "", ".ldb").empty());
  REQUIRE_FALSE(files_with(path, "", ".log").empty());
  fs::remove(path / "CURRENT");
  const auto before = files_with(path, "", "");

  for (const bool create : {true, false}) {
    leveldb_options o;
    o.create_if_missing = create;
    const auto e = thrown<keyschema::backend_error>([&] { leveldb_backend db(path, o); });
    REQUIRE(e);
    INFO(e->what());
    CHECK(e->native_call() == "leveldb::Env::FileExists");
    CHECK(e->native_code() == keyschema::leveldb_detail::leveldb_corruption);
    CHECK(contains(e->what(), path.string()));
    CHECK(contains(e->what(), "no CURRENT file"));
  }
  CHECK(files_with(path, "", "") == before);  // nothing created or deleted
  CHECK_FALSE(fs::exists(path / "CURRENT"));

  // Restoring CURRENT brings everything back.
  const auto manifests = files_with(path, "MANIFEST-", "");
  REQUIRE(manifests.size() == 1);
  std::ofstream(path / "CURRENT", std::ios::binary) << manifests.front().filename().string() << "\n";
  leveldb_backend db(path);
  CHECK(present(db).size() == record_count);
}

TEST_CASE("leveldb_backend: a directory with only a MANIFEST (a crash while creating) is created anew",
          "[damaged_files]") {
  temp_dir dir("leveldb-corrupt");
  const auto path = dir.path() / "db";
  { leveldb_backend db(path); }
  for (const auto& f : files_with(path, "", ".log")) fs::remove(f);
  fs::remove(path / "CURRENT");
  leveldb_backend db(path);
  CHECK(present(db).empty());
}



TEST_CASE("leveldb_backend: which file names count as LevelDB logs and data files", "[damaged_files]") {
  using keyschema::leveldb_detail::leveldb_is_data_file;
  using keyschema::leveldb_detail::leveldb_is_log_file;
  CHECK(leveldb_is_log_file("/data/db/000123.log"));
  CHECK(leveldb_is_log_file("7.log"));
  CHECK_FALSE(leveldb_is_log_file("/data/db/LOG"));
  CHECK_FALSE(leveldb_is_log_file("/data/db/LOG.old"));
  CHECK_FALSE(leveldb_is_log_file("/data/db/.log"));
  CHECK_FALSE(leveldb_is_log_file("/data/db/a1.log"));
  CHECK_FALSE(leveldb_is_log_file("/data/000123.log.bak"));
  for (const char* name : {"000005.ldb", "000005.sst", "000003.log"}) CHECK(leveldb_is_data_file(name));
  for (const char* name : {"MANIFEST-000002", "CURRENT", "LOCK", "LOG", "LOG.old", "000002.dbtmp", ".ldb", "x1.ldb"}) {
    CHECK_FALSE(leveldb_is_data_file(name));
  }
}

TEST_CASE("leveldb_backend: a cursor never steps over a damaged block silently", "[damaged_files]") {
  // LevelDB's iterator skips a data block it cannot read, records the error and stays Valid() on
  // the entries after the block. A cursor that checked the status only at the end of its range
  // (or every N steps) would hand a scan stopped early, by limit() or a break, the entries after
  // the gap as if nothing were missing. The cursor must throw before any entry after the gap.
  temp_dir dir("leveldb-gap");
  const auto path = dir.path() / "db";
  const leveldb_options o = raw_table_options();
  leveldb_fill(path, true, o);
  const auto tables = files_with(path, "", ".ldb");
  REQUIRE(tables.size() == 1);
  const auto size = fs::file_size(tables[0]);
  overwrite(tables[0], size / 3, "XXXXXXXX");  // a data block in the first half of the table

  leveldb_backend db(path, o);
  for (const bool reverse : {false, true}) {
    INFO("reverse " << reverse);
    CHECK(require_error_before_gap(db, reverse).read < record_count);
  }
}

// A block's position in a table file: offset and size without its 5-byte trailer.
struct block_handle {
  std::uint64_t offset = 0, size = 0;
};

std::uint64_t take_varint(std::string_view& in) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    REQUIRE_FALSE(in.empty());
    const auto b = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    v |= std::uint64_t{b & 0x7Fu} << shift;
    if (b < 0x80) return v;
  }
  FAIL("a varint longer than 10 bytes");
  return 0;
}

// The data blocks of a table file, in key order, from its index block (LevelDB's
// doc/table_format.md: a 48-byte footer holding the metaindex and index block handles; a block's
// entries are varint shared, unshared and value sizes, the key's unshared bytes and the value;
// its last 4 bytes count the restart points before them).
std::vector<block_handle> data_blocks(const fs::path& table) {
  const std::string file = read_all(table);
  REQUIRE(file.size() >= 48);
  std::string_view footer = std::string_view(file).substr(file.size() - 48);
  (void)take_varint(footer);  // the metaindex block
  (void)take_varint(footer);
  block_handle index;
  index.offset = take_varint(footer);
  index.size = take_varint(footer);
  REQUIRE(index.offset + index.size <= file.size());
  const std::string_view block = std::string_view(file).substr(index.offset, index.size);
  REQUIRE(block.size() >= 4);
  std::uint32_t restarts = 0;
  for (int i = 3; i >= 0; --i) restarts = (restarts << 8) | static_cast<unsigned char>(block[block.size() - 4 + i]);
  REQUIRE(4 * (std::uint64_t{restarts} + 1) <= block.size());
  std::string_view entries = block.substr(0, block.size() - 4 * (std::size_t{restarts} + 1));
  std::vector<block_handle> out;
  while (!entries.empty()) {
    (void)take_varint(entries);  // key bytes shared with the previous entry
    const std::uint64_t unshared = take_varint(entries);
    const std::uint64_t value_size = take_varint(entries);
    REQUIRE(unshared + value_size <= entries.size());
    entries.remove_prefix(unshared);
    std::string_view value = entries.substr(0, value_size);
    entries.remove_prefix(value_size);
    block_handle h;
    h.offset = take_varint(value);
    h.size = take_varint(value);
    out.push_back(h);
  }
  return out;
}

// An Env whose table files copy what they read into the caller's buffer, as pread does, instead
// of returning a view of a memory map (leveldb::Env::Default() maps table files): LevelDB puts
// such blocks into its block cache, where a later read finds them without reading the file.
// fail_open(n) makes opening table file n fail from then on (an IO error), as a file that has
// become unreadable would.
class copying_env final : public ::leveldb::EnvWrapper {
 public:
  copying_env() : ::leveldb::EnvWrapper(::leveldb::Env::Default()) {}
  void fail_open(std::uint64_t table_number) { fail_number_.store(table_number); }
  ::leveldb::Status NewRandomAccessFile(const std::string& name, ::leveldb::RandomAccessFile** result) override {
    const std::string base = fs::path(name).filename().string();
    const std::uint64_t fail = fail_number_.load();
    if (fail != 0 && base.find('.') != std::string::npos &&
        std::strtoull(base.substr(0, base.find('.')).c_str(), nullptr, 10) == fail) {
      *result = nullptr;
      return ::leveldb::Status::IOError(name, "opening this table fails (copying_env::fail_open)");
    }
    ::leveldb::Status s = target()->NewRandomAccessFile(name, result);
    if (s.ok()) *result = new copying_file(*result);
    return s;
  }

 private:
  class copying_file final : public ::leveldb::RandomAccessFile {
   public:
    explicit copying_file(::leveldb::RandomAccessFile* base) : base_(base) {}
    ::leveldb::Status Read(std::uint64_t offset, std::size_t n, ::leveldb::Slice* result,
                           char* scratch) const override {
      ::leveldb::Status s = base_->Read(offset, n, result, scratch);
      if (s.ok() && result->data() != scratch) {
        std::memcpy(scratch, result->data(), result->size());
        *result = ::leveldb::Slice(scratch, result->size());
      }
      return s;
    }

   private:
    std::unique_ptr<::leveldb::RandomAccessFile> base_;
  };

  std::atomic<std::uint64_t> fail_number_{0};  // 0: none (LevelDB numbers files from 1)
};

// One table file as listed by the "leveldb.sstables" property: its level, number and smallest key.
struct table_entry {
  int level = -1;
  std::uint64_t number = 0;
  std::string smallest;
};

// Parses lines such as " 7:65536['r00000' @ 1 : 1 .. 'r00290' @ 291 : 1]" under "--- level 2 ---"
// (leveldb::Version::DebugString). The keys these tests write are printable, never escaped.
std::vector<table_entry> table_list(const leveldb_backend& db) {
  const std::optional<std::string> listing = db.property("leveldb.sstables");
  REQUIRE(listing);
  std::vector<table_entry> out;
  int level = -1;
  std::size_t pos = 0;
  while (pos < listing->size()) {
    std::size_t end = listing->find('\n', pos);
    if (end == std::string::npos) end = listing->size();
    const std::string line = listing->substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("--- level ", 0) == 0) {
      level = std::stoi(line.substr(10));
      continue;
    }
    const std::size_t colon = line.find(':'), q1 = line.find('\''), q2 = line.find('\'', q1 + 1);
    if (colon == std::string::npos || q1 == std::string::npos || q2 == std::string::npos) continue;
    table_entry t;
    t.level = level;
    t.number = std::stoull(line.substr(0, colon));
    t.smallest = line.substr(q1 + 1, q2 - q1 - 1);
    out.push_back(t);
  }
  return out;
}

TEST_CASE("leveldb_backend: without verify_checksums or paranoid_checks, a cursor checks after every step",
          "[damaged_files]") {
  // A cursor asks LevelDB's iterator for its status only after a step that read a table file
  // (detail/read_counting_env.hpp): a block that fails its checksum is never cached, so every
  // step over it reads. Without verify_checksums (or paranoid_checks, for a table's index) a
  // damaged block is read without its checksum, can be cached, and a later scan steps over it
  // without reading anything: the cursor must then check after every step. The damage here
  // (a block's restart count far larger than the block) makes LevelDB refuse the block's
  // contents; read into the caller's buffer (copying_env), the block is cached.
  temp_dir dir("leveldb-cached-gap");
  const auto path = dir.path() / "db";
  copying_env env;
  const leveldb_options o = raw_table_options(&env);
  leveldb_fill(path, true, o);
  const auto tables = files_with(path, "", ".ldb");
  REQUIRE(tables.size() == 1);
  const std::vector<block_handle> blocks = data_blocks(tables[0]);
  REQUIRE(blocks.size() >= 8);  // the damaged block has entries on both sides
  const block_handle damaged = blocks[blocks.size() / 3];
  overwrite(tables[0], damaged.offset + damaged.size - 4, "\xFF\xFF\xFF\xFF");

  for (const bool verify_checksums : {false, true}) {
    for (const bool paranoid_checks : {false, true}) {
      if (verify_checksums && paranoid_checks) continue;  // the first scan fails the checksum, as above
      INFO("verify_checksums " << verify_checksums << ", paranoid_checks " << paranoid_checks);
      leveldb_options ro = o;
      ro.verify_checksums = verify_checksums;
      ro.paranoid_checks = paranoid_checks;
      leveldb_backend db(path, ro);
      // The first scan reads the block from the file; the later ones find it in the cache.
      for (int round = 0; round < 2; ++round) {
        for (const bool reverse : {false, true}) {
          INFO("round " << round << ", reverse " << reverse);
          const gap_scan g = require_error_before_gap(db, reverse);
          CHECK(g.error.native_code() == keyschema::leveldb_detail::leveldb_corruption);
          CHECK(g.read > 0);
          CHECK(g.read < record_count);
        }
      }
    }
  }
}

TEST_CASE("leveldb_backend: a cursor never steps over a table that cannot be opened silently", "[damaged_files]") {
  // The sibling of a damaged block: LevelDB opens the tables of levels 1 and up when an iterator
  // first reaches them, and one it cannot open is skipped like an unreadable block (an error
  // iterator, the error recorded, the iterator Valid() on the next table). The failed open reads
  // nothing, and the next table may be open with its blocks cached already, so that step reads
  // nothing either: the cursor must count the open itself (detail/read_counting_env.hpp).
  temp_dir dir("leveldb-table-gap");
  const auto path = dir.path() / "db";
  copying_env env;
  leveldb_options o = raw_table_options(&env);
  o.write_buffer_bytes = 64 << 10;  // many small tables
  constexpr int count = 3000;
  const auto value = [](int i) { return record_value(i) + std::string(150, 'y'); };
  {
    leveldb_backend db(path, o);
    for (int i = 0; i < count; ++i) {
      write_batch wb;
      wb.put(record_key(i), value(i));
      db.write(wb, write_options{.sync = false});
    }
    db.compact_range({});
  }
  leveldb_backend db(path, o);
  std::vector<table_entry> tables = table_list(db);
  REQUIRE(tables.size() >= 4);
  for (const auto& t : tables) REQUIRE(t.level == tables[0].level);  // one level: opened one by one
  REQUIRE(tables[0].level >= 1);
  std::sort(tables.begin(), tables.end(),
            [](const table_entry& a, const table_entry& b) { return a.smallest < b.smallest; });
  const table_entry& unopenable = tables[1];
  const table_entry& after = tables[2];
  env.fail_open(unopenable.number);

  // Open the table after the unopenable one and cache its blocks: a later step into it reads nothing.
  int cached = 0;
  for (auto c = db.cursor(key_range{after.smallest, tables[3].smallest}, nullptr); c.valid(); c.next()) {
    CHECK(c.value() == value(std::stoi(std::string(c.key().substr(1)))));
    ++cached;
  }
  REQUIRE(cached > 0);

  for (const bool reverse : {false, true}) {
    INFO("reverse " << reverse);
    const gap_scan g = require_error_before_gap(db, reverse);
    CHECK(g.error.native_code() == keyschema::leveldb_detail::leveldb_io_error);
    CHECK(contains(g.error.what(), path.string()));
    CHECK(g.read > 0);
  }
}

}  // namespace keyschema::durability::leveldb_only
