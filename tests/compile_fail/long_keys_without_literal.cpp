// expect: keyschema::long_keys: a keyspace with long keys must start with a keyschema::lit
// A backend tells the keys of a keyspace with long keys by its leading literals; one starting with
// a field has none. The control starts it with a literal.
#include <keyschema/keyschema.hpp>

#include <string>

namespace ks = keyschema;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
using doc = ks::long_keys<ks::keyspace<"doc", std::string, ks::field<"name", std::string>>>;
#else
using doc = ks::long_keys<ks::keyspace<"doc", std::string, ks::lit<"DOC">, ks::field<"name", std::string>>>;
#endif
using s = ks::schema<doc>;

int main() {
  ks::store<s, ks::memory_backend> db;
  return db.get<doc>({"a"}).has_value() ? 1 : 0;
}
