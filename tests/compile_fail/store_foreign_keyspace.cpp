// expect: keyschema::store: this keyspace is not part of the store's schema
#include <keyschema/keyschema.hpp>

#include <cstdint>

namespace ks = keyschema;
using a = ks::keyspace<"a", std::int64_t, ks::lit<"A">, ks::field<"id", std::uint64_t>>;
using b = ks::keyspace<"b", std::int64_t, ks::lit<"B">, ks::field<"id", std::uint64_t>>;

int main() {
  ks::store<ks::schema<a>, ks::memory_backend> db;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  db.put<b>({1}, 2);
#else
  db.put<a>({1}, 2);
#endif
  return 0;
}
