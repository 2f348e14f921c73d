// keyschema/tuple_format.hpp: rendering of schema-less tuples as text and JSON, for tools.
//
// tuple::to_string() gives Python-like text and tuple::to_json() a JSON array of the elements
// tuple::unpack_dynamic() decodes (<keyschema/tuple.hpp>). The text helpers below are the ones
// keyschema-dump prints with (lowercase hex, JSON string literals, UTF-8 checks). Optional: the
// store and the codecs do not include this header.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/tuple_dynamic.hpp>
#include <keyschema/detail/codec/tuple_error.hpp>
#include <keyschema/detail/codec/tuple_text.hpp>
#include <keyschema/detail/codec/utf8.hpp>
#include <keyschema/tuple.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// A JSON string literal of s. Control characters are escaped; bytes that are not valid UTF-8
// become U+FFFD, so the output is always valid JSON.
template <class = void>
inline void append_json_string(std::string& out, std::string_view s) {
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
    if (append_short_escape(out, b)) continue;
    if (b < 0x20) append_hex_escape(out, "\\u00", b);
    else out += static_cast<char>(b);
  }
  out += '"';
}

template <class = void>
inline void append_json(std::string& out, const tuple::element& e);

template <class = void>
inline void append_json_list(std::string& out, const std::vector<tuple::element>& items) {
  out += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ',';
    append_json(out, items[i]);
  }
  out += ']';
}

template <class>
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
      // Finite: neither NaN nor an infinity (<cmath>'s isfinite, without <cmath>: see
      // format_number in detail/codec/tuple_text.hpp).
      if (e.number == e.number && e.number != std::numeric_limits<double>::infinity() &&
          e.number != -std::numeric_limits<double>::infinity()) {
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

// JSON array: null, true/false, strings as JSON strings, integers as JSON numbers (beware:
// many JSON readers lose precision beyond 2^53), integers wider than 64 bits as
// {"int":"<decimal>"}, finite floats as numbers, non-finite as {"float":"nan"} /
// {"double":"-inf"}, byte strings as {"bytes":"<lowercase hex>"}, UUIDs as {"uuid":"8-4-4-4-12"},
// nested tuples as arrays, desc as {"desc":<element>}, versionstamps as
// {"versionstamp":"<hex>"}, id64 as {"id64":"<hex>"}, other user types as
// {"user_type":<code>,"bytes":"<hex>"}.
template <class = void>
inline std::string to_json(const std::vector<element>& items) {
  std::string out;
  detail::append_json_list(out, items);
  return out;
}

}  // namespace tuple

namespace format {

// Appends the lowercase hex digits of every byte of `raw` to `out` (two per byte).
// Errors: std::bad_alloc only.
template <class = void>
inline void append_hex(std::string& out, std::string_view raw) { detail::append_hex(out, raw); }

// "0x" and the two lowercase hex digits of `b`, e.g. "0x4f". Errors: std::bad_alloc only.
template <class = void>
inline std::string hex_byte(std::uint8_t b) { return detail::hex_byte(b); }

// Appends `s` as a JSON string literal: control characters escaped, bytes that are not valid
// UTF-8 replaced by U+FFFD, so the output is always valid JSON. Errors: std::bad_alloc only.
template <class = void>
inline void append_json_string(std::string& out, std::string_view s) { detail::append_json_string(out, s); }

// Offset of the first byte of `s` that is not part of valid UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF), or std::string_view::npos when all of `s` is valid.
template <class = void>
inline std::size_t utf8_invalid_at(std::string_view s) noexcept { return detail::utf8_invalid_at(s); }

}  // namespace format
KEYSCHEMA_END_NAMESPACE
