// keyschema/detail/codec/tuple_int.hpp: integers (type codes 0x0b..0x1d) and the byte-order helpers.
//
// Encoding is the shortest form: 0x14 is zero, 0x15..0x1c a positive value in 1..8 big-endian
// bytes, 0x0c..0x13 a negative value as the one's complement of its magnitude in 8..1 bytes.
// Typed decoding (read_integer) accepts only that shortest form, so one value has one encoding
// and a decoded key re-encodes to the stored bytes: a longer form, "-0" (13 ff) or the
// arbitrary-precision forms 0x1d / 0x0b of a value that fits 64 bits are decode errors (no
// FoundationDB binding writes them). read_integer_element (the schema-less decoder's) reads
// every form. Stateless; thread-safe.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/tuple_reader.hpp>

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// The integer types the tuple codec encodes as integers: every signed and unsigned integer type
// of at most 64 bits except bool and the character types (char, wchar_t, char8_t, char16_t,
// char32_t), which are text, not numbers. std::int8_t / std::uint8_t (signed/unsigned char) are
// integers.
template <class T>
concept tuple_integer = std::integral<T> && !std::same_as<T, bool> && !std::same_as<T, char> &&
                        !std::same_as<T, wchar_t> && !std::same_as<T, char8_t> && !std::same_as<T, char16_t> &&
                        !std::same_as<T, char32_t> && sizeof(T) <= 8;

inline std::uint64_t to_big_endian(std::uint64_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap64(v);
#else
    std::uint64_t r = 0;
    for (int i = 0; i < 8; ++i) r = (r << 8) | ((v >> (8 * i)) & 0xff);
    return r;
#endif
  } else {
    return v;
  }
}

inline std::uint32_t to_big_endian32(std::uint32_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap32(v);
#else
    return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
#endif
  } else {
    return v;
  }
}

// What an integer element of n value bytes (n = 0..8) allows, per n: `mask`, the low n bytes of
// a 64-bit word set (what a load of 8 bytes ending at the element's end keeps), and `min`, the
// least value whose shortest form takes n bytes (0 for n = 0, else 2^(8(n-1)): read from n bytes,
// a value below it had a leading zero byte). Table loads instead of shifts whose count depends
// on n, on a scan's every key.
struct int_length {
  std::uint64_t mask;
  std::uint64_t min;
};
inline constexpr int_length int_lengths[9] = {
    {0, 0},
    {0xff, 0x1},
    {0xffff, 0x100},
    {0xffffff, 0x10000},
    {0xffffffff, 0x1000000},
    {0xffffffffff, 0x100000000},
    {0xffffffffffff, 0x10000000000},
    {0xffffffffffffff, 0x1000000000000},
    {0xffffffffffffffff, 0x100000000000000},
};

// Number of bytes needed for v (0 for 0).
constexpr unsigned byte_length(std::uint64_t v) noexcept {
  return static_cast<unsigned>(71 - std::countl_zero(v)) / 8;  // countl_zero(0) == 64 -> 0
}

// Appends the type code and the low n bytes of `bits`, big-endian. (The code goes out on its
// own so that the copy of the value bytes reads only from the one 8-byte store that wrote them:
// a load spanning two stores would defeat store-to-load forwarding.)
inline void append_int_bytes(std::string& out, std::uint8_t type_code, std::uint64_t bits, unsigned n) {
  char buf[8];
  const std::uint64_t be = to_big_endian(bits);
  std::memcpy(buf, &be, 8);
  out.push_back(static_cast<char>(type_code));
  out.append(buf + 8 - n, n);
}

// Appends the element for a non-negative value.
inline void append_uint_element(std::string& out, std::uint64_t v) {
  const unsigned n = byte_length(v);
  append_int_bytes(out, static_cast<std::uint8_t>(code::int_zero + n), v, n);
}

// Appends the element for any int64 value.
inline void append_int_element(std::string& out, std::int64_t v) {
  if (v >= 0) {
    append_uint_element(out, static_cast<std::uint64_t>(v));
    return;
  }
  const std::uint64_t magnitude = std::uint64_t{0} - static_cast<std::uint64_t>(v);
  const unsigned n = byte_length(magnitude);
  // The low n bytes of ~magnitude are the one's complement of |v| in n bytes.
  append_int_bytes(out, static_cast<std::uint8_t>(code::int_zero - n), ~magnitude, n);
}

template <tuple_integer T>
inline void append_integer_element(std::string& out, T v) {
  if constexpr (std::is_signed_v<T>)
    append_int_element(out, static_cast<std::int64_t>(v));
  else
    append_uint_element(out, static_cast<std::uint64_t>(v));
}

