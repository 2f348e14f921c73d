// keyschema/schema.hpp: compile-time key-schema descriptors.
//
// A keyspace describes one family of keys as the sequence of its segments, constant words and
// typed fields interleaved, exactly like the dotted strings brokers wrote by hand:
//
//   namespace ks = keyschema;
//   using message_metadata = ks::keyspace<"message_metadata", ks::bytes,        // name, value type
//       ks::lit<"DESTINATION">, ks::field<"destination", std::string>,          // key segments
//       ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
//   using broker = ks::schema<message_metadata, message_content, message_count>;
//
// The stored key is the FoundationDB tuple of all segments, literals encoded as strings:
// ("DESTINATION", "queue-7", "MESSAGE_METADATA", 42). The keyspace name is not stored; it names
// the keyspace in diagnostics, errors and the schema fingerprint. The typed key (key_type) is the
// std::tuple of the field types only: std::tuple<std::string, std::uint64_t> above.
//
// keyschema::valid_schema<S> is true when S passes every check below, and false (not a hard
// error) otherwise. Opening a store over an invalid schema fails with a static_assert, preceded
// by one naming the keyspaces and the segment position involved:
//   - keyspace names are unique, and every keyspace has at least one segment;
//   - field names are unique within a keyspace;
//   - every field type has an order-preserving key codec, the value type a value codec;
//   - every codec in a field's type that writes its own encoding declares type_codes, and no
//     type_codes include 0xFF (codecs defined through repr inherit their repr's);
//   - prefix-disjointness: no key of one keyspace can equal, or be a prefix of, a key of another.
//     Decided segment by segment: two literals separate the keyspaces when their encodings differ
//     at some byte; when one literal's encoding is a byte prefix of the other's (lit<"a"> and
//     lit<"a\0">), the comparison goes on byte-wise into the following segments, and the shorter
//     side separates only if it has more segments (they face the longer literal's 0xFF escape);
//     a literal facing a field separates them only when the field's type can never encode to a
//     string element (a bytes or integer field can't, a std::string field can); two fields
//     separate them when their encodings start with disjoint type codes, or, for two nested
//     tuples or two desc<T>, when the bytes after that common code are disjoint
//     (desc<std::string> vs desc<std::uint64_t>). Running out of segments while everything so far
//     could be equal is a collision.
//
// Thread-safety: everything here is types and constexpr data.
#pragma once

#include <keyschema/codec.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/value_codec.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {
struct literal_tag;
struct field_tag;
struct keyspace_tag;
struct schema_tag;
}  // namespace detail

// A constant word of the key, encoded as a tuple string element.
template <fixed_string Text>
struct lit {
  using keyschema_kind = detail::literal_tag;
  static constexpr std::string_view text = Text.view();

 private:
  static constexpr std::size_t encoded_size_ = [] {
    std::size_t n = 2;
    for (char c : Text.view()) n += c == '\0' ? 2 : 1;
    return n;
  }();
  static constexpr std::array<char, encoded_size_> encoded_array_ = [] {
    std::array<char, encoded_size_> a{};
    std::size_t i = 0;
    a[i++] = '\x02';
    for (char c : Text.view()) {
      a[i++] = c;
      if (c == '\0') a[i++] = '\xff';
    }
    a[i] = '\0';
    return a;
  }();

 public:
  // The exact bytes of this literal in a key: 0x02, the text (NULs escaped as 00 FF), 0x00.
  static constexpr std::string_view encoded{encoded_array_.data(), encoded_array_.size()};
};

// A typed element of the key. T needs a key codec (keyschema::codec<T>).
template <fixed_string Name, class T>
struct field {
  using keyschema_kind = detail::field_tag;
  using type = T;
  static constexpr std::string_view name = Name.view();
  static constexpr auto name_string = Name;
};

