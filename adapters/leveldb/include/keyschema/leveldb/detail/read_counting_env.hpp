// keyschema/leveldb/detail/read_counting_env.hpp: the leveldb::Env layer that counts the table
// file reads LevelDB makes, so that a cursor asks its iterator for its status only after a step
// that read a file.
//
// LevelDB's iterator steps over a table block it cannot read (or a table it cannot open),
// records the error in its status and stays Valid() on the entries after it, so leveldb_cursor
// must learn of the error before it returns an entry after the gap. leveldb::Iterator::status()
// walks the iterator of every level and table (about 260 instructions per call on a database of
// a few tables); the step itself costs about 1,300. What makes a cheaper test sufficient: a
// block that fails its checksum or its read is never put into the block cache (LevelDB's
// Table::BlockReader caches only blocks read without error), and a table that fails to open is
// not cached either (TableCache::FindTable), so every step that skips a damaged block or table
// calls RandomAccessFile::Read or Env::NewRandomAccessFile during that step. This Env counts
// those calls; the cursor remembers the count at its last status check and checks again only
// when the count moved. That holds when LevelDB verifies every block it reads from disk:
// ReadOptions::verify_checksums for data blocks and Options::paranoid_checks for a table's
// index, leveldb_options' defaults. With either turned off, a damaged block can be cached and
// skipped later without a read: the backend then gives its cursors no counter and they check
// after every step.
//
// Not covered: a block whose checksum matches but whose contents LevelDB cannot parse, i.e.
// written that way by a faulty writer (not damage to the files), and a damaged block that a read
// through leveldb_backend::native() without verify_checksums put into the block cache. Either is
// cached; the step that read it from the file is checked, a later cursor crossing the cached
// block reports the error at the end of its range, not when it stops earlier.
//
// The count is one counter per backend, bumped by reads of any thread (a scan on one thread and
// a compaction on another both move it): other threads' reads cost a cursor an extra check,
// never a missed one. A cursor's own reads precede its load of the counter in the same thread,
// so a relaxed load sees them.
//
// Thread-safety: as leveldb::Env (any method from any thread); each wrapped file as
// leveldb::RandomAccessFile (Read from any thread).
#pragma once

#include <keyschema/detail/config.hpp>

#include <leveldb/env.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

KEYSCHEMA_BEGIN_NAMESPACE
namespace leveldb_detail {

class read_counting_env final : public ::leveldb::EnvWrapper {
 public:
  // Wraps base (not owned). REQUIRES: base outlives this object, and this object outlives every
  // database opened through it.
  explicit read_counting_env(::leveldb::Env* base) : ::leveldb::EnvWrapper(base) {}

  // Counted before the call (a failed open counts too), and the file it returns counts its reads.
  ::leveldb::Status NewRandomAccessFile(const std::string& name, ::leveldb::RandomAccessFile** result) override {
    bump();
    ::leveldb::Status s = target()->NewRandomAccessFile(name, result);
    if (s.ok()) *result = new counted_file(*result, this);
    return s;
  }

  // The number of table file opens and reads so far, through this Env, on any thread.
  const std::atomic<std::uint64_t>& reads() const noexcept { return reads_; }

 private:
  class counted_file final : public ::leveldb::RandomAccessFile {
   public:
    counted_file(::leveldb::RandomAccessFile* base, read_counting_env* env) : base_(base), env_(env) {}

    ::leveldb::Status Read(std::uint64_t offset, std::size_t n, ::leveldb::Slice* result,
                           char* scratch) const override {
      env_->bump();
      return base_->Read(offset, n, result, scratch);
    }

   private:
    std::unique_ptr<::leveldb::RandomAccessFile> base_;
    read_counting_env* env_;
  };

  void bump() noexcept { reads_.fetch_add(1, std::memory_order_relaxed); }

  std::atomic<std::uint64_t> reads_{0};
};

}  // namespace leveldb_detail
KEYSCHEMA_END_NAMESPACE
