// keyschema/detail/codec/codec_scalars.hpp: codec specializations for the scalar types.
// Included by <keyschema/codec.hpp>; do not include directly.
//
// integers (i8..i64, u8..u64), float, double, bool, std::nullptr_t, std::string, the encode-only
// string views (std::string_view, const char*, char*, char[N]), keyschema::bytes, keyschema::uuid,
// enums (as their underlying integer), std::chrono::duration / time_point with integral rep.
// Stateless; thread-safe.
#pragma once

#include <keyschema/detail/codec/codec_core.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/detail/codec/tuple_float.hpp>
#include <keyschema/detail/codec/tuple_int.hpp>
#include <keyschema/tuple_reader.hpp>
#include <keyschema/detail/codec/tuple_string.hpp>
#include <keyschema/types.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {
template <tuple_integer T>
constexpr std::string_view integer_name() noexcept {
  constexpr bool s = std::is_signed_v<T>;
  switch (sizeof(T)) {
    case 1: return s ? "i8" : "u8";
    case 2: return s ? "i16" : "u16";
    case 4: return s ? "i32" : "u32";
    default: return s ? "i64" : "u64";
  }
}

// The integer type an enum is stored as (a character underlying type is stored as the integer
// of the same size and signedness).
template <class E>
using enum_repr_t = std::conditional_t<std::is_signed_v<std::underlying_type_t<E>>,
                                       std::make_signed_t<std::underlying_type_t<E>>,
                                       std::make_unsigned_t<std::underlying_type_t<E>>>;
}  // namespace detail

// Integers: shortest big-endian form, codes 0x0c..0x1c (see detail/codec/tuple_int.hpp).
// type_codes is every integer code whatever the width, 0x0b..0x1d with FoundationDB's
// arbitrary-precision forms: the tuple encoding has one integer type,
// so an integer element is always this field's element, and one that does not fit T (256 in a
// std::uint8_t field, 200 in a std::int8_t field, -1 in an unsigned field) is a decode_error,
// never another keyspace's key.
template <class T>
  requires detail::tuple_integer<T>
struct codec<T> {
  static constexpr std::string_view name = detail::integer_name<T>();
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::neg_big_int, detail::code::pos_big_int);
  static void encode(std::string& out, const T& v) { detail::append_integer_element(out, v); }
  // Throws decode_error: not an integer, truncated, or the value does not fit T.
  static T decode(tuple::reader& in) { return detail::read_integer<T>(in); }
};

template <>
struct codec<float> {
  static constexpr std::string_view name = "float";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::float32);
  static void encode(std::string& out, const float& v) { detail::append_float_element(out, v); }
  static float decode(tuple::reader& in) { return detail::read_float(in); }
};

template <>
struct codec<double> {
  static constexpr std::string_view name = "double";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::float64);
  static void encode(std::string& out, const double& v) { detail::append_double_element(out, v); }
  static double decode(tuple::reader& in) { return detail::read_double(in); }
};

template <>
struct codec<bool> {
  static constexpr std::string_view name = "bool";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::false_value, detail::code::true_value);
  static void encode(std::string& out, const bool& v) {
    out.push_back(static_cast<char>(v ? detail::code::true_value : detail::code::false_value));
  }
  static bool decode(tuple::reader& in) {
    if (!in.at_end()) {
      const std::uint8_t c = in.peek();
      if (c == detail::code::false_value || c == detail::code::true_value) {
        in.skip(1);
        return c == detail::code::true_value;
      }
    }
    in.fail_unexpected("bool");
  }
};

// Null: 0x00 (0x00 0xff inside a nested tuple; std::tuple's codec adds the 0xff).
template <>
struct codec<std::nullptr_t> {
  static constexpr std::string_view name = "null";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::null);
  static void encode(std::string& out, const std::nullptr_t&) { out.push_back('\0'); }
  static std::nullptr_t decode(tuple::reader& in) {
    in.take_null();
    return nullptr;
  }
};

// UTF-8 text: 0x02, payload with 0x00 escaped as 0x00 0xff, 0x00.
// Encoding validates UTF-8 (throws encode_error, out unchanged); decoding validates too
// (decode_error). Store arbitrary binary data as keyschema::bytes.
template <>
struct codec<std::string> {
  static constexpr std::string_view name = "string";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::string);
  static void encode(std::string& out, const std::string& v) { detail::append_text_element(out, v); }
  static std::string decode(tuple::reader& in) {
    return detail::read_text_element(in);
  }
};

// Encode-only views of text; they decode as std::string.
template <>
struct codec<std::string_view> {
  static constexpr std::string_view name = "string";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::string);
  static void encode(std::string& out, const std::string_view& v) { detail::append_text_element(out, v); }
};

// A NUL-terminated C string. REQUIRES: v is not null.
template <>
struct codec<const char*> {
  static constexpr std::string_view name = "string";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::string);
  static void encode(std::string& out, const char* const& v) { detail::append_text_element(out, std::string_view(v)); }
};

template <>
struct codec<char*> {
  static constexpr std::string_view name = "string";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::string);
  static void encode(std::string& out, char* const& v) { detail::append_text_element(out, std::string_view(v)); }
};

// A char array (string literal): the characters up to the first NUL or the end of the array.
template <std::size_t N>
struct codec<char[N]> {
  static constexpr std::string_view name = "string";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::string);
  static void encode(std::string& out, const char (&v)[N]) { detail::append_char_array_element(out, v); }
};