namespace detail {

// Segment kinds are recognized by tag, which also keeps the checks cheap to instantiate.
struct literal_tag {};
struct field_tag {};
struct keyspace_tag {};
struct schema_tag {};

template <class S>
struct is_lit : std::bool_constant<requires { requires std::is_same_v<typename S::keyschema_kind, literal_tag>; }> {};
template <class S>
struct is_field : std::bool_constant<requires { requires std::is_same_v<typename S::keyschema_kind, field_tag>; }> {};

template <class... S>
using fields_of = decltype(std::tuple_cat(std::declval<std::conditional_t<is_field<S>::value, std::tuple<S>, std::tuple<>>>()...));

template <class Fields>
struct key_type_of;
template <class... F>
struct key_type_of<std::tuple<F...>> {
  using type = std::tuple<typename F::type...>;
};

// For each segment, the number of fields before it.
template <class... S>
constexpr std::array<std::size_t, sizeof...(S) + 1> fields_before() {
  std::array<std::size_t, sizeof...(S) + 1> a{};
  constexpr bool is_f[] = {is_field<S>::value..., false};
  for (std::size_t i = 0; i < sizeof...(S); ++i) a[i + 1] = a[i] + (is_f[i] ? 1 : 0);
  return a;
}

// prefix_segments[k]: how many segments a prefix of k fields covers: every segment before
// field k, which includes the literals that follow field k-1. For k == field count: all.
template <class... S>
constexpr auto prefix_segments() {
  constexpr bool is_f[] = {is_field<S>::value..., false};
  constexpr std::size_t nf = (std::size_t{0} + ... + (is_field<S>::value ? 1 : 0));
  std::array<std::size_t, nf + 1> a{};
  std::size_t k = 0;
  for (std::size_t i = 0; i < sizeof...(S); ++i) {
    if (is_f[i]) a[k++] = i;
  }
  a[nf] = sizeof...(S);
  return a;
}

// The value type of a keyspace declared with Value: Value itself, or what a value marker
// (count_of, counters.hpp) declares as keyschema_value_type.
template <class Value>
struct stored_value {
  using type = Value;
};
template <class Value>
  requires requires { typename Value::keyschema_value_type; }
struct stored_value<Value> {
  using type = typename Value::keyschema_value_type;
};

}  // namespace detail

// One family of keys: a name, the value type, and the key's segments (lit and field).
// Value is the value type, or a value marker such as count_of<...> (counters.hpp): value_type is
// then what the marker stores, and value_marker the marker.
template <fixed_string Name, class Value, class... Segments>
struct keyspace {
  using keyschema_kind = detail::keyspace_tag;
  static_assert(((detail::is_lit<Segments>::value || detail::is_field<Segments>::value) && ...),
                "keyschema::keyspace: every segment must be keyschema::lit<\"WORD\"> or "
                "keyschema::field<\"name\", T>; wrap the offending segment");

  static constexpr std::string_view name = Name.view();
  static constexpr auto name_string = Name;
  using value_type = typename detail::stored_value<Value>::type;
  using value_marker = Value;
  using segments = std::tuple<Segments...>;
  using fields = detail::fields_of<Segments...>;
  // The typed key: the field types in order.
  using key_type = typename detail::key_type_of<fields>::type;

  static constexpr std::size_t segment_count = sizeof...(Segments);
  static constexpr std::size_t field_count = std::tuple_size_v<fields>;
  template <std::size_t I>
  using field_at = std::tuple_element_t<I, fields>;

  // fields_before[s]: index of the field at segment s (when it is one); prefix_segments[k]: the
  // number of segments a prefix of k fields covers.
  static constexpr auto fields_before = detail::fields_before<Segments...>();
  static constexpr auto prefix_segments = detail::prefix_segments<Segments...>();
};

// A keyspace placed in a named part of the database (its placement) instead of the default one:
//   using message_content = ks::placed<"content", ks::keyspace<"message_content", ks::bytes, ...>>;
// It is the keyspace KS in every respect (key, value, name), plus `placement`. A backend that
// models backend_with_placements (backend.hpp) keeps each placement apart in the engine's own
// means (an LMDB named database); one that does not keeps every key in one key space. The
// placement is part of the schema layout (fingerprint.hpp): placing a keyspace elsewhere is a
// schema change, done with ks::migrate. Routing is by key prefix: a placed keyspace must start
// with a literal, and no key of a keyspace placed elsewhere may start with its leading literals
// (checked with the schema). Name: 1 to 64 characters of [a-z0-9_-].
template <fixed_string Placement, class KS>
struct placed : KS {
  static_assert(
      [] {
        const std::string_view n = Placement.view();
        if (n.empty() || n.size() > 64) return false;
        for (char c : n)
          if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
        return true;
      }(),
      "keyschema::placed: a placement name is 1 to 64 characters of [a-z0-9_-]; rename the placement");
  static_assert(requires { requires std::is_same_v<typename KS::keyschema_kind, detail::keyspace_tag>; },
                "keyschema::placed: the second argument must be a keyschema::keyspace<...>");
  static_assert(!requires { KS::placement; }, "keyschema::placed: this keyspace is placed already; place it once");
  static constexpr std::string_view placement = Placement.view();
  using keyschema_unplaced = KS;  // the keyspace in the default placement
};

