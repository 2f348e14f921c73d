// keyschema/detail/tuple_dynamic.hpp: schema-less decoding for tools (keyschema-dump).
// Public through <keyschema/tuple.hpp> as keyschema::tuple::element, unpack_dynamic, to_string
// and to_json.
//
// unpack_dynamic() decodes every standard FoundationDB tuple type plus keyschema's desc (user
// type code 0x40). Other user type codes (0x41..0x4f) have an application-defined length: at top
// level such an element takes the rest of the input as raw bytes; inside a nested tuple or desc
// it is a decode_error. Decoding never reads out of bounds and bounds recursion depth.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/tuple_codes.hpp>
#include <keyschema/detail/utf8.hpp>
#include <keyschema/detail/tuple_error.hpp>
#include <keyschema/detail/tuple_float.hpp>
#include <keyschema/detail/tuple_int.hpp>
#include <keyschema/detail/tuple_reader.hpp>
#include <keyschema/detail/tuple_skip.hpp>
#include <keyschema/detail/tuple_string.hpp>
#include <keyschema/error.hpp>

#include <charconv>
#include <cmath>
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

inline void read_dynamic(std::string_view data, std::size_t& pos, bool nested, std::size_t base, unsigned depth,
                         tuple::element& e);

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

inline void append_hex(std::string& out, std::string_view raw) {
  constexpr char digits[] = "0123456789abcdef";
  for (char ch : raw) {
    const auto b = static_cast<std::uint8_t>(ch);
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
}

// Decimal digits of a big-endian unsigned magnitude of any length.
inline std::string big_decimal(std::string_view magnitude) {
  std::vector<std::uint8_t> n(magnitude.begin(), magnitude.end());
  std::string digits;
  for (;;) {
    std::size_t first = 0;
    while (first < n.size() && n[first] == 0) ++first;
    if (first == n.size()) break;
    unsigned rem = 0;
    for (std::size_t i = first; i < n.size(); ++i) {
      const unsigned cur = rem * 256 + n[i];
      n[i] = static_cast<std::uint8_t>(cur / 10);
      rem = cur % 10;
    }
    digits += static_cast<char>('0' + rem);
  }
  if (digits.empty()) digits = "0";
  return std::string(digits.rbegin(), digits.rend());
}

inline std::string format_uuid(std::string_view raw) {
  std::string s;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    append_hex(s, raw.substr(i, 1));
  }
  return s;
}

// Shortest round-trip text of a finite number; "nan", "inf", "-inf" otherwise. `single` formats
// as float.
inline std::string format_number(double v, bool single) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)) : std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

inline void append_quoted(std::string& out, std::string_view s, bool as_bytes) {
  constexpr char digits[] = "0123456789abcdef";
  if (as_bytes) out += 'b';
  out += '"';
  for (char ch : s) {
    const auto b = static_cast<std::uint8_t>(ch);
    switch (ch) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (b < 0x20 || b == 0x7f || (as_bytes && b >= 0x80)) {
      out += "\\x";
      out += digits[b >> 4];
      out += digits[b & 0xf];
    } else {
      out += ch;
    }
  }
  out += '"';
}

// A JSON string literal of s. Control characters are escaped; bytes that are not valid UTF-8
// become U+FFFD, so the output is always valid JSON.
inline void append_json_string(std::string& out, std::string_view s) {
  constexpr char digits[] = "0123456789abcdef";
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x80) {
      const std::size_t n = keyschema::detail::utf8_sequence_length(
          reinterpret_cast<const unsigned char*>(s.data()) + i, s.size() - i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    ++i;
    switch (b) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (b < 0x20) {
      out += "\\u00";
      out += digits[b >> 4];
      out += digits[b & 0xf];
    } else {
      out += static_cast<char>(b);
    }
  }
  out += '"';
}

inline void append_text(std::string& out, const tuple::element& e);

inline void append_text_list(std::string& out, const std::vector<tuple::element>& items) {
  out += '(';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ", ";
    append_text(out, items[i]);
  }
  if (items.size() == 1) out += ',';
  out += ')';
}

inline void append_text(std::string& out, const tuple::element& e) {
  using kind = tuple::element::kind;
  switch (e.type) {
    case kind::null: out += "null"; return;
    case kind::bytes: append_quoted(out, e.data, true); return;
    case kind::string: append_quoted(out, e.data, false); return;
    case kind::integer:
      if (e.negative && e.magnitude != 0) out += '-';
      out += std::to_string(e.magnitude);
      return;
    case kind::big_integer:
      if (e.negative) out += '-';
      out += big_decimal(e.data);
      return;
    case kind::float32: out += format_number(e.number, true) + "f"; return;
    case kind::float64: out += format_number(e.number, false); return;
    case kind::boolean: out += e.boolean ? "true" : "false"; return;
    case kind::uuid: out += format_uuid(e.data); return;
    case kind::id64:
      out += "id64(";
      append_hex(out, e.data);
      out += ')';
      return;
    case kind::versionstamp:
      out += "versionstamp(";
      append_hex(out, e.data);
      out += ')';
      return;
    case kind::tuple: append_text_list(out, e.children); return;
    case kind::desc:
      out += "desc(";
      if (!e.children.empty()) append_text(out, e.children.front());
      out += ')';
      return;
    case kind::user_type:
      out += "user_type(" + hex_byte(e.code) + ", ";
      append_quoted(out, e.data, true);
      out += ')';
      return;
  }
}

