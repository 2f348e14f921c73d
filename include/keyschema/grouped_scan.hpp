// keyschema/grouped_scan.hpp: one pass over a scan, handed out as groups of equal leading fields.
//
// grouped_scan<View, N> is what scan_view::group_by<N>() (or group_by<"field">(), N being that
// field's position + 1) returns: a single-pass range of groups, each group holding the
// consecutive entries of the scan whose first N key fields are equal and itself a single-pass
// range of the scan's entries. A group's fields are read by name: g.get<"topic">() (or
// g.key().get<"topic">()):
//
//   for (auto&& g : db.scan<snapshots>().group_by<"topic">()) {
//     const std::string& topic = g.get<"topic">();
//     for (const auto& e : g) restore(topic, e.value);
//   }
//   db.scan<snapshots>().group_by<1>().for_each([](const auto& key, auto& entries) { ... });
//
// The group's key, key(), is a group_key: the keyspace's first N key fields, always counted from
// the keyspace's first field, so it includes the fields a prefix scan fixes (scan<KS>("tenant-a")
// .group_by<"topic">() groups by (tenant, topic)). It has no positional access (no std::get,
// no structured bindings): a position counted from the grouped field would name a prefix field
// instead, the same in every group. get<"name">() of a field that is not one of the N does not
// compile (the diagnostic names the field and the group's fields); fields() is the std::tuple of
// all N, in key order, for generic code.
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
// of one begin() belong to one thread; a group_key is a plain value.
//
// Errors: those of the scan (decode_error naming keyspace and key, backend_error), thrown from
// begin() and from advancing either range.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/entry.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/schema.hpp>

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

namespace diagnostic {

// The names of a group's key fields, in key order (as a diagnostic shows them).
template <fixed_string... Names>
struct group_fields {};

template <fixed_string Name, fixed_string Keyspace, class GroupFields>
struct group_has_no_field {
  static_assert(always_false<Name.size()>,
                "keyschema::group_by: the group's key has no field with this name (g.get<Name>(), "
                "g.key().get<Name>(); see Name, Keyspace and GroupFields in this instantiation: a group's key is the "
                "keyspace's first N fields, those a prefix scan fixes included); use one of GroupFields, group by that field (group_by<\"name\">()), or read "
                "the field from the group's entries (e.get<\"name\">())");
  static constexpr bool value = false;
};

}  // namespace diagnostic

namespace detail {
template <class KS, class Seq>
struct group_field_names;
template <class KS, std::size_t... I>
struct group_field_names<KS, std::index_sequence<I...>> {
  using type = diagnostic::group_fields<KS::template field_at<I>::name_string...>;
};
}  // namespace detail

template <class View, std::size_t N>
class grouped_scan;

// The key of a group of grouped_scan: the first N key fields of keyspace KS, read by name (see
// the top of this file).
template <class KS, std::size_t N>
class group_key {
 public:
  using keyspace_type = KS;
  // All N fields, in key order.
  using tuple_type = detail::leading_fields_t<typename KS::key_type, N>;

  group_key() = default;
  explicit group_key(tuple_type fields) : fields_(std::move(fields)) {}

  // The value of the key field called Name. REQUIRES (compile time): Name is one of the
  // keyspace's first N fields (else a diagnostic naming Name and the group's fields).
  template <fixed_string Name>
  const auto& get() const noexcept {
    constexpr std::size_t i = detail::field_index_impl<typename KS::fields>(Name.view(), std::make_index_sequence<N>{});
    if constexpr (i < N) {
      return std::get<i>(fields_);
    } else {
      static_assert(diagnostic::group_has_no_field<
                        Name, KS::name_string, typename detail::group_field_names<KS, std::make_index_sequence<N>>::type>::value,
                    "keyschema::group_by: get<Name>() names no field of the group's key; the error above names it and "
                    "the group's fields");
      return std::get<0>(fields_);
    }
  }
  // All N fields, in key order: those a prefix scan fixes first, then the grouped ones.
  const tuple_type& fields() const noexcept { return fields_; }

  friend bool operator==(const group_key&, const group_key&) = default;

 private:
  template <class, std::size_t>
  friend class grouped_scan;
  tuple_type fields_{};
};

template <class View, std::size_t N>
class grouped_scan : public ranges::view_facade<grouped_scan<View, N>, ranges::unknown> {
 public:
  using entry_type = typename View::entry_type;
  using keyspace_type = typename entry_type::keyspace_type;
  // The fields that are equal within a group, the first N of the key, read by name.
  using group_key_type = group_key<keyspace_type, N>;

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
      return ((std::get<I>(e.key) == std::get<I>(key.fields_)) && ...);
    }
    bool in_group() const { return !at_end && same_key(*it, std::make_index_sequence<N>{}); }
    template <std::size_t... I>
    void take_key(std::index_sequence<I...>) {
      ((std::get<I>(key.fields_) = std::get<I>((*it).key)), ...);
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
    // The first N key fields every entry of the group has (a group_key: by name, prefix fields
    // included). REQUIRES: the range of groups has not been advanced past this group.
    const group_key_type& key() const noexcept { return s_->key; }
    // The value of the group's key field called Name: key().get<Name>(). REQUIRES (compile
    // time): Name is one of the group's key fields; as key().
    template <fixed_string Name>
    const auto& get() const noexcept {
      return s_->key.template get<Name>();
    }

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
