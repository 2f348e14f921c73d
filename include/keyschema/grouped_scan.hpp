// keyschema/grouped_scan.hpp: one pass over a scan, handed out as groups of equal leading fields.
//
// grouped_scan<View, N> is what scan_view::group_by<N>() (or group_by<"field">(), N being that
// field's position + 1) returns: a single-pass range of groups, each group holding the
// consecutive entries of the scan whose first N key fields are equal (its key(), a std::tuple of
// those N fields) and itself a single-pass range of the scan's entries:
//
//   for (auto&& g : db.scan<snapshots>().group_by<"topic">()) {
//     const auto& [topic] = g.key();
//     for (const auto& e : g) restore(topic, e.value);
//   }
//   db.scan<snapshots>().group_by<1>().for_each([](const auto& key, auto& entries) { ... });
//
// There is one engine cursor for the whole pass (the scan's), shared by the range of groups and
// each group: iterating a group advances it, and moving to the next group skips whatever is left
// of the current one (a group read partially, or not at all, costs only the keys it skips). A
// group is never empty. The scan's prefix, bounds, direction and limit apply as they do to the
// scan (a limit counts entries, so it can end the last group early; take n groups with
// ranges::views::take(n) on the range of groups). In reverse, groups come last first.
//
// Lifetime: as the scan's (the store, snapshot or transaction it was made from outlives the
// range and every group). A group's key() and its entries are valid until the range of groups
// is advanced; a group kept after that is empty (iterating it yields nothing, it never reads
// the next group's entries). Thread-safety: a grouped_scan is a value; the groups and iterators
// of one begin() belong to one thread.
//
// Errors: those of the scan (decode_error naming keyspace and key, backend_error), thrown from
// begin() and from advancing either range.
#pragma once

#include <keyschema/detail/config.hpp>

#include <range/v3/iterator/default_sentinel.hpp>
#include <range/v3/range/access.hpp>
#include <range/v3/range/primitives.hpp>
#include <range/v3/view/facade.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {

template <class Tuple, class Seq>
struct leading_fields;
template <class Tuple, std::size_t... I>
struct leading_fields<Tuple, std::index_sequence<I...>> {
  using type = std::tuple<std::tuple_element_t<I, Tuple>...>;
};
// The tuple of the first N element types of Tuple.
template <class Tuple, std::size_t N>
using leading_fields_t = typename leading_fields<Tuple, std::make_index_sequence<N>>::type;

}  // namespace detail

template <class View, std::size_t N>
class grouped_scan : public ranges::view_facade<grouped_scan<View, N>, ranges::unknown> {
 public:
  using entry_type = typename View::entry_type;
  using keyspace_type = typename entry_type::keyspace_type;
  // The fields that are equal within a group: the first N of the key.
  using group_key_type = detail::leading_fields_t<typename keyspace_type::key_type, N>;

  static_assert(N >= 1 && N <= keyspace_type::field_count,
                "keyschema::group_by: N must be between 1 and the keyspace's field count; give the number of "
                "leading key fields a group shares (group_by<1>() groups by the first field)");

 private:
  using iterator_type = ranges::iterator_t<const View>;
  using sentinel_type = ranges::sentinel_t<const View>;

  struct state {
    iterator_type it;
    sentinel_type end;
    bool at_end = true;
    group_key_type key{};
    std::uint64_t generation = 0;  // which group is current: a group object knows its own

    void advance() {
      ++it;
      at_end = it == end;
    }
    template <std::size_t... I>
    bool same_key(const entry_type& e, std::index_sequence<I...>) const {
      return ((std::get<I>(e.key) == std::get<I>(key)) && ...);
    }
    bool in_group() const { return !at_end && same_key(*it, std::make_index_sequence<N>{}); }
    template <std::size_t... I>
    void take_key(std::index_sequence<I...>) {
      ((std::get<I>(key) = std::get<I>((*it).key)), ...);
    }
    void start_group() {
      take_key(std::make_index_sequence<N>{});
      ++generation;
    }
  };

 public:
  // One group: its key() and, as a single-pass range, its entries.
  class group : public ranges::view_facade<group, ranges::unknown> {
   public:
    group() = default;
    // The first N key fields every entry of the group has. REQUIRES: the range of groups has not
    // been advanced past this group.
    const group_key_type& key() const noexcept { return s_->key; }

   private:
    friend ranges::range_access;
    friend class grouped_scan;
    group(std::shared_ptr<state> s, std::uint64_t generation) : s_(std::move(s)), generation_(generation) {}

    class cursor {
     public:
      using single_pass = std::true_type;
      cursor() = default;
      cursor(state* s, std::uint64_t generation) : s_(s), generation_(generation) {}
      const entry_type& read() const { return *s_->it; }
      void next() { s_->advance(); }
      bool equal(ranges::default_sentinel_t) const {
        return s_ == nullptr || s_->generation != generation_ || !s_->in_group();
      }

     private:
      state* s_ = nullptr;
      std::uint64_t generation_ = 0;
    };
    cursor begin_cursor() const { return cursor(s_.get(), generation_); }

    std::shared_ptr<state> s_;
    std::uint64_t generation_ = 0;
  };

  grouped_scan() = default;
  explicit grouped_scan(View view) : view_(std::move(view)) {}

  // Calls f(key, group) for each group, in scan order; f may read all, part or none of the
  // group's entries. Errors: those of the scan, and whatever f throws (the pass stops).
  template <class F>
  void for_each(F&& f) const {
    for (auto&& g : *this) f(g.key(), g);
  }

  const View& scan() const noexcept { return view_; }

 private:
  friend ranges::range_access;

  class cursor {
   public:
    using single_pass = std::true_type;
    cursor() = default;
    explicit cursor(std::shared_ptr<state> s) : s_(std::move(s)), current_(s_, s_->generation) {}
    group& read() const { return current_; }
    void next() {
      while (s_->in_group()) s_->advance();  // what the consumer left of this group
      if (!s_->at_end) s_->start_group();
      current_ = group(s_, s_->generation);
    }
    bool equal(ranges::default_sentinel_t) const { return !s_ || s_->at_end; }

   private:
    std::shared_ptr<state> s_;
    mutable group current_;
  };

  cursor begin_cursor() const {
    auto s = std::make_shared<state>();
    s->it = ranges::begin(view_);
    s->end = ranges::end(view_);
    s->at_end = s->it == s->end;
    if (!s->at_end) s->start_group();
    return cursor(std::move(s));
  }

  View view_;
};

KEYSCHEMA_END_NAMESPACE
