// keyschema/leveldb.hpp: keyschema::leveldb_backend, the LevelDB storage adapter.
//
// leveldb_backend meets the byte-level contract of <keyschema/backend.hpp> on one LevelDB
// database directory, with the same observable behaviour as memory_backend: keys in unsigned
// byte (memcmp) order (LevelDB's default BytewiseComparator), atomic batches in which later
// operations on the same key win (leveldb::WriteBatch), snapshots (leveldb::Snapshot) and cursors
// (leveldb::Iterator) that read one consistent state while writers go on. Durability:
// write_options::sync maps to leveldb::WriteOptions::sync, and a synced write also makes every
// earlier write durable (prefix durability, through leveldb_detail::syncing_env; see
// docs/backends/leveldb.md). Damaged files are errors, not silent loss: paranoid_checks and
// verify_checksums are on by default, and a directory holding data files but no CURRENT is
// refused.
//
// Usually reached through keyschema::store<Schema, keyschema::leveldb_backend>, which forwards
// its constructor arguments here:
//
//   keyschema::leveldb_backend db("/var/lib/broker/messages", {.cache_bytes = 64 << 20});
//
// One database directory is open by at most one leveldb_backend at a time, in any process
// (LevelDB's LOCK file); a second open raises keyschema::locked_error.
//
// Placement (keyschema::placed) is ignored: this backend does not model backend_with_placements
// (<keyschema/backend.hpp>), and every keyspace stays in its one key space.
//
// Thread-safety: get, snapshot, cursor, approximate_size and property may be called concurrently
// from any number of threads, also while other threads are inside write() or compact_range()
// (LevelDB synchronizes internally). A single cursor or snapshot object is not shared between
// threads without external synchronization. Construction, moves and destruction need exclusive
// access.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/disk_full.hpp>
#include <keyschema/detail/backend/lsm_adapter.hpp>
#include <keyschema/detail/backend/lsm_direct_batch.hpp>
#include <keyschema/detail/backend/thread_batch.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/engine_probe.hpp>
#include <keyschema/error.hpp>
#include <keyschema/leveldb/cursor.hpp>
#include <keyschema/leveldb/detail/orphan_check.hpp>
#include <keyschema/leveldb/detail/status.hpp>
#include <keyschema/leveldb/detail/read_counting_env.hpp>
#include <keyschema/leveldb/detail/syncing_env.hpp>
#include <keyschema/leveldb/options.hpp>
#include <keyschema/leveldb/snapshot.hpp>
#include <keyschema/write_batch.hpp>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

namespace leveldb_detail {
// LevelDB's types and names for the code the LSM adapters share (detail/backend/lsm_adapter.hpp);
// also how detail::thread_batch_lease measures and empties the engine's batch.
struct engine_traits : detail::lsm_types<::leveldb::DB, ::leveldb::WriteBatch, ::leveldb::Status, ::leveldb::Slice,
                                          ::leveldb::ReadOptions, ::leveldb::Iterator> {
  static constexpr detail::lsm_names names{"keyschema::leveldb_backend", "LevelDB", "leveldb_options",
                                           "leveldb::DB::Open", "leveldb::DB::Get", "leveldb::WriteBatch::Put",
                                           "leveldb::Iterator", "leveldb::WriteBatch::Iterate"};
  static std::size_t size(const batch_type& b) { return b.ApproximateSize(); }
  static void clear(batch_type& b) { b.Clear(); }
  static status_type put(batch_type& b, slice_type k, slice_type v) {
    b.Put(k, v);
    return status_type::OK();
  }
  static status_type erase(batch_type& b, slice_type k) {
    b.Delete(k);
    return status_type::OK();
  }
  static int code(const status_type& s) noexcept { return leveldb_code(s); }
  static bool is_lock_conflict(const status_type& s) { return leveldb_is_lock_conflict(s); }
  [[noreturn]] static void throw_error(const status_type& s, const std::string& context, const char* native_call,
                                       const std::string& dir) {
    throw_leveldb_error(s, context, native_call, dir);
  }
};
using lsm = detail::lsm_adapter<engine_traits>;
}  // namespace leveldb_detail

class leveldb_backend;

// The batch keyschema::store_batch builds for a leveldb_backend (backend_with_direct_batch): a
// leveldb::WriteBatch, written by leveldb_backend::write_direct as it is, so that each key and
// value is copied once, into it, and not first into a write_batch
// (detail/backend/lsm_direct_batch.hpp). Thread-safety: a plain value.
using leveldb_direct_batch = detail::lsm_direct_batch<leveldb_detail::engine_traits, leveldb_backend>;

