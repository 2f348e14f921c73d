// keyschema/scan.hpp: typed, ordered scans of one keyspace as a range-v3 view.
//
// A scan_view selects the entries of keyspace KS whose first K fields equal a given prefix, and
// optionally bounds the next field; it walks them forward or in reverse, up to a limit, and
// yields keyschema::entry<KS> (decoded key fields and value), or with .value_views()
// entry_view<KS> (the value as a view of the stored bytes) and with .keys_only() key_entry<KS>.
// It is a single-pass (input) range that composes with range-v3 views that accept one (adaptors
// that need a forward range, such as views::chunk_by, are refused with a static_assert; group by
// leading key fields with .group_by<N>(), grouped_scan.hpp):
//
//   for (const auto& e : db.scan<message_metadata>("queue-7").from(100).limit(10)) ...
//   auto ids = db.scan<message_metadata>("queue-7") | ranges::views::transform(
//                  [](const auto& e) { return e.template get<"message_id">(); });
//
// The builder members (from, after, to, through, reverse, limit) return a modified copy; bounds
// apply to the field that follows the prefix and are in key order (for a desc<T> field that is
// descending order of T). Nothing touches the database until begin() is called; each begin()
// opens a fresh cursor, so iterating a view twice scans twice, each pass reading the state at its
// begin(): a view may be kept and iterated again (a queue's head lookup encodes the queue's
// prefix once). Each iterator decodes into one
// entry it reuses: the prefix fields once, the later fields and the value per step (strings and
// bytes assigned in place). limit(n) stops without moving the engine past the n-th entry.
//
// A bound or prefix value converts to its field's type only when that cannot change its meaning:
// lossless std::chrono conversions (a sys_seconds bound on a sys_time<milliseconds> field) and
// integers of any width are exact; a lossy one (system_clock::now() on a millisecond field) is a
// compile error naming the keyspace and the field (detail/schema/key_argument.hpp has the rules).
//
// Keys in the scanned range that belong to another keyspace (a literal differs, or an element
// starts with a type code the field's type cannot have: the schema check separates keyspaces by
// exactly this) are skipped. Any other key must decode exactly as KS's: a malformed element, an
// integer that does not fit its field (for every width and signedness), bytes after the last
// element, a key that ends before the last segment (after a field or a literal, or inside a
// literal), or a value that does not decode throw decode_error naming the keyspace and the key.
//
// Lifetime: a view refers to the object it was made from (store, snapshot or transaction), which
// must outlive it and every iterator. Iterators are counted among a store's live objects (a store
// destroyed before them aborts, detail/store/live_handles.hpp); a view, which holds no engine
// handle, is not. An iterator's entry (and an entry_view's value) is valid
// until the iterator is incremented. Thread-safety: a view is a value; an iterator belongs to one thread.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/inline_bytes.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/detail/store/store_access.hpp>
#include <keyschema/entry.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/grouped_scan.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/value_codec.hpp>

#include <range/v3/view/facade.hpp>
#include <range/v3/view/view.hpp>

#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {

// The bytes that follow the prefix in the bounds of the entries of KS whose first K fields the
// prefix fixes: [prefix + lower, prefix + upper). lower is the first type code the next field can
// start with, upper the byte after its last (0xff 0xff when that is 0xff); with every field fixed
// the range is exactly the key: lower is empty, upper 0x00.
struct bound_tails {
  char lower_bytes[2]{};
  std::size_t lower_size = 0;
  char upper_bytes[2]{};
  std::size_t upper_size = 0;

  constexpr std::string_view lower() const noexcept { return std::string_view(lower_bytes, lower_size); }
  constexpr std::string_view upper() const noexcept { return std::string_view(upper_bytes, upper_size); }
};

template <class KS, std::size_t K>
constexpr bound_tails make_bound_tails() noexcept {
  bound_tails t;
  if constexpr (K == KS::field_count) {
    t.upper_size = 1;  // upper_bytes[0] is 0x00
  } else {
    using next = typename KS::template field_at<K>;
    constexpr type_code_set codes = codec_traits<typename next::type>::type_codes();
    t.lower_bytes[0] = static_cast<char>(codes.min());
    t.lower_size = 1;
    if constexpr (codes.max() == 0xff) {
      t.upper_bytes[0] = t.upper_bytes[1] = '\xff';
      t.upper_size = 2;
    } else {
      t.upper_bytes[0] = static_cast<char>(codes.max() + 1);
      t.upper_size = 1;
    }
  }
  return t;
}

