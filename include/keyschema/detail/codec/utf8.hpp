// keyschema/detail/codec/utf8.hpp: strict UTF-8 validation (RFC 3629).
//
// Rejects overlong forms, UTF-16 surrogates (U+D800..U+DFFF), code points above U+10FFFF, stray
// continuation bytes and truncated sequences. Pure functions; thread-safe; never read outside
// the given range.
#pragma once

#include <keyschema/detail/config.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// Length (2..4) of the valid multi-byte sequence starting at p, or 0 if it is invalid or
// truncated. REQUIRES: avail >= 1 and p[0] >= 0x80.
inline std::size_t utf8_sequence_length(const unsigned char* p, std::size_t avail) noexcept {
  const unsigned char c = p[0];
  auto cont = [&](std::size_t i, unsigned char lo = 0x80, unsigned char hi = 0xbf) {
    return i < avail && p[i] >= lo && p[i] <= hi;
  };
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;            // no overlongs
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;      // no surrogates
  if (c >= 0xe1 && c <= 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;  // no overlongs
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;  // <= U+10FFFF
  return 0;  // continuation byte, 0xc0/0xc1 (overlong), 0xf5..0xff
}

// For the 8 bytes at p: a mask with bit 7 of byte k set when byte k is 0x00 or >= 0x80, exact
// for the lowest flagged byte (a borrow only propagates upward from a 0x00 byte). Zero when all
// 8 bytes are in 0x01..0x7f (ASCII without NUL).
inline std::uint64_t special_byte_mask(const char* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return ((w - 0x0101010101010101ull) | w) & 0x8080808080808080ull;
}

// special_byte_mask for the 4 bytes at p.
inline std::uint32_t special_byte_mask32(const char* p) noexcept {
  std::uint32_t w;
  std::memcpy(&w, p, 4);
  return ((w - 0x01010101u) | w) & 0x80808080u;
}

#if defined(__SSE2__)
// special_byte_mask for the 16 bytes at p, one bit per byte (bit k for byte k).
inline unsigned special_byte_mask16(const char* p) noexcept {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(x, _mm_cmpeq_epi8(x, _mm_setzero_si128()))));
}
#endif

// Index of the first byte in p[from, n) that is 0x00 or >= 0x80, or n if there is none.
// Reads 16 bytes at a time where SSE2 is available, else 8 (never outside p[0, n)). Always
// inlined: the encoders' fast path (direct_write.hpp) checks short keys with it, where a call
// cost as much as the check (pack_into of a 4-element key: 249 -> 160 instructions), and the
// text decoders' common case (tuple_string.hpp) finds a key's text terminator with it; other
// callers use find_nul_or_non_ascii below.
KEYSCHEMA_ALWAYS_INLINE std::size_t find_nul_or_non_ascii_inline(const char* p, std::size_t from, std::size_t n) noexcept {
  std::size_t i = from;
#if defined(__SSE2__)
  if (n - i >= 16) {
    do {
      if (const unsigned m = special_byte_mask16(p + i); m != 0) return i + static_cast<std::size_t>(std::countr_zero(m));
      i += 16;
    } while (n - i >= 16);
    if (i == n) return n;
    const unsigned m = special_byte_mask16(p + n - 16);  // the tail: bytes before i are known clean
    return m == 0 ? n : n - 16 + static_cast<std::size_t>(std::countr_zero(m));
  }
#endif
  if constexpr (std::endian::native == std::endian::little) {
    for (; n - i >= 8; i += 8)
      if (const std::uint64_t m = special_byte_mask(p + i); m != 0) return i + static_cast<std::size_t>(std::countr_zero(m)) / 8;
    if (i == n) return n;
    if (n - from >= 8) {  // the tail: one overlapping load; bytes before i are already known clean
      const std::uint64_t m = special_byte_mask(p + n - 8);
      return m == 0 ? n : n - 8 + static_cast<std::size_t>(std::countr_zero(m)) / 8;
    }
    if (n - i >= 4) {  // short strings: two overlapping 4-byte loads
      if (const std::uint32_t m = special_byte_mask32(p + i); m != 0) return i + static_cast<std::size_t>(std::countr_zero(m)) / 8;
      const std::uint32_t m = special_byte_mask32(p + n - 4);
      return m == 0 ? n : n - 4 + static_cast<std::size_t>(std::countr_zero(m)) / 8;
    }
  }
  for (; i < n; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c == 0 || c >= 0x80) return i;
  }
  return n;
}

// As find_nul_or_non_ascii_inline, left to the compiler to inline (decoders, long text).
inline std::size_t find_nul_or_non_ascii(const char* p, std::size_t from, std::size_t n) noexcept {
  return find_nul_or_non_ascii_inline(p, from, n);
}

// Index of the first byte of the first invalid sequence in s, or std::string_view::npos when s
// is valid UTF-8. NUL bytes are valid.
inline std::size_t utf8_invalid_at(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  for (;;) {
    i = find_nul_or_non_ascii(s.data(), i, n);
    if (i == n) return std::string_view::npos;
    if (p[i] == 0) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(p + i, n - i);
    if (len == 0) return i;
    i += len;
  }
}

inline bool utf8_valid(std::string_view s) noexcept { return utf8_invalid_at(s) == std::string_view::npos; }

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
