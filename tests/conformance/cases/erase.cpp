// tests/conformance/cases/erase.cpp: conformance cases:
// erase_prefix and erase_range: bounds, direction, limit, erase chunks.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

namespace keyschema::conformance {

TEST_CASE("erase_prefix over 100k keys leaves the neighbours untouched", "[conformance][erase]") {
  test_fixture fx;
  auto& db = fx.db();
  constexpr std::uint64_t n = 100000;
  for (std::uint64_t start = 0; start < n; start += 10000) {
    auto b = db.batch();
    for (std::uint64_t i = start; i < start + 10000; ++i) b.put<message_metadata>({"big", i}, bin("payload"));
    b.commit();
  }
  const std::vector<std::string> neighbours = {"bi", "big0", "bigg", std::string("big\0", 4), "bih", ""};
  {
    auto b = db.batch();
    for (const std::string& d : neighbours) {
      for (std::uint64_t i : {0u, 1u, 99999u, 100000u}) b.put<message_metadata>({d, i}, bin("neighbour"));
    }
    for (std::uint64_t i = 0; i < 10; ++i) b.put<message_expiration>({"big", i}, 1);
    b.put<message_count>({"big"}, static_cast<std::int64_t>(n));
    b.put<recent>({"big", 1}, bin("r"));
    b.commit();
  }
  REQUIRE(count(db.scan<message_metadata>("big")) == n);

  CHECK(db.erase_prefix<message_metadata>("big") == n);
  CHECK(count(db.scan<message_metadata>("big")) == 0);
  CHECK(count(db.scan<message_metadata>("big").reverse()) == 0);
  CHECK_FALSE(db.contains<message_metadata>({"big", 0}));
  CHECK_FALSE(db.contains<message_metadata>({"big", n - 1}));
  for (const std::string& d : neighbours) {
    INFO("neighbour " << show(d));
    CHECK(count(db.scan<message_metadata>(d)) == 4);
  }
  CHECK(count(db.scan<message_metadata>()) == 4 * neighbours.size());
  CHECK(count(db.scan<message_expiration>("big")) == 10);
  CHECK(db.get<message_count>({"big"}) == std::optional<std::int64_t>(static_cast<std::int64_t>(n)));
  CHECK(db.contains<recent>({"big", 1}));
  // Nothing left to erase.
  CHECK(db.erase_prefix<message_metadata>("big") == 0);
}

TEST_CASE("erase_range honours bounds, direction and limit across erase chunks", "[conformance][erase][model]") {
  test_fixture fx;
  auto& db = fx.db();
  constexpr std::uint64_t n = 5000;  // five of the store's erase chunks
  static_assert(n > 4 * test_fixture::store_type::erase_chunk);
  model<message_metadata> m;
  {
    auto b = db.batch();
    for (std::uint64_t i = 0; i < n; ++i) {
      b.put<message_metadata>({"r", i}, bin("x"));
      m.put({"r", i}, bin("x"));
    }
    for (const char* d : {"r0", "s", "q"}) {
      for (std::uint64_t i : {0u, 2500u, 4999u}) {
        b.put<message_metadata>({d, i}, bin("n"));
        m.put({d, i}, bin("n"));
      }
    }
    b.put<message_expiration>({"r", 1}, 1);
    b.commit();
  }
  const auto prefix = std::tuple<std::string>("r");
  auto erase_and_check = [&](const auto& view, const scan_bounds<std::uint64_t>& bounds) {
    INFO("erase_range(scan<message_metadata>(\"r\")" << bounds.describe() << ")");
    const auto covered = m.covered<1>(prefix, bounds);
    CHECK(db.erase_range(view) == covered.size());
    for (const auto& k : covered) m.erase(k);
    CHECK(collect(db.scan<message_metadata>()) == m.all());
  };
  const auto r = db.scan<message_metadata>("r");
  erase_and_check(r.from(1000).to(2000), {.lower = 1000, .upper = 2000});
  erase_and_check(r.reverse().limit(2500), {.reverse = true, .limit = 2500});
  erase_and_check(r.after(100).limit(1500), {.lower = 100, .lower_inclusive = false, .limit = 1500});
  erase_and_check(r.through(150).reverse().limit(10), {.upper = 150, .upper_inclusive = true, .reverse = true, .limit = 10});
  erase_and_check(r.limit(0), {.limit = 0});
  erase_and_check(r, {});
  CHECK(count(db.scan<message_metadata>("r")) == 0);
  CHECK(db.get<message_expiration>({"r", 1}) == std::optional<std::int64_t>(1));
}

}  // namespace keyschema::conformance
