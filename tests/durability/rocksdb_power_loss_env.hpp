// tests/durability/rocksdb_power_loss_env.hpp: a RocksDB environment that simulates a power loss.
//
// RocksDB 7 does its file I/O through env->GetFileSystem(), not through the Env's own file
// methods, so the fault injection is a rocksdb::FileSystemWrapper around
// rocksdb::FileSystem::Default(), turned into an Env with rocksdb::NewCompositeEnv (threads and
// clock stay the default Env's). keyschema::testing::rocksdb_power_loss_env owns both; env() is
// what rocksdb_options::env takes. It models what survives a power cut after RocksDB's own
// FaultInjectionTestFS (utilities/fault_injection_fs.cc):
//   file contents: for every file created or reopened for writing through it, the bytes appended
//     and the size at the last Sync() or Fsync() are tracked; a power cut truncates the file to
//     that size. RangeSync() (sync_file_range, which does not flush the disk's cache or the
//     file's metadata) and Flush() make nothing durable.
//   directory entries: a file created through it exists after a power cut only when its
//     directory was fsynced (FSDirectory::Fsync or FsyncWithDirOptions) after it was created;
//     otherwise it is deleted, however often the file itself was synced. This is stricter than
//     leveldb_power_loss_env.hpp, whose model lets a file's first sync make its entry durable:
//     RocksDB fsyncs the directory itself after creating table files, MANIFEST, CURRENT and
//     (before the first synced write to it) each new write-ahead log, and this model checks it.
//     A rename carries the entry's state to the new name (a file renamed before its directory
//     was synced is still lost), as in FaultInjectionTestFS.
//   removals are durable at once. Files RocksDB writes without this file system's writable
//     files (LOCK, the info LOG) are not tracked and survive whole.
//
//   cut_power():     from now on nothing becomes durable: syncs and directory fsyncs are not
//                    recorded, removals, renames and truncations by name are reported done but
//                    not carried out; appends and new files still reach the real files (to be
//                    cut back or deleted by restore_power()). Call it at the moment of the
//                    crash, then destroy the database (its shutdown writes are lost). Unlike
//                    leveldb_power_loss_env.hpp nothing fails after the cut: with failing
//                    writes, RocksDB's background flushes recorded background errors and many
//                    closes took about a second (250 crash points ran 127 s instead of 13 s).
//   restore_power(): REQUIRES: no database is open through this env. Deletes the files whose
//                    entry is not durable, truncates the others to their synced size, forgets
//                    them all (what is left counts as durable) and records again.
//
// fail_log_sync makes Sync() and Fsync() of write-ahead log files fail (an I/O error) while set.
// Sync() and directory fsyncs record the state without calling fsync: the model, not the real
// disk, decides what survives, and the test stays fast.
// Not modelled: ReuseWritableFile (only with recycle_log_file_num, off in keyschema), random
// read-write files (not used by keyschema's options); LinkFile returns NotSupported.
//
// Thread-safety: as rocksdb::FileSystem (RocksDB's background threads flush and compact
// concurrently with the writer). The object is neither copied nor moved.
#pragma once

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/io_status.h>
#include <rocksdb/slice.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>

namespace keyschema::testing {

class rocksdb_power_loss_env {
 public:
  rocksdb_power_loss_env()
      : fs_(std::make_shared<file_system>(this)), env_(::rocksdb::NewCompositeEnv(fs_)) {}
  rocksdb_power_loss_env(const rocksdb_power_loss_env&) = delete;
  rocksdb_power_loss_env& operator=(const rocksdb_power_loss_env&) = delete;

  // The Env for rocksdb_options::env. Owned by this object.
  ::rocksdb::Env* env() const { return env_.get(); }

  // Write-ahead log files created so far ("<n>.log"): a change means RocksDB switched logs.
  std::atomic<int> logs_created{0};
  // While set, Sync()/Fsync() of write-ahead log files ("<n>.log") fail with an IOError.
  std::atomic<bool> fail_log_sync{false};
  // Directory fsyncs recorded so far (a figure of the test).
  std::atomic<int> directory_syncs{0};
  // Files deleted by restore_power() because their directory was not synced after they were created.
  std::atomic<int> unsynced_entries_dropped{0};

