// keyschema/leveldb/detail/syncing_env.hpp: the leveldb::Env through which leveldb_backend opens
// every database, giving synced commits prefix durability.
//
// LevelDB 1.23 syncs only the current write-ahead log on a synced write (DBImpl::Write calls
// logfile_->Sync()). When the memtable fills, DBImpl::MakeRoomForWrite creates a new log file and
// deletes the old WritableFile without syncing it, and nothing syncs that old log afterwards: its
// records reach the disk only when the memtable is written to a table file (BuildTable syncs the
// table, VersionSet::LogAndApply syncs the MANIFEST and, through the POSIX Env, the directory).
// Until then a power loss can keep a later synced commit (in the new log) while losing earlier
// commits (in the old one). syncing_env closes that window:
//
//   * a write-ahead log file ("<number>.log") with appends not yet synced syncs them when it is
//     closed or destroyed, so the old log is on disk before the first record goes to the new one;
//     a failed sync there cannot be returned to LevelDB, so it is kept and returned by the next
//     Sync() of any log file (the next synced write fails, and LevelDB refuses later writes);
//   * on the real file system (the wrapped Env is leveldb::Env::Default()), the first Sync() of a
//     new log file also fsyncs its directory, so that the file itself (not only its data) survives
//     a power loss, and renaming a file to CURRENT fsyncs the directory so the switch to a new
//     MANIFEST is durable before LevelDB deletes the old one. Another wrapped Env (an in-memory
//     or fault-injecting one) has no directory to sync; it is trusted to keep what Sync() kept.
//
// Together: when a synced write returns, every record appended to any log before it is on stable
// storage, and so is every table and MANIFEST LevelDB itself synced before deleting logs.
//
// Thread-safety: as leveldb::Env (any method from any thread). A log file object is used by one
// thread at a time, as LevelDB does.
#pragma once

#include <keyschema/detail/config.hpp>

#include <leveldb/env.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

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
  // Wraps base (not owned). REQUIRES: base outlives this object, and this object outlives every
  // database opened through it.
  explicit syncing_env(::leveldb::Env* base) : ::leveldb::EnvWrapper(base), real_fs_(base == ::leveldb::Env::Default()) {}

  ::leveldb::Status NewWritableFile(const std::string& name, ::leveldb::WritableFile** result) override {
    return wrap(target()->NewWritableFile(name, result), name, result, true);
  }

  ::leveldb::Status NewAppendableFile(const std::string& name, ::leveldb::WritableFile** result) override {
    return wrap(target()->NewAppendableFile(name, result), name, result, false);
  }

  ::leveldb::Status RenameFile(const std::string& from, const std::string& to) override {
    ::leveldb::Status s = target()->RenameFile(from, to);
    if (s.ok() && real_fs_ && leveldb_base_name(to) == "CURRENT") s = leveldb_sync_dir(leveldb_dir_name(to));
    return s;
  }

 private:
  class log_file final : public ::leveldb::WritableFile {
   public:
    log_file(::leveldb::WritableFile* base, syncing_env* env, std::string name, bool created)
        : base_(base), env_(env), name_(std::move(name)), dir_synced_(!created || !env->real_fs_) {}

    // Destroyed by LevelDB without Close() when it switches to a new log: sync what is pending.
    ~log_file() override {
      if (dirty_) env_->keep_error(sync_data());
    }

    ::leveldb::Status Append(const ::leveldb::Slice& data) override {
      dirty_ = true;
      return base_->Append(data);
    }
    ::leveldb::Status Flush() override { return base_->Flush(); }
    ::leveldb::Status Sync() override {
      ::leveldb::Status s = env_->kept_error();
      if (s.ok()) s = sync_data();
      return s;
    }
    ::leveldb::Status Close() override {
      ::leveldb::Status s;
      if (dirty_) s = sync_data();
      ::leveldb::Status c = base_->Close();
      return s.ok() ? c : s;
    }

   private:
    ::leveldb::Status sync_data() {
      ::leveldb::Status s = base_->Sync();
      if (s.ok()) dirty_ = false;
      if (s.ok() && !dir_synced_) {
        s = leveldb_sync_dir(leveldb_dir_name(name_));
        if (s.ok()) dir_synced_ = true;
      }
      return s;
    }

    std::unique_ptr<::leveldb::WritableFile> base_;
    syncing_env* env_;
    std::string name_;
    bool dir_synced_;
    bool dirty_ = false;
  };

  ::leveldb::Status wrap(::leveldb::Status s, const std::string& name, ::leveldb::WritableFile** result, bool created) {
    if (s.ok() && leveldb_is_log_file(name)) *result = new log_file(*result, this, name, created);
    return s;
  }

  void keep_error(const ::leveldb::Status& s) {
    if (s.ok()) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (error_.ok()) error_ = s;
  }

  // Kept for good: once a log could not be synced, no later sync can promise a prefix.
  ::leveldb::Status kept_error() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

  const bool real_fs_;
  std::mutex mutex_;
  ::leveldb::Status error_;
};

}  // namespace leveldb_detail
KEYSCHEMA_END_NAMESPACE
