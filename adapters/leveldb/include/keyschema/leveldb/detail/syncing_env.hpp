// keyschema/leveldb/detail/syncing_env.hpp: the leveldb::Env through which leveldb_backend opens
// every database, giving synced commits prefix durability without syncing anything that no write
// asked to sync.
//
// LevelDB 1.23 syncs only the current write-ahead log on a synced write (DBImpl::Write calls
// logfile_->Sync()). When the memtable fills, DBImpl::MakeRoomForWrite creates a new log file and
// deletes the old WritableFile without syncing it, and nothing syncs that old log afterwards: its
// records reach the disk only when the memtable is written to a table file (BuildTable syncs the
// table, VersionSet::LogAndApply syncs the MANIFEST and, through the POSIX Env, the directory),
// after which LevelDB deletes the old log (DBImpl::RemoveObsoleteFiles, Env::RemoveFile). Until
// then a power loss can keep a later synced commit (in the new log) while losing earlier commits
// (in the old one). syncing_env closes that window at the next synced write, not at the switch:
//
//   * a write-ahead log file ("<number>.log") that LevelDB deletes after a newer log was created
//     (a switch: MakeRoomForWrite holds LevelDB's mutex) is not synced then: its file stays open
//     and goes on a list of old logs, with its appends handed to the operating system (LevelDB
//     waits for the previous memtable's table before switching again, so the list holds one or
//     two logs; when memory for the list runs out, the log is synced at the switch instead);
//   * the next Sync() of any log file (a synced write; LevelDB's writer calls it holding none of
//     its own locks, after appending its record) first syncs every listed old log, oldest first,
//     then, on the real file system, fsyncs the directory of every log created since the last
//     such sync (so that the files themselves, not only their data, survive a power loss), and
//     only then syncs its own file. A failure there is returned by that Sync(), so the synced
//     write that needed the old log fails; it is also kept and returned by every later Sync()
//     (once a log could not be synced, no later sync can promise a prefix; LevelDB itself
//     refuses later writes after a failed sync);
//   * an old log that LevelDB removes (RemoveFile) before any synced write is dropped from the
//     list and never synced: LevelDB removes a log only after the table holding its records, the
//     MANIFEST and the directory were synced;
//   * the newest log, deleted when the database closes, syncs the listed old logs, the
//     directory and itself, so every write is durable after a clean close;
//   * on the real file system, renaming a file to CURRENT fsyncs the directory at once, so the
//     switch to a new MANIFEST (made when LevelDB opens a database) is durable before LevelDB
//     deletes the old one. Another wrapped Env (an in-memory or fault-injecting one) has no
//     directory to sync; it is trusted to keep what Sync() kept.
//
// Together: when a synced write returns, every record appended to any log before it is on stable
// storage, and so is every table and MANIFEST LevelDB itself synced before deleting logs. Writes
// made with sync = false keep after a power loss at least every write up to the last synced
// write that returned; of the writes after it, each one whole or not at all, but not necessarily
// a prefix: the operating system writes the pages of the current and the old logs back in its
// own order, so a later unsynced write may survive an earlier one (at risk are the writes of the
// current log and of the old log whose memtable is not yet in a table). Writes with sync = false alone
// never wait for a disk flush here (LevelDB's own table, MANIFEST and directory syncs in its
// background compaction remain).
//
// Thread-safety: as leveldb::Env (any method from any thread). A log file object is used by one
// thread at a time, as LevelDB does. The list of old logs is guarded by a mutex held only to
// change the list, never across I/O; a second mutex serializes the syncs of listed logs and is
// held across them, because a Sync() that finds the list empty must not return while another
// thread is still syncing the logs it took from it (LevelDB calls Sync() from one writer at a
// time, so it is never contended there).
#pragma once

#include <keyschema/detail/config.hpp>

#include <leveldb/env.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace leveldb_detail {

