// tests/conformance/cases/snapshots.cpp: conformance cases:
// snapshots keep the state they were taken in.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

namespace keyschema::conformance {

TEST_CASE("snapshots keep seeing the state they were taken in", "[conformance][snapshot]") {
  test_fixture fx;
  auto& db = fx.db();
  std::vector<std::string> old_scan;
  {
    auto b = db.batch();
    for (std::uint64_t i = 1; i <= 50; ++i) b.put<message_metadata>({"q", i}, ks::bytes("v" + std::to_string(i)));
    b.put<message_count>({"q"}, 50);
    b.commit();
  }
  old_scan = collect(db.scan<message_metadata>("q"));

  const auto snap = db.snapshot();
  // Writes go on: overwrite, erase, insert, erase_prefix, many versions of one key.
  db.put<message_metadata>({"q", 5}, bin("new"));
  db.erase<message_metadata>({"q", 1});
  db.put<message_metadata>({"q", 51}, bin("v51"));
  db.put<message_metadata>({"q", 0}, bin("v0"));
  for (std::int64_t i = 0; i < 500; ++i) db.put<message_count>({"q"}, 100 + i, {.sync = false});
  {
    auto tx = db.transaction();
    tx.put<message_count>({"tx"}, 1);
    tx.commit();
  }
  CHECK(db.erase_prefix<message_metadata>(std::string("q")) == 51);

  CHECK(lookup<message_metadata>(snap, {"q", 5}) == show(bin("v5")));
  CHECK(lookup<message_metadata>(snap, {"q", 1}) == show(bin("v1")));
  CHECK_FALSE(snap.contains<message_metadata>({"q", 51}));
  CHECK_FALSE(snap.contains<message_metadata>({"q", 0}));
  CHECK(snap.get<message_count>({"q"}) == std::optional<std::int64_t>(50));
  CHECK_FALSE(snap.contains<message_count>({"tx"}));
  // Two scans on one snapshot agree, in both directions.
  const auto first = collect(snap.scan<message_metadata>("q"));
  const auto second = collect(snap.scan<message_metadata>("q"));
  CHECK(first == old_scan);
  CHECK(second == old_scan);
  auto reversed = old_scan;
  std::reverse(reversed.begin(), reversed.end());
  CHECK(collect(snap.scan<message_metadata>("q").reverse()) == reversed);
  CHECK(collect(snap.scan<message_metadata>("q").from(10).to(20)) ==
        std::vector<std::string>(old_scan.begin() + 9, old_scan.begin() + 19));

  // Iterating the same view twice scans twice, each time on the snapshot.
  const auto view = snap.scan<message_metadata>("q").limit(5);
  CHECK(collect(view) == collect(view));
  CHECK(count(view) == 5);

  // The store itself reads the latest state; a copy of a snapshot reads the same as the original.
  CHECK(count(db.scan<message_metadata>("q")) == 0);
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(599));
  const auto copy = snap;
  CHECK(collect(copy.scan<message_metadata>("q")) == old_scan);

  // A scan started before writes keeps reading its own state.
  db.put<message_metadata>({"w", 1}, bin("1"));
  db.put<message_metadata>({"w", 3}, bin("3"));
  const auto w_view = db.scan<message_metadata>("w");
  auto it = w_view.begin();
  REQUIRE(it != w_view.end());
  CHECK((*it).get<"message_id">() == 1);
  db.put<message_metadata>({"w", 2}, bin("2"));
  db.erase<message_metadata>({"w", 3});
  std::vector<std::uint64_t> rest;
  for (++it; it != w_view.end(); ++it) rest.push_back((*it).get<"message_id">());
  CHECK(rest == std::vector<std::uint64_t>{3});
}

}  // namespace keyschema::conformance
