// keyschema/etcd/detail/base64.hpp: standard base64 (RFC 4648, with padding), the encoding of
// every key and value in etcd's v3 JSON gateway (protobuf `bytes` fields in JSON).
//
// Thread-safety: stateless functions.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace etcd_detail {

// Appends the base64 encoding of in to out. Errors: std::bad_alloc.
inline void base64_append(std::string& out, std::string_view in) {
  static constexpr char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  std::size_t n = in.size();
  out.reserve(out.size() + (n + 2) / 3 * 4);
  for (; n >= 3; n -= 3, p += 3) {
    const std::uint32_t v = (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2];
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
    out += table[(v >> 6) & 63];
    out += table[v & 63];
  }
  if (n == 1) {
    const std::uint32_t v = std::uint32_t{p[0]} << 16;
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
    out += "==";
  } else if (n == 2) {
    const std::uint32_t v = (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8);
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
    out += table[(v >> 6) & 63];
    out += '=';
  }
}

// Decodes base64 text (padding optional) into out (replacing its contents). Returns false on a
// character outside the alphabet or a length that cannot be base64. Errors: std::bad_alloc.
inline bool base64_decode(std::string_view in, std::string& out) {
  const auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return false;
  out.clear();
  out.reserve(in.size() / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    const int v = value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return true;
}

}  // namespace etcd_detail
KEYSCHEMA_END_NAMESPACE
