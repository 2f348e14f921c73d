// keyschema/type_code_set.hpp: keyschema::type_code_set, a constexpr set of the 256
// possible first bytes of an encoded tuple element, which full codecs declare as type_codes.
// Also included by <keyschema/codec.hpp>.
//
// Schemas use it to prove at compile time that two key positions can never produce the same
// first byte (for example a literal string and an integer id), i.e. that keys of different
// layouts cannot collide or interleave.
// Thread-safety: a literal value type; all operations are constexpr and const.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstdint>

KEYSCHEMA_BEGIN_NAMESPACE

class type_code_set {
 public:
  constexpr type_code_set() noexcept = default;

  // Every byte 0x00..0xff.
  static constexpr type_code_set all() noexcept { return of(0x00, 0xff); }
  // The closed range [lo, hi]; empty when lo > hi.
  static constexpr type_code_set of(std::uint8_t lo, std::uint8_t hi) noexcept {
    type_code_set s;
    for (unsigned c = lo; c <= hi; ++c) s.words_[c / 64] |= std::uint64_t{1} << (c % 64);
    return s;
  }
  // The single byte c.
  static constexpr type_code_set of(std::uint8_t c) noexcept { return of(c, c); }

  constexpr bool contains(std::uint8_t c) const noexcept { return (words_[c / 64] >> (c % 64)) & 1u; }
  constexpr bool empty() const noexcept { return (words_[0] | words_[1] | words_[2] | words_[3]) == 0; }
  constexpr bool intersects(const type_code_set& o) const noexcept {
    return ((words_[0] & o.words_[0]) | (words_[1] & o.words_[1]) | (words_[2] & o.words_[2]) |
            (words_[3] & o.words_[3])) != 0;
  }
  // Smallest member. REQUIRES: !empty() (returns 0xff for the empty set).
  constexpr std::uint8_t min() const noexcept {
    for (unsigned c = 0; c < 256; ++c)
      if (contains(static_cast<std::uint8_t>(c))) return static_cast<std::uint8_t>(c);
    return 0xff;
  }
  // Largest member. REQUIRES: !empty() (returns 0x00 for the empty set).
  constexpr std::uint8_t max() const noexcept {
    for (unsigned c = 256; c-- > 0;)
      if (contains(static_cast<std::uint8_t>(c))) return static_cast<std::uint8_t>(c);
    return 0x00;
  }
  // Number of members.
  constexpr unsigned count() const noexcept {
    unsigned n = 0;
    for (unsigned c = 0; c < 256; ++c) n += contains(static_cast<std::uint8_t>(c)) ? 1u : 0u;
    return n;
  }

  constexpr type_code_set operator|(type_code_set o) const noexcept {
    for (int i = 0; i < 4; ++i) o.words_[i] |= words_[i];
    return o;
  }
  constexpr type_code_set operator&(type_code_set o) const noexcept {
    for (int i = 0; i < 4; ++i) o.words_[i] &= words_[i];
    return o;
  }
  // The set of complemented bytes {0xff - c : c in *this} (the first bytes under desc<T>'s
  // complement, used for the byte after the 0x40 code).
  constexpr type_code_set complemented() const noexcept {
    type_code_set s;
    for (unsigned c = 0; c < 256; ++c)
      if (contains(static_cast<std::uint8_t>(c))) s = s | of(static_cast<std::uint8_t>(0xff - c));
    return s;
  }

  friend constexpr bool operator==(const type_code_set& a, const type_code_set& b) noexcept {
    return a.words_[0] == b.words_[0] && a.words_[1] == b.words_[1] && a.words_[2] == b.words_[2] &&
           a.words_[3] == b.words_[3];
  }

 private:
  std::uint64_t words_[4] = {0, 0, 0, 0};
};

KEYSCHEMA_END_NAMESPACE
