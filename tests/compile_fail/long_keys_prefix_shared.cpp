// expect: keyschema::long_keys: a key of OtherKeyspace \(without long keys\) can start with the leading
// A backend tells the keys of a keyspace with long keys by its leading literals: "by_name" (a
// std::string field first, without the marker) can produce keys starting with the encoding of
// "DOC", the leading literal of "doc", so its long keys would be taken for doc's. The control
// starts "by_name" with an integer field, which never encodes to a string element.
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using doc = ks::long_keys<ks::keyspace<"doc", std::string, ks::lit<"DOC">, ks::field<"name", std::string>>>;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
using by_name = ks::keyspace<"by_name", std::string, ks::field<"name", std::string>, ks::field<"tag", bool>>;
#else
using by_name = ks::keyspace<"by_name", std::string, ks::field<"number", std::uint64_t>, ks::field<"tag", bool>>;
#endif
using s = ks::schema<doc, by_name>;

int main() {
  ks::store<s, ks::memory_backend> db;
  return db.get<doc>({"a"}).has_value() ? 1 : 0;
}