class leveldb_backend {
 public:
  using snapshot_type = leveldb_snapshot;
  using cursor_type = leveldb_cursor;
  using direct_batch_type = leveldb_direct_batch;

  // Opens (and with options.create_if_missing creates) the LevelDB database in directory `path`.
  // Errors:
  //   backend_error, native_call "std::filesystem::create_directories": the directory or one of
  //     its parents could not be created (a path component is a regular file, no permission, a
  //     read-only file system); native_code() is the errno value and what() names the path.
  //     Only attempted when create_if_missing is set and options.env is nullptr.
  //     Remedy: choose a writable location.
  //   locked_error, native_call "leveldb::DB::Open": another leveldb_backend (or any LevelDB
  //     handle) in this or another process has the database open. Remedy: close the other
  //     handle, or share one backend (it is thread-safe) instead of opening the path twice.
  //   backend_error, native_call "leveldb::DB::Open", native_code() a leveldb_detail::leveldb_status_code:
  //     4 (invalid argument): no database at path and create_if_missing is false, or one exists
  //       and error_if_exists is true;
  //     1 (not found): create_if_missing is false and not even the parent directory of path
  //       exists;
  //     2 (corruption): CURRENT, MANIFEST or (with paranoid_checks, the default) a write-ahead
  //       log record is damaged, or CURRENT names a missing MANIFEST, or a table file the
  //       MANIFEST lists is missing. No data was dropped and no file deleted. Remedy:
  //       restore the file from a backup, or leveldb::RepairDB on the directory (keeps what is
  //       readable), or, for a damaged log only, open once with paranoid_checks = false (drops
  //       the damaged log blocks, see leveldb_options), then reopen;
  //     5 (IO error): a file could not be read or written; what() says "disk full (N bytes free
  //       on the file system of <path>)" when the disk is full (every open writes a new log and
  //       MANIFEST, and a table file of the replayed log). Remedy: check permissions, free disk
  //       space and file descriptors (max_open_files), then open again.
  //   backend_error, native_call "leveldb::Env::FileExists", native_code() 2 (corruption): the
  //     directory holds LevelDB table or log files but no CURRENT file (LevelDB would create an
  //     empty database over them and delete them). Remedy: restore CURRENT or run
  //     leveldb::RepairDB, then reopen.
  //   wrong_engine_error, native_call "keyschema::probe_engines": `path` holds another engine's
  //     database (LMDB, RocksDB, SQLite; see <keyschema/engine_probe.hpp>); what() names the
  //     engine, the file that shows it and the path. Nothing was created. Not checked when
  //     options.env is set (the path is then not on the real file system).
  //     Remedy: open it with that engine's adapter.
  //   std::bad_alloc.
  explicit leveldb_backend(const std::filesystem::path& path, const leveldb_options& options = {})
      : s_(std::make_unique<state>()) {
    s_->path = path.string();
    s_->max_entry = std::min(options.max_entry_bytes, leveldb_max_entry_bytes);
    s_->verify_checksums = options.verify_checksums;
    s_->every_block_verified = options.verify_checksums && options.paranoid_checks;
    // Before LevelDB creates anything: another engine's database is refused, not filled.
    if (options.env == nullptr) require_engine(path, storage_engine::leveldb, "keyschema::leveldb_backend");
    s_->env = std::make_unique<leveldb_detail::syncing_env>(options.env != nullptr ? options.env : ::leveldb::Env::Default());
    s_->reads_env = std::make_unique<leveldb_detail::read_counting_env>(s_->env.get());

    if (options.create_if_missing && options.env == nullptr) leveldb_detail::lsm::create_directory(path);

    ::leveldb::Options o;
    o.create_if_missing = options.create_if_missing;
    o.error_if_exists = options.error_if_exists;
    o.paranoid_checks = options.paranoid_checks;
    o.env = s_->reads_env.get();
    o.write_buffer_size = options.write_buffer_bytes;
    o.max_open_files = options.max_open_files;
    o.compression = options.compression ? ::leveldb::kSnappyCompression : ::leveldb::kNoCompression;
    s_->cache.reset(::leveldb::NewLRUCache(options.cache_bytes));
    o.block_cache = s_->cache.get();
    if (options.bloom_bits_per_key > 0) {
      s_->filter.reset(::leveldb::NewBloomFilterPolicy(options.bloom_bits_per_key));
      o.filter_policy = s_->filter.get();
    }

    leveldb_detail::refuse_database_without_current(*s_->env, s_->path);
    ::leveldb::DB* db = nullptr;
    const ::leveldb::Status st = ::leveldb::DB::Open(o, s_->path, &db);
    if (!st.ok()) {
      delete db;  // nullptr on failure; deleting keeps this correct should LevelDB ever change
      leveldb_detail::lsm::open_failed(st, s_->path);
    }
    s_->db.reset(db);
  }