// A keyspace whose keys may be longer than the engine accepts (LMDB: 511 bytes):
//   using queue_entry = ks::long_keys<ks::keyspace<"queue_entry", ks::bytes, ks::lit<"QUEUE">, ...>>;
// It is the keyspace KS in every respect (key, value, name, placement), plus `keyschema_long_keys`.
// A backend that models backend_with_long_keys (backend.hpp) stores such a keyspace's keys beyond
// its engine's key limit in a form of its own (LMDB: the leading bytes, a marker and a
// tie-breaker as the engine's key, the full key in front of the value; docs/backends/lmdb.md),
// keeping key order, lookups and uniqueness exact; backends whose engine takes long keys natively
// (LevelDB, RocksDB, SQLite, memory_backend) need nothing; on etcd, whose key limit is its
// request size, a longer key stays a limit_error. A keyspace without the marker keeps the
// engine's limit: a longer key is a limit_error naming the keyspace, its size and the limit.
// The marker is part of the schema layout (fingerprint.hpp): turning it on or off is a schema
// change, done with ks::migrate (an implicit step when nothing else changes). Routing is by key
// prefix, as for placed: the keyspace must start with a literal, and no key of a keyspace
// without the marker may start with its leading literals (checked with the schema).
template <class KS>
struct long_keys : KS {
  static_assert(requires { requires std::is_same_v<typename KS::keyschema_kind, detail::keyspace_tag>; },
                "keyschema::long_keys: the argument must be a keyschema::keyspace<...>");
  static_assert(!requires { KS::keyschema_long_keys; },
                "keyschema::long_keys: this keyspace takes long keys already; mark it once");
  static constexpr bool keyschema_long_keys = true;
  using keyschema_short_keys = KS;  // the keyspace without the marker
};

namespace detail {
// Whether keyspace KS takes keys beyond the engine's limit (keyschema::long_keys).
template <class KS>
constexpr bool has_long_keys() {
  return requires { requires KS::keyschema_long_keys; };
}
// The placement of keyspace KS: its `placement`, or "" (the default placement).
template <class KS>
constexpr std::string_view placement_of() {
  if constexpr (requires { KS::placement; })
    return KS::placement;
  else
    return {};
}
// The number of literals KS starts with, and their encoding: the key prefix a backend routes
// KS's keys by (backend_with_placements).
template <class KS>
constexpr std::size_t leading_literals() {
  return [&]<class... S>(std::tuple<S...>*) {
    constexpr bool lits[] = {is_lit<S>::value..., false};
    std::size_t n = 0;
    while (lits[n]) ++n;
    return n;
  }(static_cast<typename KS::segments*>(nullptr));
}
template <class S>
constexpr std::string_view lit_encoded() {
  if constexpr (is_lit<S>::value)
    return S::encoded;
  else
    return {};
}
template <class KS>
std::string placement_prefix() {
  std::string out;
  [&]<class... S>(std::tuple<S...>*) {
    bool more = true;
    ((more = more && is_lit<S>::value, more ? static_cast<void>(out.append(lit_encoded<S>())) : void()), ...);
  }(static_cast<typename KS::segments*>(nullptr));
  return out;
}
}  // namespace detail

// A set of keyspaces sharing one database. Check it with keyschema::valid_schema.
template <class... Keyspaces>
struct schema {
  using keyschema_kind = detail::schema_tag;
  using keyspaces = std::tuple<Keyspaces...>;
  static constexpr std::size_t size = sizeof...(Keyspaces);
  template <class KS>
  static constexpr bool contains = (std::is_same_v<KS, Keyspaces> || ...);
};

