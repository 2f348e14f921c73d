// expect: keyschema::key_arg: a value given for a key field .*would be converted lossily
// A key given as field values converts exactly like a scan bound: system_clock::now() (nanoseconds
// on most platforms) for a millisecond field would truncate, so put refuses it, naming the field
// 'expires_at'. The control converts explicitly, as the message says.
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
  const auto now = std::chrono::system_clock::now();
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  db.put<expiry>({now, 7}, "m7");
#else
  db.put<expiry>({std::chrono::floor<std::chrono::milliseconds>(now), 7}, "m7");
#endif
  return db.contains<expiry>({std::chrono::floor<std::chrono::milliseconds>(now), 7}) ? 0 : 1;
}