inline void append_json(std::string& out, const tuple::element& e);

inline void append_json_list(std::string& out, const std::vector<tuple::element>& items) {
  out += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ',';
    append_json(out, items[i]);
  }
  out += ']';
}

inline void append_json(std::string& out, const tuple::element& e) {
  using kind = tuple::element::kind;
  auto tagged_hex = [&](const char* tag, std::string_view raw) {
    out += "{\"";
    out += tag;
    out += "\":\"";
    append_hex(out, raw);
    out += "\"}";
  };
  switch (e.type) {
    case kind::null: out += "null"; return;
    case kind::bytes: tagged_hex("bytes", e.data); return;
    case kind::string: append_json_string(out, e.data); return;
    case kind::integer:
      if (e.negative && e.magnitude != 0) out += '-';
      out += std::to_string(e.magnitude);
      return;
    case kind::big_integer:
      out += "{\"int\":\"";
      if (e.negative) out += '-';
      out += big_decimal(e.data);
      out += "\"}";
      return;
    case kind::float32:
    case kind::float64: {
      const bool single = e.type == kind::float32;
      if (std::isfinite(e.number)) {
        out += format_number(e.number, single);
      } else {
        out += single ? "{\"float\":\"" : "{\"double\":\"";
        out += format_number(e.number, single);
        out += "\"}";
      }
      return;
    }
    case kind::boolean: out += e.boolean ? "true" : "false"; return;
    case kind::uuid: out += "{\"uuid\":\"" + format_uuid(e.data) + "\"}"; return;
    case kind::id64: tagged_hex("id64", e.data); return;
    case kind::versionstamp: tagged_hex("versionstamp", e.data); return;
    case kind::tuple: append_json_list(out, e.children); return;
    case kind::desc:
      out += "{\"desc\":";
      if (!e.children.empty())
        append_json(out, e.children.front());
      else
        out += "null";
      out += '}';
      return;
    case kind::user_type:
      out += "{\"user_type\":" + std::to_string(e.code) + ",\"bytes\":\"";
      append_hex(out, e.data);
      out += "\"}";
      return;
  }
}

}  // namespace detail

namespace tuple {

// Decodes every element of `in` without a schema.
// Throws decode_error: malformed bytes (truncated, unterminated, unknown type code, invalid
// UTF-8, nesting deeper than 100). An empty input is the empty tuple.
inline std::vector<element> unpack_dynamic(std::string_view in) {
  std::vector<element> out;
  std::size_t pos = 0;
  while (pos < in.size()) {
    out.emplace_back();
    detail::read_dynamic(in, pos, false, 0, 0, out.back());
  }
  return out;
}

// Python-like text: strings "..." (\\, \", \n, \r, \t, \xNN escaped; other UTF-8 as is),
// bytes b"..." (non-printable as \xNN), integers in decimal (any size), floats as shortest
// round-trip text with an f suffix for float32 (nan, inf, -inf), true/false, null, UUIDs as
// 8-4-4-4-12 lowercase hex, nested tuples as (a, b) and (a,), desc(x), versionstamp(hex),
// id64(hex), user_type(0x41, b"...").
inline std::string to_string(const element& e) {
  std::string out;
  detail::append_text(out, e);
  return out;
}

// The whole tuple as "(a, b, ...)" ("(a,)" for one element, "()" for none), e.g.
// ("DESTINATION", "queue-1", "MESSAGE_METADATA", 42).
inline std::string to_string(const std::vector<element>& items) {
  std::string out;
  detail::append_text_list(out, items);
  return out;
}

// JSON array: null, true/false, strings as JSON strings, integers as JSON numbers (beware:
// many JSON readers lose precision beyond 2^53), integers wider than 64 bits as
// {"int":"<decimal>"}, finite floats as numbers, non-finite as {"float":"nan"} /
// {"double":"-inf"}, byte strings as {"bytes":"<lowercase hex>"}, UUIDs as {"uuid":"8-4-4-4-12"},
// nested tuples as arrays, desc as {"desc":<element>}, versionstamps as
// {"versionstamp":"<hex>"}, id64 as {"id64":"<hex>"}, other user types as
// {"user_type":<code>,"bytes":"<hex>"}.
inline std::string to_json(const std::vector<element>& items) {
  std::string out;
  detail::append_json_list(out, items);
  return out;
}

}  // namespace tuple
KEYSCHEMA_END_NAMESPACE
