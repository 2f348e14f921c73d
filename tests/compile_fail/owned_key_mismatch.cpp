// expect: keyschema::owned_by: the owned keyspace's key does not begin with the owner's key fields
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using message = ks::keyspace<"message", ks::bytes, ks::lit<"M">, ks::field<"destination", std::string>,
                             ks::field<"id", std::uint64_t>>;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
// The owned key starts with the id, then the destination: not the owner's key fields in order.
using dead_letter = ks::keyspace<"dead_letter", ks::owned_by<message, std::string>, ks::lit<"D">,
                                 ks::field<"id", std::uint64_t>, ks::field<"destination", std::string>>;
#else
using dead_letter = ks::keyspace<"dead_letter", ks::owned_by<message, std::string>, ks::lit<"D">,
                                 ks::field<"destination", std::string>, ks::field<"id", std::uint64_t>>;
#endif

int main() {
  ks::store<ks::schema<message, dead_letter>, ks::memory_backend> db;
  db.put<message>({"q", 1}, ks::bytes(std::string_view("m")));
  return db.get<message>({"q", 1}) ? 0 : 1;
}
