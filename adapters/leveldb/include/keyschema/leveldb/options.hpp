// keyschema/leveldb/options.hpp: how keyschema::leveldb_backend opens and tunes a LevelDB database.
//
// leveldb_options is a plain aggregate handed to the leveldb_backend constructor; each field maps
// onto one leveldb::Options field (see docs/backends/leveldb.md for the full table). The options
// are read once, when the database is opened; changing them afterwards has no effect on an open
// backend.
//
// Thread-safety: a plain value type.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>

namespace leveldb {
class Env;
}  // namespace leveldb

KEYSCHEMA_BEGIN_NAMESPACE

// The largest key plus value of one operation LevelDB stores reliably: 2^31 - 1 bytes.
// LevelDB encodes the length of keys, values and whole blocks as 32-bit varints and 32-bit
// offsets (write-ahead log records, memtable entries, table blocks, Snappy frames), so an entry
// close to 4 GiB would be truncated silently; 2 GiB leaves room for the 8-byte internal key
// trailer, entry headers and block trailers.
inline constexpr std::size_t leveldb_max_entry_bytes = (std::size_t{1} << 31) - 1;

struct leveldb_options {
  // Create the directory (and any missing parent directory) and an empty database when `path`
  // holds none. Parent directories are only created when env is nullptr (the real file system).
  // false: opening a path without a database fails (backend_error, "leveldb::DB::Open"). LevelDB
  // itself still creates the last path component and an empty LOCK file in it when it can,
  // but never a database.
  bool create_if_missing = true;

  // Fail when `path` already holds a database (backend_error, "leveldb::DB::Open").
  bool error_if_exists = false;

  // Capacity of the LRU cache of uncompressed table blocks (leveldb::NewLRUCache), owned by the
  // backend. 0 turns block caching off.
  std::size_t cache_bytes = std::size_t{8} << 20;

  // Bloom filter bits per key (leveldb::NewBloomFilterPolicy); about 1% false positives at 10.
  // A filter saves a disk read on get() of an absent key. 0 or less: no filter. The value is
  // part of the table files written: a database may be reopened with another value.
  int bloom_bits_per_key = 10;

  // Compress table blocks with Snappy (leveldb::kSnappyCompression); false: kNoCompression.
  // LevelDB stores a block uncompressed when Snappy saves less than 12.5% or is unavailable.
  bool compression = true;

  // Bytes buffered in the memtable (and the write-ahead log) before they are written to a
  // sorted table file. LevelDB clamps it to [64 KiB, 1 GiB]. Larger: faster bulk loads, longer
  // recovery after a crash.
  std::size_t write_buffer_bytes = std::size_t{4} << 20;

  // Table files LevelDB keeps open (one file descriptor each); clamped to [74, 50000].
  int max_open_files = 1000;

  // leveldb::Options::paranoid_checks. true (the default, as in RocksDB): a damaged write-ahead
  // log record fails the open with backend_error (corruption) and nothing is dropped; table file
  // indexes are checked when a table is opened, and compactions verify every block they read.
  // A log that merely ends in the middle of a record (a crash while appending) is not damage.
  // false (LevelDB's own default): recovery skips a damaged log record together with the rest
  // of its 32 KiB log block and opens without an error, so writes can be lost silently, also
  // writes older than ones that survive. Turn it off only to salvage a damaged database once.
  bool paranoid_checks = true;

  // leveldb::ReadOptions::verify_checksums on every get() and cursor of this backend. true (the
  // default): a damaged table block raises backend_error (corruption) instead of being decoded
  // into wrong keys or values. Costs a CRC32C of each block read from disk (blocks found in the
  // block cache were checked when they were read); see docs/backends/leveldb.md for figures.
  bool verify_checksums = true;

  // The largest key plus value of one write_batch operation this backend accepts; larger ones
  // make write() throw limit_error. Also what limits() reports as max_entry_bytes and
  // max_key_bytes. Values above leveldb_max_entry_bytes are lowered to it. A broker may set a
  // small value to turn a runaway payload into an error instead of a multi-gigabyte record.
  std::size_t max_entry_bytes = leveldb_max_entry_bytes;

  // The LevelDB environment (files, locks, background threads). nullptr: leveldb::Env::Default().
  // Not owned. REQUIRES: a non-null env outlives the backend.
  // The backend always wraps it in its own syncing Env (keyschema/leveldb/detail/syncing_env.hpp),
  // which makes a synced write sync the earlier write-ahead logs LevelDB switched away from and
  // still needs, before its own; that is what makes a synced write cover every write before it
  // (writes without sync sync nothing). Directory fsyncs are only made on the real
  // file system (env nullptr or leveldb::Env::Default()). And in one that counts table file
  // reads (keyschema/leveldb/detail/read_counting_env.hpp), which tells cursors when to check
  // LevelDB's iterator status.
  // Useful for leveldb::NewMemEnv (<leveldb/helpers/memenv.h>) or fault injection in tests (a
  // power-loss simulation: tests/durability/cases/power_loss.cpp).
  ::leveldb::Env* env = nullptr;
};

KEYSCHEMA_END_NAMESPACE
