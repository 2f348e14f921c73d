// expect: keyschema::keyspace: the key codec of Codec .*declares no type_codes
// A full codec (its own encode/decode) without type_codes: scans could not tell another
// keyspace's key (or the schema record) from a damaged one. The control declares them.
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace app {
struct point {
  std::int32_t x;
};
}  // namespace app

template <>
struct keyschema::codec<app::point> {
  static constexpr std::string_view name = "point";
#ifdef KEYSCHEMA_COMPILE_FAIL_CONTROL
  static constexpr type_code_set type_codes = codec_traits<std::int32_t>::type_codes();
#endif
  static void encode(std::string& out, const app::point& p) { codec_traits<std::int32_t>::encode(out, p.x); }
  static app::point decode(tuple::reader& in) { return {codec_traits<std::int32_t>::decode(in)}; }
};

namespace ks = keyschema;
using points = ks::keyspace<"points", std::string, ks::field<"p", app::point>>;

int main() {
  ks::store<ks::schema<points>, ks::memory_backend> db;
  return db.contains<points>({app::point{1}}) ? 1 : 0;
}