template <class KS, std::size_t K>
inline constexpr bound_tails prefix_tails = make_bound_tails<KS, K>();

// The bounds of the entries of KS whose key starts with prefix (covering K fields), as strings.
template <class KS, std::size_t K>
void prefix_bounds(const std::string& prefix, std::string& lower, std::string& upper) {
  constexpr const bound_tails& t = prefix_tails<KS, K>;
  lower.reserve(prefix.size() + t.lower_size);  // one allocation each
  upper.reserve(prefix.size() + t.upper_size);
  lower.assign(prefix).append(t.lower());
  upper.assign(prefix).append(t.upper());
}

}  // namespace detail

namespace detail {

// Selects scan_view's constructor from the prefix's values.
struct prefix_values_tag {};

// The encoded bounds of a scan (lower then upper), held in the view itself when short (the usual
// prefix and its bounds), else on the heap (detail::inline_bytes): opening a scan allocates
// nothing for them.
class scan_bounds {
 public:
  // Valid until this object is modified, moved or destroyed.
  std::string_view view() const noexcept { return bytes_.view(); }
  std::size_t size() const noexcept { return bytes_.size(); }

  // Replaces the contents with prefix + lower_tail + prefix + upper_tail, in one pass (the
  // view's bounds when a scan is opened). REQUIRES: none of the three views this object's bytes.
  // Errors: std::bad_alloc (the contents are then unchanged).
  KEYSCHEMA_ALWAYS_INLINE void set_bounds(std::string_view prefix, std::string_view lower_tail, std::string_view upper_tail) {
    char* p = bytes_.overwrite(2 * prefix.size() + lower_tail.size() + upper_tail.size());
    p = put(p, prefix);
    p = put(p, lower_tail);
    p = put(p, prefix);
    put(p, upper_tail);
  }
  // As set_bounds, the prefix written in place by write.template operator()<Checked>(char* at),
  // twice (once before each tail), so that no byte is read back right after it was written.
  // write<true> writes the prefix at `at`, touching at most bound bytes there, and returns its
  // size, or a value above bound when it cannot (write_bounds then returns that value and the
  // contents are unspecified until the next set_bounds); write<false> writes the same prefix
  // again without checking it. Returns the prefix's size. Errors: std::bad_alloc (contents
  // unchanged).
  template <class Write>
  KEYSCHEMA_ALWAYS_INLINE std::size_t write_bounds(std::size_t bound, Write write, std::string_view lower_tail,
                                                   std::string_view upper_tail) {
    char* const p = bytes_.overwrite(2 * bound + lower_tail.size() + upper_tail.size());
    const std::size_t n = write.template operator()<true>(p);
    if (n > bound) [[unlikely]] return n;
    char* const q = put(p + n, lower_tail);
    write.template operator()<false>(q);  // the same n bytes; it may touch bound bytes, which the room after q holds
    put(q + n, upper_tail);
    bytes_.truncate(2 * n + lower_tail.size() + upper_tail.size());
    return n;
  }
  // Replaces the count bytes at pos (count clipped to the end) with s.
  void replace(std::size_t pos, std::size_t count, std::string_view s) {
    const std::string_view v = view();
    std::string t(v.substr(0, pos));
    t.append(s);
    if (count < v.size() - pos) t.append(v.substr(pos + count));
    bytes_.assign(t);
  }

 private:
  static char* put(char* p, std::string_view s) noexcept {
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    return p + s.size();
  }

  inline_bytes<120> bytes_;
};

}  // namespace detail

// What a scan yields per entry: the decoded entry (owning), the key and a view of the stored
// value bytes (value_views()), or the key alone (keys_only()).
enum class scan_mode { owning, views, keys };

namespace detail {
template <class KS, scan_mode M>
struct scan_element {
  using type = entry<KS>;
};
template <class KS>
struct scan_element<KS, scan_mode::views> {
  using type = entry_view<KS>;
};
template <class KS>
struct scan_element<KS, scan_mode::keys> {
  using type = key_entry<KS>;
};
}  // namespace detail

