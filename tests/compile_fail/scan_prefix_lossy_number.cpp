// expect: keyschema::scan: a prefix or bound value for a key field .*would be converted lossily
// A double as the prefix value of an integer field (2.5 would select the entries of 2): refused
// at scan() (and so at erase_prefix()). The control passes an integer of another width, which is
// exact.
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using readings = ks::keyspace<"readings", std::string, ks::lit<"R">, ks::field<"sensor", std::int64_t>,
                              ks::field<"seq", std::uint32_t>>;

int main() {
  ks::store<ks::schema<readings>, ks::memory_backend> db;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  return static_cast<int>(db.erase_prefix<readings>(2.5));
#else
  return static_cast<int>(db.erase_prefix<readings>(std::uint8_t{2}));
#endif
}
