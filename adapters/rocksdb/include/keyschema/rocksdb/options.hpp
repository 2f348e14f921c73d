// keyschema/rocksdb/options.hpp: how keyschema::rocksdb_backend opens and tunes a RocksDB
// database.
//
// rocksdb_options is a plain aggregate handed to the rocksdb_backend constructor; each field maps
// onto one rocksdb::Options (or table or read option) field (see docs/backends/rocksdb.md for the
// full table). The options are read once, when the database is opened; changing them afterwards
// has no effect on an open backend.
//
// Thread-safety: a plain value type.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace rocksdb {
class Env;
class Logger;
}  // namespace rocksdb

KEYSCHEMA_BEGIN_NAMESPACE

// The largest key plus value of one operation rocksdb_backend accepts: 2^31 - 1 bytes. RocksDB
// refuses keys and values of 4 GiB or more (rocksdb::WriteBatch::Put, InvalidArgument), and its
// memtable entries and table blocks encode lengths and offsets in 32 bits, so an entry close to
// 4 GiB cannot be stored; 2 GiB leaves room for the internal key trailer and block overhead.
inline constexpr std::size_t rocksdb_max_entry_bytes = (std::size_t{1} << 31) - 1;

// What RocksDB does with a damaged write-ahead log when the database is opened
// (rocksdb::Options::wal_recovery_mode).
enum class rocksdb_wal_recovery {
  // kTolerateCorruptedTailRecords (the default): a last record cut short by a crash while it was
  // being appended is dropped (it was never acknowledged: its write() had not returned), and
  // any other damage (a checksum mismatch, a bad record in the middle or at the end of a log)
  // fails the open with backend_error (corruption). Nothing acknowledged is dropped silently.
  tolerate_corrupted_tail_records,
  // kAbsoluteConsistency: any irregularity, also a record cut short by a crash, fails the open.
  // Right for databases that are only ever closed cleanly; after a crash it can refuse a
  // database whose only flaw is an unacknowledged half-written record.
  absolute_consistency,
  // kPointInTimeRecovery (RocksDB's own default): replay stops silently before the first damaged
  // record, dropping it and every later write, acknowledged or not, without an error. Only for
  // salvaging a damaged database once.
  point_in_time,
  // kSkipAnyCorruptedRecords: damaged records are skipped silently and replay goes on. Only for
  // salvaging a damaged database once.
  skip_any_corrupted_records,
};

// The column-family options of one placement (keyschema::placed): rocksdb_backend keeps each
// placement in a column family of that name (the default placement: the "default" family), and
// these options tune that family alone (see rocksdb_options::placement_options). Every family
// starts from the options of rocksdb_options (block cache, bloom filter, compression, memtable
// size); a placement without an entry keeps exactly those. The options apply whenever the family
// is opened: changing them on an existing database is allowed (data written before keeps its
// format and is read as it is).
struct rocksdb_placement_options {
  // BlobDB (rocksdb::ColumnFamilyOptions::enable_blob_files, with enable_blob_garbage_collection):
  // values of at least min_blob_size bytes are written to separate *.blob files when the memtable
  // is flushed, and the table files keep only a reference. Pays for large values (message bodies
  // of several KiB): compactions then rewrite the small references instead of the values, which
  // cuts write amplification and keeps table blocks (and the block cache) for keys. Costs: a read
  // of such a value is one more file read; the space of an overwritten or erased value returns
  // only when a compaction relocates the live values of its blob file (garbage collection of the
  // oldest quarter of blob files), so a store that overwrites large values often holds more disk
  // than without; blob files are not compressed.
  bool blob_files = false;

  // With blob_files: the smallest value, in bytes, written to a blob file
  // (rocksdb::ColumnFamilyOptions::min_blob_size); smaller values stay in the table files.
  // Below about 1 KiB the extra read per value costs more than the compaction saves.
  std::uint64_t min_blob_size = 4096;

  // 0: no prefix filter. N > 0: a prefix extractor on the first N bytes of each key
  // (rocksdb::NewFixedPrefixTransform(N)), so the family's bloom filters (and a bloom filter of
  // rocksdb_options::bloom_bits_per_key bits, at least 10 when that is 0) also hold the keys'
  // prefixes: a cursor whose range lies within one prefix (its bounds share their first N bytes,
  // e.g. a scan of one queue when N covers the keyspace's literal and the start of the queue
  // name) skips the table files that hold no key of that prefix, instead of reading a block of
  // each. Pays for many short scans over a family of many table files (queues, each scanned
  // from its head). Costs: filters grow by one entry per distinct prefix; cursors whose range
  // spans prefixes read in total order as before. Choose N no longer than the shortest prefix
  // your scans share: keys shorter than N are kept out of the prefix filter.
  std::size_t prefix_bloom_length = 0;

