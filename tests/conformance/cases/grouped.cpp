// tests/conformance/cases/grouped.cpp: conformance cases:
// grouped scans (scan_view::group_by): groups in order, never empty, skipping partly read groups,
// reverse, limit, prefix and bounds, on the store, snapshots and transactions; and erase_prefix_all,
// erasing what keyspaces sharing leading fields hold of one destination or message.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

#include <range/v3/view/take.hpp>

namespace keyschema::conformance::grouped {

// (destination, message ids) per group, as a grouped scan hands them out.
using group_list = std::vector<std::pair<std::string, std::vector<std::uint64_t>>>;

template <class Grouped>
group_list read_groups(const Grouped& groups) {
  group_list out;
  for (auto&& g : groups) {
    out.emplace_back(g.template get<"destination">(), std::vector<std::uint64_t>{});
    for (const auto& e : g) {
      CHECK(e.template get<"destination">() == out.back().first);
      out.back().second.push_back(e.template get<"message_id">());
    }
  }
  return out;
}

// The same grouping done by hand over a plain scan: the reference.
template <class View>
group_list group_by_hand(const View& view) {
  group_list out;
  for (const auto& e : view) {
    if (out.empty() || out.back().first != e.template get<"destination">())
      out.emplace_back(e.template get<"destination">(), std::vector<std::uint64_t>{});
    out.back().second.push_back(e.template get<"message_id">());
  }
  return out;
}

// Every tricky destination with 1 to 3 messages, and expiration entries (a keyspace sharing the
// first two segments) for each: the grouped scan of message_metadata must not see those.
template <class Store>
std::size_t fill(Store& db) {
  auto b = db.batch();
  std::size_t n = 0;
  const auto dests = tricky_destinations();
  for (std::size_t d = 0; d < dests.size(); ++d) {
    for (std::uint64_t i = 0; i <= d % 3; ++i) {
      b.template put<message_metadata>({dests[d], i * 10 + d}, bin("m"));
      b.template put<message_expiration>({dests[d], i}, 7);
      ++n;
    }
  }
  b.template put<message_count>({"q"}, 1);
  b.commit();
  return n;
}

TEST_CASE("group_by hands out each destination once, in key order, never empty", "[conformance][grouped]") {
  test_fixture fx;
  auto& db = fx.db();
  CHECK(read_groups(db.scan<message_metadata>().group_by<1>()).empty());
  const std::size_t n = fill(db);
  const group_list expected = group_by_hand(db.scan<message_metadata>());
  REQUIRE(expected.size() == tricky_destinations().size());
  const group_list got = read_groups(db.scan<message_metadata>().group_by<1>());
  CHECK(got == expected);
  CHECK(read_groups(db.scan<message_metadata>().group_by<"destination">()) == expected);
  std::size_t entries = 0;
  for (const auto& g : got) {
    CHECK_FALSE(g.second.empty());
    entries += g.second.size();
  }
  CHECK(entries == n);
  // Grouping by every field: one entry per group.
  std::size_t groups = 0;
  for (auto&& g : db.scan<message_metadata>().group_by<"message_id">()) {
    CHECK(count(g) == 1);
    ++groups;
  }
  CHECK(groups == n);
  // The callback form sees the same groups.
  group_list via_callback;
  db.scan<message_metadata>().group_by<1>().for_each([&](const auto& key, auto& entries_of) {
    via_callback.emplace_back(key.template get<"destination">(), std::vector<std::uint64_t>{});
    for (const auto& e : entries_of) via_callback.back().second.push_back(e.template get<"message_id">());
  });
  CHECK(via_callback == expected);
}

TEST_CASE("group_by skips what a consumer leaves of a group", "[conformance][grouped]") {
  test_fixture fx;
  auto& db = fx.db();
  fill(db);
  const group_list expected = group_by_hand(db.scan<message_metadata>());
  // Read only the first entry of each group, or none of every other group.
  std::vector<std::string> keys;
  std::size_t i = 0;
  for (auto&& g : db.scan<message_metadata>().group_by<1>()) {
    keys.push_back(g.get<"destination">());
    if (i++ % 2 == 0) {
      auto it = g.begin();
      REQUIRE(it != g.end());
      CHECK((*it).get<"message_id">() == expected[keys.size() - 1].second.front());
    }
  }
  REQUIRE(keys.size() == expected.size());
  for (std::size_t k = 0; k < keys.size(); ++k) CHECK(keys[k] == expected[k].first);

  // A group kept after the range moved on yields nothing, not the next group's entries.
  auto groups = db.scan<message_metadata>().group_by<1>();
  auto it = groups.begin();
  REQUIRE(it != groups.end());
  auto first = *it;
  ++it;
  REQUIRE(it != groups.end());
  CHECK(count(first) == 0);
  CHECK((*it).key().get<"destination">() == expected[1].first);
  CHECK(count(*it) == expected[1].second.size());
  // Reading a group in two loops continues where the first stopped.
  ++it;
  REQUIRE(it != groups.end());
  auto& third = *it;
  auto e = third.begin();
  REQUIRE(e != third.end());
  ++e;  // one entry read
  const std::size_t seen = 1 + count(third);
  CHECK(seen == expected[2].second.size());
}

TEST_CASE("group_by honours reverse, limit, prefix and bounds", "[conformance][grouped]") {
  test_fixture fx;
  auto& db = fx.db();
  fill(db);
  // Reverse: groups last first, entries last first.
  group_list expected = group_by_hand(db.scan<message_metadata>().reverse());
  CHECK(read_groups(db.scan<message_metadata>().reverse().group_by<1>()) == expected);
  group_list forward = group_by_hand(db.scan<message_metadata>());
  std::reverse(forward.begin(), forward.end());
  for (auto& g : forward) std::reverse(g.second.begin(), g.second.end());
  CHECK(expected == forward);
  // Limit: counts entries; the last group may end early.
  for (std::size_t limit : {0u, 1u, 2u, 5u, 7u}) {
    INFO("limit " << limit);
    CHECK(read_groups(db.scan<message_metadata>().limit(limit).group_by<1>()) ==
          group_by_hand(db.scan<message_metadata>().limit(limit)));
    CHECK(read_groups(db.scan<message_metadata>().reverse().limit(limit).group_by<1>()) ==
          group_by_hand(db.scan<message_metadata>().reverse().limit(limit)));
  }
  // Groups taken with views::take (an input-range adaptor).
  std::size_t taken = 0;
  for (auto&& g : db.scan<message_metadata>().group_by<1>() | ranges::views::take(3)) {
    CHECK(count(g) > 0);
    ++taken;
  }
  CHECK(taken == 3);

  // A prefix: one group, whose key is the prefix ("q\0" must not take in "q\0x").
  for (const std::string& d : tricky_destinations()) {
    INFO("destination " << show(d));
    const group_list g = read_groups(db.scan<message_metadata>(d).group_by<1>());
    REQUIRE(g.size() == 1);
    CHECK(g[0] == group_by_hand(db.scan<message_metadata>(d))[0]);
    // Grouped through the field after the prefix: one group per message, its id read by name
    // (the group's key also holds the destination the prefix fixes, first).
    std::vector<std::uint64_t> ids;
    for (auto&& by_id : db.scan<message_metadata>(d).group_by<"message_id">()) {
      CHECK(by_id.get<"destination">() == d);
      for (const auto& e : by_id) CHECK(e.get<"message_id">() == by_id.get<"message_id">());
      ids.push_back(by_id.get<"message_id">());
    }
    CHECK(ids == g[0].second);
  }
  // Bounds on the first field: the destinations in [from, to).
  const auto bounded = db.scan<message_metadata>().from(std::string("q")).to(std::string("q1"));
  const group_list b = read_groups(bounded.group_by<1>());
  CHECK(b == group_by_hand(bounded));
  REQUIRE(b.size() == 3);  // "q", "q\0", "q\0x"
  CHECK(b[0].first == "q");
  CHECK(b[2].first == std::string("q\0x", 3));

  // A keyspace grouped by its first field whose second sorts descending (recent), and by two
  // fields of expiry with bounds on the first.
  {
    auto wb = db.batch();
    for (std::uint64_t i = 0; i < 4; ++i) {
      wb.put<recent>({"r1", i}, bin("x"));
      wb.put<recent>({"r2", i}, bin("y"));
      wb.put<expiry>({static_cast<std::int64_t>(i / 2), i}, {});
    }
    wb.commit();
  }
  std::vector<std::pair<std::string, std::vector<std::uint64_t>>> recents;
  for (auto&& g : db.scan<recent>().group_by<"destination">()) {
    recents.emplace_back(g.get<"destination">(), std::vector<std::uint64_t>{});
    for (const auto& e : g) recents.back().second.push_back(e.get<"message_id">().value);
  }
  CHECK(recents == group_list{{"r1", {3, 2, 1, 0}}, {"r2", {3, 2, 1, 0}}});
  std::vector<std::int64_t> ats;
  for (auto&& g : db.scan<expiry>().from(std::int64_t{1}).group_by<"at">()) {
    ats.push_back(g.get<"at">());
    CHECK(count(g) == 2);
  }
  CHECK(ats == std::vector<std::int64_t>{1});
}

TEST_CASE("group_by on snapshots and transactions", "[conformance][grouped][transaction]") {
  test_fixture fx;
  auto& db = fx.db();
  fill(db);
  const group_list before = group_by_hand(db.scan<message_metadata>());
  auto snap = db.snapshot();
  db.put<message_metadata>({"zz-new", 1}, bin("n"));
  db.erase<message_metadata>({"q", 0});
  CHECK(read_groups(snap.scan<message_metadata>().group_by<1>()) == before);
  {
    auto tx = db.transaction();
    tx.put<message_metadata>({"zz-new", 2}, bin("n"));
    tx.put<message_metadata>({"0-first", 5}, bin("n"));
    tx.erase_prefix<message_metadata>("a");
    const group_list in_tx = read_groups(tx.scan<message_metadata>().group_by<1>());
    CHECK(in_tx == group_by_hand(tx.scan<message_metadata>()));
    REQUIRE(in_tx.size() == before.size());  // "zz-new" and "0-first" in, "a" and "q" (its one message) out
    CHECK(in_tx[1].first == "0-first");  // after ""
    CHECK(in_tx.back() == std::pair<std::string, std::vector<std::uint64_t>>{"zz-new", {1, 2}});
    // Writing while a grouped scan of the transaction is read is safe; the open scan does not see it.
    std::size_t groups = 0;
    for (auto&& g : tx.scan<message_metadata>().group_by<1>()) {
      for (const auto& e : g) (void)e;
      if (groups++ == 0) tx.put<message_metadata>({"zzz-late", 1}, bin("l"));
    }
    CHECK(groups == in_tx.size());
    CHECK(tx.contains<message_metadata>({"zzz-late", 1}));
    tx.rollback();
  }
  CHECK(read_groups(db.scan<message_metadata>().group_by<1>()).size() == before.size());  // "zz-new" in, "q" out
}

}  // namespace keyschema::conformance::grouped

