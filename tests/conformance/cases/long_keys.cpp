// tests/conformance/cases/long_keys.cpp: a keyspace with long keys (keyschema::long_keys) on every
// backend: a 2 KiB key round-trips through put, get, scans (both directions, bounds inside keys
// sharing their first 600 bytes) and erase, and keys sharing long prefixes (prefixes of each other
// among them) scan in exactly std::sort's order, in a batch and a transaction mixing them with
// short keys. LMDB stores them in its long form (docs/backends/lmdb.md); the others take them as
// they are. A keyspace without the marker keeps the backend's key limit (limit_error on LMDB).
#include <conformance/conformance.hpp>

namespace keyschema::conformance::long_keys {

using doc = ks::long_keys<ks::keyspace<"lk_doc", std::string, ks::lit<"LK_DOC">, ks::field<"name", std::string>,
                                       ks::field<"part", std::uint32_t>>>;
using tag = ks::keyspace<"lk_tag", std::string, ks::lit<"LK_TAG">, ks::field<"name", std::string>>;
using long_schema = ks::schema<doc, tag>;

template <class View>
std::vector<std::pair<std::string, std::uint32_t>> keys_of(const View& v) {
  std::vector<std::pair<std::string, std::uint32_t>> out;
  for (const auto& e : v) out.emplace_back(e.template get<"name">(), e.template get<"part">());
  return out;
}

}  // namespace keyschema::conformance::long_keys

namespace keyschema::conformance {
using namespace long_keys;

TEST_CASE("long keys: a 2 KiB key and keys sharing long prefixes round-trip in exact order",
          "[conformance][long_keys]") {
  ks::testing::temp_dir dir("conformance-long-keys");
  auto db = backend_factory::template open<long_schema>(dir.path());
  const std::string stem(600, 's');
  std::vector<std::string> names = {std::string(2048, 'k'), stem, stem + "a", stem + "m", stem + "m" + std::string(900, 'x'),
                                    stem + "z", stem.substr(0, 300), "b", stem + std::string(1, '\0') + "n"};
  {
    auto b = db->batch();  // long and short keys in one atomic write
    for (std::size_t i = 0; i < names.size(); ++i) {
      b.put<doc>({names[i], 1}, "v" + std::to_string(i));
      b.put<tag>({std::to_string(i)}, "t");
    }
    b.commit();
  }
  {
    auto tx = db->transaction();
    tx.put<doc>({stem + "m", 0}, "part0");
    CHECK(tx.get<doc>({stem + "m", 0}) == std::optional<std::string>("part0"));
    CHECK(count(tx.scan<doc>(stem + "m")) == 2);
    tx.commit();
  }
  std::vector<std::pair<std::string, std::uint32_t>> sorted;
  for (const std::string& n : names) sorted.emplace_back(n, 1);
  sorted.emplace_back(stem + "m", 0);
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < names.size(); ++i)
    CHECK(db->get<doc>({names[i], 1}) == std::optional<std::string>("v" + std::to_string(i)));
  CHECK_FALSE(db->get<doc>({stem + "n", 1}).has_value());
  CHECK(keys_of(db->scan<doc>()) == sorted);
  std::vector<std::pair<std::string, std::uint32_t>> back(sorted.rbegin(), sorted.rend());
  CHECK(keys_of(db->scan<doc>().reverse()) == back);
  // Bounds on the name, inside the keys sharing stem.
  std::vector<std::pair<std::string, std::uint32_t>> inside;
  for (const auto& k : sorted)
    if (k.first >= stem + "b" && k.first < stem + "n") inside.push_back(k);
  REQUIRE(inside.size() == 3);
  CHECK(keys_of(db->scan<doc>().from(stem + "b").to(stem + "n")) == inside);
  std::reverse(inside.begin(), inside.end());
  CHECK(keys_of(db->scan<doc>().from(stem + "b").to(stem + "n").reverse()) == inside);
  db->erase<doc>({names[0], 1});
  db->erase<doc>({stem + "m", 1});
  CHECK_FALSE(db->get<doc>({names[0], 1}).has_value());
  CHECK(db->get<doc>({stem + "m", 0}) == std::optional<std::string>("part0"));
  CHECK(count(db->scan<doc>()) == sorted.size() - 2);
  CHECK(count(db->scan<tag>()) == names.size());
  // A keyspace without the marker keeps the backend's key limit.
  const std::size_t limit = db->backend().limits().max_key_bytes;
  if (limit < 4096) {
    CHECK_THROWS_AS(db->put<tag>({std::string(limit, 't')}, "x"), ks::limit_error);
    CHECK(count(db->scan<tag>()) == names.size());
  }
}

}  // namespace keyschema::conformance