  void cut_power() { active_ = false; }

  void restore_power() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [name, f] : files_) {
      std::error_code ec;
      if (!f.entry_durable) {
        if (std::filesystem::remove(name, ec)) ++unsynced_entries_dropped;
      } else if (std::filesystem::exists(name, ec) && std::filesystem::file_size(name, ec) > f.synced) {
        std::filesystem::resize_file(name, f.synced, ec);
      }
      if (ec) throw std::filesystem::filesystem_error("rocksdb_power_loss_env::restore_power", name, ec);
    }
    files_.clear();
    active_ = true;
  }

 private:
  struct file_state {
    std::uint64_t size = 0;      // bytes appended
    std::uint64_t synced = 0;    // size at the last Sync() or Fsync()
    bool entry_durable = false;  // its directory was fsynced since it was created
  };

  static std::string normal(const std::string& name) {
    std::filesystem::path p = std::filesystem::path(name).lexically_normal();
    if (!p.has_filename()) p = p.parent_path();  // "dir/" names the directory "dir"
    return p.string();
  }
  static std::string parent(const std::string& normal_name) {
    return std::filesystem::path(normal_name).parent_path().string();
  }
  static bool is_log(const std::string& name) {
    return name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0;
  }

  // A file opened for writing, `size` bytes long and all of them synced when `kept`. Its entry is
  // durable when it existed before and was not tracked (so not created since the last power cut),
  // and keeps its tracked state otherwise.
  void track(const std::string& name, std::uint64_t size, bool kept, bool existed) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(name);
    const bool entry = it != files_.end() ? it->second.entry_durable : existed;
    files_[name] = file_state{size, kept ? size : 0, entry};
  }
  // A file renamed or removed while open is no longer tracked under name: nothing to record.
  void appended(const std::string& name, std::uint64_t end) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = files_.find(name); it != files_.end() && end > it->second.size) it->second.size = end;
  }
  std::uint64_t size_of(const std::string& name) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(name);
    return it != files_.end() ? it->second.size : 0;
  }
  void truncated(const std::string& name, std::uint64_t size) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = files_.find(name); it != files_.end()) {
      it->second.size = size;
      if (it->second.synced > size) it->second.synced = size;
    }
  }
  void synced(const std::string& name) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = files_.find(name); it != files_.end()) it->second.synced = it->second.size;
  }
  void directory_synced(const std::string& dir) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [name, f] : files_) {
      if (parent(name) == dir) f.entry_durable = true;
    }
    ++directory_syncs;
  }
  void removed(const std::string& name) {
    const std::lock_guard<std::mutex> lock(mutex_);
    files_.erase(name);
  }
  void renamed(const std::string& from, const std::string& to) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = files_.find(from);
    if (it == files_.end()) {
      files_.erase(to);  // an untracked (durable) file took the name
      return;
    }
    const file_state moved = it->second;
    files_.erase(it);
    files_[to] = moved;
  }

  class writable_file : public ::rocksdb::FSWritableFileOwnerWrapper {
   public:
    writable_file(std::unique_ptr<::rocksdb::FSWritableFile> base, rocksdb_power_loss_env* env, std::string name)
        : FSWritableFileOwnerWrapper(std::move(base)), env_(env), name_(std::move(name)) {}

    ::rocksdb::IOStatus Append(const ::rocksdb::Slice& data, const ::rocksdb::IOOptions& o,
                               ::rocksdb::IODebugContext* dbg) override {
      const std::uint64_t at = env_->size_of(name_);
      ::rocksdb::IOStatus s = target()->Append(data, o, dbg);
      if (s.ok()) env_->appended(name_, at + data.size());
      return s;
    }
    ::rocksdb::IOStatus Append(const ::rocksdb::Slice& data, const ::rocksdb::IOOptions& o,
                               const ::rocksdb::DataVerificationInfo& info, ::rocksdb::IODebugContext* dbg) override {
      const std::uint64_t at = env_->size_of(name_);
      ::rocksdb::IOStatus s = target()->Append(data, o, info, dbg);
      if (s.ok()) env_->appended(name_, at + data.size());
      return s;
    }
    ::rocksdb::IOStatus PositionedAppend(const ::rocksdb::Slice& data, std::uint64_t offset,
                                         const ::rocksdb::IOOptions& o, ::rocksdb::IODebugContext* dbg) override {
      ::rocksdb::IOStatus s = target()->PositionedAppend(data, offset, o, dbg);
      if (s.ok()) env_->appended(name_, offset + data.size());
      return s;
    }
    ::rocksdb::IOStatus PositionedAppend(const ::rocksdb::Slice& data, std::uint64_t offset,
                                         const ::rocksdb::IOOptions& o, const ::rocksdb::DataVerificationInfo& info,
                                         ::rocksdb::IODebugContext* dbg) override {
      ::rocksdb::IOStatus s = target()->PositionedAppend(data, offset, o, info, dbg);
      if (s.ok()) env_->appended(name_, offset + data.size());
      return s;
    }
    ::rocksdb::IOStatus Truncate(std::uint64_t size, const ::rocksdb::IOOptions& o,
                                 ::rocksdb::IODebugContext* dbg) override {
      ::rocksdb::IOStatus s = target()->Truncate(size, o, dbg);
      if (s.ok()) env_->truncated(name_, size);
      return s;
    }
    ::rocksdb::IOStatus Flush(const ::rocksdb::IOOptions& o, ::rocksdb::IODebugContext* dbg) override {
      return target()->Flush(o, dbg);
    }
    ::rocksdb::IOStatus Sync(const ::rocksdb::IOOptions& o, ::rocksdb::IODebugContext* dbg) override {
      return sync(o, dbg);
    }
    ::rocksdb::IOStatus Fsync(const ::rocksdb::IOOptions& o, ::rocksdb::IODebugContext* dbg) override {
      return sync(o, dbg);
    }
    // sync_file_range: neither the disk's cache nor the file's size reach stable storage.
    ::rocksdb::IOStatus RangeSync(std::uint64_t, std::uint64_t, const ::rocksdb::IOOptions&,
                                  ::rocksdb::IODebugContext*) override {
      return ::rocksdb::IOStatus::OK();
    }

   private:
    ::rocksdb::IOStatus sync(const ::rocksdb::IOOptions& o, ::rocksdb::IODebugContext* dbg) {
      if (env_->fail_log_sync && is_log(name_)) return ::rocksdb::IOStatus::IOError(name_, "injected sync failure");
      ::rocksdb::IOStatus s = target()->Flush(o, dbg);  // to the operating system, no fsync
      if (s.ok() && env_->active_) env_->synced(name_);
      return s;
    }

    rocksdb_power_loss_env* env_;
    std::string name_;
  };

  class directory : public ::rocksdb::FSDirectoryWrapper {
   public:
    directory(std::unique_ptr<::rocksdb::FSDirectory> base, rocksdb_power_loss_env* env, std::string name)
        : FSDirectoryWrapper(std::move(base)), env_(env), name_(std::move(name)) {}
    ::rocksdb::IOStatus Fsync(const ::rocksdb::IOOptions&, ::rocksdb::IODebugContext*) override {
      if (env_->active_) env_->directory_synced(name_);
      return ::rocksdb::IOStatus::OK();
    }
    ::rocksdb::IOStatus FsyncWithDirOptions(const ::rocksdb::IOOptions& o, ::rocksdb::IODebugContext* dbg,
                                            const ::rocksdb::DirFsyncOptions&) override {
      return Fsync(o, dbg);
    }

   private:
    rocksdb_power_loss_env* env_;
    std::string name_;
  };

  class file_system : public ::rocksdb::FileSystemWrapper {
   public:
    explicit file_system(rocksdb_power_loss_env* env)
        : FileSystemWrapper(::rocksdb::FileSystem::Default()), env_(env) {}
    static const char* kClassName() { return "KeyschemaPowerLossFileSystem"; }
    const char* Name() const override { return kClassName(); }

    ::rocksdb::IOStatus NewWritableFile(const std::string& f, const ::rocksdb::FileOptions& fo,
                                        std::unique_ptr<::rocksdb::FSWritableFile>* r,
                                        ::rocksdb::IODebugContext* dbg) override {
      const std::string name = normal(f);
      // An untracked file that already exists has a durable entry (it was there before).
      const bool existed = target()->FileExists(f, ::rocksdb::IOOptions(), dbg).ok();
      std::unique_ptr<::rocksdb::FSWritableFile> base;
      ::rocksdb::IOStatus s = target()->NewWritableFile(f, fo, &base, dbg);
      if (!s.ok()) return s;
      if (is_log(name)) ++env_->logs_created;
      env_->track(name, 0, false, existed);
      *r = std::make_unique<writable_file>(std::move(base), env_, name);
      return s;
    }
    ::rocksdb::IOStatus ReopenWritableFile(const std::string& f, const ::rocksdb::FileOptions& fo,
                                           std::unique_ptr<::rocksdb::FSWritableFile>* r,
                                           ::rocksdb::IODebugContext* dbg) override {
      const std::string name = normal(f);
      std::uint64_t size = 0;
      const bool existed = target()->GetFileSize(f, ::rocksdb::IOOptions(), &size, dbg).ok();
      std::unique_ptr<::rocksdb::FSWritableFile> base;
      ::rocksdb::IOStatus s = target()->ReopenWritableFile(f, fo, &base, dbg);
      if (!s.ok()) return s;
      env_->track(name, existed ? size : 0, existed, existed);
      *r = std::make_unique<writable_file>(std::move(base), env_, name);
      return s;
    }
    ::rocksdb::IOStatus NewDirectory(const std::string& d, const ::rocksdb::IOOptions& o,
                                     std::unique_ptr<::rocksdb::FSDirectory>* r,
                                     ::rocksdb::IODebugContext* dbg) override {
      std::unique_ptr<::rocksdb::FSDirectory> base;
      ::rocksdb::IOStatus s = target()->NewDirectory(d, o, &base, dbg);
      if (!s.ok()) return s;
      *r = std::make_unique<directory>(std::move(base), env_, normal(d));
      return s;
    }
    ::rocksdb::IOStatus DeleteFile(const std::string& f, const ::rocksdb::IOOptions& o,
                                   ::rocksdb::IODebugContext* dbg) override {
      if (!env_->active_) return ::rocksdb::IOStatus::OK();  // never reaches the disk
      ::rocksdb::IOStatus s = target()->DeleteFile(f, o, dbg);
      if (s.ok()) env_->removed(normal(f));
      return s;
    }
    ::rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to, const ::rocksdb::IOOptions& o,
                                   ::rocksdb::IODebugContext* dbg) override {
      if (!env_->active_) return ::rocksdb::IOStatus::OK();
      ::rocksdb::IOStatus s = target()->RenameFile(from, to, o, dbg);
      if (s.ok()) env_->renamed(normal(from), normal(to));
      return s;
    }
    ::rocksdb::IOStatus LinkFile(const std::string& from, const std::string& to, const ::rocksdb::IOOptions&,
                                 ::rocksdb::IODebugContext*) override {
      return ::rocksdb::IOStatus::NotSupported(from + " -> " + to, "links are not modelled");
    }
    ::rocksdb::IOStatus Truncate(const std::string& f, std::size_t size, const ::rocksdb::IOOptions& o,
                                 ::rocksdb::IODebugContext* dbg) override {
      if (!env_->active_) return ::rocksdb::IOStatus::OK();
      ::rocksdb::IOStatus s = target()->Truncate(f, size, o, dbg);
      if (s.ok()) env_->truncated(normal(f), size);
      return s;
    }

   private:
    rocksdb_power_loss_env* env_;
  };

  std::atomic<bool> active_{true};
  std::mutex mutex_;
  std::map<std::string, file_state> files_;
  std::shared_ptr<file_system> fs_;
  std::unique_ptr<::rocksdb::Env> env_;
};

}  // namespace keyschema::testing
