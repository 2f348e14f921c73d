// expect: meta.*redeclared as different kind of entity
// Known limit: keyschema's scans are range-v3 views, and range-v3 declares a global
// `namespace meta`, so a type named `meta` at global scope cannot be declared after including
// keyschema. The documented workaround (the control): declare it in your own namespace; it can
// then be used everywhere, including as a key field and a value, and named unqualified inside
// functions and namespaces through a using-declaration.
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
struct meta {
  std::uint64_t id;
};
#else
namespace app {
struct meta {
  std::uint64_t id;
};
}  // namespace app

template <>
struct keyschema::codec<app::meta> {
  using repr = std::uint64_t;
  static std::uint64_t to_repr(const app::meta& m) { return m.id; }
  static app::meta from_repr(std::uint64_t id) { return app::meta{id}; }
};

namespace ks = keyschema;
using by_meta = ks::keyspace<"by_meta", app::meta, ks::lit<"META">, ks::field<"meta", app::meta>>;

int main() {
  using app::meta;
  ks::store<ks::schema<by_meta>, ks::memory_backend> db;
  db.put<by_meta>({meta{7}}, meta{8});
  const auto v = db.get<by_meta>({meta{7}});
  return v && v->id == 8 ? 0 : 1;
}
#endif
