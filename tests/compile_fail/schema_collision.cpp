// expect: keyschema::schema: two keyspaces can produce the same key
// The seed's collision: DESTINATION.MESSAGE_COUNT.$destination against
// DESTINATION.$destination.MESSAGE_METADATA.$id. The control moves the count under its own
// leading literal, which is what docs/schema.md recommends.
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using message_metadata = ks::keyspace<"message_metadata", ks::bytes,  //
    ks::lit<"DESTINATION">, ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">,
    ks::field<"message_id", std::uint64_t>>;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
using message_count = ks::keyspace<"message_count", std::int64_t,  //
    ks::lit<"DESTINATION">, ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
#else
using message_count = ks::keyspace<"message_count", std::int64_t,  //
    ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
#endif
using broker = ks::schema<message_metadata, message_count>;

int main() {
  ks::store<broker, ks::memory_backend> db;
  return db.get<message_count>({"q"}).has_value() ? 1 : 0;
}
