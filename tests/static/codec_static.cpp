// Compile-time facts about the tuple codec: which types are key_encodable / key_writable /
// value_encodable, codec names (schema fingerprints depend on them) and type code sets.
#include <keyschema/codec.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/value_codec.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace ks = keyschema;
using ks::codec_traits;
using ks::key_encodable;
using ks::key_writable;
using ks::type_code_set;

namespace static_test {

struct no_codec {};
struct mapped_id {
  std::uint64_t v;
};
struct named_id {
  std::uint32_t v;
};
struct full_type {
  int v;
};
struct full_with_codes {
  int v;
};
struct broken_mapping {  // repr has no codec
  no_codec v;
};
struct encode_only_full {  // no decode
  int v;
};
enum class small : std::uint8_t { a };
enum class wide : std::int64_t { a };
enum class letter : char { a };

}  // namespace static_test

template <>
struct keyschema::codec<static_test::mapped_id> {
  using repr = std::uint64_t;
  static std::uint64_t to_repr(const static_test::mapped_id& m) { return m.v; }
  static static_test::mapped_id from_repr(std::uint64_t v) { return {v}; }
};
template <>
struct keyschema::codec<static_test::named_id> {
  using repr = std::uint32_t;
  static constexpr std::string_view name = "named_id";
  static std::uint32_t to_repr(const static_test::named_id& m) { return m.v; }
  static static_test::named_id from_repr(std::uint32_t v) { return {v}; }
};
template <>
struct keyschema::codec<static_test::full_type> {
  static constexpr std::string_view name = "full";
  static void encode(std::string& out, const static_test::full_type& f) { codec_traits<int>::encode(out, f.v); }
  static static_test::full_type decode(tuple::reader& in) { return {codec_traits<int>::decode(in)}; }
};
template <>
struct keyschema::codec<static_test::full_with_codes> {
  static constexpr std::string_view name = "full_with_codes";
  static constexpr type_code_set type_codes = type_code_set::of(0x41);
  static void encode(std::string& out, const static_test::full_with_codes&) { out.push_back('\x41'); }
  static static_test::full_with_codes decode(tuple::reader& in) {
    in.take();
    return {0};
  }
};
template <>
struct keyschema::codec<static_test::broken_mapping> {
  using repr = static_test::no_codec;
  static static_test::no_codec to_repr(const static_test::broken_mapping& b) { return b.v; }
  static static_test::broken_mapping from_repr(static_test::no_codec v) { return {v}; }
};
template <>
struct keyschema::codec<static_test::encode_only_full> {
  static constexpr std::string_view name = "encode_only";
  static void encode(std::string& out, const static_test::encode_only_full& f) { codec_traits<int>::encode(out, f.v); }
};

