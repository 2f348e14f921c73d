// expect: keyschema::key_arg: a value given for a key field .*does not convert to the field's type
// A bare count is not a time: get refuses an integer for a std::chrono field instead of reading
// it in some unit. The control passes a time point of the field's clock.
#include <keyschema/keyschema.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace ks = keyschema;
using expiry = ks::keyspace<"expiry", std::string, ks::lit<"EXPIRY">,
                            ks::field<"expires_at", std::chrono::sys_time<std::chrono::milliseconds>>,
                            ks::field<"id", std::uint64_t>>;

int main() {
  ks::store<ks::schema<expiry>, ks::memory_backend> db;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  auto v = db.get<expiry>({1700000000000, 7});
#else
  auto v = db.get<expiry>({std::chrono::sys_time<std::chrono::seconds>(std::chrono::seconds(1700000000)), 7});
#endif
  return v ? 1 : 0;
}
