// tests/durability/leveldb_power_loss_env.hpp: a leveldb::Env that simulates a power loss.
//
// keyschema::testing::power_loss_env wraps leveldb::Env::Default() and models what survives a
// power cut, after LevelDB's own db/fault_injection_test.cc: for every file created or opened for
// writing through it, it tracks the bytes appended and the size at the last Sync(). A file that
// was never synced since it was created is not on the disk at all (its directory entry is made
// durable by its first sync, as LevelDB's test assumes and as keyschema's syncing Env does for
// logs on the real file system); a synced one keeps exactly what was synced.
//
//   cut_power():     from now on nothing reaches the "disk": appends and syncs are ignored,
//                    creating, renaming and removing files fail with an IOError. Call it at the
//                    moment of the crash, then destroy the database (its shutdown writes are lost).
//   restore_power(): REQUIRES: no database is open through this env. Truncates every tracked
//                    file to its synced size, deletes the files never synced, forgets them all
//                    (what is left counts as durable) and lets writes through again.
//
// Sync() records the synced size after flushing LevelDB's buffer to the operating system, without
// an fsync: the model, not the real disk, decides what survives, and the test stays fast.
// fail_log_sync makes Sync() of write-ahead log files ("<n>.log") fail (an I/O error) while set;
// fail_syncs_of(name) makes every Sync() of that one file fail. log_syncs counts the Sync() calls
// of log files that reached the env while the power was on, last_log_created() names the newest
// log. hold_tables_from_next_log(): from the creation of the next log file on (a log switch, made
// while the previous memtable is already in a table), creating a table file ("<n>.ldb") waits
// until release_tables(), so the memtable of the log switched away from cannot be written to a
// table and that log is certain not to be deleted meanwhile (LevelDB's background thread waits,
// holding none of LevelDB's locks). REQUIRES: release_tables() before the database is destroyed
// (its destructor waits for the background work), and no further log switch while held (LevelDB
// waits for the previous memtable's table before switching again).
// Not modelled: removals and renames are durable at once (LevelDB only renames a synced
// temporary file onto CURRENT, and removes files whose contents are elsewhere and synced).
//
// Thread-safety: as leveldb::Env (LevelDB's background thread writes tables concurrently).
#pragma once

#include <leveldb/env.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <utility>

namespace keyschema::testing {

class power_loss_env : public leveldb::EnvWrapper {
 public:
  power_loss_env() : leveldb::EnvWrapper(leveldb::Env::Default()) {}

  // Write-ahead log files created so far ("<n>.log"): a change means LevelDB switched logs.
  std::atomic<int> logs_created{0};
  std::atomic<bool> fail_log_sync{false};
  std::atomic<int> log_syncs{0};

  std::string last_log_created() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return last_log_;
  }

  void fail_syncs_of(const std::string& name) {
    const std::lock_guard<std::mutex> lock(mutex_);
    failing_.insert(name);
  }

  void hold_tables_from_next_log() {
    const std::lock_guard<std::mutex> lock(mutex_);
    hold_armed_ = true;
  }

