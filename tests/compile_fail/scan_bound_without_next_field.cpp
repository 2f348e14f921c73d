// expect: keyschema::scan_view: every field is already fixed by the prefix
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using metadata = ks::keyspace<"meta", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                          ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;

int main() {
  ks::store<ks::schema<metadata>, ks::memory_backend> db;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  auto v = db.scan<metadata>("queue-1", std::uint64_t{1}).from(std::uint64_t{2});
#else
  auto v = db.scan<metadata>("queue-1").from(std::uint64_t{2});
#endif
  return v.begin() == v.end() ? 0 : 1;
}