  // Moving transfers the open database; snapshots and cursors taken before the move stay valid
  // and must now be destroyed before the new owner. A moved-from backend may only be destroyed
  // or assigned to.
  leveldb_backend(leveldb_backend&&) noexcept = default;
  leveldb_backend& operator=(leveldb_backend&&) noexcept = default;
  leveldb_backend(const leveldb_backend&) = delete;
  leveldb_backend& operator=(const leveldb_backend&) = delete;

  // Closes the database: waits for a running background compaction, syncs the write-ahead logs
  // still needed (so writes made with sync = false become durable too), then releases the files, the LOCK,
  // the block cache and the filter policy. A failure of that last sync cannot be reported: use
  // an empty write_batch with sync = true before closing to see it.
  // REQUIRES: every snapshot and cursor of this backend has been destroyed.
  ~leveldb_backend() = default;

  // Reads key in *snap (the latest committed state when snap is nullptr) into value.
  // Returns false when the key does not exist (value is then unspecified).
  // Errors:
  //   backend_error, native_call "leveldb::DB::Get": 2 (corruption) a damaged table block
  //     (detected by its checksum with verify_checksums, the default); 5 (IO error) a failed
  //     read.
  //     Remedy: as for cursor errors, see leveldb_cursor::next().
  // REQUIRES: snap, when not null, comes from this backend.
  bool get(std::string_view key, std::string& value, const snapshot_type* snap) const {
    return leveldb_detail::lsm::get(*s_->db, read_options(snap), key, value, s_->path);
  }

  // Applies batch atomically (one leveldb::WriteBatch): a reader sees all of it or none of it,
  // and after a crash either all or none of it is recovered. Later operations on the same key
  // win. With opts.sync the write-ahead log is fsync'ed before write() returns, and every write
  // before it is on stable storage too (earlier log files LevelDB switched away from and still
  // needs are synced first, by this write); an empty batch with opts.sync only forces earlier
  // unsynced writes to stable storage, and an empty batch without it does nothing. Without
  // opts.sync nothing waits for the disk; what such writes keep after a power loss is described
  // in docs/backends/leveldb.md ("Durability").
  // May be called concurrently (LevelDB queues writers and may commit them as one group).
  // Errors (nothing of batch was applied in each case):
  //   limit_error: an operation's key plus value is larger than limits().max_entry_bytes
  //     (leveldb_options::max_entry_bytes), or the batch has 2^32 operations or more.
  //     Remedy: split the value, or raise max_entry_bytes up to leveldb_max_entry_bytes.
  //   backend_error, native_call "leveldb::DB::Write", native_code 5 (IO error): the write-ahead
  //     log could not be written or synced (disk full: what() says "disk full (N bytes free on
  //     the file system of <path>)"; I/O error; on a synced write also when an earlier log file
  //     it had to sync first could not be synced). After a failed sync, or a failed
  //     background compaction, LevelDB refuses every further write with the same error.
  //     Remedy: fix the disk, destroy the backend and reopen the database (recovery replays the
  //     intact part of the log).
  //   backend_error, native_call "leveldb::DB::Write", native_code 5 (IO error): an earlier
  //     write() of this backend failed, so it refuses every further write, also once space is
  //     freed. LevelDB itself goes on after a failed log append (without a sync), appending after
  //     the torn record it left; at the next open its log reader takes that torn record for the
  //     end of the log and drops every write after it without an error, acknowledged or not.
  //     what() says "disk full (...)" when the disk still is. Remedy: destroy the backend and
  //     reopen the database (a reopen drops the torn record, which was never acknowledged).
  //   std::bad_alloc.
  void write(const write_batch& batch, const write_options& opts) {
    if (batch.empty() && !opts.sync) return;
    if (s_->write_failed.load(std::memory_order_acquire)) refuse_write_after_failure(batch.size());
    leveldb_detail::lsm::check_op_count(batch.size());
    // The thread's engine batch, kept between writes (detail/backend/thread_batch.hpp says why).
    detail::thread_batch_lease<::leveldb::WriteBatch, leveldb_detail::engine_traits> lease;
    ::leveldb::WriteBatch& wb = lease.get();
    leveldb_detail::lsm::fill(wb, batch, s_->max_entry, s_->path);
    write_engine_batch(wb, batch.size(), opts);
  }

