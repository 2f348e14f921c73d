// keyschema/rocksdb.hpp: keyschema::rocksdb_backend, the RocksDB storage adapter.
//
// rocksdb_backend meets the byte-level contract of <keyschema/backend.hpp> on one RocksDB
// database directory (its default column family, and one per placement), with the same
// observable behaviour as memory_backend: keys in unsigned byte (memcmp) order (RocksDB's
// default BytewiseComparator), atomic batches in which later operations on the same key win
// (rocksdb::WriteBatch), snapshots (rocksdb::Snapshot) and cursors (rocksdb::Iterator) that read
// one consistent state while writers go on. It also models backend_with_erase_range:
// keyschema::store erases a whole range with one rocksdb::WriteBatch::DeleteRange tombstone
// instead of one tombstone per key.
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
// Placement (keyschema::placed; backend_with_placements, <keyschema/backend.hpp>): each placement
// is a column family of its name, the default placement (and the placement named "default") the
// "default" family, tuned by rocksdb_options::placement_options (BlobDB blob files, a prefix
// bloom filter, universal compaction). Opening the database opens every family it holds
// (rocksdb::DB::ListColumnFamilies; RocksDB refuses an open that leaves one out); place() creates
// the missing ones. write() stays one rocksdb::WriteBatch over the families (atomic, also across a
// crash), a snapshot is one rocksdb::Snapshot of all of them, and a cursor whose range reaches
// several families merges one rocksdb::Iterator per family, on one snapshot, in key order.
//
// Thread-safety: get, snapshot, cursor, limits, approximate_size and property may be called
// concurrently from any number of threads, also while other threads are inside write(),
// erase_range() or compact_range() (RocksDB synchronizes internally). A single cursor or snapshot
// object is not shared between threads without external synchronization. Construction, moves and
// destruction need exclusive access.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/lsm_adapter.hpp>
#include <keyschema/detail/backend/lsm_direct_batch.hpp>
#include <keyschema/detail/backend/placement.hpp>
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
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

