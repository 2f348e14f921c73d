// expect: keyschema::add: the keyspace's value type is not an integer type
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using name = ks::keyspace<"name", std::string, ks::lit<"N">, ks::field<"id", std::uint64_t>>;
using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"C">, ks::field<"id", std::uint64_t>>;

int main() {
  ks::store<ks::schema<name, counter>, ks::memory_backend> db;
  auto b = db.batch();
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  b.add<name>({1}, 1);
#else
  b.add<counter>({1}, 1);
#endif
  b.commit();
  return 0;
}
