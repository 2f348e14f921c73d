// keyschema/detail/codec/tuple_skip.hpp: measures one encoded element without decoding it.
//
// Used by tuple::reader::skip_element, by the dynamic decoder and to find the extent of a
// desc<T> element. Works on a byte view XOR-ed with `mask` (0x00 for plain bytes, 0xff inside a
// desc<T> element, whose bytes are complemented), so descending elements of any depth can be
// measured in place. Never reads outside `data`. Stateless; thread-safe.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/detail/codec/tuple_error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// Deepest nesting (nested tuples and desc wrappers) the generic walkers accept from untrusted
// bytes; deeper input is a decode_error instead of a stack overflow.
inline constexpr unsigned max_nesting_depth = 100;

// Finds the end of a 0x00-terminated (0x00 0xff escaped) payload that starts at `pos` (just after
// the type code). Returns the offset just past the terminator, or std::string_view::npos when the
// payload is unterminated.
inline std::size_t find_escaped_end(std::string_view data, std::size_t pos, std::uint8_t mask) noexcept {
  const char zero = static_cast<char>(0x00 ^ mask);
  const std::uint8_t esc = static_cast<std::uint8_t>(0xff ^ mask);
  while (pos < data.size()) {
    const void* hit = std::memchr(data.data() + pos, zero, data.size() - pos);
    if (hit == nullptr) return std::string_view::npos;
    const std::size_t k = static_cast<std::size_t>(static_cast<const char*>(hit) - data.data());
    if (k + 1 < data.size() && static_cast<std::uint8_t>(data[k + 1]) == esc) {
      pos = k + 2;
      continue;
    }
    return k + 1;
  }
  return std::string_view::npos;
}

// Returns the offset just past the element that starts at data[pos] (bytes XOR-ed with `mask`).
// `nested` selects the in-tuple form of null (0x00 0xff). `base` is added to offsets in error
// messages.
// Throws decode_error: end of input, truncated element, unterminated string or tuple, unknown
// type code, a user type code other than 0x40 (its length is unknown), or nesting deeper than
// max_nesting_depth.
inline std::size_t element_end(std::string_view data, std::size_t pos, std::uint8_t mask, bool nested,
                               std::size_t base, unsigned depth = 0) {
  if (pos >= data.size()) throw_decode_error("expected a tuple element, found end of input", base + pos);
  const std::uint8_t c = static_cast<std::uint8_t>(static_cast<std::uint8_t>(data[pos]) ^ mask);
  auto fixed = [&](std::size_t n, const char* what) -> std::size_t {
    if (data.size() - pos < 1 + n)
      throw_decode_error(std::string("truncated ") + what + ": needs " + std::to_string(n) + " bytes after the type code",
                         base + pos);
    return pos + 1 + n;
  };
  switch (c) {
    case code::null:
      if (!nested) return pos + 1;
      if (pos + 1 < data.size() && static_cast<std::uint8_t>(static_cast<std::uint8_t>(data[pos + 1]) ^ mask) == 0xff)
        return pos + 2;
      throw_decode_error("expected a tuple element, found the end of the nested tuple", base + pos);
    case code::bytes:
    case code::string: {
      const std::size_t end = find_escaped_end(data, pos + 1, mask);
      if (end == std::string_view::npos)
        throw_decode_error(c == code::bytes ? "unterminated byte string" : "unterminated string", base + pos);
      return end;
    }
    case code::nested: {
      if (depth >= max_nesting_depth) throw_decode_error("nesting too deep", base + pos);
      std::size_t p = pos + 1;
      for (;;) {
        if (p >= data.size()) throw_decode_error("unterminated nested tuple", base + pos);
        const std::uint8_t b = static_cast<std::uint8_t>(static_cast<std::uint8_t>(data[p]) ^ mask);
        if (b == 0x00) {
          if (p + 1 < data.size() && static_cast<std::uint8_t>(static_cast<std::uint8_t>(data[p + 1]) ^ mask) == 0xff) {
            p += 2;
            continue;
          }
          return p + 1;
        }
        p = element_end(data, p, mask, true, base, depth + 1);
      }
    }
    case code::neg_big_int:
    case code::pos_big_int: {
      if (data.size() - pos < 2) throw_decode_error("truncated integer: missing length byte", base + pos);
      std::uint8_t len = static_cast<std::uint8_t>(static_cast<std::uint8_t>(data[pos + 1]) ^ mask);
      if (c == code::neg_big_int) len = static_cast<std::uint8_t>(~len);
      if (data.size() - pos < 2u + len)
        throw_decode_error("truncated integer: needs " + std::to_string(len) + " bytes after the length byte", base + pos);
      return pos + 2 + len;
    }
    case code::float32: return fixed(4, "float");
    case code::float64: return fixed(8, "double");
    case code::false_value:
    case code::true_value: return pos + 1;
    case code::uuid: return fixed(16, "uuid");
    case code::id64: return fixed(8, "64-bit identifier");
    case code::versionstamp80: return fixed(10, "versionstamp");
    case code::versionstamp96: return fixed(12, "versionstamp");
    case code::desc: {  // 0x40, complemented element, 0xff
      if (depth >= max_nesting_depth) throw_decode_error("nesting too deep", base + pos);
      const std::size_t end = element_end(data, pos + 1, static_cast<std::uint8_t>(mask ^ 0xff), false, base, depth + 1);
      if (end >= data.size() || static_cast<std::uint8_t>(static_cast<std::uint8_t>(data[end]) ^ mask) != 0xff)
        throw_decode_error("expected 0xff terminating the desc element", base + end);
      return end + 1;
    }
    default:
      if (c >= code::int_min && c <= code::int_max) {
        const std::size_t n = c >= code::int_zero ? c - code::int_zero : code::int_zero - c;
        return fixed(n, "integer");
      }
      if (c > code::user_min && c <= code::user_max)
        throw_decode_error("cannot measure user type code " + hex_byte(c) + " (its length is application-defined)", base + pos);
      throw_decode_error("unknown type code " + hex_byte(c), base + pos);
  }
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
