// keyschema/etcd/cursor.hpp: keyschema::etcd_cursor, an ordered iterator over a key range of one
// etcd revision.
//
// etcd_backend::cursor() returns one. It reads its range in pages of etcd_options::page_size
// keys (RangeRequest::limit), every page at one revision: the snapshot's, or, without one, the
// revision of the cluster's answer to the first page. A forward page starts after the last key of
// the previous one; a reverse page is read with sort_order DESCEND, sort_target KEY and ends
// before the last key of the previous one. Note that etcd 3.4 reads the whole remaining range
// on the server for every sorted (reverse) page before it cuts it to the limit: a reverse scan
// of n keys costs the server O(n^2 / page_size) key reads; forward pages cost their own size.
//
// The cursor owns copies of its bounds and of the current page; it keeps the backend's shared
// state alive, so it may outlive a move of the backend (not the cluster's compaction of its
// revision: see etcd_snapshot).
//
// Thread-safety: a cursor is used by one thread at a time; distinct cursors may run concurrently
// with each other and with writers.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/etcd/detail/client.hpp>
#include <keyschema/etcd/detail/read_set.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

class etcd_backend;
class etcd_write_transaction;

class etcd_cursor {
 public:
  // A moved-from cursor is not valid() and may only be destroyed or assigned to.
  etcd_cursor(etcd_cursor&& other) noexcept
      : c_(std::move(other.c_)),
        range_(std::move(other.range_)),
        revision_(other.revision_),
        reverse_(other.reverse_),
        more_(std::exchange(other.more_, false)),
        page_(std::move(other.page_)),
        pos_(std::exchange(other.pos_, 0)),
        reads_(std::move(other.reads_)),
        read_index_(other.read_index_),
        erase_run_(other.erase_run_),
        covered_from_(std::move(other.covered_from_)) {
    other.page_.clear();
  }
  etcd_cursor& operator=(etcd_cursor&& other) noexcept {
    if (this != &other) {
      c_ = std::move(other.c_);
      range_ = std::move(other.range_);
      revision_ = other.revision_;
      reverse_ = other.reverse_;
      more_ = std::exchange(other.more_, false);
      page_ = std::move(other.page_);
      other.page_.clear();
      pos_ = std::exchange(other.pos_, 0);
      reads_ = std::move(other.reads_);
      read_index_ = other.read_index_;
      erase_run_ = other.erase_run_;
      covered_from_ = std::move(other.covered_from_);
    }
    return *this;
  }
  etcd_cursor(const etcd_cursor&) = delete;
  etcd_cursor& operator=(const etcd_cursor&) = delete;
  ~etcd_cursor() = default;

  // True while positioned on an entry inside the range.
  bool valid() const noexcept { return pos_ < page_.size(); }

  // The current key (without the backend's key prefix) and value; they point into the cursor's
  // page: valid until next(), a move or destruction of this cursor. REQUIRES: valid().
  std::string_view key() const noexcept { return page_[pos_].key; }
  std::string_view value() const noexcept { return page_[pos_].value; }

  // The revision the cursor reads at.
  std::int64_t revision() const noexcept { return revision_; }

  // Moves to the next entry in the cursor's direction, reading the next page when the current
  // one is used up. REQUIRES: valid().
  // Errors: backend_error, native_call "etcd /v3/kv/range" (see etcd_backend::get: no endpoint
  // answered, the deadline passed, no leader, the revision was compacted). The cursor is then no
  // longer valid().
  void next() {
    ++pos_;
    if (pos_ < page_.size() || !more_) {
      note();
      return;
    }
    // The next page starts after (before, in reverse) the last key of this one.
    const std::string last = c_->etcd_key(page_.back().key);
    if (reverse_) {
      range_.end = last;
    } else {
      range_.begin = last;
      range_.begin.push_back('\0');
    }
    page_.clear();
    pos_ = 0;
    more_ = false;
    fetch();
  }

 private:
  friend class etcd_backend;
  friend class etcd_write_transaction;

  // Reads the first page. revision 0: read the latest state and stay at its revision. With
  // reads (a write transaction's read set), every key the cursor is positioned on and the range
  // it covered so far are recorded there (see read_set.hpp), and a revision of 0 is taken from
  // and written to reads->revision.
  // Errors: as next(); std::bad_alloc.
  // erase_scan (with reads): the keys it goes over are recorded as a run of an erase scan
  // (read_set::note_erase_key) instead of one by one.
  etcd_cursor(std::shared_ptr<const etcd_detail::client> c, const key_range& r, std::int64_t revision,
              std::shared_ptr<etcd_detail::read_set> reads = nullptr, bool erase_scan = false)
      : c_(std::move(c)),
        range_(c_->to_etcd(r.lower, r.upper)),
        revision_(revision),
        reverse_(r.reverse),
        reads_(std::move(reads)) {
    if (reads_) {
      if (erase_scan) erase_run_ = reads_->begin_erase_run();
      if (revision_ == 0) revision_ = reads_->revision;
      read_index_ = reads_->ranges.size();
      reads_->ranges.emplace_back();  // covers nothing until note()
      covered_from_ = reverse_ ? range_.end : range_.begin;
    }
    if (!range_.empty()) fetch();
    else note();
  }

  // Records, in reads_, the key the cursor is on and the range covered from its start to it
  // (the whole range once the cursor is exhausted).
  void note() {
    if (!reads_) return;
    etcd_detail::etcd_range& covered = reads_->ranges[read_index_];
    if (valid()) {
      std::string k = c_->etcd_key(page_[pos_].key);
      if (reverse_) {
        covered.begin = k;
        covered.end = covered_from_;
      } else {
        covered.begin = covered_from_;
        covered.end = k;
        covered.end.push_back('\0');
      }
      if (erase_run_ != no_erase_run) reads_->note_erase_key(erase_run_, std::move(k), page_[pos_].mod_revision);
      else reads_->note_cursor_key(std::move(k), page_[pos_].mod_revision);
    } else if (reverse_) {
      covered.begin = range_.begin;
      covered.end = covered_from_;
    } else {
      covered.begin = covered_from_;
      covered.end = range_.end;
    }
  }

  void fetch() {
    if (range_.empty()) return;
    etcd_detail::range_page p = c_->range("keyschema::etcd_backend: reading a range through a cursor", range_,
                                          c_->options().page_size, revision_, reverse_);
    if (revision_ == 0) {
      revision_ = p.revision;
      if (reads_ && reads_->revision == 0) reads_->revision = p.revision;
    }
    more_ = p.more;
    page_ = std::move(p.kvs);
    if (page_.empty()) more_ = false;
    note();
  }

  std::shared_ptr<const etcd_detail::client> c_;
  etcd_detail::etcd_range range_;  // what is left to read
  std::int64_t revision_;
  bool reverse_;
  bool more_ = false;
  std::vector<etcd_detail::kv_pair> page_;
  std::size_t pos_ = 0;
  std::shared_ptr<etcd_detail::read_set> reads_;  // a write transaction's, or null
  std::size_t read_index_ = 0;                     // this cursor's entry in reads_->ranges
  static constexpr std::size_t no_erase_run = static_cast<std::size_t>(-1);
  std::size_t erase_run_ = no_erase_run;           // an erase scan's entry in reads_->erase_runs
  std::string covered_from_;                       // where the covered range starts (ends, in reverse)
};

KEYSCHEMA_END_NAMESPACE