// Source: the store, snapshot or transaction scanned. It provides, to detail::store_access,
//   cursor raw_cursor(const key_range&) const;   // a backend_cursor over a consistent state
template <class KS, class Source, std::size_t K, scan_mode Mode = scan_mode::owning>
class scan_view : public ranges::view_facade<scan_view<KS, Source, K, Mode>, ranges::unknown> {
 public:
  using entry_type = typename detail::scan_element<KS, Mode>::type;

  scan_view() = default;

  // REQUIRES: source outlives the view. prefix: the values of the first K fields (store.hpp's
  // scan() has checked them), encoded here into the view's bounds.
  template <class... P>
  scan_view(const Source* source, detail::prefix_values_tag, const P&... prefix) : source_(source) {
    static_assert(sizeof...(P) == K);
    // b_ = lower + upper: the prefix and the bytes after it (detail::prefix_tails).
    using codec = detail::key_codec<KS>;
    constexpr const detail::bound_tails& t = detail::prefix_tails<KS, K>;
    std::size_t n = codec::direct_prefix_bound(prefix...);
    if (n != codec::no_direct)  // literals, integers and plain text: written in place
      n = b_.write_bounds(
          n, [&]<bool Checked>(char* at) KEYSCHEMA_ALWAYS_INLINE_LAMBDA { return codec::template write_prefix_at<Checked>(at, prefix...); },
          t.lower(), t.upper());
    if (n == codec::no_direct) n = set_bounds_general(prefix...);
    prefix_size_ = n;
    lower_size_ = n + t.lower_size;
  }

  // The builders return a modified copy; called on a temporary (db.scan<KS>(...).from(a).limit(n))
  // they move it instead of copying.
  // Entries whose next field is >= v (in key order).
  template <class V>
  scan_view from(const V& v) const& {
    return scan_view(*this).from(v);
  }
  template <class V>
  scan_view from(const V& v) && {
    static_assert(bound_accepted<V>());
    set_lower(bound(v, false));
    return std::move(*this);
  }
  // Entries whose next field is > v.
  template <class V>
  scan_view after(const V& v) const& {
    return scan_view(*this).after(v);
  }
  template <class V>
  scan_view after(const V& v) && {
    static_assert(bound_accepted<V>());
    set_lower(bound(v, true));
    return std::move(*this);
  }
  // Entries whose next field is < v.
  template <class V>
  scan_view to(const V& v) const& {
    return scan_view(*this).to(v);
  }
  template <class V>
  scan_view to(const V& v) && {
    static_assert(bound_accepted<V>());
    set_upper(bound(v, false));
    return std::move(*this);
  }
  // Entries whose next field is <= v.
  template <class V>
  scan_view through(const V& v) const& {
    return scan_view(*this).through(v);
  }
  template <class V>
  scan_view through(const V& v) && {
    static_assert(bound_accepted<V>());
    set_upper(bound(v, true));
    return std::move(*this);
  }
  // The same entries, last first.
  scan_view reverse() const& { return scan_view(*this).reverse(); }
  scan_view reverse() && {
    reverse_ = !reverse_;
    return std::move(*this);
  }
  // At most n entries. The engine is not moved past the n-th entry (nor opened when n is 0).
  scan_view limit(std::size_t n) const& { return scan_view(*this).limit(n); }
  scan_view limit(std::size_t n) && {
    limit_ = n;
    return std::move(*this);
  }
  // The same entries as entry_view<KS>: the key, and the stored value as a std::string_view into
  // the engine's buffer, valid until the iterator moves. No value is decoded or copied.
  scan_view<KS, Source, K, scan_mode::views> value_views() const& { return scan_view(*this).value_views(); }
  scan_view<KS, Source, K, scan_mode::views> value_views() && { return std::move(*this).template rebind<scan_mode::views>(); }
  // The same entries as key_entry<KS>: the key alone. The value is neither read nor decoded.
  scan_view<KS, Source, K, scan_mode::keys> keys_only() const& { return scan_view(*this).keys_only(); }
  scan_view<KS, Source, K, scan_mode::keys> keys_only() && { return std::move(*this).template rebind<scan_mode::keys>(); }