// The file name part of path (after the last '/').
inline std::string_view leveldb_base_name(std::string_view path) noexcept {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The directory part of path ("." when there is none).
inline std::string leveldb_dir_name(std::string_view path) {
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

// True for LevelDB's write-ahead log names: one or more digits followed by ".log".
inline bool leveldb_is_log_file(std::string_view path) noexcept {
  const std::string_view name = leveldb_base_name(path);
  constexpr std::string_view ext = ".log";
  if (name.size() <= ext.size() || name.substr(name.size() - ext.size()) != ext) return false;
  for (const char c : name.substr(0, name.size() - ext.size())) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// fsyncs directory dir. Returns an IOError status naming the directory and errno on failure.
inline ::leveldb::Status leveldb_sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ::leveldb::Status::IOError(dir, std::string("open for fsync: ") + std::strerror(errno));
  ::leveldb::Status s;
  if (::fsync(fd) != 0) s = ::leveldb::Status::IOError(dir, std::string("fsync: ") + std::strerror(errno));
  ::close(fd);
  return s;
}

class syncing_env final : public ::leveldb::EnvWrapper {
 public:
  // Wraps base (not owned), fsyncing directories when base is leveldb::Env::Default() (the real
  // file system). REQUIRES: base outlives this object, and this object outlives every database
  // opened through it.
  explicit syncing_env(::leveldb::Env* base) : syncing_env(base, base == ::leveldb::Env::Default()) {}

  // As above; sync_directories says whether the files base creates are on the real file system,
  // whose directories are fsynced (a wrapper of Env::Default(), e.g. one that counts calls).
  syncing_env(::leveldb::Env* base, bool sync_directories) : ::leveldb::EnvWrapper(base), real_fs_(sync_directories) {}

  syncing_env(const syncing_env&) = delete;
  syncing_env& operator=(const syncing_env&) = delete;

  ::leveldb::Status NewWritableFile(const std::string& name, ::leveldb::WritableFile** result) override {
    return wrap(target()->NewWritableFile(name, result), name, result, true);
  }

  ::leveldb::Status NewAppendableFile(const std::string& name, ::leveldb::WritableFile** result) override {
    return wrap(target()->NewAppendableFile(name, result), name, result, false);
  }

  ::leveldb::Status RenameFile(const std::string& from, const std::string& to) override {
    ::leveldb::Status s = target()->RenameFile(from, to);
    if (s.ok() && real_fs_ && leveldb_base_name(to) == "CURRENT") s = sync_dir(leveldb_dir_name(to));
    return s;
  }

  // A listed old log LevelDB removes no longer needs syncing (its records are in a synced table).
  ::leveldb::Status RemoveFile(const std::string& name) override {
    std::unique_ptr<::leveldb::WritableFile> dropped;  // closed outside the lock
    if (leveldb_is_log_file(name)) {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = old_logs_.begin(); it != old_logs_.end(); ++it) {
        if (it->name == name) {
          dropped = std::move(it->file);
          old_logs_.erase(it);
          break;
        }
      }
    }
    dropped.reset();
    return target()->RemoveFile(name);
  }

  // Directory fsyncs made so far (for tests and diagnostics).
  std::uint64_t directory_syncs() const noexcept { return directory_syncs_.load(std::memory_order_relaxed); }

 private:
  class log_file final : public ::leveldb::WritableFile {
   public:
    log_file(::leveldb::WritableFile* base, syncing_env* env, std::string name, std::uint64_t generation)
        : base_(base), env_(env), name_(std::move(name)), generation_(generation) {}

    // LevelDB deletes a log without Close(): when it switched to a newer log (the old log goes on
    // the list, synced by the next synced write) or when the database closes (sync everything).
    ~log_file() override {
      if (!base_) return;
      if (env_->superseded(generation_)) {
        if (dirty_) {
          env_->keep_error(base_->Flush());
          // Out of memory for the list: sync now instead, as LevelDB would need.
          if (!env_->list_old_log(name_, base_)) env_->keep_error(sync_data());
        }
      } else {
        env_->keep_error(sync_all());
      }
    }

    ::leveldb::Status Append(const ::leveldb::Slice& data) override {
      dirty_ = true;
      return base_->Append(data);
    }
    ::leveldb::Status Flush() override { return base_->Flush(); }
    // The old logs first, then the directory, then this file.
    ::leveldb::Status Sync() override {
      ::leveldb::Status s = env_->sync_old_logs();
      if (s.ok()) s = sync_data();
      return s;
    }
    // A superseded log stays open for a later sync (only flushed); the newest one syncs all.
    ::leveldb::Status Close() override {
      if (env_->superseded(generation_)) return base_->Flush();
      ::leveldb::Status s = sync_all();
      ::leveldb::Status c = base_->Close();
      base_.reset();
      return s.ok() ? c : s;
    }

   private:
    ::leveldb::Status sync_data() {
      ::leveldb::Status s = base_->Sync();
      if (s.ok()) dirty_ = false;
      return s;
    }
    ::leveldb::Status sync_all() {
      ::leveldb::Status s = env_->sync_old_logs();
      if (s.ok() && dirty_) s = sync_data();
      return s;
    }

    std::unique_ptr<::leveldb::WritableFile> base_;
    syncing_env* env_;
    std::string name_;
    std::uint64_t generation_;
    bool dirty_ = false;
  };

  struct old_log {
    std::string name;
    std::unique_ptr<::leveldb::WritableFile> file;
  };

  ::leveldb::Status wrap(::leveldb::Status s, const std::string& name, ::leveldb::WritableFile** result, bool created) {
    if (!s.ok() || !leveldb_is_log_file(name)) return s;
    std::uint64_t generation = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      generation = ++generations_;
      if (created && real_fs_) {
        std::string dir = leveldb_dir_name(name);
        bool listed = false;
        for (const std::string& d : unsynced_dirs_) listed = listed || d == dir;
        if (!listed) unsynced_dirs_.push_back(std::move(dir));
      }
    }
    *result = new log_file(*result, this, name, generation);
    return s;
  }

  // True when a log was created after the one of this generation: LevelDB switched away from it.
  bool superseded(std::uint64_t generation) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return generation < generations_;
  }

  // Moves name and file onto the list; false (both left as they were) when memory runs out.
  bool list_old_log(std::string& name, std::unique_ptr<::leveldb::WritableFile>& file) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    try {
      old_logs_.reserve(old_logs_.size() + 1);
    } catch (const std::bad_alloc&) {
      return false;
    }
    old_logs_.push_back(old_log{std::move(name), std::move(file)});  // cannot throw after reserve
    return true;
  }

  // Syncs the listed old logs (oldest first) and the directories of new logs; returns the first
  // failure, kept for every later call.
  ::leveldb::Status sync_old_logs() {
    const std::lock_guard<std::mutex> syncing(sync_mutex_);  // held across the syncs: see the header
    std::vector<old_log> logs;
    std::vector<std::string> dirs;
    ::leveldb::Status s;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      s = error_;
      if (!s.ok()) return s;
      logs.swap(old_logs_);
      dirs.swap(unsynced_dirs_);
    }
    for (old_log& l : logs) {
      s = l.file->Sync();
      if (!s.ok()) break;
    }
    for (std::size_t i = 0; s.ok() && i < dirs.size(); ++i) s = sync_dir(dirs[i]);
    keep_error(s);
    return s;  // logs are closed here, outside mutex_
  }

  ::leveldb::Status sync_dir(const std::string& dir) {
    directory_syncs_.fetch_add(1, std::memory_order_relaxed);
    return leveldb_sync_dir(dir);
  }

  void keep_error(const ::leveldb::Status& s) {
    if (s.ok()) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (error_.ok()) error_ = s;
  }

  const bool real_fs_;
  std::mutex sync_mutex_;  // serializes sync_old_logs(); taken before mutex_, never after
  std::mutex mutex_;       // guards the members below; never held across I/O
  std::uint64_t generations_ = 0;          // log files created so far
  std::vector<old_log> old_logs_;          // superseded logs with appends not yet synced, oldest first
  std::vector<std::string> unsynced_dirs_; // directories of logs created since their last fsync
  ::leveldb::Status error_;                // the first failed sync, kept for good
  std::atomic<std::uint64_t> directory_syncs_{0};
};

}  // namespace leveldb_detail
KEYSCHEMA_END_NAMESPACE
