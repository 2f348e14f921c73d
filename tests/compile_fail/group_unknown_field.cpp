// expect: group_has_no_field<keyschema::v[0-9_]+::fixed_string<7>\{"ledger"\}, [^,]*\{"snapshot"\}, [^ ]*group_fields<[^ ]*\{"tenant"\}, [^ ]*\{"topic"\}>.*keyschema::group_by: the group.s key has no field with this name
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using snapshot = ks::keyspace<"snapshot", std::uint64_t, ks::lit<"SNAPSHOT">, ks::field<"tenant", std::string>,
                              ks::field<"topic", std::string>, ks::field<"ledger", std::uint64_t>>;

int main() {
  ks::store<ks::schema<snapshot>, ks::memory_backend> db;
  std::uint64_t sum = 0;
  for (auto&& g : db.scan<snapshot>("acme").group_by<"topic">()) {
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
    // "ledger" is a field of the keyspace, but not of a group's key (tenant, topic).
    sum += g.get<"ledger">();
#else
    sum += g.get<"topic">().size();
#endif
  }
  return static_cast<int>(sum);
}