namespace keyschema::conformance::grouped {

// Entries per keyspace whose destination (first field) is d.
template <class Source>
std::vector<std::size_t> counts_of(const Source& src, const std::string& d) {
  return {count(src.template scan<message_metadata>(d)), count(src.template scan<message_expiration>(d)),
          count(src.template scan<recent>(d)), count(src.template scan<message_count>(d))};
}

TEST_CASE("erase_prefix_all erases one destination across keyspaces, in bounded batches", "[conformance][erase]") {
  test_fixture fx;
  auto& db = fx.db();
  const auto dests = tricky_destinations();
  constexpr std::uint64_t big = 2 * test_fixture::store_type::erase_chunk + 5;  // three erase chunks
  {
    auto b = db.batch();
    for (const std::string& d : dests) {
      const std::uint64_t n = d == std::string("q\0", 2) ? big : 3;
      for (std::uint64_t i = 0; i < n; ++i) {
        b.put<message_metadata>({d, i}, bin("m"));
        if (i < 3) b.put<message_expiration>({d, i}, 9);
        if (i < 2) b.put<recent>({d, i}, bin("r"));
      }
      b.put<message_count>({d}, static_cast<std::int64_t>(n));
    }
    b.put<message_destination>({1}, std::string("q\0", 2));
    b.commit();
  }
  const std::string victim("q\0", 2);
  REQUIRE(counts_of(db, victim) == std::vector<std::size_t>{big, 3, 2, 1});
  CHECK(db.erase_prefix_all<message_metadata, message_expiration, recent, message_count>(victim) == big + 6);
  CHECK(counts_of(db, victim) == std::vector<std::size_t>{0, 0, 0, 0});
  for (const std::string& d : dests) {
    if (d == victim) continue;
    INFO("destination " << show(d));  // "q", "q\0x": prefixes of each other stay
    CHECK(counts_of(db, d) == std::vector<std::size_t>{3, 3, 2, 1});
  }
  CHECK(db.get<message_destination>({1}) == std::optional<std::string>(victim));
  CHECK(db.erase_prefix_all<message_metadata, message_expiration, recent, message_count>(victim) == 0);
  // A prefix of two fields, valid for both keyspaces listed.
  CHECK(db.erase_prefix_all<message_metadata, message_expiration>(std::string("q"), std::uint64_t{1}) == 2);
  CHECK(counts_of(db, "q") == std::vector<std::size_t>{2, 2, 2, 1});
}

TEST_CASE("erase_prefix_all in a transaction is atomic with it", "[conformance][erase][transaction]") {
  test_fixture fx;
  auto& db = fx.db();
  {
    auto b = db.batch();
    for (std::uint64_t id : {1u, 2u, 3u}) {
      for (std::uint32_t off = 0; off < 4; ++off) b.put<message_content>({id, off}, bin("chunk"));
      b.put<message_destination>({id}, std::string("q"));
    }
    b.put<dtx_entry>({bin(std::string("xid\0", 4)), 1}, bin("branch"));
    b.put<dtx_entry>({bin("xid"), 1}, bin("branch"));
    b.commit();
  }
  {
    auto tx = db.transaction();
    CHECK(tx.erase_prefix_all<message_content, message_destination>(std::uint64_t{2}) == 5);
    CHECK(count(tx.scan<message_content>(std::uint64_t{2})) == 0);
    CHECK_FALSE(tx.contains<message_destination>({2}));
    CHECK(count(db.scan<message_content>(std::uint64_t{2})) == 4);  // nothing visible before commit
    tx.rollback();
  }
  CHECK(count(db.scan<message_content>(std::uint64_t{2})) == 4);
  {
    auto tx = db.transaction();
    CHECK(tx.erase_prefix_all<message_content, message_destination>(std::uint64_t{2}) == 5);
    CHECK(tx.erase_prefix_all<dtx_entry>(bin(std::string("xid\0", 4))) == 1);
    tx.commit();
  }
  CHECK(count(db.scan<message_content>(std::uint64_t{2})) == 0);
  CHECK_FALSE(db.contains<message_destination>({2}));
  CHECK(count(db.scan<message_content>()) == 8);
  CHECK(db.contains<message_destination>({1}));
  CHECK(db.contains<message_destination>({3}));
  CHECK(count(db.scan<dtx_entry>()) == 1);
  CHECK(db.contains<dtx_entry>({bin("xid"), 1}));
}

}  // namespace keyschema::conformance::grouped

