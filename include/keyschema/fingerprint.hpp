// keyschema/fingerprint.hpp: the schema fingerprint stores check on every open.
//
// The layout of a schema is a text naming, for each keyspace in order, its name, its value codec
// and its segments (literal text, or field name and key codec identity; the identity of a
// duration includes its period and that of a time point its clock, so a field changed from
// milliseconds to microseconds no longer matches):
//   keyschema-layout/1;message_metadata=raw{lit:DESTINATION,field:destination:string,...};...
//   ...;expiry=raw{lit:EXPIRY,field:expires_at:time_point<system_clock,duration<i64,1/1000>>};
// A keyspace the store maintains names what it derives from after its value codec:
//   message_count=packed<i64>:count_of<message_metadata,1>{...}   (counters.hpp, indexes.hpp)
// A placed keyspace (keyschema::placed) names its placement before its segments:
//   message_content=raw@content{...}
// and a keyspace with long keys (keyschema::long_keys) says so before that:
//   queue_entry=raw+long_keys{...}     queue_entry=raw+long_keys@queues{...}
// The fingerprint is the 64-bit FNV-1a hash of that text, computed at compile time. A store
// writes the fingerprint and the layout text under a reserved key (schema_key, which starts with
// 0xFF, a byte no tuple-encoded key starts with) the first time it opens a database, and checks
// it on every later open: a keyspace written with another layout is a schema_error naming it
// and the difference, never silent garbage (see below for added keyspaces).
//
// The record format "<16 lowercase hex digits>\n<layout>" is written by layout<Schema>::record()
// and read by parse_schema_record() only: the store and keyschema-dump both read it through that.
// The store compares the record keyspace by keyspace (each "name=codec{...};" part of the layout
// text; see store.hpp): a database lacking some of the program's keyspaces opens and its record
// is rewritten, a keyspace whose part differs is a schema_error naming it. keyspace_fingerprint<KS>
// is the FNV-1a hash of one keyspace's part (ks::migrate compares keyspaces with it).
//
// Thread-safety: constexpr data and pure functions.
#pragma once

#include <keyschema/codec.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/utf8.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/value_codec.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

// The reserved key holding "<16 hex digits of the fingerprint>\n<layout text>".
inline constexpr std::string_view schema_key = "\xff" "keyschema/schema";
// The reserved key holding the progress of an unfinished ks::migrate (see migrate.hpp). While it
// exists a store refuses to open the database (schema_error).
inline constexpr std::string_view migration_key = "\xff" "keyschema/migration";

namespace detail {

template <class Seg, class Sink>
constexpr void visit_segment_layout(Sink& sink) {
  if constexpr (is_lit<Seg>::value) {
    sink("lit:");
    sink(Seg::text);
  } else {
    sink("field:");
    sink(Seg::name);
    sink(":");
    sink(codec_traits<typename Seg::type>::name());
  }
}

template <class KS, class Segments, class Sink>
struct keyspace_layout;
template <class KS, class... S, class Sink>
struct keyspace_layout<KS, std::tuple<S...>, Sink> {
  static constexpr void visit(Sink& sink) {
    sink(KS::name);
    sink("=");
    sink(value_traits<typename KS::value_type>::name());
    if constexpr (requires { KS::value_marker::visit_layout(sink); }) {
      sink(":");  // a keyspace the store maintains (counters.hpp, indexes.hpp): what it derives from
      KS::value_marker::visit_layout(sink);
    }
    if constexpr (has_long_keys<KS>()) sink("+long_keys");  // keys beyond the engine's limit (keyschema::long_keys)
    if constexpr (!placement_of<KS>().empty()) {
      sink("@");  // a placed keyspace (schema.hpp, keyschema::placed): its placement
      sink(placement_of<KS>());
    }
    sink("{");
    bool first = true;
    ((sink(first ? "" : ","), first = false, visit_segment_layout<S>(sink)), ...);
    sink("};");
  }
};

template <class Schema, class Sink>
struct schema_layout;
template <class... K, class Sink>
struct schema_layout<schema<K...>, Sink> {
  static constexpr void visit(Sink& sink) {
    sink("keyschema-layout/1;");
    (keyspace_layout<K, typename K::segments, Sink>::visit(sink), ...);
  }
};

struct fnv1a_sink {
  std::uint64_t h = 0xcbf29ce484222325ull;
  constexpr void operator()(std::string_view s) {
    for (char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ull;
    }
  }
};

struct string_sink {
  std::string* out;
  void operator()(std::string_view s) const { out->append(s); }
};

inline constexpr std::size_t fingerprint_digits = 16;

}  // namespace detail

