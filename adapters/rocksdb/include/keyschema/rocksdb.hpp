// keyschema/rocksdb.hpp: keyschema::rocksdb_backend, the RocksDB storage adapter.
//
// rocksdb_backend meets the byte-level contract of <keyschema/backend.hpp> on one RocksDB
// database directory (its default column family), with the same observable behaviour as
// memory_backend: keys in unsigned byte (memcmp) order (RocksDB's default BytewiseComparator),
// atomic batches in which later operations on the same key win (rocksdb::WriteBatch), snapshots
// (rocksdb::Snapshot) and cursors (rocksdb::Iterator) that read one consistent state while
// writers go on. It also models backend_with_erase_range: keyschema::store erases a whole range
// with one rocksdb::WriteBatch::DeleteRange tombstone instead of one tombstone per key.
//
// Durability: write_options::sync (the default) maps to rocksdb::WriteOptions::sync; a synced
// write fsyncs every write-ahead log still needed for recovery, so it also makes every earlier
// write durable. Damaged files are errors, not silent loss: paranoid_checks and verify_checksums
// are on, the write-ahead log is replayed in kTolerateCorruptedTailRecords mode (only an
// unacknowledged torn last record is dropped; see rocksdb_wal_recovery), synced write-ahead logs
// are tracked in the MANIFEST (a missing one fails the open), and a directory holding data files
// but no CURRENT is refused. See docs/backends/rocksdb.md.
//
// A full disk is an error, not an abort: RocksDB's diagnostic log (LOG) is written by
// keyschema::rocksdb_info_log, which drops a line it cannot write (RocksDB's own logger aborts
// the process on the line after a failed write), and errors caused by a full disk say "disk
// full (N bytes free on the file system of <path>)".
//
// Usually reached through keyschema::store<Schema, keyschema::rocksdb_backend>, which forwards
// its constructor arguments here:
//
//   keyschema::rocksdb_backend db("/var/lib/broker/messages", {.cache_bytes = 64 << 20});
//
// One database directory is open by at most one rocksdb_backend at a time, in any process
// (RocksDB's LOCK file); a second open raises keyschema::locked_error.
//
// Placement (keyschema::placed) is ignored: this backend does not model backend_with_placements
// (<keyschema/backend.hpp>), and every keyspace stays in its one key space.
//
// Thread-safety: get, snapshot, cursor, limits, approximate_size and property may be called
// concurrently from any number of threads, also while other threads are inside write(),
// erase_range() or compact_range() (RocksDB synchronizes internally). A single cursor or snapshot
// object is not shared between threads without external synchronization. Construction, moves and
// destruction need exclusive access.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/lsm_adapter.hpp>
#include <keyschema/detail/backend/thread_batch.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/engine_probe.hpp>
#include <keyschema/error.hpp>
#include <keyschema/rocksdb/cursor.hpp>
#include <keyschema/rocksdb/detail/orphan_check.hpp>
#include <keyschema/rocksdb/detail/status.hpp>
#include <keyschema/rocksdb/info_log.hpp>
#include <keyschema/rocksdb/options.hpp>
#include <keyschema/rocksdb/snapshot.hpp>
#include <keyschema/write_batch.hpp>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

namespace rocksdb_detail {
// RocksDB's types and names for the code the LSM adapters share (detail/backend/lsm_adapter.hpp);
// also how detail::thread_batch_lease measures and empties the engine's batch.
struct engine_traits : detail::lsm_types<::rocksdb::DB, ::rocksdb::WriteBatch, ::rocksdb::Status, ::rocksdb::Slice,
                                          ::rocksdb::ReadOptions, ::rocksdb::Iterator> {
  static constexpr detail::lsm_names names{"keyschema::rocksdb_backend", "RocksDB", "rocksdb_options",
                                           "rocksdb::DB::Open", "rocksdb::DB::Get", "rocksdb::WriteBatch::Put",
                                           "rocksdb::Iterator"};
  static std::size_t size(const batch_type& b) { return b.GetDataSize(); }
  static void clear(batch_type& b) { b.Clear(); }
  static status_type put(batch_type& b, slice_type k, slice_type v) { return b.Put(k, v); }
  static status_type erase(batch_type& b, slice_type k) { return b.Delete(k); }
  static int code(const status_type& s) noexcept { return rocksdb_code(s); }
  static bool is_lock_conflict(const status_type& s) { return rocksdb_is_lock_conflict(s); }
  [[noreturn]] static void throw_error(const status_type& s, const std::string& context, const char* native_call,
                                       const std::string& dir) {
    throw_rocksdb_error(s, context, native_call, dir);
  }
};
using lsm = detail::lsm_adapter<engine_traits>;
}  // namespace rocksdb_detail

