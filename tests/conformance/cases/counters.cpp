// tests/conformance/cases/counters.cpp: conformance cases:
// counters (add<KS> on batches, transactions and single ops) and declared counts (count_of).
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake). Its
// schema is its own (a store of it is another database than the broker fixture's).
#include <conformance/conformance.hpp>
#include <conformance/derived_fixture.hpp>
#include <support/thrown.hpp>

namespace keyschema::conformance::counters {

using message = ks::keyspace<"message", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                             ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>>;
// Messages per destination, and in all, maintained by the store.
using message_count = ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"MESSAGE_COUNT">,
                                   ks::field<"destination", std::string>>;
using message_total = ks::keyspace<"message_total", ks::count_of<message, 0>, ks::lit<"MESSAGE_TOTAL">>;
// Plain counters.
using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"COUNTER">, ks::field<"name", std::string>>;
using small_counter = ks::keyspace<"small_counter", std::uint8_t, ks::lit<"SMALL">, ks::field<"name", std::string>>;
using counters_schema = ks::schema<message, message_count, message_total, counter, small_counter>;

static_assert(std::is_same_v<message_count::value_type, std::int64_t>);
// The layout names a count: turning a plain integer keyspace into one is a schema change.
using message_count_plain = ks::keyspace<"message_count", std::int64_t, ks::lit<"MESSAGE_COUNT">,
                                         ks::field<"destination", std::string>>;
static_assert(ks::layout<ks::schema<message, message_count>>::fingerprint !=
              ks::layout<ks::schema<message, message_count_plain>>::fingerprint);

// A store of counters_schema in a fresh directory.
struct counters_fixture : schema_fixture<counters_schema> {
  counters_fixture() : schema_fixture("conformance-counters") {}
};

inline ks::bytes msg(std::string_view s) { return ks::bytes(s); }

// The declared counts recomputed from the records, as "dest=n" strings, and the total.
template <class Source>
std::vector<std::string> recount(const Source& src, std::int64_t& total) {
  std::map<std::string, std::int64_t> n;
  total = 0;
  for (const auto& e : src.template scan<message>()) {
    ++n[e.template get<"destination">()];
    ++total;
  }
  std::vector<std::string> out;
  for (const auto& [d, c] : n) out.push_back(show(d) + "=" + std::to_string(c));
  return out;
}
// The declared counts as stored.
template <class Source>
std::vector<std::string> stored_counts(const Source& src, std::int64_t& total) {
  std::vector<std::string> out;
  for (const auto& e : src.template scan<message_count>())
    out.push_back(show(e.template get<"destination">()) + "=" + std::to_string(e.value));
  total = src.template get<message_total>({}).value_or(0);
  return out;
}
template <class Source>
void check_counts(const Source& src) {
  std::int64_t want_total = 0, got_total = 0;
  const auto want = recount(src, want_total);
  CHECK(stored_counts(src, got_total) == want);
  CHECK(got_total == want_total);
  // A count that reached 0 is erased, never stored as 0.
  CHECK_FALSE(src.template get<message_total>({}) == std::optional<std::int64_t>(0));
}

TEST_CASE("add in a batch sums at commit and orders with the batch's puts and erases",
          "[conformance][counters][batch]") {
  counters_fixture fx;
  auto& db = fx.db();
  db.put<counter>({"put-then-add"}, 100);
  db.put<counter>({"erase-then-add"}, 100);
  db.put<counter>({"add-then-put"}, 100);
  db.put<counter>({"add-then-erase"}, 100);

  auto b = db.batch();
  b.add<counter>({"fresh"}, 3);
  b.add<counter>({"fresh"}, 4);
  b.add<counter>({"fresh"}, -2);
  b.put<counter>({"put-then-add"}, 10);
  b.add<counter>({"put-then-add"}, 1);
  b.erase<counter>({"erase-then-add"});
  b.add<counter>({"erase-then-add"}, 7);
  b.add<counter>({"add-then-put"}, 1);
  b.put<counter>({"add-then-put"}, 50);
  b.add<counter>({"add-then-erase"}, 1);
  b.erase<counter>({"add-then-erase"});
  CHECK(b.size() == 11);
  CHECK(b.operations().size() == 4);  // the adds are resolved at commit, not in the byte-level batch
  // Nothing is visible before commit.
  CHECK(db.get<counter>({"fresh"}) == std::nullopt);
  b.commit();
  CHECK(b.empty());
  CHECK(db.get<counter>({"fresh"}) == std::optional<std::int64_t>(5));
  CHECK(db.get<counter>({"put-then-add"}) == std::optional<std::int64_t>(11));
  CHECK(db.get<counter>({"erase-then-add"}) == std::optional<std::int64_t>(7));
  CHECK(db.get<counter>({"add-then-put"}) == std::optional<std::int64_t>(50));
  CHECK(db.get<counter>({"add-then-erase"}) == std::nullopt);

  // An add resolves against the state at commit, not when it was recorded: a write between
  // recording and committing is added to.
  b.add<counter>({"fresh"}, 1);
  db.put<counter>({"fresh"}, 1000);
  b.commit();
  CHECK(db.get<counter>({"fresh"}) == std::optional<std::int64_t>(1001));

  // A batch reused after clear() holds no add.
  b.add<counter>({"fresh"}, 1);
  b.clear();
  b.commit();
  CHECK(db.get<counter>({"fresh"}) == std::optional<std::int64_t>(1001));
}

TEST_CASE("add as a single operation and in a transaction reading its own writes",
          "[conformance][counters][transaction]") {
  counters_fixture fx;
  auto& db = fx.db();
  db.add<counter>({"c"}, 5);
  db.add<counter>({"c"}, -7);
  CHECK(db.get<counter>({"c"}) == std::optional<std::int64_t>(-2));
  db.add<small_counter>({"s"}, 200);
  CHECK(db.get<small_counter>({"s"}) == std::optional<std::uint8_t>(200));

  auto tx = db.transaction();
  tx.add<counter>({"c"}, 2);
  CHECK(tx.get<counter>({"c"}) == std::optional<std::int64_t>(0));
  tx.put<counter>({"d"}, 40);
  tx.add<counter>({"d"}, 2);
  CHECK(tx.get<counter>({"d"}) == std::optional<std::int64_t>(42));
  tx.erase<counter>({"d"});
  tx.add<counter>({"d"}, 1);
  CHECK(tx.get<counter>({"d"}) == std::optional<std::int64_t>(1));
  CHECK(db.snapshot().get<counter>({"c"}) == std::optional<std::int64_t>(-2));  // not before commit
  tx.commit();
  CHECK(db.get<counter>({"c"}) == std::optional<std::int64_t>(0));  // 0 is a value like any other
  CHECK(db.get<counter>({"d"}) == std::optional<std::int64_t>(1));
}

TEST_CASE("an add that overflows its value type throws overflow_error and writes nothing",
          "[conformance][counters][error]") {
  counters_fixture fx;
  auto& db = fx.db();
  db.put<counter>({"max"}, i64_max);
  db.put<small_counter>({"s"}, 250);

  auto b = db.batch();
  b.put<counter>({"other"}, 1);
  b.put<message>({"q", 1}, msg("m"));
  b.add<counter>({"max"}, 1);
  try {
    b.commit();
    FAIL("an overflowing add was committed");
  } catch (const ks::overflow_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("'counter'") && Catch::Contains("max") &&
                             Catch::Contains(std::to_string(i64_max)) && Catch::Contains("plus 1"));
  }
  // Nothing of the batch was written, and the batch is left as it was.
  CHECK(db.get<counter>({"other"}) == std::nullopt);
  CHECK(db.get<message>({"q", 1}) == std::nullopt);
  CHECK(db.get<message_total>({}) == std::nullopt);
  CHECK(b.size() == 3);
  b.clear();

