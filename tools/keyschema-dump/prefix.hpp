// tools/keyschema-dump/prefix.hpp: the --prefix syntax of keyschema-dump, parsed into the
// tuple-encoded bytes every matching key starts with.
//
// A prefix is written the way keyschema-dump prints keys, so a key (or its leading part) copied
// from the output can be pasted back; the parentheses are optional:
//
//   "DESTINATION","queue-1"          ("DESTINATION", "queue-1")          (42,)
//
// Elements, separated by commas (spaces around them are ignored, a trailing comma is allowed):
//   "text"       a string (tuple code 0x02); must be valid UTF-8
//   b"\x00\xff"  a byte string (0x01)
//   42, -7       an integer, -2^63 .. 2^64-1
//   1.5, -2e10   a 64-bit float (0x21); nan, inf, -inf
//   1.5f         a 32-bit float (0x20); nanf, inff, -inff
//   true, false, null
// Escapes inside quotes: \\ \" \n \r \t \0 and \xNN (any byte; a string must still form valid
// UTF-8). Unquoted words are not strings: write "queue-1", not queue-1. Nested tuples, UUIDs and
// desc(...) are not supported in prefixes.
//
// The parsed prefix is the concatenation of the elements' encodings, so a key matches when its
// leading elements equal the prefix's elements: "queue-1" does not match "queue-10" (the string's
// terminator is part of the prefix), and the integer 4 does not match 42.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/tuple_format.hpp>
#include <keyschema/types.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

KEYSCHEMA_BEGIN_NAMESPACE
namespace dump {

// A command line keyschema-dump cannot act on: an unknown option, a missing or malformed
// argument, a --prefix that does not parse. what() says what is wrong and where. The tool exits
// with status 1.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

class prefix_parser {
 public:
  explicit prefix_parser(std::string_view text) noexcept : s_(text) {}

  std::string parse() {
    skip_ws();
    const bool paren = eat('(');
    skip_ws();
    if (!at_end() && !(paren && peek() == ')')) {
      for (;;) {
        element();
        skip_ws();
        if (!eat(',')) break;
        skip_ws();
        if (at_end() || peek() == ')') break;  // a trailing comma
      }
    }
    skip_ws();
    if (paren && !eat(')')) fail("expected ',' or ')'");
    skip_ws();
    if (!at_end()) fail(paren ? "unexpected text after ')'" : "expected ','");
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw usage_error("--prefix '" + std::string(s_) + "', column " + std::to_string(pos_ + 1) + ": " + what +
                      " (see keyschema-dump --help for the syntax)");
  }

  bool at_end() const noexcept { return pos_ >= s_.size(); }
  char peek() const noexcept { return s_[pos_]; }
  bool eat(char c) noexcept {
    if (at_end() || peek() != c) return false;
    ++pos_;
    return true;
  }
  void skip_ws() noexcept {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }
  static bool is_delimiter(char c) noexcept {
    return c == ',' || c == '(' || c == ')' || c == '"' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }

  static int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Reads a quoted text; pos_ is on the opening quote.
  std::string quoted() {
    const std::size_t open = pos_++;
    std::string v;
    for (;;) {
      if (at_end()) {
        pos_ = open;
        fail("unterminated quoted text");
      }
      const char c = s_[pos_++];
      if (c == '"') return v;
      if (c != '\\') {
        v += c;
        continue;
      }
      if (at_end()) fail("a '\\' ends the text");
      const char e = s_[pos_++];
      switch (e) {
        case '\\': v += '\\'; break;
        case '"': v += '"'; break;
        case 'n': v += '\n'; break;
        case 'r': v += '\r'; break;
        case 't': v += '\t'; break;
        case '0': v += '\0'; break;
        case 'x': {
          const int hi = pos_ < s_.size() ? hex_value(s_[pos_]) : -1;
          const int lo = pos_ + 1 < s_.size() ? hex_value(s_[pos_ + 1]) : -1;
          if (hi < 0 || lo < 0) fail("\\x needs two hexadecimal digits");
          v += static_cast<char>(hi * 16 + lo);
          pos_ += 2;
          break;
        }
        default:
          --pos_;
          fail(std::string("unknown escape '\\") + e + "' (known: \\\\ \\\" \\n \\r \\t \\0 \\xNN)");
      }
    }
  }