  // The same pass, handed out as groups of consecutive entries whose first N key fields are
  // equal (grouped_scan.hpp), or grouped through the field called Name (N: its position + 1).
  template <std::size_t N>
  grouped_scan<scan_view, N> group_by() const& {
    return grouped_scan<scan_view, N>(*this);
  }
  template <std::size_t N>
  grouped_scan<scan_view, N> group_by() && {
    return grouped_scan<scan_view, N>(std::move(*this));
  }
  template <fixed_string Name>
  auto group_by() const& {
    return scan_view(*this).template group_by<Name>();
  }
  template <fixed_string Name>
  auto group_by() && {
    constexpr std::size_t i = detail::field_index<KS>(Name.view());
    static_assert(i < KS::field_count,
                  "keyschema::group_by: the keyspace has no field with this name; use a name given in a "
                  "keyschema::field<\"name\", T> of the keyspace");
    return std::move(*this).template group_by<(i < KS::field_count ? i + 1 : 1)>();
  }

  // The encoded bounds: lower <= key < upper. For tools and range erases.
  key_range range() const noexcept {
    const std::string_view b = b_.view();  // lower_size_ <= b.size(): no checked substr
    return key_range{std::string_view(b.data(), lower_size_), std::string_view(b.data() + lower_size_, b.size() - lower_size_),
                     reverse_};
  }
  std::size_t max_count() const noexcept { return limit_; }
  const Source* source() const noexcept { return source_; }

  // A scan is an input range: one engine cursor, read once (docs/store.md says why
  // and what to use for grouping). An adaptor that needs a forward range (views::chunk_by, views::cycle,
  // ...) would fail inside range-v3 with a long diagnostic; this overload says why instead.
  template <class ViewFn>
    requires(!std::is_invocable_v<ViewFn, scan_view>)
  friend void operator|(scan_view, ranges::views::view_closure<ViewFn>) {
    static_assert(sizeof(ViewFn) == 0,
                  "keyschema::scan: this range adaptor needs a forward range (a multi-pass one, as "
                  "views::chunk_by), and a scan is a single-pass input range over one engine cursor; "
                  "group by leading key fields with .group_by<N>() (grouped_scan.hpp), or "
                  "collect the scan first (ranges::to<std::vector>()) and adapt the vector");
  }

 private:
  friend ranges::range_access;
  template <class, class, std::size_t, scan_mode>
  friend class scan_view;

  // The constructor's general path: the prefix encoded into a string, then copied twice.
  template <class... P>
  [[gnu::noinline]] std::size_t set_bounds_general(const P&... prefix) {
    constexpr const detail::bound_tails& t = detail::prefix_tails<KS, K>;
    thread_local std::string spill;  // keeps its capacity
    spill.clear();
    detail::key_codec<KS>::encode_prefix(spill, prefix...);
    b_.set_bounds(spill, t.lower(), t.upper());
    return spill.size();
  }

  template <scan_mode M>
  scan_view<KS, Source, K, M> rebind() && {
    scan_view<KS, Source, K, M> s;
    s.source_ = source_;
    s.b_ = std::move(b_);
    s.prefix_size_ = prefix_size_;
    s.lower_size_ = lower_size_;
    s.reverse_ = reverse_;
    s.limit_ = limit_;
    return s;
  }

  // Whether V may bound the next field (a compile error naming the field otherwise; see
  // detail/schema/key_argument.hpp). With no next field, bound() reports that instead.
  template <class V>
  static constexpr bool bound_accepted() {
    if constexpr (K < KS::field_count)
      return detail::check_field_argument<KS, K, V>();
    else
      return true;
  }

  template <class V>
  std::string bound(const V& v, bool past) const {
    static_assert(K < KS::field_count,
                  "keyschema::scan_view: every field is already fixed by the prefix, so there is no next "
                  "field to bound; give fewer prefix values");
    constexpr std::size_t field = K < KS::field_count ? K : 0;
    std::string b(b_.view().substr(0, prefix_size_));
    detail::encode_argument<typename KS::template field_at<field>::type, V>(b, v);
    if (past) b.push_back('\xff');
    return b;
  }

  using raw_cursor_type = detail::raw_cursor_t<Source>;
  // The segments the prefix covers: every key in range() starts with their encoding (the first
  // prefix_size_ bytes of b_),
  // since both bounds do and they differ only after it.
  static constexpr std::size_t prefix_segments = KS::prefix_segments[K];