  void release_tables() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      hold_armed_ = false;
      holding_tables_ = false;
    }
    tables_released_.notify_all();
  }

  void cut_power() { active_ = false; }

  void restore_power() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [name, f] : files_) {
      std::error_code ec;
      if (!f.ever_synced) {
        std::filesystem::remove(name, ec);
      } else if (std::filesystem::exists(name, ec) && std::filesystem::file_size(name, ec) > f.synced) {
        std::filesystem::resize_file(name, f.synced, ec);
      }
      if (ec) throw std::filesystem::filesystem_error("power_loss_env::restore_power", name, ec);
    }
    files_.clear();
    active_ = true;
  }

  leveldb::Status NewWritableFile(const std::string& name, leveldb::WritableFile** result) override {
    if (is_table(name)) {
      std::unique_lock<std::mutex> lock(mutex_);
      tables_released_.wait(lock, [this] { return !holding_tables_; });
    }
    if (!active_) return off(name);
    leveldb::Status s = target()->NewWritableFile(name, result);
    if (!s.ok()) return s;
    if (is_log(name)) {
      ++logs_created;
      const std::lock_guard<std::mutex> lock(mutex_);
      last_log_ = name;
      if (hold_armed_) holding_tables_ = true;
      hold_armed_ = false;
    }
    track(name, 0, false);
    *result = new file(*result, this, name);
    return s;
  }

  leveldb::Status NewAppendableFile(const std::string& name, leveldb::WritableFile** result) override {
    if (!active_) return off(name);
    std::uint64_t size = 0;
    const bool existed = target()->GetFileSize(name, &size).ok();
    leveldb::Status s = target()->NewAppendableFile(name, result);
    if (!s.ok()) return s;
    track(name, existed ? size : 0, existed);
    *result = new file(*result, this, name);
    return s;
  }

  leveldb::Status RemoveFile(const std::string& name) override {
    if (!active_) return off(name);
    leveldb::Status s = target()->RemoveFile(name);
    if (s.ok()) {
      const std::lock_guard<std::mutex> lock(mutex_);
      files_.erase(name);
    }
    return s;
  }

  leveldb::Status RenameFile(const std::string& from, const std::string& to) override {
    if (!active_) return off(from);
    leveldb::Status s = target()->RenameFile(from, to);
    if (s.ok()) {
      const std::lock_guard<std::mutex> lock(mutex_);
      files_.erase(to);
      if (auto it = files_.find(from); it != files_.end()) {
        files_[to] = it->second;
        files_.erase(from);
      }
    }
    return s;
  }

 private:
  struct file_state {
    std::uint64_t size = 0;    // bytes appended
    std::uint64_t synced = 0;  // size at the last Sync()
    bool ever_synced = false;  // false: the file itself does not survive a power loss
  };

  class file : public leveldb::WritableFile {
   public:
    file(leveldb::WritableFile* base, power_loss_env* env, std::string name)
        : base_(base), env_(env), name_(std::move(name)), log_(is_log(name_)) {}
    leveldb::Status Append(const leveldb::Slice& data) override {
      if (!env_->active_) return leveldb::Status::OK();  // lost with the power
      leveldb::Status s = base_->Append(data);
      if (s.ok()) env_->appended(name_, data.size());
      return s;
    }
    leveldb::Status Flush() override { return env_->active_ ? base_->Flush() : leveldb::Status::OK(); }
    leveldb::Status Sync() override {
      if (!env_->active_) return leveldb::Status::OK();
      if ((log_ && env_->fail_log_sync) || env_->failing(name_)) {
        return leveldb::Status::IOError(name_, "injected sync failure");
      }
      if (log_) ++env_->log_syncs;
      leveldb::Status s = base_->Flush();
      if (s.ok()) env_->synced(name_);
      return s;
    }
    leveldb::Status Close() override { return base_->Close(); }

   private:
    std::unique_ptr<leveldb::WritableFile> base_;
    power_loss_env* env_;
    std::string name_;
    bool log_;
  };

  static bool is_log(const std::string& name) {
    return name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0;
  }

  static bool is_table(const std::string& name) {
    return (name.size() > 4 && name.compare(name.size() - 4, 4, ".ldb") == 0) ||
           (name.size() > 4 && name.compare(name.size() - 4, 4, ".sst") == 0);
  }

  static leveldb::Status off(const std::string& name) { return leveldb::Status::IOError(name, "power is off"); }

  bool failing(const std::string& name) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return failing_.count(name) != 0;
  }

  void track(const std::string& name, std::uint64_t size, bool synced) {
    const std::lock_guard<std::mutex> lock(mutex_);
    files_[name] = file_state{size, synced ? size : 0, synced};
  }
  // A file renamed or removed while open is no longer tracked under name: nothing to record.
  void appended(const std::string& name, std::size_t n) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = files_.find(name); it != files_.end()) it->second.size += n;
  }
  void synced(const std::string& name) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = files_.find(name); it != files_.end()) {
      it->second.synced = it->second.size;
      it->second.ever_synced = true;
    }
  }

  std::atomic<bool> active_{true};
  std::mutex mutex_;
  std::map<std::string, file_state> files_;
  std::string last_log_;
  std::set<std::string> failing_;
  bool hold_armed_ = false;
  bool holding_tables_ = false;
  std::condition_variable tables_released_;
};

}  // namespace keyschema::testing