class rocksdb_backend {
 public:
  using snapshot_type = rocksdb_snapshot;
  using cursor_type = rocksdb_cursor;

  // Opens (and with options.create_if_missing creates) the RocksDB database in directory `path`.
  // Errors:
  //   wrong_engine_error, native_call "keyschema::probe_engines": `path` holds another engine's
  //     database (LevelDB, LMDB, SQLite; see <keyschema/engine_probe.hpp>); what() names the
  //     engine, the file that shows it and the path. Nothing was created. Not checked when
  //     options.env is set (the path is then not necessarily on the real file system).
  //     Remedy: open it with that engine's adapter.
  //   backend_error, native_call "std::filesystem::create_directories": the directory or one of
  //     its parents could not be created (a path component is a regular file, no permission, a
  //     read-only file system); native_code() is the errno value and what() names the path.
  //     Only attempted when create_if_missing is set and options.env is nullptr. Remedy: choose
  //     a writable location.
  //   backend_error, native_call "std::filesystem::exists", native_code() 2 (corruption): the
  //     directory holds RocksDB table or log files but no CURRENT file (RocksDB would create an
  //     empty database over them and delete them). Remedy: restore CURRENT or run `ldb repair`,
  //     then reopen.
  //   locked_error, native_call "rocksdb::DB::Open": another rocksdb_backend (or any RocksDB
  //     handle) in this or another process has the database open. Remedy: close the other
  //     handle, or share one backend (it is thread-safe) instead of opening the path twice.
  //   backend_error, native_call "rocksdb::DB::Open", native_code() a rocksdb::Status::Code:
  //     4 (invalid argument): no database at path and create_if_missing is false, or one exists
  //       and error_if_exists is true;
  //     2 (corruption): CURRENT, MANIFEST or a write-ahead log record is damaged (except a torn
  //       last record, see rocksdb_wal_recovery), a table file the MANIFEST lists is missing or
  //       damaged, or a synced write-ahead log the MANIFEST tracks is missing or shorter. No data
  //       was dropped and no file deleted. Remedy: restore the file from a backup, or `ldb
  //       repair` on the directory (keeps what is readable), or, for a damaged log only, open
  //       once with wal_recovery = point_in_time (drops the damaged record and all after it);
  //     5 (IO error): a file could not be read or written; what() says "disk full (N bytes free
  //       on the file system of <path>)" when the disk is full (every open writes a new
  //       MANIFEST, write-ahead log and OPTIONS file, and a table file of the replayed log).
  //       Nothing acknowledged was lost. Remedy: check permissions, free disk space and file
  //       descriptors (max_open_files), then open again.
  //   std::bad_alloc.
  explicit rocksdb_backend(const std::filesystem::path& path, const rocksdb_options& options = {})
      : s_(std::make_unique<state>()) {
    s_->path = path.string();
    s_->max_entry = std::min(options.max_entry_bytes, rocksdb_max_entry_bytes);
    s_->verify_checksums = options.verify_checksums;
    // Before RocksDB creates anything: another engine's database is refused, not filled.
    if (options.env == nullptr) require_engine(path, storage_engine::rocksdb, "keyschema::rocksdb_backend");

    if (options.create_if_missing && options.env == nullptr) rocksdb_detail::lsm::create_directory(path);

    ::rocksdb::Options o;
    if (options.env != nullptr) o.env = options.env;
    // Never RocksDB's own info logger: after one failed write (a full disk) its next line aborts
    // the process (see <keyschema/rocksdb/info_log.hpp>).
    o.info_log = options.info_log != nullptr ? options.info_log
                                             : std::make_shared<rocksdb_info_log>(s_->path + "/LOG");
    o.create_if_missing = options.create_if_missing;
    o.error_if_exists = options.error_if_exists;
    o.paranoid_checks = options.paranoid_checks;
    o.wal_recovery_mode = native_recovery_mode(options.wal_recovery);
    o.track_and_verify_wals_in_manifest = true;
    o.write_buffer_size = options.write_buffer_bytes;
    o.max_open_files = options.max_open_files;
    o.compression = options.compression ? ::rocksdb::kSnappyCompression : ::rocksdb::kNoCompression;
    ::rocksdb::BlockBasedTableOptions t;
    if (options.cache_bytes > 0) t.block_cache = ::rocksdb::NewLRUCache(options.cache_bytes);
    else t.no_block_cache = true;
    if (options.bloom_bits_per_key > 0) {
      t.filter_policy.reset(::rocksdb::NewBloomFilterPolicy(options.bloom_bits_per_key));
    }
    o.table_factory.reset(::rocksdb::NewBlockBasedTableFactory(t));

    rocksdb_detail::refuse_database_without_current(s_->path);
    ::rocksdb::DB* db = nullptr;
    const ::rocksdb::Status st = ::rocksdb::DB::Open(o, s_->path, &db);
    if (!st.ok()) {
      delete db;  // nullptr on failure; deleting keeps this correct should RocksDB ever change
      rocksdb_detail::lsm::open_failed(st, s_->path);
    }
    s_->db.reset(db);
  }

