// expect: keyschema::placed: a key of OtherKeyspace \(placed elsewhere\) can start with the leading literals
// Placement routes a key by its keyspace's leading literals: "by_name" (a std::string field first,
// in the default placement) can produce keys starting with the encoding of "BODY", the leading
// literal of the placed "body", so its keys would land in "content". The control starts "by_name"
// with an integer field, which never encodes to a string element.
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using body = ks::placed<"content", ks::keyspace<"body", ks::bytes, ks::lit<"BODY">, ks::field<"id", std::uint64_t>>>;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
using by_name = ks::keyspace<"by_name", std::string, ks::field<"name", std::string>, ks::field<"tag", bool>>;
#else
using by_name = ks::keyspace<"by_name", std::string, ks::field<"number", std::uint64_t>, ks::field<"tag", bool>>;
#endif
using s = ks::schema<body, by_name>;

int main() {
  ks::store<s, ks::memory_backend> db;
  return db.get<body>({1}).has_value() ? 1 : 0;
}
