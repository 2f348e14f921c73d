// keyschema/detail/tuple_string.hpp: byte strings (0x01) and UTF-8 strings (0x02).
//
// Encoding: type code, payload with every 0x00 written as 0x00 0xff, then a 0x00 terminator.
// Text (0x02) is validated as UTF-8 both when encoding (keyschema::error, so a key that could
// never be read back is never written) and when decoding (decode_error). Byte strings are not
// validated. Stateless; thread-safe.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/tuple_codes.hpp>
#include <keyschema/detail/tuple_reader.hpp>
#include <keyschema/detail/utf8.hpp>
#include <keyschema/error.hpp>

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// Appends a byte string element (0x01, escaped payload, 0x00) to out.
inline void append_bytes_element(std::string& out, std::string_view s) {
  out.push_back(static_cast<char>(code::bytes));
  const char* p = s.data();
  std::size_t n = s.size();
  while (n != 0) {
    const void* hit = std::memchr(p, 0, n);
    if (hit == nullptr) break;
    const std::size_t k = static_cast<std::size_t>(static_cast<const char*>(hit) - p) + 1;
    out.append(p, k);
    out.push_back('\xff');
    p += k;
    n -= k;
  }
  out.append(p, n);
  out.push_back('\0');
}

// Appends a UTF-8 string element (0x02, escaped payload, 0x00) to out.
// Throws keyschema::error if s is not valid UTF-8; out is then restored to its previous size.
inline void append_text_element(std::string& out, std::string_view s) {
  const std::size_t restore = out.size();
  out.push_back(static_cast<char>(code::string));
  const char* p = s.data();
  const std::size_t n = s.size();
  std::size_t i = 0;
  std::size_t flushed = 0;
  while (i < n) {
    if (n - i >= 8 && ascii_nonzero_word(p + i)) {  // the common case: 8 plain ASCII bytes
      i += 8;
      continue;
    }
    const auto c = static_cast<unsigned char>(p[i]);
    if (c == 0) {
      out.append(p + flushed, i + 1 - flushed);
      out.push_back('\xff');
      flushed = ++i;
      continue;
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(reinterpret_cast<const unsigned char*>(p + i), n - i);
    if (len == 0) {
      out.resize(restore);
      throw error("keyschema::codec<std::string>: invalid UTF-8 at byte " + std::to_string(i) +
                  " of the string; store binary data as keyschema::bytes");
    }
    i += len;
  }
  out.append(p + flushed, n - flushed);
  out.push_back('\0');
}

// Decodes an escaped payload element of type `type_code` from `in` (the type code included).
// `what` names the expected element in errors. With `validate_utf8`, each unescaped run is
// checked (a NUL always falls on a character boundary, so runs can be checked independently).
// Throws decode_error: wrong type code, unterminated payload, invalid UTF-8 (offset of the first
// invalid byte).
inline std::string read_escaped_element(tuple::reader& in, std::uint8_t type_code, const char* what,
                                        bool validate_utf8) {
  const std::string_view r = in.remaining();
  if (r.empty() || static_cast<std::uint8_t>(r[0]) != type_code) in.fail_unexpected(what);
  const std::size_t start = in.offset();
  std::string out;
  std::size_t pos = 1;
  for (;;) {
    const void* hit = pos < r.size() ? std::memchr(r.data() + pos, 0, r.size() - pos) : nullptr;
    if (hit == nullptr) in.fail_at(start, type_code == code::string ? "unterminated string" : "unterminated byte string");
    const std::size_t k = static_cast<std::size_t>(static_cast<const char*>(hit) - r.data());
    const std::string_view chunk = r.substr(pos, k - pos);
    if (validate_utf8) {
      const std::size_t bad = utf8_invalid_at(chunk);
      if (bad != std::string_view::npos) in.fail_at(start + pos + bad, "invalid UTF-8 in string");
    }
    const bool escaped = k + 1 < r.size() && static_cast<std::uint8_t>(r[k + 1]) == code::escape;
    if (pos == 1 && !escaped) {  // fast path: no embedded NUL
      out.assign(chunk);
      in.skip(k + 1);
      return out;
    }
    out.append(chunk);
    if (!escaped) {
      in.skip(k + 1);
      return out;
    }
    out.push_back('\0');
    pos = k + 2;
  }
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
