// keyschema/detail/codec/tuple_string.hpp: byte strings (0x01) and UTF-8 strings (0x02).
//
// Encoding: type code, payload with every 0x00 written as 0x00 0xff, then a 0x00 terminator.
// Text (0x02) is validated as UTF-8 both when encoding (encode_error; key_codec turns it into a
// key_error naming the keyspace and field; so a key that could never be read back is never written) and when decoding (decode_error), in the same 8-bytes-at-
// a-time pass that looks for NULs. Byte strings are not validated. Stateless; thread-safe.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/detail/codec/string_assign.hpp>
#include <keyschema/tuple_reader.hpp>
#include <keyschema/detail/codec/utf8.hpp>
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

// Appends 0x02, s, 0x00. REQUIRES: s holds no NUL.
inline void append_clean_text(std::string& out, const char* s, std::size_t n) {
  out.push_back(static_cast<char>(code::string));
  out.append(s, n);
  out.push_back('\0');
}

// The general path of append_text_element: NULs to escape and/or non-ASCII text to validate,
// starting with the byte at i.
[[gnu::noinline]] inline void append_text_element_general(std::string& out, std::string_view s, std::size_t i) {
  const char* p = s.data();
  const std::size_t n = s.size();
  const std::size_t restore = out.size();
  out.push_back(static_cast<char>(code::string));
  std::size_t flushed = 0;
  while (i < n) {
    if (p[i] == '\0') {
      out.append(p + flushed, i + 1 - flushed);
      out.push_back('\xff');
      flushed = ++i;
    } else {
      const std::size_t len = utf8_sequence_length(reinterpret_cast<const unsigned char*>(p + i), n - i);
      if (len == 0) {
        out.resize(restore);
        throw encode_error("keyschema::codec<std::string>: invalid UTF-8 at byte " + std::to_string(i) +
                           " of the string; store binary data as keyschema::bytes");
      }
      i += len;
    }
    i = find_nul_or_non_ascii(p, i, n);
  }
  out.append(p + flushed, n - flushed);
  out.push_back('\0');
}

// Appends a UTF-8 string element (0x02, escaped payload, 0x00) to out.
// Throws encode_error if s is not valid UTF-8; out is then restored to its previous size.
inline void append_text_element(std::string& out, std::string_view s) {
  const std::size_t i = find_nul_or_non_ascii(s.data(), 0, s.size());
  if (i == s.size())  // the common case: plain ASCII without NUL
    append_clean_text(out, s.data(), s.size());
  else
    append_text_element_general(out, s, i);
}

// Appends a UTF-8 string element for a C string held in a char array: the characters up to the
// first NUL, or all N when there is none. Throws as append_text_element.
template <std::size_t N>
inline void append_char_array_element(std::string& out, const char (&v)[N]) {
  if constexpr (N > 0) {
    if (v[N - 1] == '\0' && find_nul_or_non_ascii(v, 0, N - 1) == N - 1) {  // a plain ASCII literal
      append_clean_text(out, v, N - 1);
      return;
    }
  }
  const void* nul = std::memchr(v, 0, N);
  append_text_element(out, std::string_view(v, nul == nullptr ? N : static_cast<std::size_t>(static_cast<const char*>(nul) - v)));
}

// The common case of a byte string element r (its type code checked by the caller): the first
// NUL after the type code is the terminator, not an escaped NUL. Returns its offset k (the
// payload is then r[1, k)), or 0 for the general path (an escaped NUL, or no terminator).
inline std::size_t plain_bytes_end(std::string_view r) noexcept {
  const void* hit = r.size() > 1 ? std::memchr(r.data() + 1, 0, r.size() - 1) : nullptr;
  if (hit == nullptr) return 0;
  const std::size_t k = static_cast<std::size_t>(static_cast<const char*>(hit) - r.data());
  return k + 1 < r.size() && static_cast<std::uint8_t>(r[k + 1]) == code::escape ? 0 : k;
}