  // rocksdb::kCompactionStyleUniversal instead of the default leveled compaction
  // (rocksdb::ColumnFamilyOptions::compaction_style): fewer rewrites of each entry (less write
  // amplification: pays for write-heavy families whose entries live briefly, such as queues),
  // at the cost of up to twice the family's size in temporary disk space during a full
  // compaction and more table files for a read to consult. Switching an existing family is
  // allowed; its files are compacted into the new shape over time.
  bool universal_compaction = false;
};

struct rocksdb_options {
  // Create the directory (and any missing parent directory) and an empty database when `path`
  // holds none. Parent directories are only created when env is nullptr (the real file system).
  // false: opening a path without a database fails (backend_error,
  // "rocksdb::DB::Open", 4 invalid argument).
  bool create_if_missing = true;

  // Fail when `path` already holds a database (backend_error, "rocksdb::DB::Open").
  bool error_if_exists = false;

  // Capacity of the LRU cache of uncompressed table blocks (rocksdb::NewLRUCache), owned by the
  // backend. 0 turns block caching off.
  std::size_t cache_bytes = std::size_t{8} << 20;

  // Bloom filter bits per key (rocksdb::NewBloomFilterPolicy); about 1% false positives at 10.
  // A filter saves a disk read on get() of an absent key. 0 or less: no filter.
  int bloom_bits_per_key = 10;

  // Compress table blocks with Snappy (rocksdb::kSnappyCompression); false: kNoCompression.
  bool compression = true;

  // Bytes buffered in one memtable (and its write-ahead log) before it is flushed to a sorted
  // table file (rocksdb::Options::write_buffer_size). Larger: faster bulk loads, longer replay
  // after a crash.
  std::size_t write_buffer_bytes = std::size_t{64} << 20;

  // Table files RocksDB keeps open (one file descriptor each); -1 keeps them all open.
  int max_open_files = 1000;

  // rocksdb::Options::paranoid_checks. true (the default, also RocksDB's): a damaged file found
  // while opening or in a background flush or compaction stops writes with an error instead of
  // being skipped. false only to salvage a damaged database once.
  bool paranoid_checks = true;

  // See rocksdb_wal_recovery. The default refuses every damaged record except an unacknowledged
  // torn tail.
  rocksdb_wal_recovery wal_recovery = rocksdb_wal_recovery::tolerate_corrupted_tail_records;

  // rocksdb::ReadOptions::verify_checksums on every get() and cursor of this backend. true (the
  // default): a damaged table block raises backend_error (corruption) instead of being decoded
  // into wrong keys or values.
  bool verify_checksums = true;

  // The largest key plus value of one write_batch operation this backend accepts; larger ones
  // make write() throw limit_error. Also what limits() reports as max_entry_bytes and
  // max_key_bytes. Values above rocksdb_max_entry_bytes are lowered to it.
  std::size_t max_entry_bytes = rocksdb_max_entry_bytes;

  // The RocksDB environment (files, threads, clock), rocksdb::Options::env. nullptr:
  // rocksdb::Env::Default(). Not owned. REQUIRES: a non-null env outlives the backend.
  // RocksDB 7 reads and writes files through env->GetFileSystem(), not through the Env's own file
  // methods: to intercept file I/O, wrap a rocksdb::FileSystem (rocksdb::FileSystemWrapper) and
  // make an Env of it with rocksdb::NewCompositeEnv (<rocksdb/file_system.h>), as the power-loss
  // simulation does (tests/durability/rocksdb_power_loss_env.hpp). When env is set, the backend neither
  // creates parent directories nor probes `path` for another engine's database (the path may not
  // be on the real file system).
  ::rocksdb::Env* env = nullptr;

  // Where RocksDB writes its diagnostic log (rocksdb::Options::info_log). nullptr (the default):
  // a keyschema::rocksdb_info_log (<keyschema/rocksdb/info_log.hpp>) on the file LOG in the
  // database directory, written with plain write(2) calls whatever env is: a line that cannot be
  // written (disk full) is dropped and counted, never fatal. RocksDB's own logger is not used: once
  // one of its writes has failed, its next line aborts the process (an assertion built into
  // Debian's librocksdb), which made a full disk kill the process (docs/backends/rocksdb.md).
  // Your own logger is used as given (and must not abort on a failed write either); to log
  // nowhere, pass one whose Logv does nothing. The backend shares ownership with RocksDB.
  std::shared_ptr<::rocksdb::Logger> info_log;

  // Column-family options per placement (keyschema::placed), keyed by placement name; see
  // rocksdb_placement_options. Applied when the family is created (keyschema::store creates the
  // families of its schema's placements) and whenever the database is opened. A name the store's
  // schema does not place makes the store's constructor (rocksdb_backend::place) throw
  // usage_error naming it; a raw backend (opened without a store) does not check. "default"
  // names the default placement.
  //   options.placement_options["content"] = {.blob_files = true, .min_blob_size = 16 << 10};
  std::map<std::string, rocksdb_placement_options, std::less<>> placement_options;
};

KEYSCHEMA_END_NAMESPACE
