// expect: keyschema::scan: this range adaptor needs a forward range
#include <keyschema/keyschema.hpp>

#include <range/v3/range/conversion.hpp>
#include <range/v3/view/chunk_by.hpp>
#include <range/v3/view/transform.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ks = keyschema;
using metadata = ks::keyspace<"meta", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                          ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;

int main() {
  ks::store<ks::schema<metadata>, ks::memory_backend> db;
  const auto same_destination = [](const auto& a, const auto& b) {
    return a.template get<"destination">() == b.template get<"destination">();
  };
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  // A scan is an input range: grouping it in place is refused with a message saying why.
  auto groups = db.scan<metadata>() | ranges::views::chunk_by(same_destination);
  (void)groups;
  return 0;
#else
  // What the message suggests: collect first, then group the vector.
  auto all = db.scan<metadata>() | ranges::to<std::vector>();
  auto groups = all | ranges::views::chunk_by(same_destination);
  // Adaptors that work on input ranges still compose with a scan.
  auto ids = db.scan<metadata>() | ranges::views::transform([](const auto& e) { return e.template get<"message_id">(); });
  return ranges::distance(groups) + ranges::distance(ids) == 0 ? 0 : 1;
#endif
}
