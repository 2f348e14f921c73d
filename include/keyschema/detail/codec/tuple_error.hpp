// keyschema/detail/codec/tuple_error.hpp: how the tuple codec formats and raises decode_error.
//
// Every message ends with " at byte N", N being the offset of the offending byte in the decoded
// input (plus the reader's base offset). Stateless; thread-safe.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// "0x1d" for 0x1d.
inline std::string hex_byte(std::uint8_t b) {
  constexpr char digits[] = "0123456789abcdef";
  std::string s = "0x";
  s += digits[b >> 4];
  s += digits[b & 0xf];
  return s;
}

// Throws decode_error("<what> at byte <offset>").
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_decode_error(std::string_view what, std::size_t offset) {
  std::string msg(what);
  msg += " at byte ";
  msg += std::to_string(offset);
  throw decode_error(msg);
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