namespace keyschema::conformance::grouped {

TEST_CASE("compact_prefix keeps every entry, and compacts where the backend can", "[conformance][erase]") {
  test_fixture fx;
  auto& db = fx.db();
  {
    auto b = db.batch();
    for (const std::string& d : {std::string("q"), std::string("q\0", 2), std::string("q1")}) {
      for (std::uint64_t i = 0; i < 300; ++i) b.put<message_metadata>({d, i}, bin("m"));
      b.put<message_expiration>({d, 1}, 5);
    }
    b.commit();
  }
  // Drain "q" from its head but its last message.
  for (std::uint64_t i = 0; i < 299; ++i) db.erase<message_metadata>({"q", i});
  CHECK(db.compact_prefix<message_metadata>(std::string("q")) ==
        ks::backend_with_compact_range<test_fixture::backend_type>);
  const std::vector<entry<message_metadata>> head = entries(db.scan<message_metadata>(std::string("q")).limit(1));
  REQUIRE(head.size() == 1);
  CHECK(head[0].get<"message_id">() == 299);
  CHECK(count(db.scan<message_metadata>(std::string("q\0", 2))) == 300);
  CHECK(count(db.scan<message_metadata>(std::string("q1"))) == 300);
  CHECK(count(db.scan<message_expiration>()) == 3);
  CHECK(db.compact_prefix<message_metadata>() == ks::backend_with_compact_range<test_fixture::backend_type>);
  CHECK(count(db.scan<message_metadata>()) == 601);
}

}  // namespace keyschema::conformance::grouped
