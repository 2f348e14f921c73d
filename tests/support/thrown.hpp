// tests/support/thrown.hpp: catching one exception type to inspect it in a test.
//
// keyschema::testing::thrown<E>(f) runs f and returns the exception of type E it threw, or
// std::nullopt when f returned normally; an exception of another type propagates, so the test
// fails with its message. contains(haystack, needle) is the substring check used on what().
//
// Thread-safety: stateless.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

namespace keyschema::testing {

template <class E, class F>
std::optional<E> thrown(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e;
  }
  return std::nullopt;
}

inline bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace keyschema::testing
