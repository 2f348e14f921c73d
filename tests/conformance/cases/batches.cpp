// tests/conformance/cases/batches.cpp: conformance cases:
// atomic batches across keyspaces, and batches that fail writing nothing.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

namespace keyschema::conformance {

TEST_CASE("batches apply atomically across keyspaces; later operations win", "[conformance][batch]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_metadata>({"q", 2}, bin("old"));

  auto b = db.batch();
  CHECK(b.empty());
  b.put<message_metadata>({"q", 1}, bin("meta"));
  b.put<message_expiration>({"q", 1}, 5000);
  b.put<message_content>({1, 0}, bin("chunk0"));
  b.put<message_content>({1, 1}, bin("chunk1"));
  b.put<message_destination>({1}, "q");
  b.put<message_count>({"q"}, 1);
  b.put<expiry>({5000, 1}, {});
  b.erase<message_metadata>({"q", 2});
  CHECK(b.size() == 8);

  // Nothing is visible before commit.
  CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
  CHECK_FALSE(db.contains<message_content>({1, 0}));
  CHECK_FALSE(db.contains<message_count>({"q"}));
  CHECK(lookup<message_metadata>(db, {"q", 2}) == show(bin("old")));

  const auto before = db.snapshot();
  b.commit();
  CHECK(b.empty());
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("meta")));
  CHECK(db.get<message_expiration>({"q", 1}) == std::optional<std::int64_t>(5000));
  CHECK(count(db.scan<message_content>(std::uint64_t{1})) == 2);
  CHECK(db.get<message_destination>({1}) == std::optional<std::string>("q"));
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  CHECK(db.contains<expiry>({5000, 1}));
  CHECK_FALSE(db.contains<message_metadata>({"q", 2}));
  // A snapshot taken before the commit sees none of it.
  CHECK_FALSE(before.contains<message_metadata>({"q", 1}));
  CHECK(count(before.scan<message_content>()) == 0);
  CHECK_FALSE(before.contains<message_count>({"q"}));
  CHECK(lookup<message_metadata>(before, {"q", 2}) == show(bin("old")));

  // Later operations on the same key win; the batch is reusable after commit.
  b.put<message_count>({"q"}, 2);
  b.erase<message_count>({"q"});
  b.put<message_count>({"r"}, 1);
  b.put<message_count>({"r"}, 3);
  b.erase<message_count>({"s"});
  b.put<message_count>({"s"}, 4);
  b.commit();
  CHECK_FALSE(db.contains<message_count>({"q"}));
  CHECK(db.get<message_count>({"r"}) == std::optional<std::int64_t>(3));
  CHECK(db.get<message_count>({"s"}) == std::optional<std::int64_t>(4));

  // clear() drops everything; an empty commit changes nothing.
  b.put<message_count>({"t"}, 9);
  b.clear();
  CHECK(b.empty());
  b.commit();
  CHECK_FALSE(db.contains<message_count>({"t"}));

  b.put<message_count>({"t"}, 1);
  b.commit(ks::write_options{.sync = true});
  CHECK(db.get<message_count>({"t"}) == std::optional<std::int64_t>(1));

  // A large batch across keyspaces commits as one.
  for (std::uint64_t i = 0; i < 5000; ++i) {
    b.put<message_metadata>({"bulk", i}, bin("m"));
    b.put<message_content>({1000 + i, 0}, bin("c"));
  }
  b.put<message_count>({"bulk"}, 5000);
  const auto pre_bulk = db.snapshot();
  b.commit();
  CHECK(count(db.scan<message_metadata>("bulk")) == 5000);
  CHECK(count(db.scan<message_content>().from(std::uint64_t{1000})) == 5000);
  CHECK(count(pre_bulk.scan<message_metadata>("bulk")) == 0);
  CHECK(count(pre_bulk.scan<message_content>().from(std::uint64_t{1000})) == 0);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("a batch that fails writes nothing", "[conformance][batch][failure]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_count>({"q"}, 1);
  const std::string bad_text("\xff\xfe", 2);  // not UTF-8: the string codec refuses it

  SECTION("an exception while building leaves the batch unchanged") {
    auto b = db.batch();
    b.put<message_metadata>({"q", 1}, bin("m"));
    b.put<message_count>({"q"}, 2);
    const std::size_t ops = b.size();
    const std::size_t bytes = b.operations().byte_size();
    CHECK_THROWS_AS(b.put<message_count>({bad_text}, 3), ks::error);
    CHECK_THROWS_AS(b.erase<message_metadata>({std::string("a\xc0"), 1}), ks::error);
    CHECK_THROWS_AS(b.put<message_metadata>({"q\xed\xa0\x80", 5}, bin("surrogate")), ks::error);
    CHECK(b.size() == ops);
    CHECK(b.operations().byte_size() == bytes);
    // Building wrote nothing; the batch still commits exactly what was added before.
    CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
    b.commit();
    CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("m")));
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(2));
    CHECK(count(db.scan<message_count>()) == 1);
  }

  SECTION("an abandoned batch writes nothing") {
    {
      auto b = db.batch();
      b.put<message_metadata>({"q", 1}, bin("m"));
      b.put<message_count>({"q"}, 2);
      CHECK_THROWS_AS(b.put<message_count>({bad_text}, 3), ks::error);
    }
    CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  }

  SECTION("a failing single put or transaction put writes nothing and releases the writer") {
    CHECK_THROWS_AS(db.put<message_count>({bad_text}, 3), ks::error);
    CHECK_THROWS_AS(db.erase<message_count>({bad_text}), ks::error);
    CHECK(count(db.scan<message_count>()) == 1);
    db.put<message_count>({"r"}, 5);  // the store's writer lock was released
    CHECK(db.get<message_count>({"r"}) == std::optional<std::int64_t>(5));
    auto tx = db.transaction();
    tx.put<message_count>({"s"}, 6);
    CHECK_THROWS_AS(tx.put<message_count>({bad_text}, 3), ks::error);
    CHECK(tx.size() == 1);
    tx.commit();
    CHECK(db.get<message_count>({"s"}) == std::optional<std::int64_t>(6));
    CHECK(count(db.scan<message_count>()) == 3);
  }

  SECTION("keys longer than the backend's max_key_bytes") {
    const std::size_t max = db.backend().limits().max_key_bytes;
    if (!is_finite_key_limit(max)) {
      WARN(backend_factory::name << ": limits().max_key_bytes is " << max
                                 << "; no key can exceed it, limit case skipped");
      SUCCEED();
      return;
    }
    // message_count keys are ("MESSAGE_COUNT", d): 15 bytes of literal, then d plus 2.
    const std::string longest(max - 17, 'x');
    const std::string too_long(max - 16, 'x');
    auto b = db.batch();
    b.put<message_count>({"ok"}, 1);
    try {
      b.put<message_count>({too_long}, 2);
      FAIL("a key of " << max + 1 << " bytes was accepted");
    } catch (const ks::limit_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("message_count") && Catch::Contains(std::to_string(max)));
    }
    CHECK(b.size() == 1);
    b.erase<message_count>({longest});  // exactly max bytes: accepted
    REQUIRE(b.size() == 2);
    CHECK(b.operations()[1].key.size() == max);
    b.commit();
    CHECK(db.get<message_count>({"ok"}) == std::optional<std::int64_t>(1));
    CHECK(count(db.scan<message_count>()) == 2);

    CHECK_THROWS_AS(db.put<message_count>({too_long}, 2), ks::limit_error);
    CHECK_THROWS_AS(db.erase<message_count>({too_long}), ks::limit_error);
    {
      auto tx = db.transaction();
      CHECK_THROWS_AS(tx.put<message_count>({too_long}, 2), ks::limit_error);
      CHECK(tx.size() == 0);
    }
    if (!entry_limit_counts_value(db)) {
      db.put<message_count>({longest}, 7);
      CHECK(db.get<message_count>({longest}) == std::optional<std::int64_t>(7));
      CHECK(count(db.scan<message_count>(longest)) == 1);
    }
    CHECK_FALSE(db.contains<message_count>({too_long}));
  }

  SECTION("the backend refusing a commit applies nothing and keeps the batch") {
    const std::size_t max = db.backend().limits().max_key_bytes;
    if (!is_finite_key_limit(max)) {
      WARN(backend_factory::name << ": limits().max_key_bytes is " << max
                                 << "; no commit can exceed it, case skipped");
      SUCCEED();
      return;
    }
    // A byte-level batch with valid operations and one key over the limit.
    auto typed = db.batch();
    typed.put<message_metadata>({"q", 1}, bin("m"));
    typed.put<message_count>({"q"}, 2);
    ks::write_batch raw = typed.operations();
    raw.put(std::string(max + 1, '\x02'), "");
    CHECK_THROWS_AS(db.write(raw), ks::limit_error);
    CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));

    if (entry_limit_counts_value(db)) {
      // Key within the limit, key plus value over it: refused when added, naming the keyspace.
      const std::size_t entry_max = db.backend().limits().max_entry_bytes;
      const ks::bytes oversized(std::string(entry_max, 'v'));
      const std::size_t ops = typed.size();
      try {
        typed.put<message_metadata>({"q", 2}, oversized);
        FAIL("an entry of more than " << entry_max << " bytes was accepted");
      } catch (const ks::limit_error& e) {
        CHECK_THAT(e.what(), Catch::Contains("message_metadata") && Catch::Contains("max_entry_bytes") &&
                                 Catch::Contains(std::to_string(entry_max)));
      }
      CHECK(typed.size() == ops);  // left as it was
      // The same entry in a byte-level batch: refused by the engine at commit, nothing applied.
      ks::write_batch raw_entry = typed.operations();
      raw_entry.put(std::string(1, '\x03'), std::string(entry_max, 'v'));  // a key of no keyspace
      CHECK_THROWS_AS(db.write(raw_entry), ks::limit_error);
      CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
      CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));

      auto tx = db.transaction();
      tx.put<message_count>({"q"}, 3);
      CHECK_THROWS_AS(tx.put<message_metadata>({"q", 2}, oversized), ks::limit_error);
      CHECK(tx.is_open());
      CHECK(tx.size() == 1);
      CHECK(tx.get<message_count>({"q"}) == std::optional<std::int64_t>(3));
      CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
      tx.commit();
      CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(3));
      CHECK_FALSE(db.contains<message_metadata>({"q", 2}));
    }
    typed.clear();
    typed.put<message_metadata>({"q", 1}, bin("m"));
    typed.commit();
    CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("m")));
  }
}

}  // namespace keyschema::conformance