namespace rocksdb_detail {
// RocksDB's types and names for the code the LSM adapters share (detail/backend/lsm_adapter.hpp);
// also how detail::thread_batch_lease measures and empties the engine's batch.
struct engine_traits : detail::lsm_types<::rocksdb::DB, ::rocksdb::WriteBatch, ::rocksdb::Status, ::rocksdb::Slice,
                                          ::rocksdb::ReadOptions, ::rocksdb::Iterator> {
  static constexpr detail::lsm_names names{"keyschema::rocksdb_backend", "RocksDB", "rocksdb_options",
                                           "rocksdb::DB::Open", "rocksdb::DB::Get", "rocksdb::WriteBatch::Put",
                                           "rocksdb::Iterator", "rocksdb::WriteBatch::Iterate"};
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

class rocksdb_backend;

// The batch keyschema::store_batch builds for a rocksdb_backend (backend_with_direct_batch): a
// rocksdb::WriteBatch, written by rocksdb_backend::write_direct as it is when the database has
// no placements, so that each key and value is copied once, into it, and not first into a
// write_batch (detail/backend/lsm_direct_batch.hpp). Thread-safety: a plain value.
using rocksdb_direct_batch = detail::lsm_direct_batch<rocksdb_detail::engine_traits, rocksdb_backend>;

class rocksdb_backend {
 public:
  using snapshot_type = rocksdb_snapshot;
  using cursor_type = detail::placement_cursor<rocksdb_cursor>;  // merged over placements
  using direct_batch_type = rocksdb_direct_batch;

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
  //   The database's column families (placements) are all opened, each with the options of
  //     rocksdb_options::placement_options under its name (else those of the default family);
  //     a family RocksDB cannot open with them fails the open as above (rocksdb::DB::Open).
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
    s_->base = o;
    s_->table = t;
    s_->placement_options = options.placement_options;

    rocksdb_detail::refuse_database_without_current(s_->path);
    // Every column family the database holds: RocksDB refuses an open that leaves one out. A
    // listing that fails (no database yet; a damaged MANIFEST, which DB::Open then reports)
    // opens the default family alone.
    std::vector<std::string> families;
    if (!::rocksdb::DB::ListColumnFamilies(::rocksdb::DBOptions(o), s_->path, &families).ok() || families.empty()) {
      families.assign(1, ::rocksdb::kDefaultColumnFamilyName);
    }
    std::vector<::rocksdb::ColumnFamilyDescriptor> descriptors;
    for (const std::string& name : families) descriptors.emplace_back(name, s_->family_options(name));
    ::rocksdb::DB* db = nullptr;
    std::vector<::rocksdb::ColumnFamilyHandle*> handles;
    const ::rocksdb::Status st = ::rocksdb::DB::Open(::rocksdb::DBOptions(o), s_->path, descriptors, &handles, &db);
    if (!st.ok()) {
      delete db;  // nullptr on failure; deleting keeps this correct should RocksDB ever change
      rocksdb_detail::lsm::open_failed(st, s_->path);
    }
    s_->db.reset(db);
    s_->adopt(families, handles);
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
  // With placements: reads the column family of the key's placement (and, while ks::migrate
  // moves its keyspace, the one it moves from, on one snapshot).
  bool get(std::string_view key, std::string& value, const snapshot_type* snap) const {
    if (s_->single()) [[likely]] return rocksdb_detail::lsm::get(*s_->db, read_options(snap), key, value, s_->path);
    const detail::placement_router::target t = s_->router.route(key);
    if (t.also == detail::placement_router::none) {
      return rocksdb_detail::lsm::get(*s_->db, read_options(snap), key, value, s_->path, s_->families[t.to]);
    }
    // Both reads on one state: a batch moving the key between them cannot fall in between.
    const std::optional<snapshot_type> own = snap != nullptr ? std::nullopt : std::optional(snapshot());
    const ::rocksdb::ReadOptions ro = read_options(snap != nullptr ? snap : &*own);
    return rocksdb_detail::lsm::get(*s_->db, ro, key, value, s_->path, s_->families[t.to]) ||
           rocksdb_detail::lsm::get(*s_->db, ro, key, value, s_->path, s_->families[t.also]);
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
    if (s_->single()) [[likely]] {
      rocksdb_detail::lsm::fill(wb, batch, s_->max_entry, s_->path);
    } else {
      // Each operation in the column family of its key's placement; an erase also in the one its
      // keyspace moves from (ks::migrate).
      rocksdb_detail::lsm::fill(wb, batch, s_->max_entry, s_->path,
                                [&](::rocksdb::WriteBatch& b, const write_batch::op& o, const ::rocksdb::Slice& k,
                                    const ::rocksdb::Slice& v) {
                                  const detail::placement_router::target t = s_->router.route(o.key);
                                  if (o.kind == write_batch::op_kind::put) return b.Put(s_->families[t.to], k, v);
                                  ::rocksdb::Status st = b.Delete(s_->families[t.to], k);
                                  if (st.ok() && t.also != detail::placement_router::none) {
                                    st = b.Delete(s_->families[t.also], k);
                                  }
                                  return st;
                                });
    }
    commit(wb, opts, batch.size());
  }

  // Writes batch as write() writes a write_batch holding batch's operations in the same order:
  // the same effect, checks and errors (backend_with_direct_batch; keyschema::store_batch builds
  // one). Without placements the rocksdb::WriteBatch is written as it is, its keys and values not
  // copied again; with placements (each operation in the column family of its key's placement)
  // and when an operation is over the entry limit (write() names the first one), its operations
  // are copied into a write_batch and go through write(). batch is left as it was.
  // Errors: as write(); std::bad_alloc.
  void write_direct(direct_batch_type& batch, const write_options& opts) {
    if (batch.size() == 0) {
      if (opts.sync) sync_wal();
      return;
    }
    if (!s_->single() || batch.largest_entry() > s_->max_entry) [[unlikely]] {
      write_batch copy;
      batch.append_to(copy);
      write(copy, opts);
      return;
    }
    rocksdb_detail::lsm::check_op_count(batch.size());
    commit(batch.engine(), opts, batch.size());
  }

  // Erases every key k with range.lower <= k < range.upper (no upper bound when range.upper is
  // empty; range.reverse is ignored) in one atomic rocksdb::WriteBatch: one range tombstone
  // (rocksdb::WriteBatch::DeleteRange), plus a point tombstone for the last key when the range
  // has no upper bound. Durability as write(). Reads and cursors skip the erased keys at once;
  // the space returns when compactions drop the tombstone (compact_range forces it).
  // With placements: the tombstones go to every column family the range reaches (those of the
  // placements its keys can be routed to), in the one batch.
  // Errors: backend_error, native_call "rocksdb::Iterator" (reading the last key, only when
  // range.upper is empty; see rocksdb_cursor::next()) or "rocksdb::DB::Write" (see write());
  // nothing was erased. std::bad_alloc.
  void erase_range(const key_range& range, const write_options& opts) {
    ::rocksdb::WriteBatch wb;
    for (const std::size_t i : s_->reached(range)) add_range_erase(wb, range, s_->families[i]);
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
  // With placements: one rocksdb::Iterator per column family the range reaches, merged in key
  // order; several read one snapshot (snap, or one taken now).
  cursor_type cursor(const key_range& range, const snapshot_type* snap) const {
    if (s_->single()) [[likely]] return cursor_type(family_cursor(range, snap, 0));
    const std::vector<std::size_t> on = s_->router.reached(range);
    if (on.size() == 1) return cursor_type(family_cursor(range, snap, on[0]));
    const std::optional<snapshot_type> own = snap != nullptr ? std::nullopt : std::optional(snapshot());
    if (snap == nullptr) snap = &*own;
    std::vector<rocksdb_cursor> rest;
    rest.reserve(on.size() - 1);
    for (std::size_t j = 1; j < on.size(); ++j) rest.push_back(family_cursor(range, snap, on[j]));
    return cursor_type(family_cursor(range, snap, on[0]), std::move(rest), range.reverse, std::string_view());
  }

  // Routes the keys of placed keyspaces (backend_with_placements, <keyschema/backend.hpp>): each
  // placement is a column family of its name ("default" and the default placement "" are the
  // default family), created here (rocksdb::DB::CreateColumnFamily, with its
  // rocksdb_options::placement_options) when the database lacks it.
  // REQUIRES: nothing else uses the backend meanwhile (keyschema::store calls it from its
  // constructor).
  // Errors (nothing was created or changed in each case):
  //   usage_error - rocksdb_options::placement_options names a placement no route names (the
  //     store's schema does not place it): what() names it. Remedy: fix the name, or remove the
  //     entry.
  //   backend_error, native_call "rocksdb::DB::CreateColumnFamily" - RocksDB could not create
  //     a family (5, IO error: disk full or a failed write of the MANIFEST; 4, invalid argument:
  //     options RocksDB refuses). The families this call created are dropped again. Remedy: free
  //     space, fix the options, then open again.
  void place(std::span<const placement_route> routes) {
    // "default" is the default family: a placement of that name is the default placement.
    const auto family_of = [](std::string_view p) {
      return p == ::rocksdb::kDefaultColumnFamilyName ? std::string_view() : p;
    };
    std::vector<placement_route> own;
    own.reserve(routes.size());
    for (const placement_route& r : routes) {
      own.push_back({r.prefix, family_of(r.placement),
                     r.previous ? std::optional(family_of(*r.previous)) : std::nullopt});
    }
    for (const auto& [name, opts] : s_->placement_options) {
      static_cast<void>(opts);
      bool named = false;
      for (const placement_route& r : routes) {
        named = named || r.placement == name || (r.previous && *r.previous == name);
      }
      if (!named) {
        throw usage_error("keyschema::rocksdb_backend::place: rocksdb_options::placement_options has options for "
                          "placement '" + name + "', which the store's schema does not place (no keyschema::placed<\"" +
                          name + "\", ...> keyspace); fix the name or remove the entry. Nothing was created in '" +
                          s_->path + "'");
      }
    }
    const std::vector<std::string> missing = detail::missing_placements(s_->router, own);
    std::vector<::rocksdb::ColumnFamilyHandle*> created;
    for (const std::string& name : missing) {
      ::rocksdb::ColumnFamilyHandle* h = nullptr;
      const ::rocksdb::Status st = s_->db->CreateColumnFamily(s_->family_options(name), name, &h);
      if (!st.ok()) {
        for (::rocksdb::ColumnFamilyHandle* c : created) {
          static_cast<void>(s_->db->DropColumnFamily(c));
          static_cast<void>(s_->db->DestroyColumnFamilyHandle(c));
        }
        rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend::place: cannot create the column family of "
                                                "placement '" + name + "' in '" + s_->path + "'",
                                            "rocksdb::DB::CreateColumnFamily", s_->path);
      }
      created.push_back(h);
    }
    s_->adopt(missing, created);
    s_->router.set_routes(own);
  }

  // The column family of placement `name` ("" or "default": the default family), or nullptr when
  // the database has none of that name. Owned by this backend, valid until it is destroyed or
  // moved from; for RocksDB calls of your own through native().
  ::rocksdb::ColumnFamilyHandle* native_family(std::string_view name) const noexcept {
    const std::size_t i = s_->router.find(name == ::rocksdb::kDefaultColumnFamilyName ? std::string_view() : name);
    return i == detail::placement_router::none ? nullptr : s_->families[i];
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
  // With placements: each column family the range reaches, one after the other.
  // Errors: backend_error, native_call "rocksdb::DB::CompactRange" (5, IO error: disk full or a
  // failed read or write; 2, corruption: a damaged table file). Remedy: free space, check the
  // disk.
  void compact_range(const key_range& range) {
    const ::rocksdb::Slice lower(range.lower.data(), range.lower.size());
    const ::rocksdb::Slice upper(range.upper.data(), range.upper.size());
    ::rocksdb::CompactRangeOptions co;
    co.bottommost_level_compaction = ::rocksdb::BottommostLevelCompaction::kForceOptimized;
    for (const std::size_t i : s_->reached(range)) {
      const ::rocksdb::Status st = s_->db->CompactRange(co, s_->families[i], range.lower.empty() ? nullptr : &lower,
                                                        range.upper.empty() ? nullptr : &upper);
      if (!st.ok()) {
        rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend: compacting '" + s_->path + "'",
                                            "rocksdb::DB::CompactRange", s_->path);
      }
    }
  }

  // Approximate bytes of table files used by the keys in range (rocksdb::DB::GetApproximateSizes;
  // range.reverse is ignored). Data still in the memtables (recent writes, up to
  // write_buffer_bytes) is not counted, and the size is compressed size. With placements: the
  // sum over the column families the range reaches (blob files not counted).
  // Errors: backend_error, native_call "rocksdb::Iterator", only when range.upper is empty (the
  // last key is read to close the range): as rocksdb_cursor::next(); "rocksdb::DB::
  // GetApproximateSizes" when RocksDB cannot estimate.
  std::uint64_t approximate_size(const key_range& range) const {
    std::uint64_t total = 0;
    for (const std::size_t i : s_->reached(range)) {
      const std::optional<std::string> limit =
          rocksdb_detail::lsm::size_limit(*s_->db, range, read_options(nullptr), s_->path, s_->families[i]);
      if (!limit) continue;
      const ::rocksdb::Range r(::rocksdb::Slice(range.lower.data(), range.lower.size()), *limit);
      std::uint64_t size = 0;
      ::rocksdb::SizeApproximationOptions so;
      so.include_files = true;
      so.include_memtables = false;
      const ::rocksdb::Status st = s_->db->GetApproximateSizes(so, s_->families[i], &r, 1, &size);
      if (!st.ok()) {
        rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend: estimating sizes in '" + s_->path + "'",
                                            "rocksdb::DB::GetApproximateSizes");
      }
      total += size;
    }
    return total;
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
    // The placements (keyschema::placed): router names them (index 0: the default placement, the
    // "default" column family); families[i] is the column family of placement i, prefix[i] the
    // length its prefix extractor takes (0: none). Set up at open and by place(), before the
    // backend is shared; read-only afterwards.
    detail::placement_router router;
    std::vector<::rocksdb::ColumnFamilyHandle*> families;
    std::vector<std::size_t> prefix;
    // What a column family is created and opened with: the options of the default one, then
    // placement_options of its name.
    ::rocksdb::Options base;
    ::rocksdb::BlockBasedTableOptions table;
    std::map<std::string, rocksdb_placement_options, std::less<>> placement_options;
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
      // RocksDB requires every handle of a family opened or created to be destroyed before the DB.
      for (::rocksdb::ColumnFamilyHandle* h : families) static_cast<void>(db->DestroyColumnFamilyHandle(h));
      static_cast<void>(db->Close());
    }

    // The common case: one column family, the default one.
    bool single() const noexcept { return families.size() == 1; }

    // The column families a range reaches (every family before place()).
    std::vector<std::size_t> reached(const key_range& r) const {
      if (single()) return {0};
      return router.reached(r);
    }

    // The options of column family `name`: the default family's, then its placement_options.
    ::rocksdb::ColumnFamilyOptions family_options(std::string_view name) const {
      ::rocksdb::ColumnFamilyOptions o(base);
      const auto it = placement_options.find(name);
      if (it == placement_options.end()) return o;
      const rocksdb_placement_options& p = it->second;
      if (p.blob_files) {
        o.enable_blob_files = true;
        o.min_blob_size = p.min_blob_size;
        o.enable_blob_garbage_collection = true;
      }
      if (p.prefix_bloom_length > 0) {
        o.prefix_extractor.reset(::rocksdb::NewFixedPrefixTransform(p.prefix_bloom_length));
        if (table.filter_policy == nullptr) {
          ::rocksdb::BlockBasedTableOptions t = table;
          t.filter_policy.reset(::rocksdb::NewBloomFilterPolicy(10));
          o.table_factory.reset(::rocksdb::NewBlockBasedTableFactory(t));
        }
      }
      if (p.universal_compaction) o.compaction_style = ::rocksdb::kCompactionStyleUniversal;
      return o;
    }

    // Takes the handles of the column families `names` (opened or created, handles[i] of
    // names[i]); the default one becomes placement 0.
    void adopt(const std::vector<std::string>& names, const std::vector<::rocksdb::ColumnFamilyHandle*>& handles) {
      for (std::size_t i = 0; i < names.size(); ++i) {
        const bool is_default = names[i] == ::rocksdb::kDefaultColumnFamilyName;
        const std::size_t at = is_default ? 0 : router.add(names[i]);
        if (at >= families.size()) {
          families.resize(at + 1, nullptr);
          prefix.resize(at + 1, 0);
        }
        families[at] = handles[i];
        const auto it = placement_options.find(names[i]);
        prefix[at] = it == placement_options.end() ? 0 : it->second.prefix_bloom_length;
      }
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

  // A cursor over range in the column family of placement i.
  rocksdb_cursor family_cursor(const key_range& range, const snapshot_type* snap, std::size_t i) const {
    return rocksdb_cursor(*s_->db, read_options(snap), snap ? std::optional<snapshot_type>(*snap) : std::nullopt,
                          range, &s_->path, s_->families[i], s_->prefix[i]);
  }

  // Adds to wb the erase of every key of range in column family cf: one range tombstone, plus a
  // point tombstone for cf's last key when range has no upper bound.
  void add_range_erase(::rocksdb::WriteBatch& wb, const key_range& range, ::rocksdb::ColumnFamilyHandle* cf) const {
    std::string upper(range.upper);
    if (upper.empty()) {
      const std::optional<std::string> last =
          rocksdb_detail::lsm::last_key(*s_->db, read_options(nullptr), s_->path, cf);
      if (!last || *last < range.lower) return;
      upper = *last;
      const ::rocksdb::Status st = wb.Delete(cf, ::rocksdb::Slice(upper));
      if (!st.ok()) {
        rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend: erasing a range of '" + s_->path + "'",
                                            "rocksdb::WriteBatch::Delete");
      }
    }
    if (range.lower < std::string_view(upper)) {
      const ::rocksdb::Status st =
          wb.DeleteRange(cf, ::rocksdb::Slice(range.lower.data(), range.lower.size()), ::rocksdb::Slice(upper));
      if (!st.ok()) {
        rocksdb_detail::throw_rocksdb_error(st, "keyschema::rocksdb_backend: erasing a range of '" + s_->path + "'",
                                            "rocksdb::WriteBatch::DeleteRange");
      }
    }
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
static_assert(backend_with_placements<rocksdb_backend>,
              "keyschema::rocksdb_backend: does not model backend_with_placements; see keyschema/backend.hpp");

KEYSCHEMA_END_NAMESPACE
