// keyschema/detail/store/overlay_cursor.hpp: a cursor over pending writes laid over a backend cursor.
//
// Transactions read their own writes: their scans merge the writes not yet committed (a sorted
// map of key -> value or erasure) with a cursor on the transaction's snapshot. A pending entry
// hides the stored entry with the same key; a pending erasure hides it altogether. The pending
// entries in range are copied when the cursor is created, so later writes to the transaction do
// not disturb an open scan.
//
// A transaction also notes what it reads (read_log), for the validation set of a prepared
// transaction (keyschema/prepared.hpp): the keys of its point reads, and for each scan its range
// and where its cursor stopped (a cursor that stopped on key k has visited its range up to k).
//
// Thread-safety: none; a cursor belongs to one thread.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

using pending_map = std::map<std::string, std::optional<std::string>, std::less<>>;

// What one scan cursor of a transaction visited: its range, and, once the cursor is destroyed
// while the transaction is open, whether it stopped before the end of the range and on which key.
// Shared by the cursor and the transaction's read_log, so that either may go first.
struct scan_read {
  std::string lower, upper;  // the cursor's range (upper empty: no bound)
  bool reverse = false;
  std::string stop;          // stopped: the key the cursor stood on (visited, included)
  bool ended = false;        // the cursor was destroyed while the transaction was open
  bool stopped = false;      // it had not reached the end of its range
  bool closed = false;       // the transaction has ended: the cursor records nothing more
};

// A range erase of a transaction: the keys of the keyspace (fingerprint `keyspace`, matches) in
// [lower, upper) (after the limit of the scan it erased: see store_transaction::erase_range).
struct range_erase_read {
  std::string lower, upper;
  std::uint64_t keyspace = 0;
  bool (*matches)(std::string_view) = nullptr;  // key_codec<KS>::matches
};

// What a transaction read and range-erased, for prepare(). Cleared when the transaction ends.
// A template (read_log below is its one specialization) only so that a translation unit that runs
// no transaction does not instantiate its std::vector and std::shared_ptr code.
template <class = void>
struct basic_read_log {
  std::string keys;  // point reads: u32 length + key bytes, each
  std::vector<std::shared_ptr<scan_read>> scans;
  std::vector<range_erase_read> range_erases;

  void note_key(std::string_view k) {
    if (!k.empty() && static_cast<unsigned char>(k.front()) == 0xff) return;  // the store's own records
    const std::size_t n = k.size();
    for (int i = 0; i < 4; ++i) keys.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    keys.append(k);
  }
  // Calls f(std::string_view key) for each noted point read (repeats included).
  template <class F>
  void for_each_key(F&& f) const {
    for (std::size_t pos = 0; pos < keys.size();) {
      std::size_t n = 0;
      for (int i = 0; i < 4; ++i) n |= std::size_t{static_cast<unsigned char>(keys[pos + static_cast<std::size_t>(i)])} << (8 * i);
      f(std::string_view(keys).substr(pos + 4, n));
      pos += 4 + n;
    }
  }
  std::shared_ptr<scan_read> note_scan(const key_range& r) {
    auto s = std::make_shared<scan_read>();
    s->lower = r.lower;
    s->upper = r.upper;
    s->reverse = r.reverse;
    scans.push_back(s);
    return s;
  }
  // The transaction ended: its cursors still alive record nothing more.
  void clear() noexcept {
    for (const auto& s : scans) s->closed = true;
    keys.clear();
    scans.clear();
    range_erases.clear();
  }
};
using read_log = basic_read_log<>;

template <class BaseCursor>
class overlay_cursor {
 public:
  // log: where the cursor records what it visited when destroyed (null: nowhere).
  overlay_cursor(BaseCursor base, const pending_map& pending, const key_range& r,
                 std::shared_ptr<scan_read> log = nullptr)
      : base_(std::move(base)), reverse_(r.reverse), log_(std::move(log)) {
    auto lo = pending.lower_bound(r.lower);
    auto hi = r.upper.empty() ? pending.end() : pending.lower_bound(r.upper);
    // An empty range (upper <= lower, e.g. scan(...).from(5).to(2)) selects nothing; hi may then
    // come before lo, and walking from lo to hi would run past the end of the map.
    if (!r.upper.empty() && r.upper <= r.lower) hi = lo;
    for (auto it = lo; it != hi; ++it) over_.emplace_back(it->first, it->second);
    if (reverse_) std::reverse(over_.begin(), over_.end());
    settle();
  }
  overlay_cursor(overlay_cursor&&) = default;
  overlay_cursor& operator=(overlay_cursor&&) = default;
  ~overlay_cursor() {
    if (!log_ || log_->closed) return;  // closed: the transaction and its engine state are gone
    log_->ended = true;
    if (valid()) {
      try {
        log_->stop.assign(key());
        log_->stopped = true;
      } catch (...) {
        // No memory for the key: the whole range counts as visited.
      }
    }
  }

  bool valid() const noexcept { return which_ != source::none; }
  // REQUIRES: valid(). Valid until next() or destruction.
  std::string_view key() const noexcept { return which_ == source::base ? base_.key() : std::string_view(over_[i_].first); }
  std::string_view value() const noexcept {
    return which_ == source::base ? base_.value() : std::string_view(*over_[i_].second);
  }
  // REQUIRES: valid().
  void next() {
    if (which_ == source::base) {
      base_.next();
    } else {
      if (base_.valid() && base_.key() == over_[i_].first) base_.next();
      ++i_;
    }
    settle();
  }

 private:
  enum class source { none, base, over };

  // before(a, b): a comes first in the cursor's direction.
  bool before(std::string_view a, std::string_view b) const noexcept { return reverse_ ? b < a : a < b; }

  void settle() {
    for (;;) {
      const bool has_base = base_.valid();
      const bool has_over = i_ < over_.size();
      if (!has_base && !has_over) {
        which_ = source::none;
        return;
      }
      if (has_over && (!has_base || !before(base_.key(), over_[i_].first))) {
        if (over_[i_].second) {
          which_ = source::over;
          return;
        }
        // A pending erasure: skip it and the stored entry it hides.
        if (has_base && base_.key() == over_[i_].first) base_.next();
        ++i_;
        continue;
      }
      which_ = source::base;
      return;
    }
  }

  BaseCursor base_;
  std::vector<std::pair<std::string, std::optional<std::string>>> over_;
  std::size_t i_ = 0;
  bool reverse_;
  source which_ = source::none;
  std::shared_ptr<scan_read> log_;
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
