// expect: keyschema::put/erase/add: this keyspace is a declared count \(count_of\), maintained by the store
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using message = ks::keyspace<"message", ks::bytes, ks::lit<"M">, ks::field<"destination", std::string>,
                             ks::field<"id", std::uint64_t>>;
using message_count =
    ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"C">, ks::field<"destination", std::string>>;

int main() {
  ks::store<ks::schema<message, message_count>, ks::memory_backend> db;
  auto b = db.batch();
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  b.put<message_count>({"q"}, 5);
#else
  b.put<message>({"q", 1}, ks::bytes(std::string_view("m")));
#endif
  b.commit();
  return 0;
}
