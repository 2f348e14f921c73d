// expect: keyschema::schema: two keyspaces can produce the same key, or a key of one can be a prefix
// lit<"a"> encodes as 02 61 00, a byte prefix of lit<"a\0"> (02 61 00 ff 00): the key ("a") is a
// prefix of every key ("a\0", n). The control gives the short keyspace a field after the literal,
// which then faces the 0xff escape and can never match.
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
using short_ks = ks::keyspace<"short", std::string, ks::lit<"a">>;
#else
using short_ks = ks::keyspace<"short", std::string, ks::lit<"a">, ks::field<"id", std::uint64_t>>;
#endif
using long_ks = ks::keyspace<"long", std::string, ks::lit<"a\0">, ks::field<"n", std::int64_t>>;

int main() {
  ks::store<ks::schema<short_ks, long_ks>, ks::memory_backend> db;
  return db.contains<long_ks>({1}) ? 1 : 0;
}