  // Moving transfers the open database; snapshots and cursors taken before the move stay valid
  // and must now be destroyed before the new owner. A moved-from backend may only be destroyed
  // or assigned to.
  rocksdb_backend(rocksdb_backend&&) noexcept = default;
  rocksdb_backend& operator=(rocksdb_backend&&) noexcept = default;
  rocksdb_backend(const rocksdb_backend&) = delete;
  rocksdb_backend& operator=(const rocksdb_backend&) = delete;

  // Closes the database: syncs the write-ahead log (so writes made with sync = false become
  // durable too), waits for background work (rocksdb::DB::Close), then releases the files and
  // the LOCK. A failure of that sync or close cannot be reported: use an empty write_batch with
  // sync = true before closing to see it. After a failed write or a background error the log is
  // not synced (RocksDB's log writer refuses every call after an I/O error, and Debian's
  // librocksdb aborts the process on its assertion when SyncWAL meets such a writer).
  // REQUIRES: every snapshot and cursor of this backend has been destroyed.
  ~rocksdb_backend() = default;

  // Reads key in *snap (the latest committed state when snap is nullptr) into value.
  // Returns false when the key does not exist (value is then unspecified).
  // Errors:
  //   backend_error, native_call "rocksdb::DB::Get": 2 (corruption) a damaged table block
  //     (detected by its checksum with verify_checksums, the default); 5 (IO error) a failed
  //     read. Remedy: as for cursor errors, see rocksdb_cursor::next().
  // REQUIRES: snap, when not null, comes from this backend.
  bool get(std::string_view key, std::string& value, const snapshot_type* snap) const {
    return rocksdb_detail::lsm::get(*s_->db, read_options(snap), key, value, s_->path);
  }

  // Applies batch atomically (one rocksdb::WriteBatch): a reader sees all of it or none of it,
  // and after a crash either all or none of it is recovered. Later operations on the same key
  // win. With opts.sync the write-ahead log is fsync'ed before write() returns, and every write
  // before it is on stable storage too (RocksDB syncs every live log, also those it switched
  // away from); an empty batch with opts.sync only forces earlier unsynced writes to stable
  // storage (rocksdb::DB::SyncWAL), and an empty batch without it does nothing.
  // May be called concurrently (RocksDB queues writers and may commit them as one group).
  // Errors (nothing of batch is visible through this backend in each case; after an I/O error
  // see below for what a reopen may recover):
  //   limit_error: an operation's key plus value is larger than limits().max_entry_bytes
  //     (rocksdb_options::max_entry_bytes), or the batch has 2^32 operations or more.
  //     Remedy: split the value, or raise max_entry_bytes up to rocksdb_max_entry_bytes.
  //   backend_error, native_call "rocksdb::DB::Write" (or "rocksdb::DB::SyncWAL" for an empty
  //     synced batch), native_code 5 (IO error): the write-ahead log could not be written or
  //     synced (disk full: what() says "disk full (N bytes free on the file system of <path>)";
  //     I/O error), or 2 (corruption) / 5 after a background flush or
  //     compaction failed: RocksDB then refuses every further write with that error, and an
  //     empty synced batch fails too (native_call "rocksdb::DB::SyncWAL", without calling it).
  //     Remedy: fix the disk, destroy the backend and reopen the database (recovery replays the
  //     intact part of the log). The outcome of the failed batch itself is unknown: when its log
  //     record reached the file before the failure (a failed sync), the reopened database may
  //     hold it (tests/durability/rocksdb.cpp shows both outcomes).
  //   std::bad_alloc.
  void write(const write_batch& batch, const write_options& opts) {
    if (batch.empty()) {
      if (opts.sync) sync_wal();
      return;
    }
    rocksdb_detail::lsm::check_op_count(batch.size());
    // The thread's engine batch, kept between writes (detail/backend/thread_batch.hpp says why).
    detail::thread_batch_lease<::rocksdb::WriteBatch, rocksdb_detail::engine_traits> lease;
    ::rocksdb::WriteBatch& wb = lease.get();
    rocksdb_detail::lsm::fill(wb, batch, s_->max_entry, s_->path);
    commit(wb, opts, batch.size());
  }