// Reads n (0..8) big-endian bytes at p; `avail` >= n is the number of readable bytes at p.
inline std::uint64_t load_big_endian(const char* p, std::size_t n, std::size_t avail) noexcept {
  if (n == 0) return 0;
  if (avail >= 8) {  // one unaligned 8-byte load, then drop the bytes that follow the element
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    return to_big_endian(w) >> (64 - 8 * n);
  }
  // Near the end of the input (the last element of a key): at most two loads, never past p + n.
  if (n >= 4) {  // two overlapping 4-byte loads
    std::uint32_t hi, lo;
    std::memcpy(&hi, p, 4);
    std::memcpy(&lo, p + n - 4, 4);
    // Shifted, hi puts byte p[j] at the place lo puts it (the 8(n-1-j) bits), so the bytes both
    // loads read overlap with equal values and the two combine with a plain or.
    return (std::uint64_t{to_big_endian32(hi)} << (8 * (n - 4))) | to_big_endian32(lo);
  }
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

// The C type name used in overflow messages ("int8_t", "uint64_t", ...).
template <tuple_integer T>
constexpr const char* integer_c_name() noexcept {
  constexpr bool s = std::is_signed_v<T>;
  switch (sizeof(T)) {
    case 1: return s ? "int8_t" : "uint8_t";
    case 2: return s ? "int16_t" : "uint16_t";
    case 4: return s ? "int32_t" : "uint32_t";
    default: return s ? "int64_t" : "uint64_t";
  }
}

// A decoded integer as sign and magnitude; `fits64` is false when the magnitude needs more than
// 64 bits (only possible with the arbitrary-precision codes).
struct integer_value {
  bool negative = false;
  bool fits64 = true;
  std::uint64_t magnitude = 0;
};

// Slow path for 0x1d / 0x0b. REQUIRES: in.remaining()[0] is 0x1d or 0x0b.
inline integer_value read_big_integer(tuple::reader& in) {
  const std::size_t start = in.offset();
  const bool negative = in.take() == code::neg_big_int;
  if (in.at_end()) in.fail_at(start, "truncated integer: missing length byte");
  std::uint8_t len = in.take();
  if (negative) len = static_cast<std::uint8_t>(~len);
  if (in.remaining().size() < len)
    in.fail_at(start, "truncated integer: needs " + std::to_string(len) + " bytes after the length byte");
  std::string_view digits = in.take(len);
  const char lead_zero = negative ? '\xff' : '\0';  // a magnitude byte of 0
  std::size_t i = 0;
  while (i < digits.size() && digits[i] == lead_zero) ++i;
  digits.remove_prefix(i);
  integer_value v;
  v.negative = negative;
  if (digits.size() > 8) {
    v.fits64 = false;
    return v;
  }
  const std::uint64_t raw = load_big_endian(digits.data(), digits.size(), digits.size());
  if (!negative) {
    v.magnitude = raw;
  } else {
    const std::uint64_t mask = digits.size() == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * digits.size())) - 1;
    v.magnitude = ~raw & mask;
  }
  return v;
}

[[noreturn, gnu::cold, gnu::noinline]] inline void fail_truncated_integer(const tuple::reader& in, std::size_t n) {
  in.fail("truncated integer: needs " + std::to_string(n) + " bytes after the type code");
}

template <tuple_integer T>
[[noreturn, gnu::cold, gnu::noinline]] void fail_integer_overflow(const tuple::reader& in, std::size_t start) {
  in.fail_at(start, std::string("integer overflow: value does not fit ") + integer_c_name<T>());
}

// Consumes one integer element. Throws decode_error: not an integer, truncated.
inline integer_value read_integer_element(tuple::reader& in) {
  const std::string_view r = in.remaining();
  if (r.empty()) in.fail_unexpected("integer");
  const auto c = static_cast<std::uint8_t>(r[0]);
  if (c >= code::int_zero && c <= code::int_max) {
    const std::size_t n = c - code::int_zero;
    if (r.size() < 1 + n) fail_truncated_integer(in, n);
    integer_value v;
    v.magnitude = load_big_endian(r.data() + 1, n, r.size() - 1);
    in.skip(1 + n);
    return v;
  }
  if (c >= code::int_min && c < code::int_zero) {
    const std::size_t n = code::int_zero - c;
    if (r.size() < 1 + n) fail_truncated_integer(in, n);
    const std::uint64_t raw = load_big_endian(r.data() + 1, n, r.size() - 1);
    const std::uint64_t mask = n == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * n)) - 1;
    integer_value v;
    v.negative = true;
    v.magnitude = ~raw & mask;
    in.skip(1 + n);
    return v;
  }
  if (c == code::pos_big_int || c == code::neg_big_int) return read_big_integer(in);
  in.fail_unexpected("integer");
}

[[noreturn, gnu::cold, gnu::noinline]] inline void fail_noncanonical_integer(const tuple::reader& in, std::size_t start) {
  in.fail_at(start, "non-canonical integer: not the shortest encoding of its value");
}

