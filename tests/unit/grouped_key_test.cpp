// A group's key is read by name: g.get<"topic">() is the topic of the group's entries, also when
// a prefix scan fixes fields before it (the group's key then starts with them).
#include <keyschema/keyschema.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace grouped_key_test {
namespace {
namespace ks = keyschema;

using snapshot = ks::keyspace<"snapshot", std::uint64_t, ks::lit<"SNAPSHOT">, ks::field<"tenant", std::string>,
                              ks::field<"topic", std::string>, ks::field<"ledger", std::uint64_t>>;
using snapshot_store = ks::store<ks::schema<snapshot>, ks::memory_backend>;

// The group key has no positional access (std::get, structured bindings): a position counted from
// the grouped field would name a prefix field.
using topic_groups = decltype(std::declval<const snapshot_store&>().scan<snapshot>("acme").group_by<"topic">());
using topic_key = topic_groups::group_key_type;
template <class T>
concept positional = requires(const T& t) { std::get<0>(t); } || requires { std::tuple_size<T>::value; };
static_assert(!positional<topic_key>);
static_assert(positional<topic_key::tuple_type>);
static_assert(std::is_same_v<topic_key::tuple_type, std::tuple<std::string, std::string>>);

void fill(snapshot_store& db) {
  for (const char* tenant : {"acme", "zeta"}) {
    for (const char* topic : {"orders", "payments", "refunds"}) {
      for (std::uint64_t ledger = 1; ledger <= 3; ++ledger) db.put<snapshot>({tenant, topic, ledger}, ledger * 10);
    }
  }
}

TEST_CASE("grouping a prefix scan by topic hands out one group per topic, read by name", "[grouped][scan]") {
  snapshot_store db;
  fill(db);
  std::vector<std::string> topics;
  for (auto&& g : db.scan<snapshot>("acme").group_by<"topic">()) {
    const std::string& topic = g.get<"topic">();
    CHECK(g.key().get<"topic">() == topic);
    CHECK(g.get<"tenant">() == "acme");  // the prefix field is part of the group's key
    CHECK(g.key().fields() == std::tuple<std::string, std::string>("acme", topic));
    std::size_t n = 0;
    for (const auto& e : g) {
      CHECK(e.get<"topic">() == topic);
      ++n;
    }
    CHECK(n == 3);
    topics.push_back(topic);
  }
  // One group per topic: a key read from the wrong field would give "acme" three times.
  CHECK(topics == std::vector<std::string>{"orders", "payments", "refunds"});

  // The callback form gets the same key.
  std::map<std::string, std::uint64_t> sums;
  db.scan<snapshot>("zeta").group_by<"topic">().for_each([&](const auto& key, auto& entries) {
    for (const auto& e : entries) sums[key.template get<"topic">()] += e.value;
  });
  CHECK(sums == std::map<std::string, std::uint64_t>{{"orders", 60}, {"payments", 60}, {"refunds", 60}});

  // Grouped through the last field: every field is the group's.
  std::set<std::uint64_t> ledgers;
  for (auto&& g : db.scan<snapshot>("acme", "orders").group_by<"ledger">()) {
    CHECK(g.get<"topic">() == "orders");
    ledgers.insert(g.get<"ledger">());
  }
  CHECK(ledgers == std::set<std::uint64_t>{1, 2, 3});
}

}  // namespace
}  // namespace grouped_key_test
