// expect: keyschema::keyspace: the field at SegmentPosition has a type with no key codec
#include <keyschema/keyschema.hpp>

#include <cstdint>

namespace ks = keyschema;
struct message_id {
  std::uint64_t value;
};
#ifdef KEYSCHEMA_COMPILE_FAIL_CONTROL
template <>
struct keyschema::codec<message_id> {
  using repr = std::uint64_t;
  static repr to_repr(const message_id& m) { return m.value; }
  static message_id from_repr(repr r) { return message_id{r}; }
};
#endif
using metadata = ks::keyspace<"meta", ks::bytes, ks::lit<"META">, ks::field<"id", message_id>>;

int main() {
  ks::store<ks::schema<metadata>, ks::memory_backend> db;
  return db.contains<metadata>({message_id{1}}) ? 1 : 0;
}