// Decodes a byte string element (0x01 ...) from `in`, type code included, into out (assigned:
// its capacity is reused). Throws decode_error: wrong type code, unterminated payload; out is
// then unspecified.
inline void read_bytes_element_into(tuple::reader& in, std::string& out) {
  const std::string_view r = in.remaining();
  if (r.empty() || static_cast<std::uint8_t>(r[0]) != code::bytes) in.fail_unexpected("byte string");
  if (const std::size_t k = plain_bytes_end(r)) {
    in.skip(k + 1);
    assign_reusing(out, std::string_view(r.data() + 1, k - 1));
    return;
  }
  const std::size_t start = in.offset();
  out.clear();
  for (std::size_t pos = 1;;) {
    const void* hit = pos < r.size() ? std::memchr(r.data() + pos, 0, r.size() - pos) : nullptr;
    if (hit == nullptr) in.fail_at(start, "unterminated byte string");
    const std::size_t k = static_cast<std::size_t>(static_cast<const char*>(hit) - r.data());
    out.append(r.data() + pos, k - pos);
    if (!(k + 1 < r.size() && static_cast<std::uint8_t>(r[k + 1]) == code::escape)) {
      in.skip(k + 1);
      return;
    }
    out.push_back('\0');
    pos = k + 2;
  }
}

// Decodes a byte string element (0x01 ...) from `in`, type code included.
// Throws decode_error: wrong type code, unterminated payload.
inline std::string read_bytes_element(tuple::reader& in) {
  const std::string_view r = in.remaining();
  if (!r.empty() && static_cast<std::uint8_t>(r[0]) == code::bytes) {
    // The common case: the new string is built from the payload at once (an assignment to an
    // empty string would take std::string's general replace).
    if (const std::size_t k = plain_bytes_end(r)) {
      in.skip(k + 1);
      return std::string(r.data() + 1, k - 1);
    }
  }
  std::string out;
  read_bytes_element_into(in, out);
  return out;
}

// The common case of a text element: its first NUL or non-ASCII byte, at offset i of the element
// p[0, n), is an unescaped NUL (the terminator). The text is then p[1, i), plain ASCII.
inline bool plain_text_at(const char* p, std::size_t n, std::size_t i) noexcept {
  return i < n && p[i] == '\0' && !(i + 1 < n && static_cast<std::uint8_t>(p[i + 1]) == code::escape);
}

// Decodes a UTF-8 string element (0x02 ...) from `in`, type code included, validating the
// text in the same pass that finds the terminator, into out (assigned: its capacity is reused).
// Throws decode_error: wrong type code, unterminated string, invalid UTF-8 (at the offset of
// the first invalid byte); out is then unspecified.
inline void read_text_element_into(tuple::reader& in, std::string& out) {
  const std::string_view r = in.remaining();
  if (r.empty() || static_cast<std::uint8_t>(r[0]) != code::string) in.fail_unexpected("string");
  const std::size_t start = in.offset();
  const char* p = r.data();
  const std::size_t n = r.size();
  std::size_t i = find_nul_or_non_ascii_inline(p, 1, n);
  if (plain_text_at(p, n, i)) {
    in.skip(i + 1);
    assign_reusing(out, std::string_view(p + 1, i - 1));
    return;
  }
  out.clear();
  std::size_t flushed = 1;
  for (;;) {
    if (i == n) in.fail_at(start, "unterminated string");
    if (p[i] == '\0') {
      const bool escaped = i + 1 < n && static_cast<std::uint8_t>(p[i + 1]) == code::escape;
      if (!escaped) {
        out.append(p + flushed, i - flushed);
        in.skip(i + 1);
        return;
      }
      out.append(p + flushed, i + 1 - flushed);  // keeps one NUL
      flushed = i + 2;
      i = find_nul_or_non_ascii(p, i + 2, n);
      continue;
    }
    const std::size_t len = utf8_sequence_length(reinterpret_cast<const unsigned char*>(p + i), n - i);
    if (len == 0) in.fail_at(start + i, "invalid UTF-8 in string");
    i = find_nul_or_non_ascii(p, i + len, n);
  }
}

// Decodes a UTF-8 string element as read_text_element_into does, into a new string.
inline std::string read_text_element(tuple::reader& in) {
  const std::string_view r = in.remaining();
  if (!r.empty() && static_cast<std::uint8_t>(r[0]) == code::string) {
    // The common case: the new string is built from the text at once (an assignment to an
    // empty string would take std::string's general replace).
    const std::size_t i = find_nul_or_non_ascii_inline(r.data(), 1, r.size());
    if (plain_text_at(r.data(), r.size(), i)) {
      in.skip(i + 1);
      return std::string(r.data() + 1, i - 1);
    }
  }
  std::string out;
  read_text_element_into(in, out);
  return out;
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
