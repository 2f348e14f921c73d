// expect: keyschema::scan: a prefix or bound value for a key field .*would be converted lossily
// A sweeper bounding a millisecond expiry field with system_clock::now() (nanoseconds on most
// platforms): the conversion would truncate, so it is refused, naming the field 'expires_at'.
// The control converts explicitly, as the message says.
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
  auto due = db.scan<expiry>().through(now);
#else
  auto due = db.scan<expiry>().through(std::chrono::floor<std::chrono::milliseconds>(now));
#endif
  return due.begin() == due.end() ? 0 : 1;
}
