// expect: keyschema::index_of: Derive cannot derive the index key
#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace ks = keyschema;
using message = ks::keyspace<"message", std::int64_t, ks::lit<"M">, ks::field<"destination", std::string>,
                             ks::field<"id", std::uint64_t>>;
struct by_value {
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  // Takes the value as a std::string: a message's value is a std::int64_t.
  std::optional<std::tuple<std::int64_t, std::string, std::uint64_t>> operator()(const message::key_type& k,
                                                                                 const std::string& v) const {
    return std::tuple(static_cast<std::int64_t>(v.size()), std::get<0>(k), std::get<1>(k));
  }
#else
  std::optional<std::tuple<std::int64_t, std::string, std::uint64_t>> operator()(const message::key_type& k,
                                                                                 const std::int64_t& v) const {
    return std::tuple(v, std::get<0>(k), std::get<1>(k));
  }
#endif
};
using by_value_index = ks::keyspace<"by_value", ks::index_of<message, by_value>, ks::lit<"V">,
                                    ks::field<"value", std::int64_t>, ks::field<"destination", std::string>,
                                    ks::field<"id", std::uint64_t>>;

int main() {
  ks::store<ks::schema<message, by_value_index>, ks::memory_backend> db;
  db.put<message>({"q", 1}, 5);
  return 0;
}