// The general path of read_integer: every integer form, every overflow and canonical-form check.
template <tuple_integer T>
T read_integer_general(tuple::reader& in) {
  const std::size_t start = in.offset();
  const integer_value v = read_integer_element(in);
  using U = std::make_unsigned_t<T>;
  constexpr auto max_positive = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  // The shortest form is the type code and byte_length(magnitude) bytes; "-0" has none.
  const bool canonical = v.fits64 && in.offset() - start == 1 + byte_length(v.magnitude) &&
                         !(v.negative && v.magnitude == 0);
  if (v.fits64) {
    if (!v.negative || v.magnitude == 0) {
      if (v.magnitude <= max_positive) {
        if (!canonical) fail_noncanonical_integer(in, start);
        return static_cast<T>(v.magnitude);
      }
    } else if constexpr (std::is_signed_v<T>) {
      if (v.magnitude <= max_positive + 1) {
        if (!canonical) fail_noncanonical_integer(in, start);
        return static_cast<T>(static_cast<U>(U{0} - static_cast<U>(v.magnitude)));
      }
    }
  }
  fail_integer_overflow<T>(in, start);
}

// As load_big_endian, when `before` bytes before p may be read too: near the end of the input
// (the last element of a key) one 8-byte load that ends at p + n. REQUIRES: n <= 8.
inline std::uint64_t load_big_endian_before(const char* p, std::size_t n, std::size_t avail, std::size_t before) noexcept {
  if (n != 0 && avail < 8 && before + n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p + n - 8, 8);
    return to_big_endian(w) & int_lengths[n].mask;
  }
  return load_big_endian(p, n, avail);
}

// The fast path of read_integer: a non-negative value in at most sizeof(T) bytes, canonical
// (the common case for ids). True with out set and the element consumed; false, consuming
// nothing, for anything else (which read_integer_general decodes or refuses). Its type codes
// (0x14..0x1c) are all integer type codes.
template <tuple_integer T>
inline bool try_read_integer(tuple::reader& in, T& out) noexcept {
  const std::string_view r = in.remaining();
  if (r.empty()) return false;
  const unsigned n = static_cast<unsigned>(static_cast<std::uint8_t>(r[0])) - code::int_zero;  // wraps below 0x14
  if (n > sizeof(T) || r.size() <= n) return false;
  const std::uint64_t v = load_big_endian_before(r.data() + 1, n, r.size() - 1, in.consumed() + 1);
  if (v < int_lengths[n].min) return false;  // a leading zero byte: not the shortest form
  if (v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
  in.advance(1 + n);
  out = static_cast<T>(v);
  return true;
}

// As try_read_integer, for an element that must end the input (the last segment of a key),
// starting at byte pos of the whole input in: true only when the element is exactly the rest of
// the input, so the caller needs no end-of-input check. Its value bytes are one 8-byte load
// ending at the input's end whenever the whole input is at least 8 bytes long. False for
// anything else: a shorter or longer rest, another form or type code (which the general path
// decodes or refuses with the precise error), pos at or past the end.
// Long: the caller knows that the input is at least 8 bytes long whenever pos is before its end
// (the literals before the element take 7 bytes or more), so the 8-byte load needs no check.
template <bool Long = false, tuple_integer T>
KEYSCHEMA_ALWAYS_INLINE bool try_read_final_integer(std::string_view in, std::size_t pos, T& out) noexcept {
  // The element's value length is what the input leaves after the type code; the type code must
  // say exactly that. pos at or past the end wraps n to a huge value.
  const std::size_t n = in.size() - pos - 1;
  if (n > sizeof(T)) return false;
  const char* const r = in.data() + pos;
  if (static_cast<std::uint8_t>(r[0]) != code::int_zero + n) return false;
  std::uint64_t v;
  if (Long || in.size() >= 8) [[likely]] {
    std::uint64_t w;
    std::memcpy(&w, in.data() + in.size() - 8, 8);
    v = to_big_endian(w) & int_lengths[n].mask;  // 0 when n is 0
  } else {
    v = load_big_endian(r + 1, n, n);  // reads nothing when n is 0
  }
  if (v < int_lengths[n].min) return false;  // a leading zero byte: not the shortest form
  if (v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
  out = static_cast<T>(v);
  return true;
}

// The same on a reader: consumes the element when it takes it, nothing otherwise.
template <tuple_integer T>
KEYSCHEMA_ALWAYS_INLINE bool try_read_final_integer(tuple::reader& in, T& out) noexcept {
  const std::string_view r = in.remaining();
  const std::size_t pos = in.consumed();
  if (!try_read_final_integer(std::string_view(r.data() - pos, pos + r.size()), pos, out)) return false;
  in.advance(r.size());
  return true;
}

// Consumes one integer element and converts it to T.
// Throws decode_error: not an integer, truncated, or "integer overflow: value does not fit
// <type> at byte N" (N = offset of the element's type code).
template <tuple_integer T>
inline T read_integer(tuple::reader& in) {
  T v{};
  if (try_read_integer(in, v)) return v;
  return read_integer_general<T>(in);
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
