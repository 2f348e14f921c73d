// tests/support/hex.hpp: bytes as upper-case hex digits, two per byte, as the engines' own tools
// print and take them (RocksDB's ldb --hex after "0x", the sqlite3 shell's hex() and X'...').
#pragma once

#include <string>
#include <string_view>

namespace keyschema::testing {

inline std::string hex_digits(std::string_view bytes) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    out.push_back(digits[static_cast<unsigned char>(c) >> 4]);
    out.push_back(digits[static_cast<unsigned char>(c) & 15]);
  }
  return out;
}

}  // namespace keyschema::testing
