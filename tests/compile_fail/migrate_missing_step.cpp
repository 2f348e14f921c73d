// expect: keyschema::migrate: an old keyspace \(see OldKeyspace\) has no step
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
using count_v1 = ks::keyspace<"count", std::int64_t, ks::lit<"COUNT">, ks::field<"destination", std::string>>;
using count_v2 = ks::keyspace<"count", std::uint64_t, ks::lit<"COUNT">, ks::field<"destination", std::string>>;
using v1 = ks::schema<count_v1>;
using v2 = ks::schema<count_v2>;

int main() {
  ks::memory_backend b;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  // count changed its value codec: without a step nothing says what its entries become.
  ks::migrate<v1, v2>(b);
#else
  ks::migrate<v1, v2>(b, ks::transform<count_v1>([](const ks::entry<count_v1>& e, ks::migration_writer<v2>& out) {
                        out.put<count_v2>({e.get<"destination">()}, static_cast<std::uint64_t>(e.value));
                      }));
#endif
  return 0;
}
