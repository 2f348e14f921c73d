// expect: index_of_lacks_record_fields<.*field<keyschema::v[0-9_]+::fixed_string<3>\{"id"\}.*keyschema::index_of: the index key lacks field\(s\) of the indexed record's key
#include <keyschema/keyschema.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace ks = keyschema;
using message = ks::keyspace<"message", std::int64_t, ks::lit<"M">, ks::field<"destination", std::string>,
                             ks::field<"id", std::uint64_t>>;
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
// The index key (at, destination) lacks the message's "id": two messages of one destination with
// the same expiry would derive one entry.
struct by_expiry {
  std::optional<std::tuple<std::int64_t, std::string>> operator()(const message::key_type& k,
                                                                  const std::int64_t& at) const {
    return std::tuple(at, std::get<0>(k));
  }
};
using expiry_index = ks::keyspace<"expiry", ks::index_of<message, by_expiry>, ks::lit<"E">, ks::field<"at", std::int64_t>,
                                  ks::field<"destination", std::string>>;
#else
struct by_expiry {
  std::optional<std::tuple<std::int64_t, std::string, std::uint64_t>> operator()(const message::key_type& k,
                                                                                 const std::int64_t& at) const {
    return std::tuple(at, std::get<0>(k), std::get<1>(k));
  }
};
using expiry_index = ks::keyspace<"expiry", ks::index_of<message, by_expiry>, ks::lit<"E">, ks::field<"at", std::int64_t>,
                                  ks::field<"destination", std::string>, ks::field<"id", std::uint64_t>>;
#endif

int main() {
  ks::store<ks::schema<message, expiry_index>, ks::memory_backend> db;
  db.put<message>({"q", 1}, 5);
  db.put<message>({"q", 2}, 5);
  return 0;
}