  CHECK_THROWS_AS(db.add<small_counter>({"s"}, 6), ks::overflow_error);
  CHECK_THROWS_AS(db.add<small_counter>({"t"}, -1), ks::overflow_error);  // below an unsigned type's 0
  CHECK(db.get<small_counter>({"s"}) == std::optional<std::uint8_t>(250));
  CHECK(db.get<small_counter>({"t"}) == std::nullopt);
  db.add<small_counter>({"s"}, 5);
  CHECK(db.get<small_counter>({"s"}) == std::optional<std::uint8_t>(255));

  auto tx = db.transaction();
  tx.put<counter>({"other"}, 2);
  CHECK_THROWS_AS(tx.add<counter>({"max"}, 1), ks::overflow_error);
  CHECK(tx.is_open());  // the transaction goes on without that add
  tx.commit();
  CHECK(db.get<counter>({"other"}) == std::optional<std::int64_t>(2));
  CHECK(db.get<counter>({"max"}) == std::optional<std::int64_t>(i64_max));
}

TEST_CASE("declared counts follow puts, overwrites and erases in every kind of write",
          "[conformance][counters][count]") {
  counters_fixture fx;
  auto& db = fx.db();
  db.put<message>({"q", 1}, msg("a"));
  db.put<message>({"q", 1}, msg("b"));  // an overwrite: no new record
  db.put<message>({"q", 2}, msg("c"));
  db.put<message>({"r", 1}, msg("d"));
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(2));
  CHECK(db.get<message_count>({"r"}) == std::optional<std::int64_t>(1));
  CHECK(db.get<message_total>({}) == std::optional<std::int64_t>(3));
  db.erase<message>({"q", 9});  // not there: no change
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(2));

  // A batch: a put and an erase of one key, a put twice, an erase of a missing key.
  auto b = db.batch();
  b.put<message>({"s", 1}, msg("x"));
  b.erase<message>({"s", 1});
  b.put<message>({"s", 2}, msg("y"));
  b.put<message>({"s", 2}, msg("z"));
  b.erase<message>({"r", 1});
  b.erase<message>({"r", 2});
  b.commit();
  CHECK(db.get<message_count>({"s"}) == std::optional<std::int64_t>(1));
  CHECK(db.get<message_count>({"r"}) == std::nullopt);  // reached 0: erased
  CHECK(db.get<message_total>({}) == std::optional<std::int64_t>(3));
  check_counts(db);

  // A transaction sees its own count changes.
  {
    auto tx = db.transaction();
    tx.put<message>({"t", 1}, msg("1"));
    tx.put<message>({"t", 2}, msg("2"));
    tx.erase<message>({"q", 1});
    CHECK(tx.get<message_count>({"t"}) == std::optional<std::int64_t>(2));
    CHECK(tx.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
    CHECK(tx.get<message_total>({}) == std::optional<std::int64_t>(4));
    CHECK(tx.erase_prefix<message>("t") == 2);
    CHECK(tx.get<message_count>({"t"}) == std::nullopt);
    tx.put<message>({"t", 3}, msg("3"));
    tx.commit();
  }
  CHECK(db.get<message_count>({"t"}) == std::optional<std::int64_t>(1));
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  check_counts(db);

  // A raw write_batch through store::write, built from typed keys.
  auto typed = db.batch();
  typed.put<message>({"u", 1}, msg("raw"));
  ks::write_batch raw;
  raw.put(typed.operations()[0].key, "raw");
  db.write(raw);
  CHECK(db.get<message_count>({"u"}) == std::optional<std::int64_t>(1));

  // erase_prefix over more than one chunk: each chunk's count update is in the chunk's write.
  auto big = db.batch();
  for (std::uint64_t i = 0; i < 2500; ++i) big.put<message>({"big", i}, msg(""));
  big.commit();
  CHECK(db.get<message_count>({"big"}) == std::optional<std::int64_t>(2500));
  CHECK(db.erase_range(db.scan<message>("big").limit(1200)) == 1200);
  CHECK(db.get<message_count>({"big"}) == std::optional<std::int64_t>(1300));
  CHECK(db.erase_prefix<message>("big") == 1300);
  CHECK(db.get<message_count>({"big"}) == std::nullopt);
  check_counts(db);
}

