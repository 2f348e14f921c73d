// expect: keyschema::keyspace: a field name is used twice in this keyspace
#include <keyschema/keyschema.hpp>

#include <cstdint>

namespace ks = keyschema;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
using content = ks::keyspace<"content", ks::bytes, ks::lit<"MESSAGE">, ks::field<"id", std::uint64_t>,
                             ks::field<"id", std::uint32_t>>;
#else
using content = ks::keyspace<"content", ks::bytes, ks::lit<"MESSAGE">, ks::field<"id", std::uint64_t>,
                             ks::field<"offset", std::uint32_t>>;
#endif

int main() {
  ks::store<ks::schema<content>, ks::memory_backend> db;
  return db.contains<content>({1, 2}) ? 1 : 0;
}