  // Writes batch as write() writes a write_batch holding batch's operations in the same order:
  // the same effect, checks and errors, without copying them again (backend_with_direct_batch;
  // keyschema::store_batch builds one). batch is left as it was (LevelDB only sets the sequence
  // number in its header). Errors: as write(); std::bad_alloc.
  void write_direct(direct_batch_type& batch, const write_options& opts) {
    if (batch.size() == 0 && !opts.sync) return;
    if (batch.largest_entry() > s_->max_entry) {
      // An operation over the limit: write() names the first one, as for any batch.
      write_batch copy;
      batch.append_to(copy);
      write(copy, opts);
      return;
    }
    if (s_->write_failed.load(std::memory_order_acquire)) refuse_write_after_failure(batch.size());
    leveldb_detail::lsm::check_op_count(batch.size());
    write_engine_batch(batch.engine(), batch.size(), opts);
  }

  // A view of the latest committed state that does not change while writers go on. Copies share
  // one leveldb::Snapshot, released when the last copy is destroyed. Live snapshots keep the
  // versions they see from being compacted away: do not keep them for hours.
  // Errors: std::bad_alloc. REQUIRES: every copy is destroyed before the backend.
  snapshot_type snapshot() const { return snapshot_type(s_->db.get(), s_->db->GetSnapshot()); }

  // A cursor over the keys k with range.lower <= k < range.upper (no upper bound when
  // range.upper is empty), ascending, or descending from the last key < upper when
  // range.reverse. Reads *snap (keeping a copy of it alive), or LevelDB's implicit snapshot of
  // the latest state when snap is nullptr. The bounds are copied.
  // Errors: as leveldb_cursor::next() (the first entry is read here); std::bad_alloc.
  // REQUIRES: the cursor is destroyed before the backend; snap, when not null, comes from this
  // backend.
  cursor_type cursor(const key_range& range, const snapshot_type* snap) const {
    return cursor_type(*s_->db, read_options(snap), snap ? std::optional<snapshot_type>(*snap) : std::nullopt, range,
                       &s_->path, s_->every_block_verified ? &s_->reads_env->reads() : nullptr);
  }

  // What write() accepts. LevelDB's limit is on key plus value of one operation:
  // max_entry_bytes = leveldb_options::max_entry_bytes (at most leveldb_max_entry_bytes), and so
  // is max_key_bytes (a key that long only fits with an empty value); max_ops_per_write = 2^32 - 1
  // (the count field of a leveldb::WriteBatch). Values and batch bytes have no limit of their own.
  backend_limits limits() const noexcept { return leveldb_detail::lsm::limits(s_->max_entry); }

  // Compacts the table files overlapping [range.lower, range.upper] (an empty bound is open;
  // range.reverse is ignored) down to the last level: erased and overwritten entries no live
  // snapshot can see are dropped, so cursors over a range that was mass-erased stop wading
  // through tombstones and the disk space is returned. Blocks until done; may take long on
  // large ranges. Readers and writers may go on meanwhile.
  // Errors: none reported here. A compaction that fails (disk full, I/O error) puts LevelDB
  // into its background-error state: every later write() throws backend_error.
  void compact_range(const key_range& range) {
    const ::leveldb::Slice lower(range.lower.data(), range.lower.size());
    const ::leveldb::Slice upper(range.upper.data(), range.upper.size());
    s_->db->CompactRange(range.lower.empty() ? nullptr : &lower, range.upper.empty() ? nullptr : &upper);
  }

  // Approximate bytes of table files used by the keys in range (leveldb::DB::GetApproximateSizes;
  // range.reverse is ignored). Data still in the memtable (recent writes, up to
  // write_buffer_bytes) is not counted, and the size is compressed size.
  // Errors: backend_error, native_call "leveldb::Iterator", only when range.upper is empty (the
  // last key is read to close the range): as leveldb_cursor::next().
  std::uint64_t approximate_size(const key_range& range) const {
    // The last key is read with LevelDB's default ReadOptions (no checksum check).
    const std::optional<std::string> limit =
        leveldb_detail::lsm::size_limit(*s_->db, range, ::leveldb::ReadOptions(), s_->path);
    if (!limit) return 0;
    const ::leveldb::Range r(::leveldb::Slice(range.lower.data(), range.lower.size()), *limit);
    std::uint64_t size = 0;
    s_->db->GetApproximateSizes(&r, 1, &size);
    return size;
  }

