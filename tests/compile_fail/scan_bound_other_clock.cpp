// expect: keyschema::scan: a prefix or bound value for a key field .*does not convert to the field's type
// A steady_clock time bounding a system_clock field: no conversion means the same instant.
#include <keyschema/keyschema.hpp>

#include <chrono>
#include <string>

namespace ks = keyschema;
using events = ks::keyspace<"events", std::string, ks::lit<"E">,
                            ks::field<"at", std::chrono::sys_time<std::chrono::milliseconds>>>;

int main() {
  ks::store<ks::schema<events>, ks::memory_backend> db;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  auto v = db.scan<events>().from(std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now()));
#else
  auto v = db.scan<events>().from(std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now()));
#endif
  return v.begin() == v.end() ? 0 : 1;
}
