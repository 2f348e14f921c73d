// tests/unit/tuple_test_util.hpp: small helpers shared by the tuple codec tests (byte literals,
// hex rendering, unsigned byte comparison).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace tuple_test {

// Bytes from a list of values 0..255.
inline std::string B(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(static_cast<unsigned char>(b)));
  return s;
}

// Concatenation of byte pieces and string pieces: S("\x02", "hello", "\x00") etc. are awkward
// with NULs, so tests build keys with B() + std::string("text").
inline std::string hex(std::string_view s) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    if (!out.empty()) out += ' ';
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

// Lexicographic comparison by unsigned bytes (std::string compares char, which may be signed).
inline int compare_bytes(std::string_view a, std::string_view b) {
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(a[i]);
    const auto y = static_cast<unsigned char>(b[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

}  // namespace tuple_test
