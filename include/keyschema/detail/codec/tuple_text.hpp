// keyschema/detail/codec/tuple_text.hpp: Python-like text of dynamically decoded tuple elements.
// Public through <keyschema/tuple_format.hpp> as keyschema::tuple::to_string; the key codec uses
// it to name a key in decode errors (describe_key), which is why it is apart from the JSON
// rendering, which only tools need.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/tuple_dynamic.hpp>
#include <keyschema/detail/codec/tuple_error.hpp>

#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

template <class = void>
inline void append_hex(std::string& out, std::string_view raw) {
  constexpr char digits[] = "0123456789abcdef";
  for (char ch : raw) {
    const auto b = static_cast<std::uint8_t>(ch);
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
}

// Decimal digits of a big-endian unsigned magnitude of any length.
template <class = void>
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

template <class = void>
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
// (The tests below are <cmath>'s isnan, signbit and isinf: the key codec includes this header,
// and <cmath> with its special functions would be parsed by every user of the store for them.)
template <class = void>
inline std::string format_number(double v, bool single) {
  if (v != v) return (std::bit_cast<std::uint64_t>(v) >> 63) != 0 ? "-nan" : "nan";
  if (v == std::numeric_limits<double>::infinity()) return "inf";
  if (v == -std::numeric_limits<double>::infinity()) return "-inf";
  char buf[64];
  const auto res = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)) : std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Appends the two-character escape of '"', '\\', '\n', '\r' or '\t' (the escapes of the tuple
// text and of JSON alike); false, appending nothing, for any other byte.
template <class = void>
inline bool append_short_escape(std::string& out, std::uint8_t b) {
  switch (b) {
    case '"': out += "\\\""; return true;
    case '\\': out += "\\\\"; return true;
    case '\n': out += "\\n"; return true;
    case '\r': out += "\\r"; return true;
    case '\t': out += "\\t"; return true;
    default: return false;
  }
}

// Appends prefix ("\\x", "\\u00") and b as two lowercase hex digits.
template <class = void>
inline void append_hex_escape(std::string& out, const char* prefix, std::uint8_t b) {
  constexpr char digits[] = "0123456789abcdef";
  out += prefix;
  out += digits[b >> 4];
  out += digits[b & 0xf];
}

template <class = void>
inline void append_quoted(std::string& out, std::string_view s, bool as_bytes) {
  if (as_bytes) out += 'b';
  out += '"';
  for (char ch : s) {
    const auto b = static_cast<std::uint8_t>(ch);
    if (append_short_escape(out, b)) continue;
    if (b < 0x20 || b == 0x7f || (as_bytes && b >= 0x80)) append_hex_escape(out, "\\x", b);
    else out += ch;
  }
  out += '"';
}

template <class = void>
inline void append_text(std::string& out, const tuple::element& e);

template <class = void>
inline void append_text_list(std::string& out, const std::vector<tuple::element>& items) {
  out += '(';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ", ";
    append_text(out, items[i]);
  }
  if (items.size() == 1) out += ',';
  out += ')';
}

template <class>
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

}  // namespace detail

namespace tuple {

// Python-like text: strings "..." (\\, \", \n, \r, \t, \xNN escaped; other UTF-8 as is),
// bytes b"..." (non-printable as \xNN), integers in decimal (any size), floats as shortest
// round-trip text with an f suffix for float32 (nan, inf, -inf), true/false, null, UUIDs as
// 8-4-4-4-12 lowercase hex, nested tuples as (a, b) and (a,), desc(x), versionstamp(hex),
// id64(hex), user_type(0x41, b"...").
template <class = void>
inline std::string to_string(const element& e) {
  std::string out;
  detail::append_text(out, e);
  return out;
}

// The whole tuple as "(a, b, ...)" ("(a,)" for one element, "()" for none), e.g.
// ("DESTINATION", "queue-1", "MESSAGE_METADATA", 42).
template <class = void>
inline std::string to_string(const std::vector<element>& items) {
  std::string out;
  detail::append_text_list(out, items);
  return out;
}

}  // namespace tuple
KEYSCHEMA_END_NAMESPACE