// A schema record split into its parts. The views point into the bytes given to
// parse_schema_record() and are valid as long as they are.
struct schema_record {
  std::uint64_t fingerprint = 0;
  std::string_view fingerprint_text;  // the 16 lowercase hex digits as stored
  std::string_view layout;            // the layout text (see the top of this file)
};

// The 16 lowercase hex digits of a fingerprint, as stored. Errors: std::bad_alloc only.
template <class = void>
inline std::string fingerprint_text(std::uint64_t fingerprint) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(detail::fingerprint_digits, '0');
  for (std::size_t i = 0; i < detail::fingerprint_digits; ++i)
    out[i] = hex[(fingerprint >> (60 - 4 * i)) & 0xf];
  return out;
}

// The record "<16 hex digits of fingerprint>\n<layout>" stored under schema_key.
// Errors: std::bad_alloc only.
template <class = void>
inline std::string format_schema_record(std::uint64_t fingerprint, std::string_view layout) {
  std::string out = fingerprint_text(fingerprint);
  out.push_back('\n');
  out.append(layout);
  return out;
}

// Reads a stored schema record. Returns nullopt when `record` is not exactly 16 lowercase hex
// digits, a newline and a valid UTF-8 layout text (a damaged or foreign record). The result's
// views point into `record`. Never reads outside `record`; never throws.
template <class = void>
inline std::optional<schema_record> parse_schema_record(std::string_view record) noexcept {
  constexpr std::size_t n = detail::fingerprint_digits;
  if (record.size() < n + 1 || record[n] != '\n') return std::nullopt;
  schema_record r;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = record[i];
    unsigned digit = 0;
    if (c >= '0' && c <= '9') digit = static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f') digit = static_cast<unsigned>(c - 'a' + 10);
    else return std::nullopt;
    r.fingerprint = (r.fingerprint << 4) | digit;
  }
  r.fingerprint_text = record.substr(0, n);
  r.layout = record.substr(n + 1);
  if (!detail::utf8_valid(r.layout)) return std::nullopt;
  return r;
}

// REQUIRES: valid_schema<Schema>.
template <class Schema>
struct layout {
  // The layout text (see the top of this file).
  static std::string text() {
    std::string out;
    detail::string_sink sink{&out};
    detail::schema_layout<Schema, detail::string_sink>::visit(sink);
    return out;
  }

  static constexpr std::uint64_t fingerprint = [] {
    detail::fnv1a_sink sink;
    detail::schema_layout<Schema, detail::fnv1a_sink>::visit(sink);
    return sink.h;
  }();

  // The value stored under schema_key (see format_schema_record).
  static std::string record() { return format_schema_record(fingerprint, text()); }

  // The part of the layout text of each keyspace ("name=codec{segments};"), in schema order.
  // Errors: std::bad_alloc only.
  static std::vector<std::string> keyspace_texts() {
    std::vector<std::string> out;
    detail::for_each_keyspace<Schema>([&]<class K>(std::type_identity<K>) {
      std::string t;
      detail::string_sink sink{&t};
      detail::keyspace_layout<K, typename K::segments, detail::string_sink>::visit(sink);
      out.push_back(std::move(t));
    });
    return out;
  }
};

// The FNV-1a hash of keyspace KS's part of the layout text: two keyspaces with the same name,
// value codec and segments have the same one.
template <class KS>
inline constexpr std::uint64_t keyspace_fingerprint = [] {
  detail::fnv1a_sink sink;
  detail::keyspace_layout<KS, typename KS::segments, detail::fnv1a_sink>::visit(sink);
  return sink.h;
}();

KEYSCHEMA_END_NAMESPACE
