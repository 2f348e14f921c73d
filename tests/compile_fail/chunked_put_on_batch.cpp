// expect: keyschema::put_chunked: a batch cannot read
#include <keyschema/keyschema.hpp>

#include <cstdint>

namespace ks = keyschema;
using content = ks::keyspace<"content", ks::bytes, ks::lit<"CONTENT">, ks::field<"message_id", std::uint64_t>,
                             ks::field<"chunk", std::uint32_t>>;

int main() {
  ks::store<ks::schema<content>, ks::memory_backend> db;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  auto b = db.batch();
  ks::put_chunked<content>(b, {42}, "data", 4);  // a batch cannot erase a previous value's chunks
#else
  auto tx = db.transaction();
  ks::put_chunked<content>(tx, {42}, "data", 4);
  tx.commit();
#endif
  return 0;
}