TEST_CASE("a raw write_batch writing a declared count is refused, naming the keyspace; nothing is written",
          "[conformance][counters][count][error]") {
  counters_fixture fx;
  auto& db = fx.db();
  db.put<message>({"q", 1}, msg("a"));
  std::string count_key, total_key, record_key;
  ks::detail::key_codec<message_count>::encode(count_key, message_count::key_type("q"));
  ks::detail::key_codec<message_total>::encode(total_key, message_total::key_type());
  ks::detail::key_codec<message>::encode(record_key, message::key_type("q", 2));

  ks::write_batch raw;
  raw.put(record_key, "b");  // a record first: the whole batch is refused, not only the count
  raw.put(count_key, "anything");
  try {
    db.write(raw);
    FAIL("a raw put of a declared count was written");
  } catch (const ks::key_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("keyschema::store::write") && Catch::Contains("'message_count'") &&
                             Catch::Contains("declared count") && Catch::Contains("records of 'message'") &&
                             Catch::Contains("Nothing was written"));
  }
  ks::write_batch erase_total;
  erase_total.erase(total_key);
  try {
    db.write(erase_total);
    FAIL("a raw erase of a declared count was written");
  } catch (const ks::key_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("erases") && Catch::Contains("'message_total'"));
  }
  CHECK(db.get<message>({"q", 2}) == std::nullopt);
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  CHECK(db.get<message_total>({}) == std::optional<std::int64_t>(1));
  check_counts(db);
}

