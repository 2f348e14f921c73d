// expect: keyschema::placed: a placed keyspace must start with a keyschema::lit
// Placement routes a key by its keyspace's leading literals; a placed keyspace starting with a
// field has none. The control starts it with a literal.
#include <keyschema/keyschema.hpp>

#include <cstdint>

namespace ks = keyschema;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
using body = ks::placed<"content", ks::keyspace<"body", ks::bytes, ks::field<"id", std::uint64_t>>>;
#else
using body = ks::placed<"content", ks::keyspace<"body", ks::bytes, ks::lit<"BODY">, ks::field<"id", std::uint64_t>>>;
#endif
using s = ks::schema<body>;

int main() {
  ks::store<s, ks::memory_backend> db;
  return db.get<body>({1}).has_value() ? 1 : 0;
}
