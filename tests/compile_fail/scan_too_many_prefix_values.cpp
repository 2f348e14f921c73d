// expect: keyschema::scan: more prefix values than the keyspace has fields
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using metadata = ks::keyspace<"meta", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                          ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;

int main() {
  ks::store<ks::schema<metadata>, ks::memory_backend> db;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  auto v = db.scan<metadata>("queue-1", std::uint64_t{1}, std::uint64_t{2});
#else
  auto v = db.scan<metadata>("queue-1", std::uint64_t{1});
#endif
  return v.begin() == v.end() ? 0 : 1;
}
