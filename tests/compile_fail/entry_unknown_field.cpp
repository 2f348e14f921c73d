// expect: keyschema::entry::get: the keyspace has no field with this name
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using metadata = ks::keyspace<"meta", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                          ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;

int main() {
  ks::store<ks::schema<metadata>, ks::memory_backend> db;
  std::uint64_t sum = 0;
  for (const auto& e : db.scan<metadata>("queue-1")) {
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
    sum += e.get<"messageid">();
#else
    sum += e.get<"message_id">();
#endif
  }
  return static_cast<int>(sum);
}
