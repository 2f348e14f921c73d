// expect: keyschema::schema: two keyspaces have the same name
#include <keyschema/keyschema.hpp>

#include <cstdint>

namespace ks = keyschema;
using a = ks::keyspace<"queue", std::int64_t, ks::lit<"A">, ks::field<"id", std::uint64_t>>;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
using b = ks::keyspace<"queue", std::int64_t, ks::lit<"B">, ks::field<"id", std::uint64_t>>;
#else
using b = ks::keyspace<"topic", std::int64_t, ks::lit<"B">, ks::field<"id", std::uint64_t>>;
#endif

int main() {
  ks::store<ks::schema<a, b>, ks::memory_backend> db;
  return db.contains<a>({1}) ? 1 : 0;
}