namespace detail {

template <class T>
struct is_keyspace : std::bool_constant<requires { requires std::is_same_v<typename T::keyschema_kind, keyspace_tag>; }> {};
template <class T>
struct is_schema : std::bool_constant<requires { requires std::is_same_v<typename T::keyschema_kind, schema_tag>; }> {};

// The loops over a schema's keyspaces: f and pred are called as f(std::type_identity<K>{}), one
// keyspace K at a time in schema order (write them as [&]<class K>(std::type_identity<K>) {...}).
// for_each_keyspace calls f for each; any_keyspace stops at the first K for which pred is true.
template <class Schema, class F>
constexpr void for_each_keyspace(F&& f) {
  [&]<class... K>(std::tuple<K...>*) {
    (static_cast<void>(f(std::type_identity<K>{})), ...);
  }(static_cast<typename Schema::keyspaces*>(nullptr));
}
template <class Schema, class Pred>
constexpr bool any_keyspace(Pred&& pred) {
  return [&]<class... K>(std::tuple<K...>*) {
    return (static_cast<bool>(pred(std::type_identity<K>{})) || ...);
  }(static_cast<typename Schema::keyspaces*>(nullptr));
}

// What a field's codec declares about its first bytes. A codec that writes its own encoding
// (full codec) must declare type_codes: scans tell a neighbour's key from a damaged one by it, and
// the schema check separates keyspaces by it. No element may start with 0xff: a literal's
// encoding is a prefix of a longer literal's only through the escape 00 ff ("a" and "a\0"), and
// the schema check relies on no element starting with that byte.
enum class codes_issue { none, undeclared, includes_ff };

template <codes_issue I, class Codec>
struct codes_result {
  static constexpr codes_issue issue = I;
  using type = Codec;  // the codec type at fault (void when none)
};

template <class... R>
struct first_codes_issue {
  using type = codes_result<codes_issue::none, void>;
};
template <class R, class... Rs>
struct first_codes_issue<R, Rs...> {
  using type = std::conditional_t<R::issue != codes_issue::none, R, typename first_codes_issue<Rs...>::type>;
};

template <class T>
constexpr codes_issue own_codes_issue() {
  if constexpr (codec_has_type_codes<T>)
    return type_code_set(codec<T>::type_codes).contains(0xff) ? codes_issue::includes_ff : codes_issue::none;
  else if constexpr (full_encoder<T>)
    return codes_issue::undeclared;
  else
    return codes_issue::none;  // mapped: the repr decides
}

template <class T>
struct codes_check;
template <class T>
using codes_check_t = typename codes_check<T>::type;

template <class... U>
constexpr auto tuple_codes_check(std::tuple<U...>*) {
  return typename first_codes_issue<codes_check_t<U>...>::type{};
}

template <class T>
constexpr auto inner_codes_check() {
  if constexpr (is_optional<T>::value)
    return codes_check_t<typename T::value_type>{};
  else if constexpr (is_desc<T>::value)
    return codes_check_t<decltype(T::value)>{};
  else if constexpr (is_std_tuple<T>::value)
    return tuple_codes_check(static_cast<T*>(nullptr));
  else if constexpr (mapped_codec<T>)
    return codes_check_t<typename codec<T>::repr>{};
  else
    return codes_result<codes_issue::none, void>{};
}

// The first codec in T (the elements of composites first, then T itself) whose type_codes are
// missing or include 0xff. REQUIRES: key_encodable<T>.
template <class T>
struct codes_check {
  using inner = decltype(inner_codes_check<T>());
  using type = std::conditional_t<inner::issue != codes_issue::none, inner, codes_result<own_codes_issue<T>(), T>>;
};

// The set of second bytes of T's elements when all of them start with one composite code
// (0x05 nested tuple, 0x40 desc); all() when unknown. Two such fields with the same first code
// can still never meet when these sets are disjoint: desc<std::string> and desc<std::uint64_t>,
// std::tuple<std::int64_t> and std::tuple<std::string>.
template <class T>
constexpr type_code_set second_codes() {
  if constexpr (mapped_codec<T> && !codec_has_type_codes<T>) {
    return second_codes<typename codec<T>::repr>();
  } else if constexpr (is_std_tuple<T>::value) {
    if constexpr (std::tuple_size_v<T> == 0)
      return type_code_set::of(code::null);  // the terminator
    else
      return codec_traits<std::tuple_element_t<0, T>>::type_codes();  // a nested null is 00 ff: still 00
  } else if constexpr (is_desc<T>::value) {
    return codec_traits<decltype(T::value)>::type_codes().complemented();
  } else {
    return type_code_set::all();
  }
}

// What the validator knows of one segment.
struct segment_info {
  bool literal = false;
  std::string_view text;     // literal text, or field name
  std::string_view encoded;  // literal bytes
  type_code_set codes;       // first bytes a field's encoding can start with
  bool has_codec = true;
  codes_issue issue = codes_issue::none;   // of the field's codec
  type_code_set second = type_code_set::all();  // see second_codes
};

template <class S>
constexpr segment_info describe_segment() {
  if constexpr (is_lit<S>::value) {
    return segment_info{true, S::text, S::encoded, type_code_set::of(0x02), true};
  } else if constexpr (key_encodable<typename S::type>) {
    using T = typename S::type;
    return segment_info{false, S::name, {}, codec_traits<T>::type_codes(), true, codes_check_t<T>::issue,
                        second_codes<T>()};
  } else {
    return segment_info{false, S::name, {}, type_code_set::all(), false};
  }
}

template <class Segments>
struct segments_info;
template <class... S>
struct segments_info<std::tuple<S...>> {
  static constexpr std::array<segment_info, sizeof...(S)> segments{describe_segment<S>()...};
};
template <class KS>
using keyspace_info = segments_info<typename KS::segments>;

enum class problem_kind {
  none,
  not_a_keyspace,
  empty_keyspace,
  duplicate_keyspace_name,
  duplicate_field_name,
  field_without_codec,
  codec_without_type_codes,
  codec_type_codes_include_ff,
  value_without_codec,
  keyspaces_collide,
  placement_without_literal,
  placement_prefix_shared,
  long_keys_without_literal,
  long_keys_prefix_shared,
};

struct schema_problem {
  problem_kind kind = problem_kind::none;
  std::size_t a = 0;        // keyspace index
  std::size_t b = 0;        // other keyspace index (collisions, duplicate names)
  std::size_t segment = 0;  // segment position (0-based)
};

// Whether two fields facing each other can encode to the same element.
constexpr bool fields_may_meet(const segment_info& x, const segment_info& y) {
  if (!x.codes.intersects(y.codes)) return false;
  if (x.codes == y.codes && x.codes.count() == 1 && (x.codes.contains(code::nested) || x.codes.contains(code::desc)))
    return x.second.intersects(y.second);
  return true;
}

// Returns npos when every key of A differs from every key of B before either ends. Otherwise
// the keys can collide, and the result is the first segment position (in A) where the two are
// not the same literal (a literal faces a field, two fields can encode alike, or one literal's
// encoding is a byte prefix of the other's), or the position where one keyspace runs out of
// segments when all before are equal literals: the place to make them differ.
// Literals are compared byte by byte: "a" (02 61 00) is a prefix of "a\0" (02 61 00 ff 00), so a
// key ("a") is a prefix of every key ("a\0", ...). What follows the shorter literal then faces the
// longer one's 0xff, which no element starts with (fields with 0xff in their type codes are
// rejected before this check), so the two separate there unless the shorter keyspace ends.
// REQUIRES: no field of A or B has a codes_issue.
template <std::size_t NA, std::size_t NB>
constexpr std::size_t collision_position(const std::array<segment_info, NA>& a, const std::array<segment_info, NB>& b) {
  constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::size_t first_ambiguous = npos;
  std::size_t i = 0, j = 0;    // segment positions in a and b
  std::size_t ia = 0, jb = 0;  // byte offsets inside the literals a[i] and b[j]
  for (;;) {
    if (i == NA || j == NB) return first_ambiguous == npos ? (i == NA ? i : j) : first_ambiguous;
    const segment_info& x = a[i];
    const segment_info& y = b[j];
    if (x.literal && y.literal) {
      const std::string_view xs = x.encoded.substr(ia);
      const std::string_view ys = y.encoded.substr(jb);
      const std::size_t n = xs.size() < ys.size() ? xs.size() : ys.size();
      if (xs.substr(0, n) != ys.substr(0, n)) return npos;
      if (xs.size() != ys.size() && first_ambiguous == npos) first_ambiguous = i;
      ia += n;
      jb += n;
      if (ia == x.encoded.size()) ++i, ia = 0;
      if (jb == y.encoded.size()) ++j, jb = 0;
      continue;
    }
    if (x.literal || y.literal) {
      const segment_info& f = x.literal ? y : x;
      const std::string_view rest = x.literal ? x.encoded.substr(ia) : y.encoded.substr(jb);
      if (!f.codes.contains(static_cast<std::uint8_t>(rest[0]))) return npos;
      // A field facing the middle of a literal: cannot happen when no field starts with 0xff;
      // reported as a collision rather than assumed away.
      if (rest.size() != (x.literal ? x.encoded.size() : y.encoded.size()))
        return first_ambiguous == npos ? i : first_ambiguous;
    } else if (!fields_may_meet(x, y)) {
      return npos;
    }
    if (first_ambiguous == npos) first_ambiguous = i;
    ++i;
    ++j;
  }
}

// Keyspace I against every keyspace J < I.
template <class KSs, std::size_t I, std::size_t... J>
constexpr void collide_row(schema_problem& p, std::index_sequence<J...>) {
  (
      [&] {
        if (p.kind != problem_kind::none) return;
        const std::size_t pos = collision_position(keyspace_info<std::tuple_element_t<J, KSs>>::segments,
                                                   keyspace_info<std::tuple_element_t<I, KSs>>::segments);
        if (pos != static_cast<std::size_t>(-1)) p = {problem_kind::keyspaces_collide, J, I, pos};
      }(),
      ...);
}

template <class KSs, std::size_t... I>
constexpr void collide_rows(schema_problem& p, std::index_sequence<I...>) {
  (collide_row<KSs, I>(p, std::make_index_sequence<I>{}), ...);
}

// Whether a key of B can start with the leading literals of A (then routing by A's prefix would
// place it with A).
template <class A, class B>
constexpr bool prefix_reaches() {
  constexpr std::size_t n = leading_literals<A>();
  std::array<segment_info, n> pre{};
  for (std::size_t i = 0; i < n; ++i) pre[i] = keyspace_info<A>::segments[i];
  return collision_position(pre, keyspace_info<B>::segments) != static_cast<std::size_t>(-1);
}

// Placed keyspace I: starts with a literal, and no keyspace placed elsewhere reaches its prefix.
template <class KSs, std::size_t I, std::size_t... J>
constexpr void placement_row(schema_problem& p, std::index_sequence<J...>) {
  using A = std::tuple_element_t<I, KSs>;
  if constexpr (!placement_of<A>().empty()) {
    if (p.kind != problem_kind::none) return;
    if constexpr (leading_literals<A>() == 0) {
      p = {problem_kind::placement_without_literal, I, 0, 0};
    } else {
      (
          [&] {
            using B = std::tuple_element_t<J, KSs>;
            if (p.kind == problem_kind::none && I != J && placement_of<A>() != placement_of<B>() &&
                prefix_reaches<A, B>())
              p = {problem_kind::placement_prefix_shared, I, J, leading_literals<A>()};
          }(),
          ...);
    }
  }
}

template <class KSs, std::size_t... I>
constexpr void placement_rows(schema_problem& p, std::index_sequence<I...>) {
  (placement_row<KSs, I>(p, std::make_index_sequence<sizeof...(I)>{}), ...);
}

// Long-key keyspace I (keyschema::long_keys): starts with a literal, and no keyspace without the
// marker reaches its prefix (backends tell its keys by that prefix).
template <class KSs, std::size_t I, std::size_t... J>
constexpr void long_keys_row(schema_problem& p, std::index_sequence<J...>) {
  using A = std::tuple_element_t<I, KSs>;
  if constexpr (has_long_keys<A>()) {
    if (p.kind != problem_kind::none) return;
    if constexpr (leading_literals<A>() == 0) {
      p = {problem_kind::long_keys_without_literal, I, 0, 0};
    } else {
      (
          [&] {
            using B = std::tuple_element_t<J, KSs>;
            if (p.kind == problem_kind::none && I != J && !has_long_keys<B>() && prefix_reaches<A, B>())
              p = {problem_kind::long_keys_prefix_shared, I, J, leading_literals<A>()};
          }(),
          ...);
    }
  }
}

template <class KSs, std::size_t... I>
constexpr void long_keys_rows(schema_problem& p, std::index_sequence<I...>) {
  (long_keys_row<KSs, I>(p, std::make_index_sequence<sizeof...(I)>{}), ...);
}

template <class... K>
constexpr schema_problem find_problem(schema<K...>*) {
  constexpr bool keyspaces[] = {is_keyspace<K>::value..., true};
  for (std::size_t i = 0; i < sizeof...(K); ++i) {
    if (!keyspaces[i]) return {problem_kind::not_a_keyspace, i, 0, 0};
  }
  if constexpr ((is_keyspace<K>::value && ...)) {
    constexpr std::string_view names[] = {K::name..., {}};
    constexpr std::size_t counts[] = {K::segment_count..., 0};
    constexpr bool values_ok[] = {value_encodable<typename K::value_type>..., true};
    for (std::size_t i = 0; i < sizeof...(K); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (names[i] == names[j]) return {problem_kind::duplicate_keyspace_name, j, i, 0};
      }
      if (counts[i] == 0) return {problem_kind::empty_keyspace, i, 0, 0};
    }
    schema_problem p;
    std::size_t idx = 0;
    // Per keyspace: field names, codecs, value codec.
    (
        [&] {
          const auto& segs = keyspace_info<K>::segments;
          if (p.kind == problem_kind::none) {
            for (std::size_t s = 0; s < segs.size() && p.kind == problem_kind::none; ++s) {
              if (segs[s].literal) continue;
              if (!segs[s].has_codec) {
                p = {problem_kind::field_without_codec, idx, 0, s};
                break;
              }
              if (segs[s].issue != codes_issue::none) {
                p = {segs[s].issue == codes_issue::undeclared ? problem_kind::codec_without_type_codes
                                                              : problem_kind::codec_type_codes_include_ff,
                     idx, 0, s};
                break;
              }
              for (std::size_t t = 0; t < s; ++t) {
                if (!segs[t].literal && segs[t].text == segs[s].text) {
                  p = {problem_kind::duplicate_field_name, idx, 0, s};
                  break;
                }
              }
            }
            if (p.kind == problem_kind::none && !values_ok[idx]) p = {problem_kind::value_without_codec, idx, 0, 0};
          }
          ++idx;
        }(),
        ...);
    if (p.kind != problem_kind::none) return p;
    // Pairwise prefix-disjointness.
    collide_rows<std::tuple<K...>>(p, std::make_index_sequence<sizeof...(K)>{});
    if (p.kind != problem_kind::none) return p;
    // Placements route by key prefix.
    placement_rows<std::tuple<K...>>(p, std::make_index_sequence<sizeof...(K)>{});
    if (p.kind != problem_kind::none) return p;
    // So do long keys.
    long_keys_rows<std::tuple<K...>>(p, std::make_index_sequence<sizeof...(K)>{});
    return p;
  } else {
    return {};
  }
}

