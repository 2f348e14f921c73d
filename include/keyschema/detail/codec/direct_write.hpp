// keyschema/detail/codec/direct_write.hpp: the fast path of tuple::pack_into and of key encoding
// (detail/schema/key_codec.hpp): elements written straight into a stack buffer, which is then
// appended to the output once, instead of growing the output element by element.
//
// It covers what most keys are made of: integers and plain ASCII text.
//   direct_value<D>   D is written this way: a tuple_integer, std::string, std::string_view or a
//                     char array.
//   direct_bound(v)   the most bytes direct_write(p, v) may touch at p (an integer stores 8 bytes
//                     after its type code, of which the next element overwrites those it does
//                     not use).
//   direct_write(p, v) writes v's element at p and advances p past it. Returns false (p is then
//                     unspecified) when the text holds a NUL or a byte above 0x7f: the general
//                     path (codec_traits<D>::encode) escapes or validates it. direct_write<false>
//                     writes a value that passed that check before, without it.
//   key_buffer        direct_room bytes on the caller's stack: a key written directly and only
//                     read (a point read's), which never goes into a string.
//   append_direct(out, vs...) appends the elements of vs... when each is written directly and
//                     their bounds fit 256 bytes; otherwise returns false having appended nothing.
// The bytes are exactly codec_traits<D>::encode's (tests/unit/tuple_roundtrip_test.cpp compares
// both paths). Stateless; thread-safe.
#pragma once

#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/detail/codec/tuple_int.hpp>
#include <keyschema/detail/codec/utf8.hpp>
#include <keyschema/detail/config.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

template <class D>
inline constexpr bool is_text_argument =
    std::is_same_v<D, std::string> || std::is_same_v<D, std::string_view> ||
    (std::is_array_v<D> && std::is_same_v<std::remove_extent_t<D>, char>);

template <class D>
concept direct_value = tuple_integer<D> || is_text_argument<D>;

template <direct_value D>
KEYSCHEMA_ALWAYS_INLINE std::size_t direct_bound(const D& a) noexcept {
  if constexpr (tuple_integer<D>)
    return 9;  // the type code and an 8-byte store
  else if constexpr (std::is_array_v<D>)
    return sizeof(a) + 2;
  else
    return a.size() + 2;
}

// Checked = false skips the text check, for a value already written with it (a scan's bounds
// hold their prefix twice: detail::scan_bounds::write_bounds).
template <bool Checked = true, direct_value D>
KEYSCHEMA_ALWAYS_INLINE bool direct_write(char*& p, const D& a) noexcept {
  if constexpr (tuple_integer<D>) {
    std::uint64_t bits = static_cast<std::uint64_t>(a);
    bool negative = false;
    if constexpr (std::is_signed_v<D>) negative = a < 0;
    unsigned n;
    if (negative) {
      n = byte_length(std::uint64_t{0} - bits);  // the magnitude's bytes
      *p = static_cast<char>(code::int_zero - n);
      bits = ~(std::uint64_t{0} - bits);
    } else {
      n = byte_length(bits);
      *p = static_cast<char>(code::int_zero + n);
    }
    // The n low bytes of bits, big-endian, then bytes the next element overwrites.
    const std::uint64_t be = to_big_endian(n == 0 ? 0 : bits << (64 - 8 * n));
    std::memcpy(p + 1, &be, 8);
    p += 1 + n;
    return true;
  } else if constexpr (std::is_array_v<D>) {
    const std::size_t n = sizeof(a) - (a[sizeof(a) - 1] == '\0' ? 1 : 0);  // a C string literal's terminator
    if (Checked && find_nul_or_non_ascii_inline(a, 0, n) != n) return false;
    *p++ = static_cast<char>(code::string);
    std::memcpy(p, a, sizeof(a));  // the whole array (a copy of known size); a terminator copied
    p += n;                        // with it is overwritten next
    *p++ = '\0';
    return true;
  } else {
    const std::size_t n = a.size();
    if (Checked && find_nul_or_non_ascii_inline(a.data(), 0, n) != n) return false;
    *p++ = static_cast<char>(code::string);
    std::memcpy(p, a.data(), n);
    p += n;
    *p++ = '\0';
    return true;
  }
}

// The stack buffer of append_direct and of key encoding.
inline constexpr std::size_t direct_room = 256;

// A key written on the direct path, on the caller's stack (detail/schema/key_codec.hpp
// write_key: a point read's key, never copied into a string).
struct key_buffer {
  char data[direct_room];
};

template <direct_value... D>
KEYSCHEMA_ALWAYS_INLINE bool append_direct(std::string& out, const D&... vs) {
  if ((direct_bound(vs) + ... + std::size_t{0}) > direct_room) return false;
  char buf[direct_room];
  char* p = buf;
  if (!(direct_write(p, vs) && ...)) return false;
  out.append(buf, static_cast<std::size_t>(p - buf));
  return true;
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
