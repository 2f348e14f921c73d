// keyschema/leveldb/cursor.hpp: keyschema::leveldb_cursor, an ordered iterator over a key range
// of one LevelDB view.
//
// leveldb_backend::cursor() returns one. It owns a leveldb::Iterator and copies of its bounds, so
// the key_range it was made from may go away. It reads one consistent state: the snapshot it was
// given (a copy of which it keeps alive), or LevelDB's implicit snapshot taken when the iterator
// was created. It never steps past its bound: a forward cursor stops at the first key >= upper,
// a reverse one at the first key < lower.
//
// Reads go through the block cache (leveldb::ReadOptions::fill_cache = true), like point reads,
// so the blocks a scan touches may displace others; with verify_checksums (the default) every
// block read from disk is checksummed.
//
// Thread-safety: a cursor is used by one thread at a time; distinct cursors may run concurrently
// with each other and with writers.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/leveldb/detail/status.hpp>
#include <keyschema/leveldb/snapshot.hpp>

#include <leveldb/db.h>
#include <leveldb/iterator.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class leveldb_backend;

class leveldb_cursor {
 public:
  // A moved-from cursor is not valid() and may only be destroyed or assigned to.
  leveldb_cursor(leveldb_cursor&& other) noexcept
      : snap_(std::move(other.snap_)),
        it_(std::move(other.it_)),
        lower_(std::move(other.lower_)),
        upper_(std::move(other.upper_)),
        path_(other.path_),
        reads_(other.reads_),
        reads_seen_(other.reads_seen_),
        reverse_(other.reverse_),
        valid_(std::exchange(other.valid_, false)),
        value_fetched_(other.value_fetched_),
        key_(other.key_),
        value_(other.value_) {}

  leveldb_cursor& operator=(leveldb_cursor&& other) noexcept {
    if (this != &other) {
      it_ = std::move(other.it_);  // the old iterator goes before the snapshot it may read
      snap_ = std::move(other.snap_);
      lower_ = std::move(other.lower_);
      upper_ = std::move(other.upper_);
      path_ = other.path_;
      reads_ = other.reads_;
      reads_seen_ = other.reads_seen_;
      reverse_ = other.reverse_;
      valid_ = std::exchange(other.valid_, false);
      value_fetched_ = other.value_fetched_;
      key_ = other.key_;
      value_ = other.value_;
    }
    return *this;
  }

  leveldb_cursor(const leveldb_cursor&) = delete;
  leveldb_cursor& operator=(const leveldb_cursor&) = delete;
  ~leveldb_cursor() = default;

  // True while positioned on an entry inside the range.
  bool valid() const noexcept { return valid_; }

  // The current key and value. They point into the LevelDB iterator: valid until next(), a move
  // or destruction of this cursor. Each is fetched from the iterator once per step (the key when
  // the cursor settles, the value on the first value() call), so repeated calls are free.
  // REQUIRES: valid().
  std::string_view key() const noexcept { return key_; }
  std::string_view value() const noexcept {
    if (!value_fetched_) {
      const ::leveldb::Slice s = it_->value();
      value_ = std::string_view(s.data(), s.size());
      value_fetched_ = true;
    }
    return value_;
  }

  // Moves to the next entry in the cursor's direction; valid() turns false past the bound.
  // REQUIRES: valid().
  // Errors:
  //   backend_error, native_call "leveldb::Iterator": LevelDB could not read an entry
  //     (Corruption: a damaged table block or a checksum mismatch with verify_checksums; IO error:
  //     a failed read). The cursor is no longer valid(). LevelDB skips an unreadable block and
  //     records the error while the iterator stays Valid() on the entries after it, so the
  //     status is checked after every step that read a table file (every step when
  //     verify_checksums or paranoid_checks is off; see detail/read_counting_env.hpp): the entry
  //     that follows a damaged block is never returned as if nothing were missing before it (a
  //     check every N steps, or only at the end of the range, would let a scan that stops
  //     early, by limit() or a break, read past the gap without an error). Remedy: check the
  //     disk; run leveldb::RepairDB on the closed database to salvage what is readable.
  void next() {
    if (reverse_) it_->Prev();
    else it_->Next();
    check_status_after_read();
    settle();
  }

