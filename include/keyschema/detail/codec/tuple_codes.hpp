// keyschema/detail/codec/tuple_codes.hpp: the FoundationDB tuple layer type codes keyschema uses.
//
// Source of truth: FoundationDB design/tuple.md. Constants only; no state.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstdint>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail::code {

inline constexpr std::uint8_t null = 0x00;
inline constexpr std::uint8_t bytes = 0x01;
inline constexpr std::uint8_t string = 0x02;
inline constexpr std::uint8_t nested = 0x05;
inline constexpr std::uint8_t neg_big_int = 0x0b;  // length byte (complemented), one's complement magnitude
inline constexpr std::uint8_t int_zero = 0x14;      // 0x0c..0x13 negative, 0x15..0x1c positive
inline constexpr std::uint8_t int_min = 0x0c;
inline constexpr std::uint8_t int_max = 0x1c;
inline constexpr std::uint8_t pos_big_int = 0x1d;  // length byte, big-endian magnitude
inline constexpr std::uint8_t float32 = 0x20;
inline constexpr std::uint8_t float64 = 0x21;
inline constexpr std::uint8_t false_value = 0x26;
inline constexpr std::uint8_t true_value = 0x27;
inline constexpr std::uint8_t uuid = 0x30;
inline constexpr std::uint8_t id64 = 0x31;            // reserved by FDB; decoded only by tools
inline constexpr std::uint8_t versionstamp80 = 0x32;  // reserved by FDB; decoded only by tools
inline constexpr std::uint8_t versionstamp96 = 0x33;
inline constexpr std::uint8_t desc = 0x40;  // first FDB user type code: keyschema's descending wrapper
inline constexpr std::uint8_t user_min = 0x40;
inline constexpr std::uint8_t user_max = 0x4f;
inline constexpr std::uint8_t escape = 0xff;

}  // namespace detail::code
KEYSCHEMA_END_NAMESPACE