template <class S>
constexpr schema_problem schema_problem_of() {
  if constexpr (is_schema<S>::value)
    return find_problem(static_cast<S*>(nullptr));
  else
    return {problem_kind::not_a_keyspace, 0, 0, 0};
}

}  // namespace detail

// True when S is a keyschema::schema<...> that passes every check (see the top of this file).
template <class S>
concept valid_schema = detail::is_schema<S>::value && (detail::schema_problem_of<S>().kind == detail::problem_kind::none);

// The diagnostics. Each is a template whose arguments name what is wrong, so the compiler's
// "required from" note shows the keyspace, field and segment position; its static_assert message
// says how to fix it. They are instantiated only for an invalid schema, by keyschema::store.
namespace diagnostic {

template <std::size_t N>
inline constexpr bool always_false = false;

template <fixed_string KeyspaceA, fixed_string KeyspaceB, std::size_t SegmentPosition>
struct keyspaces_collide {
  static_assert(always_false<SegmentPosition>,
                "keyschema::schema: two keyspaces can produce the same key, or a key of one can be a prefix of "
                "a key of the other (see KeyspaceA, KeyspaceB and SegmentPosition, 0-based, in this "
                "instantiation); make them differ at that segment: a different literal, or a field whose "
                "type cannot encode to what faces it");
  static constexpr bool value = false;
};

template <fixed_string Keyspace>
struct duplicate_keyspace_name {
  static_assert(always_false<Keyspace.size()>,
                "keyschema::schema: two keyspaces have the same name; keyspace names must be unique");
  static constexpr bool value = false;
};

template <fixed_string Keyspace, std::size_t SegmentPosition>
struct duplicate_field_name {
  static_assert(always_false<SegmentPosition>,
                "keyschema::keyspace: a field name is used twice in this keyspace (see Keyspace and "
                "SegmentPosition); rename one of the fields");
  static constexpr bool value = false;
};

template <fixed_string Keyspace, std::size_t SegmentPosition>
struct field_without_key_codec {
  static_assert(always_false<SegmentPosition>,
                "keyschema::keyspace: the field at SegmentPosition has a type with no key codec; "
                "specialize keyschema::codec<T> (mapped: repr/to_repr/from_repr, or full: encode/decode/name)");
  static constexpr bool value = false;
};

template <fixed_string Keyspace, std::size_t SegmentPosition, class Codec>
struct codec_without_type_codes {
  static_assert(always_false<SegmentPosition>,
                "keyschema::keyspace: the key codec of Codec (used by the field at SegmentPosition, see this "
                "instantiation) writes its own encoding but declares no type_codes, so scans could not tell "
                "another keyspace's key from a damaged one; add static constexpr keyschema::type_code_set "
                "type_codes = keyschema::type_code_set::of(...) (the first bytes its elements start with) to "
                "keyschema::codec<Codec>, or define the codec through repr");
  static constexpr bool value = false;
};

template <fixed_string Keyspace, std::size_t SegmentPosition, class Codec>
struct codec_type_codes_include_ff {
  static_assert(always_false<SegmentPosition>,
                "keyschema::keyspace: the type_codes of keyschema::codec<Codec> (used by the field at "
                "SegmentPosition, see this instantiation) include 0xFF, which no key element may start with "
                "(the schema check and the literal escape 00 FF rely on it); make the encoding start with a "
                "code below 0xFF, e.g. an FDB user type code 0x40..0x4f");
  static constexpr bool value = false;
};

template <fixed_string Keyspace>
struct value_without_codec {
  static_assert(always_false<Keyspace.size()>,
                "keyschema::keyspace: the value type of this keyspace has no value codec; specialize "
                "keyschema::value_codec<T> (encode/decode/name) or give T a key codec");
  static constexpr bool value = false;
};

template <std::size_t ArgumentPosition>
struct not_a_keyspace {
  static_assert(always_false<ArgumentPosition>,
                "keyschema::schema: every argument must be a keyschema::keyspace<\"name\", Value, segments...>");
  static constexpr bool value = false;
};

template <std::size_t KeyspacePosition>
struct empty_keyspace {
  static_assert(always_false<KeyspacePosition>,
                "keyschema::keyspace: a keyspace needs at least one segment; start it with a keyschema::lit<\"WORD\">");
  static constexpr bool value = false;
};

template <fixed_string Keyspace>
struct placement_without_literal {
  static_assert(always_false<Keyspace.size()>,
                "keyschema::placed: a placed keyspace must start with a keyschema::lit<\"WORD\"> (backends route "
                "its keys by that prefix); start the keyspace with a literal");
  static constexpr bool value = false;
};

template <fixed_string PlacedKeyspace, fixed_string OtherKeyspace, std::size_t LeadingLiterals>
struct placement_prefix_shared {
  static_assert(always_false<LeadingLiterals>,
                "keyschema::placed: a key of OtherKeyspace (placed elsewhere) can start with the leading literals of "
                "PlacedKeyspace, by which its keys are routed (see this instantiation); give PlacedKeyspace a "
                "leading literal OtherKeyspace cannot produce, or place both alike");
  static constexpr bool value = false;
};

template <fixed_string Keyspace>
struct long_keys_without_literal {
  static_assert(always_false<Keyspace.size()>,
                "keyschema::long_keys: a keyspace with long keys must start with a keyschema::lit<\"WORD\"> "
                "(backends tell its keys by that prefix); start the keyspace with a literal");
  static constexpr bool value = false;
};

template <fixed_string LongKeyspace, fixed_string OtherKeyspace, std::size_t LeadingLiterals>
struct long_keys_prefix_shared {
  static_assert(always_false<LeadingLiterals>,
                "keyschema::long_keys: a key of OtherKeyspace (without long keys) can start with the leading "
                "literals of LongKeyspace, by which backends tell its keys (see this instantiation); give "
                "LongKeyspace a leading literal OtherKeyspace cannot produce, or mark both with long_keys");
  static constexpr bool value = false;
};

}  // namespace diagnostic