TEST_CASE("a raw write_batch writing a reserved key (schema record, migration, prepared) is refused; nothing is written",
          "[conformance][counters][error]") {
  counters_fixture fx;
  auto& db = fx.db();
  std::string record_key;
  ks::detail::key_codec<message>::encode(record_key, message::key_type("q", 7));
  for (const std::string& reserved : {std::string(ks::schema_key), std::string(ks::migration_key),
                                     std::string("\xff" "keyschema/prepared/x"), std::string("\xff")}) {
    INFO(ks::detail::describe_key(reserved));
    for (const bool erase : {false, true}) {
      ks::write_batch raw;
      raw.put(record_key, "r");  // a record first: the whole batch is refused
      if (erase)
        raw.erase(reserved);
      else
        raw.put(reserved, "0123456789abcdef\n");
      try {
        db.write(raw);
        FAIL("a raw write of a reserved key was written");
      } catch (const ks::key_error& e) {
        CHECK_THAT(e.what(), Catch::Contains("keyschema::store::write") && Catch::Contains("reserved key") &&
                                 Catch::Contains(erase ? "erases" : "puts") && Catch::Contains("Nothing was written"));
      }
    }
  }
  CHECK(db.get<message>({"q", 7}) == std::nullopt);
  fx.reopen();  // the schema record is intact
  CHECK(fx.db().get<message>({"q", 7}) == std::nullopt);
}

// store::backend() is read-only: no write path of the engine is reachable through it, so a raw
// write goes through store::write's guards. The engine's writes stay reachable through
// unsafe_backend(), named as such.
template <class Store>
concept backend_writes = requires(Store& db, const ks::write_batch& b) { db.backend().write(b, ks::write_options{}); };
template <class Store>
concept backend_begins_write = requires(Store& db) { db.backend().begin_write(); };
template <class Store>
concept backend_erases_range = requires(Store& db) { db.backend().erase_range(ks::key_range{}, ks::write_options{}); };
template <class Store>
concept backend_compacts = requires(Store& db) { db.backend().compact_range(ks::key_range{}); };
template <class Store>
concept backend_native = requires(Store& db) { db.backend().native(); };
template <class Store>
concept backend_reads = requires(Store& db, std::string& v) {
  db.backend().get(std::string_view(), v, nullptr);
  db.backend().cursor(ks::key_range{}, nullptr);
  db.backend().snapshot();
  db.backend().limits();
};
template <class Store>
concept unsafe_backend_writes =
    requires(Store& db, const ks::write_batch& b) { db.unsafe_backend().write(b, ks::write_options{}); };
using raw_door_store = counters_fixture::store_type;
static_assert(!backend_writes<raw_door_store>, "store::backend() must not write");
static_assert(!backend_begins_write<raw_door_store>, "store::backend() must not begin a write transaction");
static_assert(!backend_erases_range<raw_door_store>, "store::backend() must not erase a range");
static_assert(!backend_compacts<raw_door_store>, "store::backend() must not compact");
static_assert(!backend_native<raw_door_store>, "store::backend() must not hand out the native handle");
static_assert(backend_reads<raw_door_store>, "store::backend() reads");
static_assert(unsafe_backend_writes<raw_door_store>, "store::unsafe_backend() writes");

