// keyschema/tuple_dynamic.hpp: schema-less decoding of tuples (keyschema::tuple::element and
// unpack_dynamic), for tools (keyschema-dump) and error messages. Also included by
// <keyschema/tuple.hpp>; rendering the elements as text or JSON is <keyschema/tuple_format.hpp>.
//
// unpack_dynamic() decodes every standard FoundationDB tuple type plus keyschema's desc (user
// type code 0x40). Other user type codes (0x41..0x4f) have an application-defined length: at top
// level such an element takes the rest of the input as raw bytes; inside a nested tuple or desc
// it is a decode_error. Decoding never reads out of bounds and bounds recursion depth.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/detail/codec/tuple_error.hpp>
#include <keyschema/detail/codec/tuple_float.hpp>
#include <keyschema/detail/codec/tuple_int.hpp>
#include <keyschema/tuple_reader.hpp>
#include <keyschema/detail/codec/tuple_skip.hpp>
#include <keyschema/detail/codec/tuple_string.hpp>
#include <keyschema/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace tuple {

// One decoded element of a tuple whose schema is unknown. Which fields are meaningful depends
// on `type`; the others keep their defaults.
struct element {
  enum class kind : std::uint8_t {
    null,          // 0x00
    bytes,         // 0x01: data
    string,        // 0x02: data (valid UTF-8)
    integer,       // 0x0b..0x1d fitting 64 bits: negative, magnitude
    big_integer,   // 0x0b / 0x1d wider than 64 bits: negative, data = big-endian magnitude
    float32,       // 0x20: number (exact)
    float64,       // 0x21: number
    boolean,       // 0x26 / 0x27: boolean
    uuid,          // 0x30: data (16 bytes)
    id64,          // 0x31: data (8 bytes)
    versionstamp,  // 0x32 / 0x33: data (10 / 12 bytes)
    tuple,         // 0x05: children
    desc,          // 0x40 ... 0xff: children[0] is the element in its plain (uncomplemented) form
    user_type,     // 0x41..0x4f at top level: code, data = the rest of the input
  };

  kind type = kind::null;
  std::uint8_t code = 0;          // the type code as read
  bool negative = false;          // integer, big_integer
  std::uint64_t magnitude = 0;    // integer: |value|
  double number = 0.0;            // float32, float64
  bool boolean = false;           // boolean
  std::string data;               // see kind
  std::vector<element> children;  // tuple, desc

  // The integer as int64 / uint64 when it is an integer that fits.
  std::optional<std::int64_t> as_int64() const noexcept {
    if (type != kind::integer) return std::nullopt;
    if (!negative) {
      if (magnitude <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(magnitude);
      return std::nullopt;
    }
    if (magnitude <= static_cast<std::uint64_t>(INT64_MAX) + 1) return static_cast<std::int64_t>(std::uint64_t{0} - magnitude);
    return std::nullopt;
  }
  std::optional<std::uint64_t> as_uint64() const noexcept {
    if (type != kind::integer || (negative && magnitude != 0)) return std::nullopt;
    return magnitude;
  }

  friend bool operator==(const element&, const element&) = default;
};

}  // namespace tuple

namespace detail {

template <class = void>
inline void read_dynamic(std::string_view data, std::size_t& pos, bool nested, std::size_t base, unsigned depth,
                         tuple::element& e);

template <class = void>
inline void read_dynamic_big_integer(std::string_view data, std::size_t& pos, std::size_t base, tuple::element& e) {
  const std::size_t end = element_end(data, pos, 0x00, false, base);  // checks the length
  const bool negative = static_cast<std::uint8_t>(data[pos]) == code::neg_big_int;
  std::string_view digits = data.substr(pos + 2, end - pos - 2);
  const char lead_zero = negative ? '\xff' : '\0';
  while (!digits.empty() && digits.front() == lead_zero) digits.remove_prefix(1);
  e.negative = negative;
  if (digits.size() <= 8) {
    e.type = tuple::element::kind::integer;
    const std::uint64_t raw = load_big_endian(digits.data(), digits.size(), digits.size());
    const std::uint64_t mask = digits.size() == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * digits.size())) - 1;
    e.magnitude = negative ? (~raw & mask) : raw;
  } else {
    e.type = tuple::element::kind::big_integer;
    e.data.assign(digits);
    if (negative)
      for (char& c : e.data) c = static_cast<char>(~c);
  }
  pos = end;
}