 private:
  friend class leveldb_backend;

  // Positions a new cursor on the first entry of range in its direction. reads: the count of
  // table file reads of the Env db reads through (detail/read_counting_env.hpp), or nullptr to
  // check the iterator's status after every step.
  // REQUIRES: ro.snapshot is snap's (or nullptr when snap is empty); db, *path and *reads outlive
  // the cursor; reads is nullptr unless db verifies every block it reads from disk
  // (ro.verify_checksums and leveldb::Options::paranoid_checks). Errors: as next().
  leveldb_cursor(::leveldb::DB& db, const ::leveldb::ReadOptions& ro, std::optional<leveldb_snapshot> snap,
                 const key_range& range, const std::string* path, const std::atomic<std::uint64_t>* reads)
      : snap_(std::move(snap)),
        it_(db.NewIterator(ro)),
        lower_(range.lower),
        upper_(range.upper),
        path_(path),
        reads_(reads),
        reverse_(range.reverse) {
    if (!reverse_) {
      it_->Seek(lower_);
    } else if (upper_.empty()) {
      it_->SeekToLast();
    } else {
      // The last key < upper: the entry before the first key >= upper, or the last entry when
      // every key is below upper.
      it_->Seek(upper_);
      check_status();
      if (it_->Valid()) it_->Prev();
      else it_->SeekToLast();
    }
    if (reads_ != nullptr) reads_seen_ = reads_->load(std::memory_order_relaxed);  // the check below covers them
    settle();
    if (valid_) check_status();  // settle() checked it otherwise
  }

  // check_status() when a table file was opened or read since the last check (by this thread,
  // or another: an extra check, never a missed one), or always without a counter.
  void check_status_after_read() {
    if (reads_ != nullptr) {
      const std::uint64_t n = reads_->load(std::memory_order_relaxed);
      if (n == reads_seen_) return;
      reads_seen_ = n;
    }
    check_status();
  }

  // Throws when the iterator reports an error. LevelDB can stay Valid() after recording a
  // corrupt entry it skipped, so the status is checked after every move that read a file (see
  // next()), not only at the end.
  void check_status() {
    const ::leveldb::Status s = it_->status();
    if (!s.ok()) {
      valid_ = false;
      leveldb_detail::throw_leveldb_error(s, "keyschema::leveldb_backend: reading '" + *path_ + "' through a cursor",
                                  "leveldb::Iterator");
    }
  }

  // Sets valid_ after a move: an entry that is inside the bound; fetches its key. Checks the
  // status when the iterator ran out.
  void settle() {
    value_fetched_ = false;
    if (!it_->Valid()) {
      valid_ = false;
      check_status();
      return;
    }
    const ::leveldb::Slice s = it_->key();
    key_ = std::string_view(s.data(), s.size());
    valid_ = reverse_ ? key_ >= std::string_view(lower_) : (upper_.empty() || key_ < std::string_view(upper_));
    if (!valid_) check_status();  // the end of the range: what the scan read was read without error
  }

  std::optional<leveldb_snapshot> snap_;    // keeps an explicit snapshot alive
  std::unique_ptr<::leveldb::Iterator> it_;  // destroyed before snap_
  std::string lower_, upper_;
  const std::string* path_;  // the backend's, for error messages
  const std::atomic<std::uint64_t>* reads_;  // the backend's table file reads; nullptr: check every step
  std::uint64_t reads_seen_ = 0;             // *reads_ at the last status check
  bool reverse_;
  bool valid_ = false;
  mutable bool value_fetched_ = false;
  std::string_view key_;            // the current key, fetched once per step
  mutable std::string_view value_;  // the current value, once fetched
};

KEYSCHEMA_END_NAMESPACE