  struct state {
    std::optional<raw_cursor_type> cursor;  // empty when the limit is 0
    std::size_t prefix_size = 0;  // bytes of the prefix: every key in range starts with them
    // Entries that may still be yielded, the current one included; 0 once the scan is done (the
    // limit reached, or nothing more in range). One counter serves both tests of every step.
    std::size_t left = 0;
    entry_type current{};
    bool prefix_decoded = false;

    // Moves to the first entry of KS at or after the cursor's position and decodes what the
    // prefix did not fix into current. The usual step (the cursor's entry is KS's) is inlined
    // into the caller's loop; keys of other keyspaces and the end take settle_slow. REQUIRES:
    // the prefix fields are filled (prefix_decoded: settle_slow found the scan's first entry).
    KEYSCHEMA_ALWAYS_INLINE void settle() {
      raw_cursor_type& c = *cursor;
      if (c.valid()) [[likely]] {
        const std::string_view k = c.key();
        if (detail::key_codec<KS>::template decode_after<prefix_segments>(k, prefix_size, current.key)) [[likely]] {
          take_value(k);
          return;
        }
      }
      settle_slow();  // decodes the cursor's key again before stepping past it: one copy of the cursor's step here
    }

    // settle() for any position, the first one too: fills the prefix fields from the first entry
    // of KS it finds (they never change).
    [[gnu::noinline]] void settle_slow() {
      raw_cursor_type& c = *cursor;
      while (c.valid()) {
        const std::string_view k = c.key();
        if (detail::key_codec<KS>::template decode_after<prefix_segments>(k, prefix_size, current.key)) {
          if (!prefix_decoded) {  // the fields the prefix fixed, from the first key (they never change)
            if constexpr (prefix_segments > 0)
              detail::key_codec<KS>::template decode_prefix<prefix_segments>(k.substr(0, prefix_size), current.key);
            prefix_decoded = true;
          }
          take_value(k);
          return;
        }
        c.next();
      }
      left = 0;
    }

    KEYSCHEMA_ALWAYS_INLINE void take_value([[maybe_unused]] std::string_view k) {
      if constexpr (Mode == scan_mode::owning)
        detail::decode_value_into<KS>(k, cursor->value(), current.value);
      else if constexpr (Mode == scan_mode::views)
        current.value = cursor->value();
    }
  };

  class cursor {
   public:
    using single_pass = std::true_type;
    cursor() = default;
    explicit cursor(std::shared_ptr<state> s) : s_(std::move(s)) {}

    KEYSCHEMA_ALWAYS_INLINE const entry_type& read() const { return s_->current; }
    KEYSCHEMA_ALWAYS_INLINE void next() {
      if (--s_->left == 0) return;  // the limit is reached: the engine is not moved again
      s_->cursor->next();
      s_->settle();
    }
    bool equal(ranges::default_sentinel_t) const { return !s_ || s_->left == 0; }

   private:
    std::shared_ptr<state> s_;
  };

  // An empty scan (limit 0, or nothing in range) allocates no state: its cursor is at the end.
  cursor begin_cursor() const {
    if (limit_ == 0) return cursor();
    raw_cursor_type c = detail::store_access::raw_cursor(*source_, range());
    if (!c.valid()) return cursor();
    auto s = std::make_shared<state>();
    s->left = limit_;  // not 0 here
    s->prefix_size = prefix_size_;
    s->cursor.emplace(std::move(c));
    s->settle_slow();  // the first entry: fills the prefix fields
    return cursor(std::move(s));
  }

  void set_lower(const std::string& lower) {
    b_.replace(0, lower_size_, lower);
    lower_size_ = lower.size();
  }
  void set_upper(const std::string& upper) { b_.replace(lower_size_, std::string::npos, upper); }

  const Source* source_ = nullptr;
  // The encoded bounds, lower then upper, in one buffer; both start with the encoded prefix
  // (the first K fields and the literals after them), prefix_size_ bytes.
  detail::scan_bounds b_;
  std::size_t prefix_size_ = 0;
  std::size_t lower_size_ = 0;
  bool reverse_ = false;
  std::size_t limit_ = std::numeric_limits<std::size_t>::max();
};

KEYSCHEMA_END_NAMESPACE