template <class>
inline void read_dynamic(std::string_view data, std::size_t& pos, bool nested, std::size_t base, unsigned depth,
                         tuple::element& e) {
  using kind = tuple::element::kind;
  if (pos >= data.size()) throw_decode_error("expected a tuple element, found end of input", base + pos);
  const auto c = static_cast<std::uint8_t>(data[pos]);
  e.code = c;
  auto via_reader = [&](auto&& fn) {
    tuple::reader r(data.substr(pos), base + pos);
    fn(r);
    pos = r.offset() - base;
  };
  auto raw_fixed = [&](kind k, std::size_t n) {
    pos = element_end(data, pos, 0x00, nested, base);
    e.type = k;
    e.data.assign(data.substr(pos - n, n));
  };
  switch (c) {
    case code::null:
      e.type = kind::null;
      pos = element_end(data, pos, 0x00, nested, base);
      return;
    case code::bytes:
      e.type = kind::bytes;
      via_reader([&](tuple::reader& r) { e.data = read_bytes_element(r); });
      return;
    case code::string:
      e.type = kind::string;
      via_reader([&](tuple::reader& r) { e.data = read_text_element(r); });
      return;
    case code::nested: {
      if (depth >= max_nesting_depth) throw_decode_error("nesting too deep", base + pos);
      e.type = kind::tuple;
      const std::size_t start = pos++;
      for (;;) {
        if (pos >= data.size()) throw_decode_error("unterminated nested tuple", base + start);
        if (data[pos] == '\0' && !(pos + 1 < data.size() && static_cast<std::uint8_t>(data[pos + 1]) == 0xff)) {
          ++pos;
          return;
        }
        e.children.emplace_back();
        read_dynamic(data, pos, true, base, depth + 1, e.children.back());
      }
    }
    case code::neg_big_int:
    case code::pos_big_int: read_dynamic_big_integer(data, pos, base, e); return;
    case code::float32:
      e.type = kind::float32;
      via_reader([&](tuple::reader& r) { e.number = static_cast<double>(read_float(r)); });
      return;
    case code::float64:
      e.type = kind::float64;
      via_reader([&](tuple::reader& r) { e.number = read_double(r); });
      return;
    case code::false_value:
    case code::true_value:
      e.type = kind::boolean;
      e.boolean = c == code::true_value;
      ++pos;
      return;
    case code::uuid: raw_fixed(kind::uuid, 16); return;
    case code::id64: raw_fixed(kind::id64, 8); return;
    case code::versionstamp80: raw_fixed(kind::versionstamp, 10); return;
    case code::versionstamp96: raw_fixed(kind::versionstamp, 12); return;
    case code::desc: {
      if (depth >= max_nesting_depth) throw_decode_error("nesting too deep", base + pos);
      const std::size_t end = element_end(data, pos, 0x00, false, base, depth) - 1;  // checks the 0xff
      std::string plain(data.substr(pos + 1, end - pos - 1));
      for (char& ch : plain) ch = static_cast<char>(~ch);
      e.type = kind::desc;
      e.children.emplace_back();
      std::size_t inner = 0;
      read_dynamic(plain, inner, false, base + pos + 1, depth + 1, e.children.back());
      pos = end + 1;
      return;
    }
    default:
      if (c >= code::int_min && c <= code::int_max) {
        e.type = kind::integer;
        via_reader([&](tuple::reader& r) {
          const integer_value v = read_integer_element(r);
          e.negative = v.negative;
          e.magnitude = v.magnitude;
        });
        return;
      }
      if (c > code::user_min && c <= code::user_max && !nested && depth == 0) {
        e.type = kind::user_type;
        e.data.assign(data.substr(pos + 1));
        pos = data.size();
        return;
      }
      if (c > code::user_min && c <= code::user_max)
        throw_decode_error("user type code " + hex_byte(c) + " inside a nested element (its length is application-defined)",
                           base + pos);
      throw_decode_error("unknown type code " + hex_byte(c), base + pos);
  }
}

}  // namespace detail

namespace tuple {

// Decodes every element of `in` without a schema.
// Throws decode_error: malformed bytes (truncated, unterminated, unknown type code, invalid
// UTF-8, nesting deeper than 100). An empty input is the empty tuple.
template <class = void>
inline std::vector<element> unpack_dynamic(std::string_view in) {
  std::vector<element> out;
  std::size_t pos = 0;
  while (pos < in.size()) {
    out.emplace_back();
    detail::read_dynamic(in, pos, false, 0, 0, out.back());
  }
  return out;
}

}  // namespace tuple
KEYSCHEMA_END_NAMESPACE
