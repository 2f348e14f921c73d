// expect: keyschema::chunked: the keyspace's last field is not an unsigned integer
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
using content = ks::keyspace<"content", ks::bytes, ks::lit<"CONTENT">, ks::field<"message_id", std::uint64_t>,
                             ks::field<"name", std::string>>;
#else
using content = ks::keyspace<"content", ks::bytes, ks::lit<"CONTENT">, ks::field<"message_id", std::uint64_t>,
                             ks::field<"chunk", std::uint16_t>>;
#endif

int main() {
  ks::store<ks::schema<content>, ks::memory_backend> db;
  auto tx = db.transaction();
  ks::put_chunked<content>(tx, {42}, "data", 4);  // the last field must be the chunk index
  tx.commit();
  return 0;
}