namespace detail {

// Instantiates the diagnostic that names the first problem of S. Returns valid_schema<S>.
template <class S>
constexpr bool diagnose_schema() {
  if constexpr (!is_schema<S>::value) {
    return diagnostic::not_a_keyspace<sizeof(S) * 0>::value;
  } else {
    constexpr schema_problem p = schema_problem_of<S>();
    using ks = typename S::keyspaces;
    if constexpr (p.kind == problem_kind::none) {
      return true;
    } else if constexpr (p.kind == problem_kind::not_a_keyspace) {
      return diagnostic::not_a_keyspace<p.a>::value;
    } else if constexpr (p.kind == problem_kind::empty_keyspace) {
      return diagnostic::empty_keyspace<p.a>::value;
    } else if constexpr (p.kind == problem_kind::duplicate_keyspace_name) {
      return diagnostic::duplicate_keyspace_name<std::tuple_element_t<p.a, ks>::name_string>::value;
    } else if constexpr (p.kind == problem_kind::duplicate_field_name) {
      return diagnostic::duplicate_field_name<std::tuple_element_t<p.a, ks>::name_string, p.segment>::value;
    } else if constexpr (p.kind == problem_kind::field_without_codec) {
      return diagnostic::field_without_key_codec<std::tuple_element_t<p.a, ks>::name_string, p.segment>::value;
    } else if constexpr (p.kind == problem_kind::codec_without_type_codes ||
                         p.kind == problem_kind::codec_type_codes_include_ff) {
      using field_type = typename std::tuple_element_t<p.segment, typename std::tuple_element_t<p.a, ks>::segments>::type;
      using codec_type = typename codes_check_t<field_type>::type;
      if constexpr (p.kind == problem_kind::codec_without_type_codes)
        return diagnostic::codec_without_type_codes<std::tuple_element_t<p.a, ks>::name_string, p.segment,
                                                    codec_type>::value;
      else
        return diagnostic::codec_type_codes_include_ff<std::tuple_element_t<p.a, ks>::name_string, p.segment,
                                                       codec_type>::value;
    } else if constexpr (p.kind == problem_kind::value_without_codec) {
      return diagnostic::value_without_codec<std::tuple_element_t<p.a, ks>::name_string>::value;
    } else if constexpr (p.kind == problem_kind::placement_without_literal) {
      return diagnostic::placement_without_literal<std::tuple_element_t<p.a, ks>::name_string>::value;
    } else if constexpr (p.kind == problem_kind::long_keys_without_literal) {
      return diagnostic::long_keys_without_literal<std::tuple_element_t<p.a, ks>::name_string>::value;
    } else if constexpr (p.kind == problem_kind::long_keys_prefix_shared) {
      return diagnostic::long_keys_prefix_shared<std::tuple_element_t<p.a, ks>::name_string,
                                                 std::tuple_element_t<p.b, ks>::name_string, p.segment>::value;
    } else if constexpr (p.kind == problem_kind::placement_prefix_shared) {
      return diagnostic::placement_prefix_shared<std::tuple_element_t<p.a, ks>::name_string,
                                                 std::tuple_element_t<p.b, ks>::name_string, p.segment>::value;
    } else {
      return diagnostic::keyspaces_collide<std::tuple_element_t<p.a, ks>::name_string,
                                           std::tuple_element_t<p.b, ks>::name_string, p.segment>::value;
    }
  }
}

}  // namespace detail

KEYSCHEMA_END_NAMESPACE
