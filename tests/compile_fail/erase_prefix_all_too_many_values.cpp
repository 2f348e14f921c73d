// expect: keyschema::erase_prefix_all: more prefix values
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using metadata = ks::keyspace<"meta", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                          ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
using counts = ks::keyspace<"counts", std::int64_t, ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;

int main() {
  ks::store<ks::schema<metadata, counts>, ks::memory_backend> db;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  // "counts" has one field: two prefix values fit "meta" but not "counts".
  return static_cast<int>(db.erase_prefix_all<metadata, counts>("queue-1", std::uint64_t{1}));
#else
  return static_cast<int>(db.erase_prefix_all<metadata, counts>("queue-1"));
#endif
}