  void element() {
    const std::size_t start = pos_;
    if (peek() == '"') {
      std::string v = quoted();
      if (const std::size_t bad = keyschema::format::utf8_invalid_at(v); bad != std::string_view::npos) {
        pos_ = start;
        fail("the string is not valid UTF-8 (byte " + std::to_string(bad) + " of its value); write byte strings as b\"...\"");
      }
      tuple::pack_into(out_, v);
      return;
    }
    if (peek() == 'b' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '"') {
      ++pos_;
      tuple::pack_into(out_, bytes(quoted()));
      return;
    }
    while (!at_end() && !is_delimiter(peek())) ++pos_;
    const std::string_view word = s_.substr(start, pos_ - start);
    pos_ = start;  // errors point at the start of the word
    if (word.empty()) fail("expected an element");
    if (word == "true" || word == "false") {
      tuple::pack_into(out_, word == "true");
    } else if (word == "null") {
      tuple::pack_into(out_, nullptr);
    } else if (!integer(word) && !floating(word)) {
      fail("expected a quoted string, b\"bytes\", an integer, a float, true, false or null, found '" +
           std::string(word) + "' (quote text: \"" + std::string(word) + "\")");
    }
    pos_ = start + word.size();
  }

  // Appends word as an integer element when it is one. Fails when it is an integer out of range.
  bool integer(std::string_view word) {
    const bool negative = word.front() == '-';
    const std::string_view digits = word.substr(negative ? 1 : 0);
    if (digits.empty()) return false;
    for (char c : digits)
      if (c < '0' || c > '9') return false;
    std::uint64_t magnitude = 0;
    const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    constexpr std::uint64_t int64_min_magnitude = std::uint64_t{1} << 63;
    if (res.ec == std::errc::result_out_of_range || (negative && magnitude > int64_min_magnitude))
      fail("the integer " + std::string(word) + " is out of the range -2^63 .. 2^64-1");
    if (!negative) {
      tuple::pack_into(out_, magnitude);
    } else {
      // Two's complement negation of the magnitude: exact also for -2^63.
      tuple::pack_into(out_, static_cast<std::int64_t>(std::uint64_t{0} - magnitude));
    }
    return true;
  }

  // Appends word as a float element when it is one: a trailing 'f' selects 32 bits.
  bool floating(std::string_view word) {
    const char* first = word.data();
    const char* last = word.data() + word.size();
    if (word.size() > 1 && word.back() == 'f') {
      float f = 0;
      const auto res = std::from_chars(first, last - 1, f);
      if (res.ec == std::errc() && res.ptr == last - 1) {
        tuple::pack_into(out_, f);
        return true;
      }
    }
    double d = 0;
    const auto res = std::from_chars(first, last, d);
    if (res.ec == std::errc::result_out_of_range && res.ptr == last) fail("the number " + std::string(word) + " is out of range");
    if (res.ec != std::errc() || res.ptr != last) return false;
    tuple::pack_into(out_, d);
    return true;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::string out_;
};

}  // namespace detail

// Parses `text` (the syntax at the top of this file) into tuple-encoded bytes. An empty text,
// or "()", is the empty prefix, which every key matches.
// Errors: usage_error naming the column and what was expected.
inline std::string parse_prefix(std::string_view text) { return detail::prefix_parser(text).parse(); }

// The exclusive upper bound of the keys whose leading elements are the elements encoded in
// `prefix`: the prefix followed by 0xff. Every element's encoding starts with a type code below
// 0xff, so a key that continues the prefix with more elements sorts below it; a key whose bytes
// continue the prefix's LAST element instead (("a\0b",) after the prefix ("a",): 02 61 00 ff 62 00,
// where 00 ff is an escaped NUL inside the string) starts with prefix + 0xff and is excluded. The
// byte successor of the prefix (02 61 01) would include it. Empty for an empty prefix, which as
// a key_range upper bound means "no bound".
// REQUIRES: prefix is a concatenation of whole tuple elements (what parse_prefix returns).
inline std::string element_prefix_upper_bound(std::string_view prefix) {
  std::string upper(prefix);
  if (!upper.empty()) upper.push_back('\xff');
  return upper;
}

}  // namespace dump
KEYSCHEMA_END_NAMESPACE
