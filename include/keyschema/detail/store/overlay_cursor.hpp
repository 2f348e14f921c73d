// keyschema/detail/store/overlay_cursor.hpp: a cursor over pending writes laid over a backend cursor.
//
// Transactions read their own writes: their scans merge the writes not yet committed (a sorted
// map of key -> value or erasure) with a cursor on the transaction's snapshot. A pending entry
// hides the stored entry with the same key; a pending erasure hides it altogether. The pending
// entries in range are copied when the cursor is created, so later writes to the transaction do
// not disturb an open scan.
//
// Thread-safety: none; a cursor belongs to one thread.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

using pending_map = std::map<std::string, std::optional<std::string>, std::less<>>;

template <class BaseCursor>
class overlay_cursor {
 public:
  overlay_cursor(BaseCursor base, const pending_map& pending, const key_range& r)
      : base_(std::move(base)), reverse_(r.reverse) {
    auto lo = pending.lower_bound(r.lower);
    auto hi = r.upper.empty() ? pending.end() : pending.lower_bound(r.upper);
    // An empty range (upper <= lower, e.g. scan(...).from(5).to(2)) selects nothing; hi may then
    // come before lo, and walking from lo to hi would run past the end of the map.
    if (!r.upper.empty() && r.upper <= r.lower) hi = lo;
    for (auto it = lo; it != hi; ++it) over_.emplace_back(it->first, it->second);
    if (reverse_) std::reverse(over_.begin(), over_.end());
    settle();
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
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
