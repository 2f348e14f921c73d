// expect: keyschema::keyspace: the type_codes of keyschema::codec<Codec> .*include 0xFF
// A codec claiming elements that start with 0xFF, the byte the literal escape (00 FF) and the
// schema check rely on no element starting with. The control uses an FDB user type code.
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace app {
struct flag {
  bool on;
};
}  // namespace app

template <>
struct keyschema::codec<app::flag> {
  static constexpr std::string_view name = "flag";
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  static constexpr std::uint8_t code = 0xff;
#else
  static constexpr std::uint8_t code = 0x41;
#endif
  static constexpr type_code_set type_codes = type_code_set::of(code);
  static void encode(std::string& out, const app::flag& f) {
    out.push_back(static_cast<char>(code));
    out.push_back(f.on ? '\x01' : '\x00');
  }
  static app::flag decode(tuple::reader& in) {
    if (in.at_end() || in.peek() != code) in.fail_unexpected("flag");
    return {in.take(2)[1] != '\0'};
  }
};

namespace ks = keyschema;
using flags = ks::keyspace<"flags", std::string, ks::lit<"F">, ks::field<"f", app::flag>>;

int main() {
  ks::store<ks::schema<flags>, ks::memory_backend> db;
  return db.contains<flags>({app::flag{true}}) ? 1 : 0;
}
