// keyschema/detail/codec/tuple_float.hpp: IEEE binary floating point (float 0x20, double 0x21).
//
// Big-endian IEEE bits, then: sign bit clear -> flip the sign bit; sign bit set -> flip every bit.
// The bytes then sort in IEEE total order: -NaN < -inf < negatives < -0.0 < +0.0 < positives <
// +inf < +NaN (NaNs ordered by their payload bits). Bits are kept exactly, NaN payloads included.
// Stateless; thread-safe.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/detail/codec/tuple_int.hpp>
#include <keyschema/tuple_reader.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// Appends type_code and the order-transformed big-endian bits of v (Bits: its unsigned width).
template <class Bits, class Float>
inline void append_ieee_element(std::string& out, Float v, std::uint8_t type_code) {
  static_assert(sizeof(Bits) == sizeof(Float) && (sizeof(Bits) == 4 || sizeof(Bits) == 8));
  constexpr Bits sign = Bits{1} << (8 * sizeof(Bits) - 1);
  auto bits = std::bit_cast<Bits>(v);
  bits = (bits & sign) != 0 ? static_cast<Bits>(~bits) : static_cast<Bits>(bits ^ sign);
  char buf[1 + sizeof(Bits)];
  buf[0] = static_cast<char>(type_code);
  Bits be;
  if constexpr (sizeof(Bits) == 4) be = to_big_endian32(bits);
  else be = to_big_endian(bits);
  std::memcpy(buf + 1, &be, sizeof(Bits));
  out.append(buf, sizeof buf);
}

inline void append_float_element(std::string& out, float f) {
  append_ieee_element<std::uint32_t>(out, f, code::float32);
}

inline void append_double_element(std::string& out, double d) {
  append_ieee_element<std::uint64_t>(out, d, code::float64);
}

// Undoes the order transform on the raw bits.
constexpr std::uint32_t float_bits_from_key(std::uint32_t k) noexcept {
  return (k & 0x80000000u) != 0 ? k ^ 0x80000000u : ~k;
}
constexpr std::uint64_t double_bits_from_key(std::uint64_t k) noexcept {
  return (k & 0x8000000000000000ull) != 0 ? k ^ 0x8000000000000000ull : ~k;
}

// Throws decode_error: not a float element, truncated.
inline float read_float(tuple::reader& in) {
  if (in.at_end() || in.peek() != code::float32) in.fail_unexpected("float");
  const std::size_t start = in.offset();
  if (in.remaining().size() < 5) in.fail_at(start, "truncated float: needs 4 bytes after the type code");
  const std::string_view b = in.take(5);
  const auto k = static_cast<std::uint32_t>(load_big_endian(b.data() + 1, 4, 4));
  return std::bit_cast<float>(float_bits_from_key(k));
}

// Throws decode_error: not a double element, truncated.
inline double read_double(tuple::reader& in) {
  if (in.at_end() || in.peek() != code::float64) in.fail_unexpected("double");
  const std::size_t start = in.offset();
  if (in.remaining().size() < 9) in.fail_at(start, "truncated double: needs 8 bytes after the type code");
  const std::string_view b = in.take(9);
  return std::bit_cast<double>(double_bits_from_key(load_big_endian(b.data() + 1, 8, 8)));
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
