// keyschema/fixed_string.hpp: a string literal usable as a template argument.
//
// fixed_string<N> holds N-1 characters plus a terminating NUL, exactly like the array of the
// literal it is made from, so `lit<"DESTINATION">` and `field<"message_id", T>` deduce N from the
// literal. It is a structural type (public array member) and all of it is constexpr.
//
// Thread-safety: an immutable value.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE

template <std::size_t N>
struct fixed_string {
  char chars[N] = {};

  constexpr fixed_string(const char (&s)[N]) noexcept {  // NOLINT(google-explicit-constructor)
    for (std::size_t i = 0; i < N; ++i) chars[i] = s[i];
  }

  constexpr std::string_view view() const noexcept { return std::string_view(chars, N - 1); }
  static constexpr std::size_t size() noexcept { return N - 1; }

  template <std::size_t M>
  constexpr bool operator==(const fixed_string<M>& o) const noexcept {
    return view() == o.view();
  }
};

KEYSCHEMA_END_NAMESPACE
