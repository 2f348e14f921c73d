// expect: keyschema::codec<std::optional<T>>: T can itself encode as null
// An optional whose value type can encode as null would make "empty" and "holds null"
// indistinguishable; encoding it is rejected.
#include <keyschema/tuple.hpp>

#include <cstdint>
#include <optional>
#include <string>

int main() {
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  const std::string key = keyschema::tuple::pack(std::optional<std::optional<std::int64_t>>(std::nullopt));
#else
  const std::string key = keyschema::tuple::pack(std::optional<std::tuple<std::optional<std::int64_t>>>(std::nullopt));
#endif
  return key.empty() ? 1 : 0;
}
