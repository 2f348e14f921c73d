// tests/fuzz/fuzz_support.hpp: what every fuzz target shares.
//
// Each target defines LLVMFuzzerTestOneInput and checks properties of the code under test, not
// only that it does not crash:
//   KEYSCHEMA_FUZZ_CHECK(cond, what)   a failed property prints `what` and the input in hex, then
//                                      aborts (libFuzzer saves the input as a crash file);
//   only_decode_errors(fn)             runs fn; returns true when it returned, false when it threw
//                                      keyschema::decode_error; any other exception is a failure
//                                      (an exception escaping the target aborts, which libFuzzer
//                                      reports);
//   json_valid(text)                   a strict RFC 8259 validator (one value, nothing after it),
//                                      for the JSON the dump tool and to_json() write.
// The same targets are linked with replay_main.cpp by the GCC builds, which run them over the
// seed corpus and the regression inputs (tests/fuzz/corpus/<target>/, tests/fuzz/regressions/).
//
// Thread-safety: single-threaded, like libFuzzer's callback.
#pragma once

#include <keyschema/error.hpp>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace keyschema::fuzz {

// The input of the current run, for failure reports (set by input_view()).
inline std::string_view& current_input() {
  static std::string_view in;
  return in;
}

inline std::string_view input_view(const std::uint8_t* data, std::size_t size) {
  current_input() = std::string_view(reinterpret_cast<const char*>(data), size);
  return current_input();
}

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "%s:%d: property failed: %s\ninput (%zu bytes):", file, line, what.c_str(),
               current_input().size());
  for (const char c : current_input()) std::fprintf(stderr, " %02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
  std::fprintf(stderr, "\n");
  std::abort();
}

#define KEYSCHEMA_FUZZ_CHECK(cond, what)                                      \
  do {                                                                        \
    if (!(cond)) ::keyschema::fuzz::fail(__FILE__, __LINE__, (what));        \
  } while (0)

template <class Fn>
bool only_decode_errors(Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const keyschema::decode_error&) {
    return false;
  }
}

inline std::string hex(std::string_view s) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

namespace detail {

struct json_parser {
  std::string_view s;
  std::size_t i = 0;
  unsigned depth = 0;

  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool lit(std::string_view w) {
    if (s.substr(i, w.size()) != w) return false;
    i += w.size();
    return true;
  }
  bool digits() {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  }
  bool number() {
    if (i < s.size() && s[i] == '-') ++i;
    if (i < s.size() && s[i] == '0') {
      ++i;
    } else if (!digits()) {
      return false;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      if (!digits()) return false;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (!digits()) return false;
    }
    return true;
  }
  // A string; control characters must be escaped and the bytes must be valid UTF-8.
  bool string() {
    if (!lit("\"")) return false;
    while (i < s.size()) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c == '"') {
        ++i;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++i;
        if (i >= s.size()) return false;
        const char e = s[i++];
        if (e == 'u') {
          for (int k = 0; k < 4; ++k, ++i)
            if (i >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return false;
        }
        continue;
      }
      if (c < 0x80) {
        ++i;
        continue;
      }
      std::size_t n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : 0;
      if (n == 0 || c > 0xf4) return false;
      ++i;
      for (std::size_t k = 0; k < n; ++k, ++i)
        if (i >= s.size() || (static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) return false;
    }
    return false;
  }
  bool value() {
    if (++depth > 200) return false;
    ws();
    bool ok = false;
    if (i >= s.size()) {
      ok = false;
    } else if (s[i] == '{') {
      ++i;
      ws();
      if (lit("}")) {
        ok = true;
      } else {
        for (;;) {
          ws();
          if (!string()) break;
          ws();
          if (!lit(":") || !value()) break;
          ws();
          if (lit("}")) {
            ok = true;
            break;
          }
          if (!lit(",")) break;
        }
      }
    } else if (s[i] == '[') {
      ++i;
      ws();
      if (lit("]")) {
        ok = true;
      } else {
        for (;;) {
          if (!value()) break;
          ws();
          if (lit("]")) {
            ok = true;
            break;
          }
          if (!lit(",")) break;
        }
      }
    } else if (s[i] == '"') {
      ok = string();
    } else if (lit("true") || lit("false") || lit("null")) {
      ok = true;
    } else {
      ok = number();
    }
    --depth;
    return ok;
  }
};

}  // namespace detail

// Whether text is exactly one JSON value (surrounding whitespace allowed).
inline bool json_valid(std::string_view text) {
  detail::json_parser p{text};
  if (!p.value()) return false;
  p.ws();
  return p.i == text.size();
}

}  // namespace keyschema::fuzz