  // The value of a LevelDB property (leveldb::DB::GetProperty), e.g. "leveldb.stats",
  // "leveldb.sstables", "leveldb.num-files-at-level0", "leveldb.approximate-memory-usage";
  // std::nullopt for an unknown property. Errors: std::bad_alloc.
  std::optional<std::string> property(std::string_view name) const {
    return leveldb_detail::lsm::property(*s_->db, name);
  }

  // The open database, for LevelDB features keyschema does not wrap. Owned by this backend;
  // valid until it is destroyed or moved from. Writes made through it bypass the typed layer's
  // writer serialization and key checks. Read through it with leveldb::ReadOptions::
  // verify_checksums = true (LevelDB's default is false): a damaged block read without its
  // checksum can enter the shared block cache, where this backend's cursors, which check
  // LevelDB's iterator status only after a step that read a file, would step over it without an
  // error (keyschema/leveldb/detail/read_counting_env.hpp).
  ::leveldb::DB& native() noexcept { return *s_->db; }

  // The directory this backend opened, as given to the constructor.
  const std::string& path() const noexcept { return s_->path; }

 private:
  // Heap-allocated so that snapshots and cursors (which point at db and path) survive a move of
  // the backend. Members are destroyed bottom-up: the database before the env, cache and filter
  // policy it uses.
  struct state {
    std::string path;
    std::size_t max_entry = leveldb_max_entry_bytes;
    bool verify_checksums = true;
    bool every_block_verified = true;  // verify_checksums and paranoid_checks: cursors may count reads
    std::unique_ptr<leveldb_detail::syncing_env> env;
    std::unique_ptr<leveldb_detail::read_counting_env> reads_env;  // wraps env; what LevelDB uses
    std::unique_ptr<::leveldb::Cache> cache;
    std::unique_ptr<const ::leveldb::FilterPolicy> filter;
    std::unique_ptr<::leveldb::DB> db;
    // A write failed: the log may end in a torn record, after which LevelDB's recovery would
    // drop every later write without an error, so write() refuses from then on.
    std::atomic<bool> write_failed{false};
    std::mutex failure_mu;      // guards first_failure
    std::string first_failure;  // LevelDB's status of the write that failed first
  };

  // DB::Write of wb (ops operations); on failure refuses every later write (see write()).
  void write_engine_batch(::leveldb::WriteBatch& wb, std::size_t ops, const write_options& opts) {
    ::leveldb::WriteOptions wo;
    wo.sync = opts.sync;
    const ::leveldb::Status st = s_->db->Write(wo, &wb);
    if (!st.ok()) {
      {
        const std::lock_guard<std::mutex> lk(s_->failure_mu);
        if (s_->first_failure.empty()) s_->first_failure = st.ToString();
      }
      s_->write_failed.store(true, std::memory_order_release);
      leveldb_detail::throw_leveldb_error(st,
                                  "keyschema::leveldb_backend: writing " + std::to_string(ops) +
                                      " operations to '" + s_->path + "' failed, nothing was applied",
                                  "leveldb::DB::Write", s_->path);
    }
  }

  [[noreturn, gnu::cold]] void refuse_write_after_failure(std::size_t ops) const {
    std::string what = "keyschema::leveldb_backend: writing " + std::to_string(ops) + " operations to '" + s_->path +
                       "' refused, nothing was applied: an earlier write to it failed";
    {
      const std::lock_guard<std::mutex> lk(s_->failure_mu);
      if (!s_->first_failure.empty()) what += " (" + s_->first_failure + ")";
    }
    what += ", and LevelDB's log may end in a torn record after which a reopen would drop every later write without "
            "an error";
    if (const std::optional<std::string> full = detail::disk_full(s_->path, EIO)) what += "; " + *full;
    throw backend_error(what + "; destroy the backend and reopen the database", "leveldb::DB::Write",
                        leveldb_detail::leveldb_io_error);
  }

  ::leveldb::ReadOptions read_options(const snapshot_type* snap) const noexcept {
    return leveldb_detail::lsm::read_options(s_->verify_checksums, snap != nullptr ? snap->native() : nullptr);
  }

  std::unique_ptr<state> s_;
};

static_assert(backend<leveldb_backend>,
              "keyschema::leveldb_backend: does not meet the backend contract; see keyschema/backend.hpp");

KEYSCHEMA_END_NAMESPACE
