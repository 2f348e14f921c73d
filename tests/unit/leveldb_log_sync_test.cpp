// tests/unit/leveldb_log_sync_test.cpp: the syncs keyschema's syncing Env makes on a LevelDB
// database (keyschema/leveldb/detail/syncing_env.hpp), counted on the real file system.
//
// A plain leveldb::DB is opened through syncing_env over a counting Env (a wrapper of
// leveldb::Env::Default() that counts the Sync() calls of write-ahead log files, in order),
// with LevelDB's smallest write buffer so that logs switch every ~64 KiB. Writes with
// sync = false must make no log or directory sync at all, across any number of log switches;
// the next synced write syncs the old logs LevelDB still keeps, each once and before its own log,
// and the directory once; a log LevelDB deleted before any synced write is never synced.
#include <catch2/catch.hpp>

#include <keyschema/leveldb/detail/syncing_env.hpp>

#include <support/temp_dir.hpp>

#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace leveldb_log_sync_test {

using keyschema::leveldb_detail::leveldb_base_name;
using keyschema::leveldb_detail::leveldb_is_log_file;
using keyschema::leveldb_detail::syncing_env;

namespace {

// Counts log files created and the Sync() calls of log files (names in call order).
class counting_env final : public leveldb::EnvWrapper {
 public:
  counting_env() : leveldb::EnvWrapper(leveldb::Env::Default()) {}

  std::atomic<int> logs_created{0};

  std::vector<std::string> synced_logs() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return synced_;
  }
  std::string last_log() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return last_log_;
  }

  leveldb::Status NewWritableFile(const std::string& name, leveldb::WritableFile** result) override {
    leveldb::Status s = target()->NewWritableFile(name, result);
    if (s.ok() && leveldb_is_log_file(name)) {
      *result = new file(*result, this, std::string(leveldb_base_name(name)));
      const std::lock_guard<std::mutex> lock(mutex_);
      last_log_ = std::string(leveldb_base_name(name));
      ++logs_created;
    }
    return s;
  }

 private:
  class file final : public leveldb::WritableFile {
   public:
    file(leveldb::WritableFile* base, counting_env* env, std::string name)
        : base_(base), env_(env), name_(std::move(name)) {}
    leveldb::Status Append(const leveldb::Slice& data) override { return base_->Append(data); }
    leveldb::Status Flush() override { return base_->Flush(); }
    leveldb::Status Close() override { return base_->Close(); }
    leveldb::Status Sync() override {
      {
        const std::lock_guard<std::mutex> lock(env_->mutex_);
        env_->synced_.push_back(name_);
      }
      return base_->Sync();
    }

   private:
    std::unique_ptr<leveldb::WritableFile> base_;
    counting_env* env_;
    std::string name_;
  };

  std::mutex mutex_;
  std::vector<std::string> synced_;
  std::string last_log_;
};

struct database {
  explicit database(const std::string& path) : env(&counting, /*sync_directories=*/true) {
    leveldb::Options o;
    o.env = &env;
    o.create_if_missing = true;
    o.write_buffer_size = 64 << 10;  // LevelDB's minimum: a new log every ~64 KiB of writes
    o.compression = leveldb::kNoCompression;
    leveldb::DB* p = nullptr;
    const leveldb::Status s = leveldb::DB::Open(o, path, &p);
    REQUIRE(s.ok());
    db.reset(p);
  }

  // Writes 1 KiB values unsynced until LevelDB has created `switches` more log files.
  void write_unsynced_across_switches(int switches) {
    const int before = counting.logs_created;
    while (counting.logs_created - before < switches) {
      REQUIRE(next < 100000);
      write(false);
    }
  }

  void write(bool sync) {
    leveldb::WriteOptions wo;
    wo.sync = sync;
    const std::string key = "k" + std::to_string(1000000 + next++);
    REQUIRE(db->Put(wo, key, std::string(1024, 'v')).ok());
  }

  int logs_on_disk(const std::string& path) {
    std::vector<std::string> children;
    REQUIRE(counting.GetChildren(path, &children).ok());
    return static_cast<int>(std::count_if(children.begin(), children.end(),
                                          [](const std::string& c) { return leveldb_is_log_file(c); }));
  }

  counting_env counting;
  syncing_env env;  // wraps counting, fsyncs directories (the real file system)
  std::unique_ptr<leveldb::DB> db;
  std::uint64_t next = 0;
};

}  // namespace

TEST_CASE("syncing_env: unsynced writes across log switches sync no log and no directory",
          "[leveldb][log-sync]") {
  keyschema::testing::temp_dir dir("leveldb-log-sync");
  const std::string path = (dir.path() / "db").string();
  database d(path);
  const std::size_t log_syncs = d.counting.synced_logs().size();  // after the open
  const std::uint64_t dir_syncs = d.env.directory_syncs();

  d.write_unsynced_across_switches(4);
  CHECK(d.counting.synced_logs().size() == log_syncs);
  CHECK(d.env.directory_syncs() == dir_syncs);

  // One synced write: the old logs LevelDB still keeps, each once, then its own log, last; one
  // directory fsync for the new logs' entries.
  const std::string current = d.counting.last_log();
  d.write(true);
  const std::vector<std::string> all = d.counting.synced_logs();
  const std::vector<std::string> synced(all.begin() + static_cast<std::ptrdiff_t>(log_syncs), all.end());
  INFO("logs synced by the synced write: " << synced.size());
  REQUIRE(!synced.empty());
  CHECK(synced.back() == current);
  CHECK(std::count(synced.begin(), synced.end(), current) == 1);
  std::vector<std::string> sorted = synced;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());  // none twice
  CHECK(d.env.directory_syncs() == dir_syncs + 1);

  // Nothing is left to sync: the next synced write syncs its own log only.
  d.write(true);
  const std::vector<std::string> after = d.counting.synced_logs();
  CHECK(after.size() == all.size() + 1);
  CHECK(after.back() == current);
  CHECK(d.env.directory_syncs() == dir_syncs + 1);
}

TEST_CASE("syncing_env: a log LevelDB deletes before any synced write is never synced", "[leveldb][log-sync]") {
  keyschema::testing::temp_dir dir("leveldb-log-sync");
  const std::string path = (dir.path() / "db").string();
  database d(path);
  const std::size_t log_syncs = d.counting.synced_logs().size();

  d.write_unsynced_across_switches(3);
  // Writes the memtables to tables (LevelDB syncs those and the MANIFEST) and deletes the old logs.
  d.db->CompactRange(nullptr, nullptr);
  REQUIRE(d.logs_on_disk(path) == 1);
  CHECK(d.counting.synced_logs().size() == log_syncs);

  d.write(true);
  const std::vector<std::string> all = d.counting.synced_logs();
  REQUIRE(all.size() == log_syncs + 1);  // its own log only
  CHECK(all.back() == d.counting.last_log());
}

}  // namespace leveldb_log_sync_test