// Binary: 0x01, payload with 0x00 escaped as 0x00 0xff, 0x00. No validation.
template <>
struct codec<bytes> {
  static constexpr std::string_view name = "bytes";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::bytes);
  static void encode(std::string& out, const bytes& v) { detail::append_bytes_element(out, v.view()); }
  static bytes decode(tuple::reader& in) {
    return bytes(detail::read_bytes_element(in));
  }
};

// UUID: 0x30 followed by the 16 bytes.
template <>
struct codec<uuid> {
  static constexpr std::string_view name = "uuid";
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::uuid);
  static void encode(std::string& out, const uuid& v) {
    char buf[17];
    buf[0] = static_cast<char>(detail::code::uuid);
    std::memcpy(buf + 1, v.bytes.data(), 16);
    out.append(buf, 17);
  }
  static uuid decode(tuple::reader& in) {
    if (in.at_end() || in.peek() != detail::code::uuid) in.fail_unexpected("uuid");
    if (in.remaining().size() < 17) in.fail("truncated uuid: needs 16 bytes after the type code");
    const std::string_view b = in.take(17);
    uuid u;
    std::memcpy(u.bytes.data(), b.data() + 1, 16);
    return u;
  }
};

// Enums: stored as their underlying integer. Every value of the underlying type decodes (no
// range check); specialize codec<E> as a mapped codec to validate in from_repr.
template <class E>
  requires(std::is_enum_v<E> && !std::is_same_v<std::underlying_type_t<E>, bool>)
struct codec<E> {
  using repr = detail::enum_repr_t<E>;
  static repr to_repr(const E& e) noexcept { return static_cast<repr>(e); }
  static E from_repr(repr r) noexcept { return static_cast<E>(r); }
};

// The name of a clock in schema fingerprints (time points of different clocks never share a
// layout). Defined for the standard clocks; specialize it for your own clock to store its time
// points in keys:
//   template <> struct keyschema::clock_name<my_clock> { static constexpr std::string_view value = "my_clock"; };
template <class Clock>
struct clock_name {};
template <>
struct clock_name<std::chrono::system_clock> {
  static constexpr std::string_view value = "system_clock";
};
template <>
struct clock_name<std::chrono::steady_clock> {
  static constexpr std::string_view value = "steady_clock";
};
template <>
struct clock_name<std::chrono::file_clock> {
  static constexpr std::string_view value = "file_clock";
};
template <>
struct clock_name<std::chrono::local_t> {
  static constexpr std::string_view value = "local_t";
};

namespace detail {

template <class Clock>
concept named_clock = requires {
  { clock_name<Clock>::value } -> std::convertible_to<std::string_view>;
};

// A small constexpr text buffer for names built from numbers.
struct name_buffer {
  char chars[160] = {};
  std::size_t size = 0;
  constexpr void put(std::string_view s) {
    for (char c : s) chars[size++] = c;
  }
  constexpr void put(std::intmax_t v) {
    char digits[24] = {};
    std::size_t n = 0;
    const bool negative = v < 0;
    std::uintmax_t u = negative ? 0 - static_cast<std::uintmax_t>(v) : static_cast<std::uintmax_t>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (negative) chars[size++] = '-';
    while (n > 0) chars[size++] = digits[--n];
  }
};

// "duration<i64,1/1000>": the rep and the period (a reduced std::ratio), so a change of unit
// changes the schema fingerprint.
template <class Rep, class Period>
struct duration_name {
  static constexpr name_buffer buf = [] {
    name_buffer b;
    b.put("duration<");
    b.put(codec_traits<Rep>::name());
    b.put(",");
    b.put(static_cast<std::intmax_t>(Period::num));
    b.put("/");
    b.put(static_cast<std::intmax_t>(Period::den));
    b.put(">");
    return b;
  }();
  static constexpr std::string_view value{buf.chars, buf.size};
};

// "time_point<system_clock,duration<i64,1/1000>>".
template <class Clock, class Duration>
struct time_point_name {
  static constexpr name_buffer buf = [] {
    name_buffer b;
    b.put("time_point<");
    b.put(clock_name<Clock>::value);
    b.put(",");
    b.put(codec_traits<Duration>::name());
    b.put(">");
    return b;
  }();
  static constexpr std::string_view value{buf.chars, buf.size};
};

}  // namespace detail

// Durations with an integral representation: stored as count(). The name (in the schema
// fingerprint) includes the period: "duration<i64,1/1000>" for std::chrono::milliseconds.
template <class Rep, class Period>
  requires detail::tuple_integer<Rep>
struct codec<std::chrono::duration<Rep, Period>> {
  using repr = Rep;
  static constexpr std::string_view name = detail::duration_name<Rep, Period>::value;
  static Rep to_repr(const std::chrono::duration<Rep, Period>& d) noexcept { return d.count(); }
  static std::chrono::duration<Rep, Period> from_repr(Rep r) noexcept { return std::chrono::duration<Rep, Period>(r); }
};

// Time points: stored as time_since_epoch() in their own duration. The name includes the clock
// (keyschema::clock_name<Clock>, required) and the duration:
// "time_point<system_clock,duration<i64,1/1000>>" for std::chrono::sys_time<milliseconds>.
template <class Clock, class Duration>
  requires(key_encodable<Duration> && detail::named_clock<Clock>)
struct codec<std::chrono::time_point<Clock, Duration>> {
  using repr = Duration;
  static constexpr std::string_view name = detail::time_point_name<Clock, Duration>::value;
  static Duration to_repr(const std::chrono::time_point<Clock, Duration>& t) noexcept { return t.time_since_epoch(); }
  static std::chrono::time_point<Clock, Duration> from_repr(Duration d) noexcept {
    return std::chrono::time_point<Clock, Duration>(d);
  }
};

KEYSCHEMA_END_NAMESPACE