  // Erases every key k with range.lower <= k < range.upper (no upper bound when range.upper is
  // empty; range.reverse is ignored) in one atomic rocksdb::WriteBatch: one range tombstone
  // (rocksdb::WriteBatch::DeleteRange), plus a point tombstone for the last key when the range
  // has no upper bound. Durability as write(). Reads and cursors skip the erased keys at once;
  // the space returns when compactions drop the tombstone (compact_range forces it).
  // Errors: backend_error, native_call "rocksdb::Iterator" (reading the last key, only when
  // range.upper is empty; see rocksdb_cursor::next()) or "rocksdb::DB::Write" (see write());
  // nothing was erased. std::bad_alloc.
  void erase_range(const key_range& range, const write_options& opts) {
    std::string upper(range.upper);
    ::rocksdb::WriteBatch wb;
    if (upper.empty()) {
      const std::optional<std::string> last = last_key();
      if (!last || *last < range.lower) {
        if (opts.sync) sync_wal();
        return;
      }
      upper = *last;
      const ::rocksdb::Status st = wb.Delete(::rocksdb::Slice(upper));
      if (!st.ok()) {
        rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend: erasing a range of '" + s_->path + "'",
                                            "rocksdb::WriteBatch::Delete");
      }
    }
    if (range.lower < std::string_view(upper)) {
      const ::rocksdb::Status st =
          wb.DeleteRange(::rocksdb::Slice(range.lower.data(), range.lower.size()), ::rocksdb::Slice(upper));
      if (!st.ok()) {
        rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend: erasing a range of '" + s_->path + "'",
                                            "rocksdb::WriteBatch::DeleteRange");
      }
    }
    if (wb.Count() == 0) {
      if (opts.sync) sync_wal();
      return;
    }
    commit(wb, opts, wb.Count());
  }

  // A view of the latest committed state that does not change while writers go on. Copies share
  // one rocksdb::Snapshot, released when the last copy is destroyed. Live snapshots keep the
  // versions they see from being compacted away: do not keep them for hours.
  // Errors: std::bad_alloc. REQUIRES: every copy is destroyed before the backend.
  snapshot_type snapshot() const { return snapshot_type(s_->db.get(), s_->db->GetSnapshot()); }

  // A cursor over the keys k with range.lower <= k < range.upper (no upper bound when
  // range.upper is empty), ascending, or descending from the last key < upper when
  // range.reverse. Reads *snap (keeping a copy of it alive), or RocksDB's implicit snapshot of
  // the latest state when snap is nullptr. The bounds are copied.
  // Errors: as rocksdb_cursor::next() (the first entry is read here); std::bad_alloc.
  // REQUIRES: the cursor is destroyed before the backend; snap, when not null, comes from this
  // backend.
  cursor_type cursor(const key_range& range, const snapshot_type* snap) const {
    return cursor_type(*s_->db, read_options(snap), snap ? std::optional<snapshot_type>(*snap) : std::nullopt, range,
                       &s_->path);
  }

  // What write() accepts. RocksDB's limit is on key plus value of one operation:
  // max_entry_bytes = rocksdb_options::max_entry_bytes (at most rocksdb_max_entry_bytes), and so
  // is max_key_bytes (a key that long only fits with an empty value); max_ops_per_write = 2^32 - 1
  // (the count field of a rocksdb::WriteBatch). Values and batch bytes have no limit of their own.
  backend_limits limits() const noexcept { return rocksdb_detail::lsm::limits(s_->max_entry); }

  // Compacts the table files overlapping [range.lower, range.upper] (an empty bound is open;
  // range.reverse is ignored) down to the last level, rewriting the last level too: erased and
  // overwritten entries and range tombstones no live snapshot can see are dropped, and the disk
  // space is returned. Blocks until done; may take long on large ranges. Readers and writers may
  // go on meanwhile.
  // Errors: backend_error, native_call "rocksdb::DB::CompactRange" (5, IO error: disk full or a
  // failed read or write; 2, corruption: a damaged table file). Remedy: free space, check the
  // disk.
  void compact_range(const key_range& range) {
    const ::rocksdb::Slice lower(range.lower.data(), range.lower.size());
    const ::rocksdb::Slice upper(range.upper.data(), range.upper.size());
    ::rocksdb::CompactRangeOptions co;
    co.bottommost_level_compaction = ::rocksdb::BottommostLevelCompaction::kForceOptimized;
    const ::rocksdb::Status st =
        s_->db->CompactRange(co, range.lower.empty() ? nullptr : &lower, range.upper.empty() ? nullptr : &upper);
    if (!st.ok()) {
      rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend: compacting '" + s_->path + "'",
                                          "rocksdb::DB::CompactRange", s_->path);
    }
  }

  // Approximate bytes of table files used by the keys in range (rocksdb::DB::GetApproximateSizes;
  // range.reverse is ignored). Data still in the memtables (recent writes, up to
  // write_buffer_bytes) is not counted, and the size is compressed size.
  // Errors: backend_error, native_call "rocksdb::Iterator", only when range.upper is empty (the
  // last key is read to close the range): as rocksdb_cursor::next(); "rocksdb::DB::
  // GetApproximateSizes" when RocksDB cannot estimate.
  std::uint64_t approximate_size(const key_range& range) const {
    const std::optional<std::string> limit =
        rocksdb_detail::lsm::size_limit(*s_->db, range, read_options(nullptr), s_->path);
    if (!limit) return 0;
    const ::rocksdb::Range r(::rocksdb::Slice(range.lower.data(), range.lower.size()), *limit);
    std::uint64_t size = 0;
    ::rocksdb::SizeApproximationOptions so;
    so.include_files = true;
    so.include_memtables = false;
    const ::rocksdb::Status st = s_->db->GetApproximateSizes(so, s_->db->DefaultColumnFamily(), &r, 1, &size);
    if (!st.ok()) {
      rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend: estimating sizes in '" + s_->path + "'",
                                          "rocksdb::DB::GetApproximateSizes");
    }
    return size;
  }

  // The value of a RocksDB property (rocksdb::DB::GetProperty), e.g. "rocksdb.stats",
  // "rocksdb.levelstats", "rocksdb.num-files-at-level0", "rocksdb.estimate-num-keys";
  // std::nullopt for an unknown property. Errors: std::bad_alloc.
  std::optional<std::string> property(std::string_view name) const {
    return rocksdb_detail::lsm::property(*s_->db, name);
  }

  // The open database, for RocksDB features keyschema does not wrap. Owned by this backend;
  // valid until it is destroyed or moved from. Writes made through it bypass the typed layer's
  // writer serialization and key checks.
  ::rocksdb::DB& native() noexcept { return *s_->db; }

  // The directory this backend opened, as given to the constructor.
  const std::string& path() const noexcept { return s_->path; }

 private:
  // Heap-allocated so that snapshots and cursors (which point at db and path) survive a move of
  // the backend.
  struct state {
    std::string path;
    std::size_t max_entry = rocksdb_max_entry_bytes;
    bool verify_checksums = true;
    std::unique_ptr<::rocksdb::DB> db;
    // A write or log sync failed with anything but an invalid argument: the log writer may hold
    // an I/O error, and a later SyncWAL would meet it (see wal_may_be_failed()).
    std::atomic<bool> write_failed{false};

    state() = default;
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
      if (!db) return;
      // Best effort, see ~rocksdb_backend: errors cannot be reported from a destructor.
      if (!wal_may_be_failed()) static_cast<void>(db->SyncWAL());
      static_cast<void>(db->Close());
    }
    // True after a failed write or log sync of this backend, or once RocksDB recorded a
    // background error (rocksdb.background-errors, also a failed sync of closed logs before a
    // flush): RocksDB 7.8's SyncWAL does not check its background error first and calls the log
    // writer, which after an I/O error fails an assertion (built into Debian's librocksdb) instead
    // of returning the error.
    bool wal_may_be_failed() const noexcept {
      if (write_failed.load(std::memory_order_relaxed)) return true;
      std::uint64_t errors = 0;
      return db->GetIntProperty("rocksdb.background-errors", &errors) && errors > 0;
    }
  };

  static ::rocksdb::WALRecoveryMode native_recovery_mode(rocksdb_wal_recovery m) noexcept {
    switch (m) {
      case rocksdb_wal_recovery::absolute_consistency: return ::rocksdb::WALRecoveryMode::kAbsoluteConsistency;
      case rocksdb_wal_recovery::point_in_time: return ::rocksdb::WALRecoveryMode::kPointInTimeRecovery;
      case rocksdb_wal_recovery::skip_any_corrupted_records:
        return ::rocksdb::WALRecoveryMode::kSkipAnyCorruptedRecords;
      case rocksdb_wal_recovery::tolerate_corrupted_tail_records: break;
    }
    return ::rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  }

  ::rocksdb::ReadOptions read_options(const snapshot_type* snap) const noexcept {
    return rocksdb_detail::lsm::read_options(s_->verify_checksums, snap != nullptr ? snap->native() : nullptr);
  }

  // The largest key of the latest state, or nullopt when the database is empty.
  std::optional<std::string> last_key() const {
    return rocksdb_detail::lsm::last_key(*s_->db, read_options(nullptr), s_->path);
  }

  void sync_wal() {
    if (s_->wal_may_be_failed()) {
      throw backend_error("keyschema::rocksdb_backend: cannot sync the write-ahead log of '" + s_->path +
                              "': an earlier write or a background job failed (RocksDB refuses writes from then "
                              "on); destroy the backend and reopen the database",
                          "rocksdb::DB::SyncWAL", static_cast<int>(::rocksdb::Status::kIOError));
    }
    const ::rocksdb::Status st = s_->db->SyncWAL();
    if (!st.ok()) {
      if (!st.IsInvalidArgument()) s_->write_failed.store(true, std::memory_order_relaxed);
      rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend: syncing the write-ahead log of '" +
                                                  s_->path + "' failed",
                                          "rocksdb::DB::SyncWAL", s_->path);
    }
  }

  void commit(::rocksdb::WriteBatch& wb, const write_options& opts, std::size_t ops) {
    ::rocksdb::WriteOptions wo;
    wo.sync = opts.sync;
    const ::rocksdb::Status st = s_->db->Write(wo, &wb);
    if (!st.ok()) {
      if (!st.IsInvalidArgument()) s_->write_failed.store(true, std::memory_order_relaxed);
      // After an I/O error the record may be in the log file (a failed sync), so a reopen can
      // recover the batch; other failures happen before RocksDB writes anything.
      const char* outcome = st.IsIOError() ? "; not applied to this handle, but a reopen may recover it if its "
                                             "write-ahead log record reached the file before the failure"
                                           : ", nothing was applied";
      rocksdb_detail::throw_rocksdb_error(st,
                                          "keyschema::rocksdb_backend: writing " + std::to_string(ops) +
                                              " operations to '" + s_->path + "' failed" + outcome,
                                          "rocksdb::DB::Write", s_->path);
    }
  }

  std::unique_ptr<state> s_;
};

static_assert(backend<rocksdb_backend>,
              "keyschema::rocksdb_backend: does not meet the backend contract; see keyschema/backend.hpp");
static_assert(backend_with_erase_range<rocksdb_backend>,
              "keyschema::rocksdb_backend: does not provide erase_range; see keyschema/backend.hpp");

KEYSCHEMA_END_NAMESPACE
