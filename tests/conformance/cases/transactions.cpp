// tests/conformance/cases/transactions.cpp: conformance cases:
// transactions: reading their own writes, empty bounds, commit/rollback/misuse, run_transaction.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

namespace keyschema::conformance {

TEST_CASE("transactions read their own writes in get and scan", "[conformance][transaction][model]") {
  test_fixture fx;
  auto& db = fx.db();
  std::mt19937_64 rng(4242);
  const std::vector<std::string> dests = {"q", "q1", std::string("q\0x", 3), "", "MESSAGE_METADATA", "r"};
  const std::vector<std::uint64_t> ids = {0, 1, 2, 9, 10, 100, 1ull << 63, u64_max};
  auto pick_dest = [&] { return dests[rng() % dests.size()]; };
  auto pick_id = [&] { return ids[rng() % ids.size()]; };

  model<message_metadata> stored;
  {
    auto b = db.batch();
    for (int i = 0; i < 30; ++i) {
      const std::string d = pick_dest();
      const std::uint64_t id = pick_id();
      const ks::bytes v = random_value(rng);
      b.put<message_metadata>({d, id}, v);
      stored.put({d, id}, v);
    }
    b.commit();
  }

  for (int trial = 0; trial < 9; ++trial) {
    INFO("trial " << trial);
    model<message_metadata> mine = stored;
    {
      auto tx = db.transaction();
      for (int op = 0; op < 60; ++op) {
        const auto r = rng() % 10;
        if (r < 4) {
          const std::string d = pick_dest();
          const std::uint64_t id = pick_id();
          const ks::bytes v = random_value(rng);
          tx.put<message_metadata>({d, id}, v);
          mine.put({d, id}, v);
        } else if (r < 8) {
          // Erase, mostly keys the store holds: the erasure must hide them.
          std::tuple<std::string, std::uint64_t> k(pick_dest(), pick_id());
          if (r < 7 && mine.size() > 0) {
            auto it = mine.entries().begin();
            std::advance(it, static_cast<std::ptrdiff_t>(rng() % mine.size()));
            k = it->first;
          }
          tx.erase<message_metadata>(k);
          mine.erase(k);
        } else if (r < 9) {
          tx.put<message_count>({pick_dest()}, 1);
        } else {
          const std::string d = pick_dest();
          const auto covered = mine.covered<1>(std::tuple<std::string>(d), scan_bounds<std::uint64_t>{});
          CHECK(tx.erase_prefix<message_metadata>(d) == covered.size());
          for (const auto& k : covered) mine.erase(k);
        }
      }
      // Reads inside the transaction see its writes.
      CHECK(collect(tx.scan<message_metadata>()) == mine.all());
      std::vector<std::string> mine_reversed = mine.all();
      std::reverse(mine_reversed.begin(), mine_reversed.end());
      CHECK(collect(tx.scan<message_metadata>().reverse()) == mine_reversed);
      for (const std::string& d : dests) {
        const auto prefix = std::tuple<std::string>(d);
        check_scan(tx, mine, prefix, scan_bounds<std::uint64_t>{});
        check_scan(tx, mine, prefix, scan_bounds<std::uint64_t>{.reverse = true});
        for (int i = 0; i < 10; ++i) check_scan(tx, mine, prefix, random_bounds<std::uint64_t>(rng, pick_id));
        for (std::uint64_t id : ids) {
          const auto it = mine.entries().find({d, id});
          const std::string want = it == mine.entries().end() ? std::string("<missing>") : show(it->second);
          CHECK(lookup<message_metadata>(tx, {d, id}) == want);
          CHECK(tx.contains<message_metadata>({d, id}) == (it != mine.entries().end()));
        }
      }
      for (int i = 0; i < 10; ++i) {
        check_scan(tx, mine, std::tuple<>{}, random_bounds<std::string>(rng, pick_dest));
      }
      // Nobody else sees them before commit.
      CHECK(collect(db.scan<message_metadata>()) == stored.all());

      switch (trial % 3) {
        case 0:
          tx.commit();
          CHECK_FALSE(tx.is_open());
          stored = mine;
          break;
        case 1:
          tx.rollback();
          CHECK_FALSE(tx.is_open());
          break;
        default:
          break;  // rolled back by the destructor
      }
    }
    CHECK(collect(db.scan<message_metadata>()) == stored.all());
  }
}

TEST_CASE("bounds that select nothing (lower above upper) yield nothing, also with pending writes",
          "[conformance][scan][transaction]") {
  test_fixture fx;
  auto& db = fx.db();
  for (std::uint64_t i = 1; i <= 9; ++i) db.put<message_metadata>({"q", i}, bin("stored"));
  CHECK(count(db.scan<message_metadata>("q").from(5).to(2)) == 0);
  CHECK(count(db.scan<message_metadata>("q").from(5).to(2).reverse()) == 0);
  CHECK(count(db.scan<message_metadata>("q").after(5).through(5)) == 0);
  CHECK(count(db.scan<message_metadata>("q").from(5).to(5).reverse()) == 0);
  auto tx = db.transaction();
  // A pending write between the two bounds: the overlay must not walk from lower to upper.
  tx.put<message_metadata>({"q", 3}, bin("pending"));
  tx.erase<message_metadata>({"q", 4});
  CHECK(count(tx.scan<message_metadata>("q").from(5).to(2)) == 0);
  CHECK(count(tx.scan<message_metadata>("q").from(5).to(2).reverse()) == 0);
  CHECK(count(tx.scan<message_metadata>().from("r").to("p")) == 0);
  CHECK(tx.erase_range(tx.scan<message_metadata>("q").from(5).to(2)) == 0);
  CHECK(count(tx.scan<message_metadata>("q")) == 8);  // 1..9 without the erased 4
  tx.commit();
  CHECK(count(db.scan<message_metadata>("q")) == 8);
  CHECK(db.erase_range(db.scan<message_metadata>("q").after(7).to(3)) == 0);
  CHECK(count(db.scan<message_metadata>("q")) == 8);
}

TEST_CASE("writing while iterating a transaction's scan is safe; the scan sees the state as of its start",
          "[conformance][transaction]") {
  test_fixture fx;
  auto& db = fx.db();
  for (std::uint64_t id = 1; id <= 50; ++id) db.put<message_metadata>({"q", id}, bin("m" + std::to_string(id)));

  auto tx = db.transaction();
  tx.put<message_metadata>({"q", 60}, bin("pending"));
  std::vector<std::uint64_t> seen;
  for (const auto& e : tx.scan<message_metadata>(std::string("q"))) {
    const std::uint64_t id = e.template get<"message_id">();
    seen.push_back(id);
    // Move each message one id up (erase it, write id + 100), and erase the next one ahead of the
    // cursor: the open scan keeps showing the state as of its creation.
    tx.erase<message_metadata>({"q", id});
    tx.put<message_metadata>({"q", id + 100}, e.value);
    if (id < 50) tx.erase<message_metadata>({"q", id + 1});
  }
  std::vector<std::uint64_t> expected;
  for (std::uint64_t id = 1; id <= 50; ++id) expected.push_back(id);
  expected.push_back(60);
  CHECK(seen == expected);
  // A scan begun now sees every write made while the first one was iterated.
  std::vector<std::uint64_t> now;
  for (const auto& e : tx.scan<message_metadata>(std::string("q"))) now.push_back(e.template get<"message_id">());
  std::vector<std::uint64_t> moved;
  for (std::uint64_t id = 1; id <= 50; ++id) moved.push_back(id + 100);
  moved.insert(moved.begin() + 50, 160);
  std::sort(moved.begin(), moved.end());
  CHECK(now == moved);
  tx.commit();
  CHECK(count(db.scan<message_metadata>(std::string("q"))) == 51);
  CHECK(lookup<message_metadata>(db, {"q", 101}) == show(bin("m1")));
  CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
}

TEST_CASE("transactions: commit, rollback, destruction, misuse", "[conformance][transaction]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_count>({"q"}, 10);
  db.put<message_metadata>({"q", 1}, bin("m1"));

  SECTION("commit applies every write atomically") {
    const auto before = db.snapshot();
    auto tx = db.transaction();
    CHECK(tx.is_open());
    const std::int64_t n = tx.get<message_count>({"q"}).value_or(0);
    tx.put<message_count>({"q"}, n + 1);
    tx.put<message_metadata>({"q", 2}, bin("m2"));
    tx.put<message_content>({2, 0}, bin("c"));
    tx.erase<message_metadata>({"q", 1});
    tx.put<expiry>({77, 2}, {});
    CHECK(tx.size() == 5);
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(10));
    CHECK(db.contains<message_metadata>({"q", 1}));
    tx.commit(ks::write_options{.sync = true});
    CHECK_FALSE(tx.is_open());
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(11));
    CHECK(collect(db.scan<message_metadata>("q")) ==
          std::vector<std::string>{show_entry<message_metadata>({"q", 2}, bin("m2"))});
    CHECK(db.contains<message_content>({2, 0}));
    CHECK(db.contains<expiry>({77, 2}));
    CHECK(before.get<message_count>({"q"}) == std::optional<std::int64_t>(10));
    CHECK(count(before.scan<message_metadata>("q")) == 1);
    CHECK_FALSE(before.contains<expiry>({77, 2}));
    // A finished transaction refuses further use.
    CHECK_THROWS_AS(tx.get<message_count>({"q"}), ks::error);
    CHECK_THROWS_AS(tx.put<message_count>({"q"}, 0), ks::error);
    CHECK_THROWS_AS(tx.commit(), ks::error);
    db.put<message_count>({"after"}, 1);  // the writer lock was released
    CHECK(db.contains<message_count>({"after"}));
  }

  SECTION("destruction rolls back") {
    {
      auto tx = db.transaction();
      tx.put<message_count>({"q"}, 99);
      tx.erase<message_metadata>({"q", 1});
      tx.put<message_metadata>({"q", 3}, bin("m3"));
      CHECK(tx.get<message_count>({"q"}) == std::optional<std::int64_t>(99));
    }
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(10));
    CHECK(db.contains<message_metadata>({"q", 1}));
    CHECK_FALSE(db.contains<message_metadata>({"q", 3}));
    db.put<message_count>({"q"}, 12);  // the writer lock was released
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(12));
  }

  SECTION("run_transaction commits what fn wrote and returns its result; a rollback or an exception commits nothing") {
    int runs = 0;
    const std::int64_t n = ks::run_transaction(db, [&](auto& tx) {
      ++runs;
      const std::int64_t v = tx.template get<message_count>({"q"}).value_or(0) + 5;
      tx.template put<message_count>({"q"}, v);
      CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(10));  // not before it returns
      return v;
    });
    CHECK(runs == 1);  // no other writer: no conflict
    CHECK(n == 15);
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(15));
    ks::run_transaction(db, [&](auto& tx) {
      tx.template put<message_count>({"q"}, 99);
      tx.rollback();
    });
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(15));
    CHECK_THROWS_AS(ks::run_transaction(db,
                                        [&](auto& tx) {
                                          ++runs;
                                          tx.template put<message_count>({"q"}, 98);
                                          throw std::runtime_error("fn failed");
                                        }),
                    std::runtime_error);
    CHECK(runs == 2);  // not run again: only conflict_error is
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(15));
    db.put<message_count>({"after"}, 1);  // the writer lock was released
    CHECK(db.contains<message_count>({"after"}));
  }

  SECTION("rollback drops the writes; the transaction is then closed") {
    auto tx = db.transaction();
    tx.put<message_count>({"q"}, 99);
    tx.rollback();
    CHECK_FALSE(tx.is_open());
    CHECK(tx.size() == 0);
    CHECK_THROWS_AS(tx.get<message_count>({"q"}), ks::error);
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(10));
    auto tx2 = db.transaction();  // not blocked
    tx2.put<message_count>({"q"}, 13);
    tx2.commit();
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(13));
  }

  SECTION("a thread holding a transaction cannot write around it") {
    auto tx = db.transaction();
    tx.put<message_count>({"q"}, 50);
    CHECK_THROWS_AS(db.put<message_count>({"q"}, 1), ks::error);
    CHECK_THROWS_AS(db.erase<message_count>({"q"}), ks::error);
    CHECK_THROWS_AS(db.erase_prefix<message_metadata>(std::string("q")), ks::error);
    CHECK_THROWS_AS(db.transaction(), ks::error);
    auto b = db.batch();
    b.put<message_count>({"q"}, 2);
    CHECK_THROWS_AS(b.commit(), ks::error);
    CHECK(b.size() == 1);
    // Reads on the store are fine and see the committed state.
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(10));
    tx.commit();
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(50));
    b.commit();  // allowed again once the transaction is over
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(2));
  }

  SECTION("erase_range inside a transaction honours bounds and limit") {
    for (std::uint64_t i = 0; i < 20; ++i) db.put<message_metadata>({"r", i}, bin("x"));
    db.put<message_metadata>({"r0", 5}, bin("neighbour"));
    auto tx = db.transaction();
    tx.put<message_metadata>({"r", 100}, bin("pending"));
    CHECK(tx.erase_range(tx.scan<message_metadata>("r").after(4).limit(3)) == 3);  // 5, 6, 7
    CHECK(tx.erase_range(tx.scan<message_metadata>("r").reverse().limit(2)) == 2);  // 100 (pending), 19
    std::vector<std::uint64_t> want = {0, 1, 2, 3, 4};
    for (std::uint64_t i = 8; i < 19; ++i) want.push_back(i);
    CHECK(ids_of(entries(tx.scan<message_metadata>("r"))) == want);
    CHECK(count(db.scan<message_metadata>("r")) == 20);
    tx.commit();
    CHECK(ids_of(entries(db.scan<message_metadata>("r"))) == want);
    CHECK(count(db.scan<message_metadata>("r0")) == 1);
  }
}

}  // namespace keyschema::conformance
