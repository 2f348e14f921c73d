// expect: keyschema::count_of: a field of the count keyspace differs from the counted keyspace's field
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using message = ks::keyspace<"message", ks::bytes, ks::lit<"M">, ks::field<"destination", std::string>,
                             ks::field<"id", std::uint64_t>>;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
// The count's field is named "queue", the counted keyspace's first field "destination".
using message_count = ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"C">, ks::field<"queue", std::string>>;
#else
using message_count =
    ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"C">, ks::field<"destination", std::string>>;
#endif

int main() {
  ks::store<ks::schema<message, message_count>, ks::memory_backend> db;
  db.put<message>({"q", 1}, ks::bytes(std::string_view("m")));
  return db.get<message_count>({"q"}) == 1 ? 0 : 1;
}