namespace static_test {

// key_encodable: built-in types.
static_assert(key_encodable<std::int8_t> && key_encodable<std::int16_t> && key_encodable<std::int32_t> &&
              key_encodable<std::int64_t> && key_encodable<long long>);
static_assert(key_encodable<std::uint8_t> && key_encodable<std::uint16_t> && key_encodable<std::uint32_t> &&
              key_encodable<std::uint64_t> && key_encodable<unsigned long long>);
static_assert(key_encodable<float> && key_encodable<double> && key_encodable<bool>);
static_assert(key_encodable<std::string> && key_encodable<ks::bytes> && key_encodable<ks::uuid>);
static_assert(key_encodable<std::nullptr_t>);
static_assert(key_encodable<std::optional<std::string>> && key_encodable<std::tuple<>> &&
              key_encodable<std::tuple<std::int64_t, std::tuple<std::string, std::optional<double>>>>);
static_assert(key_encodable<ks::desc<std::uint64_t>> && key_encodable<ks::desc<std::tuple<std::string>>>);
static_assert(key_encodable<small> && key_encodable<wide> && key_encodable<letter>);
static_assert(key_encodable<std::chrono::milliseconds> && key_encodable<std::chrono::sys_seconds> &&
              key_encodable<std::chrono::duration<std::uint16_t, std::milli>>);
static_assert(key_encodable<mapped_id> && key_encodable<named_id> && key_encodable<full_type> &&
              key_encodable<full_with_codes>);
static_assert(key_encodable<std::tuple<mapped_id, ks::desc<full_type>>>);

// Negative: no codec, text-like character types, wider types, partial or broken codecs.
static_assert(requires { requires !key_encodable<no_codec>; });
static_assert(!key_encodable<no_codec> && !key_writable<no_codec>);
static_assert(!key_encodable<char> && !key_encodable<wchar_t> && !key_encodable<char8_t> &&
              !key_encodable<char16_t> && !key_encodable<char32_t>);
static_assert(!key_encodable<long double> && !key_encodable<int*> && !key_encodable<std::vector<int>>);
static_assert(!key_encodable<std::chrono::duration<double>>);
static_assert(!key_encodable<const int> && !key_encodable<int&>);
static_assert(!key_encodable<std::optional<no_codec>> && !key_encodable<std::tuple<int, no_codec>> &&
              !key_encodable<ks::desc<no_codec>>);
static_assert(!key_encodable<broken_mapping> && !key_writable<broken_mapping>);
static_assert(!key_encodable<encode_only_full> && key_writable<encode_only_full>);

// Encode-only text: writable, not decodable.
static_assert(key_writable<std::string_view> && !key_encodable<std::string_view>);
static_assert(key_writable<const char*> && key_writable<char*> && !key_encodable<const char*>);
static_assert(key_writable<char[6]> && !key_encodable<char[6]>);

// Names.
static_assert(codec_traits<std::int8_t>::name() == "i8" && codec_traits<std::int16_t>::name() == "i16" &&
              codec_traits<std::int32_t>::name() == "i32" && codec_traits<std::int64_t>::name() == "i64");
static_assert(codec_traits<std::uint8_t>::name() == "u8" && codec_traits<std::uint16_t>::name() == "u16" &&
              codec_traits<std::uint32_t>::name() == "u32" && codec_traits<std::uint64_t>::name() == "u64");
static_assert(codec_traits<long long>::name() == "i64" && codec_traits<unsigned long>::name() == "u64");
static_assert(codec_traits<float>::name() == "float" && codec_traits<double>::name() == "double" &&
              codec_traits<bool>::name() == "bool");
static_assert(codec_traits<std::string>::name() == "string" && codec_traits<std::string_view>::name() == "string" &&
              codec_traits<char[3]>::name() == "string" && codec_traits<ks::bytes>::name() == "bytes");
static_assert(codec_traits<ks::uuid>::name() == "uuid" && codec_traits<std::nullptr_t>::name() == "null");
static_assert(codec_traits<std::tuple<std::int64_t, std::string>>::name() == "tuple<i64,string>");
static_assert(codec_traits<std::tuple<>>::name() == "tuple<>");
static_assert(codec_traits<std::optional<std::uint64_t>>::name() == "optional<u64>");
static_assert(codec_traits<ks::desc<std::uint64_t>>::name() == "desc<u64>");
static_assert(codec_traits<std::tuple<std::tuple<std::int32_t>, std::optional<ks::desc<std::string>>>>::name() ==
              "tuple<tuple<i32>,optional<desc<string>>>");
static_assert(codec_traits<small>::name() == "u8" && codec_traits<wide>::name() == "i64" &&
              codec_traits<letter>::name() == "i8");
// Durations name their period and time points their clock, so a change of unit or clock changes
// the schema fingerprint.
static_assert(codec_traits<std::chrono::milliseconds>::name() == "duration<i64,1/1000>" &&
              codec_traits<std::chrono::sys_seconds>::name() == "time_point<system_clock,duration<i64,1/1>>");
static_assert(codec_traits<std::chrono::sys_time<std::chrono::microseconds>>::name() ==
              "time_point<system_clock,duration<i64,1/1000000>>");
static_assert(codec_traits<std::chrono::duration<std::uint16_t, std::ratio<60>>>::name() == "duration<u16,60/1>");
static_assert(codec_traits<std::chrono::steady_clock::time_point>::name() != codec_traits<std::chrono::system_clock::time_point>::name());
static_assert(codec_traits<ks::desc<std::chrono::hours>>::name() == "desc<duration<i64,3600/1>>");
// A time point of a clock without a keyschema::clock_name has no codec.
struct unnamed_clock {
  using rep = std::int64_t;
  using period = std::milli;
  using duration = std::chrono::milliseconds;
  using time_point = std::chrono::time_point<unnamed_clock>;
  static constexpr bool is_steady = false;
};
static_assert(!key_encodable<std::chrono::time_point<unnamed_clock>>);
static_assert(codec_traits<mapped_id>::name() == "u64" && codec_traits<named_id>::name() == "named_id" &&
              codec_traits<full_type>::name() == "full");
static_assert(codec_traits<std::tuple<named_id, ks::desc<mapped_id>>>::name() == "tuple<named_id,desc<u64>>");

// Type codes.
// Every integer width declares every integer code: an integer that does not fit the field is a
// decode error, never another keyspace's key.
static_assert(codec_traits<std::int8_t>::type_codes() == type_code_set::of(0x0b, 0x1d));
static_assert(codec_traits<std::uint8_t>::type_codes() == type_code_set::of(0x0b, 0x1d));
static_assert(codec_traits<std::int64_t>::type_codes() == type_code_set::of(0x0b, 0x1d));
static_assert(codec_traits<std::uint64_t>::type_codes() == type_code_set::of(0x0b, 0x1d));
static_assert(codec_traits<std::uint32_t>::type_codes() == type_code_set::of(0x0b, 0x1d));
static_assert(codec_traits<std::chrono::milliseconds>::type_codes() == type_code_set::of(0x0b, 0x1d));
static_assert(codec_traits<std::string>::type_codes() == type_code_set::of(0x02));
static_assert(codec_traits<const char*>::type_codes() == type_code_set::of(0x02));
static_assert(codec_traits<ks::bytes>::type_codes() == type_code_set::of(0x01));
static_assert(codec_traits<float>::type_codes() == type_code_set::of(0x20));
static_assert(codec_traits<double>::type_codes() == type_code_set::of(0x21));
static_assert(codec_traits<bool>::type_codes() == type_code_set::of(0x26, 0x27));
static_assert(codec_traits<ks::uuid>::type_codes() == type_code_set::of(0x30));
static_assert(codec_traits<std::nullptr_t>::type_codes() == type_code_set::of(0x00));
static_assert(codec_traits<std::tuple<int>>::type_codes() == type_code_set::of(0x05));
static_assert(codec_traits<ks::desc<std::string>>::type_codes() == type_code_set::of(0x40));
static_assert(codec_traits<std::optional<std::uint64_t>>::type_codes() ==
              (type_code_set::of(0x00) | type_code_set::of(0x0b, 0x1d)));
static_assert(codec_traits<small>::type_codes() == type_code_set::of(0x0b, 0x1d));
static_assert(codec_traits<mapped_id>::type_codes() == codec_traits<std::uint64_t>::type_codes());
static_assert(codec_traits<full_type>::type_codes() == type_code_set::all());  // not declared
static_assert(codec_traits<full_with_codes>::type_codes() == type_code_set::of(0x41));

// Literal strings and integer ids can never collide in one key position; optional ids can be null.
static_assert(!codec_traits<std::string>::type_codes().intersects(codec_traits<std::uint64_t>::type_codes()));
static_assert(codec_traits<std::int64_t>::type_codes().intersects(codec_traits<std::uint8_t>::type_codes()));
static_assert(codec_traits<std::optional<std::uint64_t>>::type_codes().contains(0x00));

// type_code_set itself.
static_assert(type_code_set::all().count() == 256 && type_code_set().empty() && type_code_set::of(5, 4).empty());
static_assert(type_code_set::of(0x0c, 0x1c).min() == 0x0c && type_code_set::of(0x0c, 0x1c).max() == 0x1c);
static_assert((type_code_set::of(0x02) | type_code_set::of(0xff)).max() == 0xff);
static_assert(type_code_set::of(0x02).complemented() == type_code_set::of(0xfd));
static_assert((type_code_set::of(1, 100) & type_code_set::of(50, 200)) == type_code_set::of(50, 100));

// Values.
static_assert(ks::value_encodable<std::string> && ks::value_encodable<ks::bytes> &&
              ks::value_encodable<std::uint64_t> && ks::value_encodable<std::tuple<std::int64_t, std::string>> &&
              ks::value_encodable<mapped_id>);
static_assert(!ks::value_encodable<no_codec> && !ks::value_encodable<std::string_view>);
static_assert(ks::value_traits<std::string>::name() == "raw" && ks::value_traits<ks::bytes>::name() == "raw");
static_assert(ks::value_traits<std::uint64_t>::name() == "packed<u64>");
static_assert(ks::value_traits<std::tuple<std::int64_t, std::string>>::name() == "packed<i64,string>");

}  // namespace static_test
