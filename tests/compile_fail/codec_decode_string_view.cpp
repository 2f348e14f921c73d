// expect: keyschema::tuple::unpack: this type can be encoded but not decoded
// std::string_view encodes like std::string but cannot be decoded (an escaped string has no
// contiguous unescaped bytes to view); unpack says to decode into std::string.
#include <keyschema/tuple.hpp>

#include <string>
#include <string_view>

int main() {
  const std::string key = keyschema::tuple::pack(std::string_view("queue-1"));
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  const auto [name] = keyschema::tuple::unpack<std::string_view>(key);
#else
  const auto [name] = keyschema::tuple::unpack<std::string>(key);
#endif
  return name.size() == 7 ? 0 : 1;
}
