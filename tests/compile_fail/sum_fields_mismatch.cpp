// expect: keyschema::sum_of: the sum keyspace's fields are not exactly the record keyspace's first N fields
#include <keyschema/keyschema.hpp>
#include <keyschema/sum.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using message = ks::keyspace<"message", std::int64_t, ks::lit<"M">, ks::field<"destination", std::string>,
                             ks::field<"id", std::uint64_t>>;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
// The sum's field is named "queue", the record keyspace's first field "destination".
using bytes_sum = ks::keyspace<"bytes_sum", ks::sum_of<message, ks::sum_value, 1>, ks::lit<"S">, ks::field<"queue", std::string>>;
#else
using bytes_sum =
    ks::keyspace<"bytes_sum", ks::sum_of<message, ks::sum_value, 1>, ks::lit<"S">, ks::field<"destination", std::string>>;
#endif

int main() {
  ks::store<ks::schema<message, bytes_sum>, ks::memory_backend> db;
  db.put<message>({"q", 1}, 5);
  return db.get<bytes_sum>({"q"}) == 5 ? 0 : 1;
}
