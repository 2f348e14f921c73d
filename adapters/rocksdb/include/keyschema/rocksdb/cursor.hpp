// keyschema/rocksdb/cursor.hpp: keyschema::rocksdb_cursor, an ordered iterator over a key range
// of one RocksDB view.
//
// rocksdb_backend::cursor() returns one. It owns a rocksdb::Iterator and copies of its bounds, so
// the key_range it was made from may go away. It reads one consistent state: the snapshot it was
// given (a copy of which it keeps alive), or RocksDB's implicit snapshot taken when the iterator
// was created. The bounds are also handed to RocksDB (ReadOptions::iterate_lower_bound and
// iterate_upper_bound), so the iterator never reads table blocks, deleted entries or range
// tombstones beyond them; a forward cursor stops before the first key >= upper, a reverse one
// after the last key >= lower.
//
// Reads go through the block cache, like point reads; with verify_checksums (the default) every
// block read from disk is checksummed.
//
// One rocksdb_cursor reads one column family (one placement, keyschema::placed). A range that
// reaches several placements is read by one rocksdb_cursor per family, all on one snapshot, merged
// in key order (detail::placement_cursor, rocksdb_backend::cursor_type). On a family with a prefix
// extractor (rocksdb_placement_options::prefix_bloom_length), a range whose bounds share their
// prefix reads with ReadOptions::auto_prefix_mode (its prefix filters skip table files), and any
// other range in total order (ReadOptions::total_order_seek), so that the prefix never changes
// which keys a cursor sees.
//
// Thread-safety: a cursor is used by one thread at a time; distinct cursors may run concurrently
// with each other and with writers.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/rocksdb/detail/status.hpp>
#include <keyschema/rocksdb/snapshot.hpp>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class rocksdb_backend;

class rocksdb_cursor {
 public:
  // A moved-from cursor is not valid() and may only be destroyed or assigned to.
  rocksdb_cursor(rocksdb_cursor&& other) noexcept
      : snap_(std::move(other.snap_)),
        bounds_(std::move(other.bounds_)),
        it_(std::move(other.it_)),
        path_(other.path_),
        reverse_(other.reverse_),
        valid_(std::exchange(other.valid_, false)) {}

  rocksdb_cursor& operator=(rocksdb_cursor&& other) noexcept {
    if (this != &other) {
      it_ = std::move(other.it_);  // the old iterator goes before the snapshot and bounds it reads
      snap_ = std::move(other.snap_);
      bounds_ = std::move(other.bounds_);
      path_ = other.path_;
      reverse_ = other.reverse_;
      valid_ = std::exchange(other.valid_, false);
    }
    return *this;
  }

  rocksdb_cursor(const rocksdb_cursor&) = delete;
  rocksdb_cursor& operator=(const rocksdb_cursor&) = delete;
  ~rocksdb_cursor() = default;

  // True while positioned on an entry inside the range.
  bool valid() const noexcept { return valid_; }

  // The current key and value. They point into the RocksDB iterator: valid until next(), a move
  // or destruction of this cursor.
  // REQUIRES: valid().
  std::string_view key() const noexcept {
    const ::rocksdb::Slice s = it_->key();
    return {s.data(), s.size()};
  }
  std::string_view value() const noexcept {
    const ::rocksdb::Slice s = it_->value();
    return {s.data(), s.size()};
  }

  // Moves to the next entry in the cursor's direction; valid() turns false past the bound.
  // REQUIRES: valid().
  // Errors:
  //   backend_error, native_call "rocksdb::Iterator": RocksDB could not read the next entry
  //     (2, corruption: a damaged table block or a checksum mismatch with verify_checksums; 5, IO
  //     error: a failed read). The cursor is no longer valid(). Remedy: check the disk; restore
  //     the database from a backup, or run `ldb repair` on the closed database to keep what is
  //     readable.
  void next() {
    if (reverse_) it_->Prev();
    else it_->Next();
    settle();
  }

 private:
  friend class rocksdb_backend;

  // The bounds live on the heap: RocksDB keeps pointers to the Slices (and they to the strings)
  // for the iterator's lifetime, and a move of the cursor must not move them.
  struct bounds {
    std::string lower, upper;
    ::rocksdb::Slice lower_slice, upper_slice;
  };

  // Positions a new cursor on the first entry of range in its direction, in column family cf
  // (whose prefix extractor takes the first `prefix` bytes of a key; 0: it has none).
  // REQUIRES: ro.snapshot is snap's (or nullptr when snap is empty); db, cf and *path outlive the
  // cursor. Errors: as next(); std::bad_alloc.
  rocksdb_cursor(::rocksdb::DB& db, ::rocksdb::ReadOptions ro, std::optional<rocksdb_snapshot> snap,
                 const key_range& range, const std::string* path, ::rocksdb::ColumnFamilyHandle* cf,
                 std::size_t prefix)
      : snap_(std::move(snap)), bounds_(std::make_unique<bounds>()), path_(path), reverse_(range.reverse) {
    bounds_->lower.assign(range.lower);
    bounds_->upper.assign(range.upper);
    bounds_->lower_slice = ::rocksdb::Slice(bounds_->lower);
    bounds_->upper_slice = ::rocksdb::Slice(bounds_->upper);
    ro.iterate_lower_bound = &bounds_->lower_slice;
    if (!bounds_->upper.empty()) ro.iterate_upper_bound = &bounds_->upper_slice;
    if (prefix > 0) {
      // Prefix filtering only where it cannot change the result: both bounds start with the same
      // `prefix` bytes, so every key of the range does too (auto_prefix_mode's other case, an
      // upper bound that is the prefix's successor, can omit short keys in RocksDB 7.8).
      const bool one_prefix = range.lower.size() >= prefix && range.upper.size() >= prefix &&
                              range.lower.substr(0, prefix) == range.upper.substr(0, prefix);
      ro.auto_prefix_mode = one_prefix;
      ro.total_order_seek = !one_prefix;
    }
    it_.reset(db.NewIterator(ro, cf));
    if (reverse_) it_->SeekToLast();  // the last key < upper (the iterator's upper bound)
    else it_->SeekToFirst();          // the first key >= lower
    settle();
  }

  // Throws when the iterator reports an error (checked after every move: an error ends the
  // iteration, and Valid() alone does not tell it from the end of the range).
  void settle() {
    const ::rocksdb::Status s = it_->status();
    if (!s.ok()) {
      valid_ = false;
      rocksdb_detail::throw_rocksdb_error(s, "keyschema::rocksdb_backend: reading '" + *path_ + "' through a cursor",
                                          "rocksdb::Iterator");
    }
    if (!it_->Valid()) {
      valid_ = false;
      return;
    }
    // RocksDB enforces the bounds; checking them again costs two comparisons and keeps the
    // contract independent of how a future RocksDB treats them.
    const std::string_view k = key();
    valid_ = k >= std::string_view(bounds_->lower) &&
             (bounds_->upper.empty() || k < std::string_view(bounds_->upper));
  }

  std::optional<rocksdb_snapshot> snap_;      // keeps an explicit snapshot alive
  std::unique_ptr<bounds> bounds_;            // read by it_
  std::unique_ptr<::rocksdb::Iterator> it_;   // destroyed before bounds_ and snap_
  const std::string* path_;                   // the backend's, for error messages
  bool reverse_;
  bool valid_ = false;
};

KEYSCHEMA_END_NAMESPACE