TEST_CASE("a raw write cannot set a declared count over its records nor overwrite the schema record; an ordinary key is written",
          "[conformance][counters][count][error]") {
  counters_fixture fx;
  auto& db = fx.db();
  db.put<message>({"q", 1}, msg("a"));
  std::string count_key, record_key, ninety_nine;
  ks::detail::key_codec<message_count>::encode(count_key, message_count::key_type("q"));
  ks::detail::key_codec<message>::encode(record_key, message::key_type("q", 2));
  ks::value_traits<std::int64_t>::encode(ninety_nine, 99);
  std::string schema_record;
  REQUIRE(db.backend().get(ks::schema_key, schema_record, nullptr));

  // The count of 1 record set to 99.
  ks::write_batch count99;
  count99.put(count_key, ninety_nine);
  const auto e = testing::thrown<ks::key_error>([&] { db.write(count99); });
  REQUIRE(e);
  CHECK_THAT(e->what(), Catch::Contains(ks::detail::describe_key(count_key)) && Catch::Contains("'message_count'") &&
                            Catch::Contains("Nothing was written"));
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));

  // The schema record overwritten.
  ks::write_batch schema;
  schema.put(ks::schema_key, "0000000000000000\nanother layout");
  const auto s = testing::thrown<ks::key_error>([&] { db.write(schema); });
  REQUIRE(s);
  CHECK_THAT(s->what(), Catch::Contains(ks::detail::describe_key(ks::schema_key)) && Catch::Contains("reserved key"));
  std::string after;
  REQUIRE(db.backend().get(ks::schema_key, after, nullptr));
  CHECK(after == schema_record);

  // A key of an ordinary keyspace is written, and the count of its record follows.
  ks::write_batch ordinary;
  ordinary.put(record_key, "b");
  db.write(ordinary);
  CHECK(db.get<message>({"q", 2}) == msg("b"));
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(2));
  check_counts(db);
  fx.reopen();  // the schema record is intact: the store opens
  check_counts(fx.db());
}

TEST_CASE("declared counts equal the records after random writes and reopening",
          "[conformance][counters][count][model]") {
  counters_fixture fx;
  std::mt19937_64 rng(9090);
  const std::vector<std::string> dests = {"q", "q1", std::string("q\0", 2), "", "MESSAGE_COUNT"};
  auto dest = [&] { return dests[rng() % dests.size()]; };
  auto id = [&] { return static_cast<std::uint64_t>(rng() % 12); };
  for (int round = 0; round < 60; ++round) {
    auto& db = fx.db();
    const auto kind = rng() % 5;
    if (kind == 0) {
      auto b = db.batch();
      for (int i = 0; i < 8; ++i) {
        if (rng() % 3 == 0)
          b.erase<message>({dest(), id()});
        else
          b.put<message>({dest(), id()}, msg("v"));
        if (rng() % 4 == 0) b.add<counter>({"ops"}, 1);
      }
      b.commit({.sync = false});
    } else if (kind == 1) {
      auto tx = db.transaction();
      for (int i = 0; i < 6; ++i) {
        if (rng() % 3 == 0)
          tx.erase<message>({dest(), id()});
        else
          tx.put<message>({dest(), id()}, msg("w"));
      }
      if (rng() % 4 == 0)
        tx.rollback();
      else
        tx.commit({.sync = false});
    } else if (kind == 2) {
      db.put<message>({dest(), id()}, msg("p"), {.sync = false});
    } else if (kind == 3) {
      db.erase<message>({dest(), id()}, {.sync = false});
    } else {
      (void)db.erase_range(db.scan<message>(dest()).from(id()).limit(3));
    }
    if (round % 20 == 19) {
      if (backend_factory::persistent) fx.reopen();
      check_counts(fx.db());
    }
  }
  check_counts(fx.db());
  if (!backend_factory::persistent) WARN(backend_factory::name << " keeps nothing on disk: no reopen");
}

}  // namespace keyschema::conformance::counters
