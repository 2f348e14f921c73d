// tests/conformance/cases/indexes.cpp: conformance cases:
// secondary indexes (index_of) maintained with their records, and the expiry sweep.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake). Its
// schema is its own (a store of it is another database than the broker fixture's).
#include <conformance/conformance.hpp>
#include <conformance/derived_fixture.hpp>
#include <support/thrown.hpp>

#include <chrono>

namespace keyschema::conformance::indexes {

using expiring_messages::at_ms;
using expiring_messages::by_expiry;
using expiring_messages::expiry_index;
using expiring_messages::message;
using expiring_messages::ms_time;
using message_count = ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"MESSAGE_COUNT">,
                                   ks::field<"destination", std::string>>;
using indexes_schema = ks::schema<message, expiry_index, message_count>;

struct indexes_fixture : schema_fixture<indexes_schema> {
  indexes_fixture() : schema_fixture("conformance-indexes") {}
};

inline message::value_type expiring(std::int64_t at, std::string body = "m") { return {at, std::move(body)}; }

// The index as "at dest id" strings, in index order.
template <class Source>
std::vector<std::string> index_entries(const Source& src) {
  std::vector<std::string> out;
  for (const auto& e : src.template scan<expiry_index>())
    out.push_back(std::to_string(e.template get<"at">().time_since_epoch().count()) + " " +
                  show(e.template get<"destination">()) + " " + std::to_string(e.template get<"message_id">()));
  return out;
}
// What the index must hold, derived from the records.
template <class Source>
std::vector<std::string> derived_entries(const Source& src) {
  std::vector<std::pair<std::tuple<std::int64_t, std::string, std::uint64_t>, std::string>> v;
  for (const auto& e : src.template scan<message>()) {
    const std::int64_t at = std::get<0>(e.value);
    if (at == 0) continue;
    v.push_back({{at, e.template get<"destination">(), e.template get<"message_id">()}, ""});
  }
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (const auto& [k, unused] : v)
    out.push_back(std::to_string(std::get<0>(k)) + " " + show(std::get<1>(k)) + " " + std::to_string(std::get<2>(k)));
  return out;
}
// Every index entry has its record and every indexed record its entry; counts equal records.
template <class Source>
void check_invariants(const Source& src) {
  CHECK(index_entries(src) == derived_entries(src));
  std::map<std::string, std::int64_t> n;
  for (const auto& e : src.template scan<message>()) ++n[e.template get<"destination">()];
  std::map<std::string, std::int64_t> stored;
  for (const auto& e : src.template scan<message_count>()) stored[e.template get<"destination">()] = e.value;
  CHECK(stored == n);
}

TEST_CASE("an index follows its records: put, overwrite, erase, in every kind of write",
          "[conformance][indexes]") {
  indexes_fixture fx;
  auto& db = fx.db();
  db.put<message>({"q", 1}, expiring(100));
  db.put<message>({"q", 2}, expiring(0));  // not indexed
  CHECK(index_entries(db) == std::vector<std::string>{"100 \"q\" 1"});
  db.put<message>({"q", 1}, expiring(50));  // overwrite: the old entry goes
  db.put<message>({"q", 2}, expiring(70));
  CHECK(index_entries(db) == std::vector<std::string>{"50 \"q\" 1", "70 \"q\" 2"});
  db.put<message>({"q", 2}, expiring(70, "same time, other body"));
  CHECK(index_entries(db) == std::vector<std::string>{"50 \"q\" 1", "70 \"q\" 2"});
  db.erase<message>({"q", 1});
  CHECK(index_entries(db) == std::vector<std::string>{"70 \"q\" 2"});

  auto b = db.batch();
  b.put<message>({"r", 1}, expiring(10));
  b.put<message>({"r", 1}, expiring(20));  // two puts in one batch: one entry, the last
  b.put<message>({"r", 2}, expiring(30));
  b.erase<message>({"r", 2});
  b.put<message>({"q", 2}, expiring(0));  // no longer indexed
  b.commit();
  CHECK(index_entries(db) == std::vector<std::string>{"20 \"r\" 1"});

  {
    auto tx = db.transaction();
    tx.put<message>({"t", 5}, expiring(5));
    CHECK(index_entries(tx) == std::vector<std::string>{"5 \"t\" 5", "20 \"r\" 1"});  // its own writes
    CHECK(tx.erase_prefix<message>("r") == 1);
    CHECK(index_entries(tx) == std::vector<std::string>{"5 \"t\" 5"});
    tx.commit();
  }
  CHECK(index_entries(db) == std::vector<std::string>{"5 \"t\" 5"});

  // From an index entry to its record.
  const auto first = *db.scan<expiry_index>().begin();
  CHECK(ks::record_key<expiry_index>(first.key) == message::key_type{"t", 5});
  CHECK(ks::get_record<expiry_index>(db, first.key) == std::optional<message::value_type>(expiring(5)));

  for (std::uint64_t i = 0; i < 1500; ++i) db.put<message>({"big", i}, expiring(1000 + static_cast<std::int64_t>(i)), {.sync = false});
  CHECK(db.erase_prefix<message>("big") == 1500);  // chunked: each chunk with its index entries
  CHECK(index_entries(db) == std::vector<std::string>{"5 \"t\" 5"});
  check_invariants(db);
}

TEST_CASE("a raw write_batch writing an index entry is refused, naming the keyspace; nothing is written",
          "[conformance][indexes][error]") {
  indexes_fixture fx;
  auto& db = fx.db();
  db.put<message>({"q", 1}, expiring(100));
  std::string stale, forged;
  ks::detail::key_codec<expiry_index>::encode(stale, expiry_index::key_type(at_ms(100), "q", 1));
  ks::detail::key_codec<expiry_index>::encode(forged, expiry_index::key_type(at_ms(5), "q", 9));
  for (const bool put : {true, false}) {
    ks::write_batch raw;
    if (put)
      raw.put(forged, "");
    else
      raw.erase(stale);
    try {
      db.write(raw);
      FAIL("a raw write of an index entry was written");
    } catch (const ks::key_error& e) {
      CHECK_THAT(e.what(), Catch::Contains(put ? " puts" : " erases") && Catch::Contains("'expiry_index'") &&
                               Catch::Contains("an index") && Catch::Contains("records of 'message'") &&
                               Catch::Contains("Nothing was written"));
    }
  }
  CHECK(index_entries(db) == std::vector<std::string>{"100 \"q\" 1"});
  check_invariants(db);
}

TEST_CASE("sweep erases what is due with its index entries and counts, in bounded batches",
          "[conformance][indexes][sweep]") {
  indexes_fixture fx;
  auto& db = fx.db();
  {
    auto b = db.batch();
    for (std::uint64_t i = 0; i < 100; ++i)
      b.put<message>({i % 2 ? "odd" : "even", i}, expiring(1 + static_cast<std::int64_t>(i)));
    b.put<message>({"even", 1000}, expiring(0));  // never expires
    b.commit();
  }
  CHECK(db.get<message_count>({"even"}) == std::optional<std::int64_t>(51));

  std::vector<std::uint64_t> seen;
  // now = 50 ms: the messages expiring at 1..49 ms are due (to(now): strictly before).
  const std::size_t n = ks::sweep<expiry_index>(db, at_ms(50), 7, [&](const message::key_type& k, const message::value_type& v) {
    CHECK(std::get<0>(v) < 50);
    seen.push_back(std::get<1>(k));
  });
  CHECK(n == 49);
  CHECK(seen.size() == 49);
  CHECK(db.get<message_count>({"even"}) == std::optional<std::int64_t>(51 - 25));
  CHECK(db.get<message_count>({"odd"}) == std::optional<std::int64_t>(50 - 24));
  CHECK(ks::sweep<expiry_index>(db, at_ms(50), 7, [](const auto&, const auto&) {}) == 0);
  // A coarser unit converts losslessly: seconds.
  CHECK(ks::sweep<expiry_index>(db, std::chrono::sys_time<std::chrono::seconds>(std::chrono::seconds(1)), 1000,
                                [](const auto&, const auto&) {}) == 51);
  CHECK(db.get<message_count>({"odd"}) == std::nullopt);
  CHECK(db.get<message_count>({"even"}) == std::optional<std::int64_t>(1));
  CHECK(db.get<message>({"even", 1000}).has_value());
  check_invariants(db);

  // A callback that throws rolls its batch back.
  db.put<message>({"x", 1}, expiring(2));
  CHECK_THROWS_AS(ks::sweep<expiry_index>(db, at_ms(10), 5, [](const auto&, const auto&) { throw ks::error("stop"); }),
                  ks::error);
  CHECK(db.get<message>({"x", 1}).has_value());
  check_invariants(db);
}

TEST_CASE("index entries and counts equal the records after random writes, sweeps and reopening",
          "[conformance][indexes][model]") {
  indexes_fixture fx;
  std::mt19937_64 rng(31337);
  const std::vector<std::string> dests = {"q", "q1", std::string("q\0", 2), "", "EXPIRY"};
  auto dest = [&] { return dests[rng() % dests.size()]; };
  auto id = [&] { return static_cast<std::uint64_t>(rng() % 10); };
  auto at = [&] { return static_cast<std::int64_t>(rng() % 4 == 0 ? 0 : rng() % 100); };
  for (int round = 0; round < 60; ++round) {
    auto& db = fx.db();
    switch (rng() % 5) {
      case 0: {
        auto b = db.batch();
        for (int i = 0; i < 8; ++i) {
          if (rng() % 3 == 0)
            b.erase<message>({dest(), id()});
          else
            b.put<message>({dest(), id()}, expiring(at()));
        }
        b.commit({.sync = false});
        break;
      }
      case 1: {
        auto tx = db.transaction();
        for (int i = 0; i < 6; ++i) {
          if (rng() % 3 == 0)
            tx.erase<message>({dest(), id()});
          else
            tx.put<message>({dest(), id()}, expiring(at()));
        }
        tx.commit({.sync = false});
        break;
      }
      case 2: db.put<message>({dest(), id()}, expiring(at()), {.sync = false}); break;
      case 3: (void)db.erase_prefix<message>(dest()); break;
      default: (void)ks::sweep<expiry_index>(db, at_ms(static_cast<std::int64_t>(rng() % 100)), 3, [](const auto&, const auto&) {}); break;
    }
    if (round % 20 == 19) {
      if (backend_factory::persistent) fx.reopen();
      check_invariants(fx.db());
    }
  }
  check_invariants(fx.db());
}

TEST_CASE("a prepared transaction's counts and index entries are derived again at commit_prepared",
          "[conformance][index][count][prepared]") {
  // Recorded at prepare, they would overwrite what other writers changed before the commit.
  // (The other writers change records the branch did not read or write: those would make
  // commit_prepared refuse, see cases/prepared.cpp.)
  indexes_fixture fx;
  auto& db = fx.db();
  db.put<message>({"q", 1}, expiring(5000));
  db.put<message>({"q", 2}, expiring(6000));
  db.put<message>({"q", 3}, expiring(6500));
  db.put<message>({"q", 4}, expiring(6600));
  {
    auto tx = db.transaction();
    tx.put<message>({"q", 10}, expiring(7000));  // creates: +1, a new entry
    tx.erase<message>({"q", 2});                 // removes: -1, its entry
    tx.put<message>({"q", 1}, expiring(9000));   // replaces: its entry moves
    ks::prepare(tx, "branch-1");
  }
  db.put<message>({"q", 11}, expiring(8000));  // other writers, before the commit: the count
  db.erase<message>({"q", 3});                 // and the index change under the branch
  db.put<message>({"q", 4}, expiring(5500));
  check_invariants(db);
  REQUIRE(ks::commit_prepared(db, "branch-1"));
  check_invariants(db);
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(4));  // 1, 4, 10 and 11
  CHECK(index_entries(db).size() == 4);
  CHECK(std::get<0>(*db.get<message>({"q", 1})) == 9000);
  CHECK(std::get<0>(*db.get<message>({"q", 4})) == 5500);

  // A branch that read the count itself is refused when the count changed under it.
  {
    auto tx = db.transaction();
    const std::int64_t n = tx.get<message_count>({"q"}).value_or(0);
    tx.put<message>({"q", 20 + static_cast<std::uint64_t>(n)}, expiring(9100));
    ks::prepare(tx, "branch-2");
  }
  db.put<message>({"q", 12}, expiring(8100));
  CHECK_THROWS_AS(ks::commit_prepared(db, "branch-2"), ks::conflict_error);
  CHECK(ks::rollback_prepared(db, "branch-2"));
  check_invariants(db);
}

TEST_CASE("commit_prepared refuses a record writing a count key or adding to a non-integer key; it can be rolled back",
          "[conformance][index][count][prepared][error]") {
  indexes_fixture fx;
  auto& db = fx.db();
  db.put<message>({"q", 1}, expiring(100));
  std::string count_key, record_key;
  ks::detail::key_codec<message_count>::encode(count_key, message_count::key_type("q"));
  ks::detail::key_codec<message>::encode(record_key, message::key_type("q", 1));
  ks::write_batch ops;
  ops.put(count_key, "x");
  ks::write_batch records;  // records prepare() never writes, under reserved keys (written to the backend)
  records.put(ks::detail::prepared_key("count"), ks::detail::encode_prepared(ops));
  records.put(ks::detail::prepared_key("add"),
              ks::detail::encode_prepared(ks::write_batch{}, {ks::detail::prepared_add{record_key, 1}}));
  db.unsafe_backend().write(records, ks::write_options{});
  try {
    (void)ks::commit_prepared(db, "count");
    FAIL("a prepared write of a count was applied");
  } catch (const ks::key_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("commit_prepared") && Catch::Contains("b\"count\"") &&
                             Catch::Contains("'message_count'"));
  }
  try {
    (void)ks::commit_prepared(db, "add");
    FAIL("an add to a record of a non-integer keyspace was applied");
  } catch (const ks::decode_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("b\"add\"") && Catch::Contains("no key of an integer keyspace"));
  }
  CHECK(ks::prepared(db) == std::vector<std::string>{"add", "count"});
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  CHECK(ks::rollback_prepared(db, "count"));
  CHECK(ks::rollback_prepared(db, "add"));
  check_invariants(db);
}

TEST_CASE("a sweep callback given the transaction writes atomically with each batch", "[conformance][index][sweep]") {
  indexes_fixture fx;
  auto& db = fx.db();
  for (std::uint64_t id = 1; id <= 20; ++id) db.put<message>({"q", id}, expiring(static_cast<std::int64_t>(id)));
  // Due messages move to "archive", never expiring: each move is atomic with the sweep's erase.
  const std::size_t n = ks::sweep<expiry_index>(db, at_ms(13), 4, [](auto& tx, const message::key_type& k,
                                                                    const message::value_type& v) {
    tx.template put<message>({"archive", std::get<1>(k)}, expiring(0, std::get<1>(v)));
  });
  CHECK(n == 12);
  CHECK(db.get<message_count>({"archive"}) == std::optional<std::int64_t>(12));
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(8));
  check_invariants(db);
  // A callback that throws rolls its batch back, moves included.
  CHECK_THROWS_AS(ks::sweep<expiry_index>(db, at_ms(100), 100, [](auto& tx, const message::key_type& k,
                                                                   const message::value_type&) {
    tx.template put<message>({"archive", 1000 + std::get<1>(k)}, expiring(0));
    throw ks::error("stop");
  }), ks::error);
  CHECK(db.get<message_count>({"archive"}) == std::optional<std::int64_t>(12));
  check_invariants(db);
}

TEST_CASE("indexes: erase_stale erases an entry no record derives and refuses one that follows; sweep repairs through it",
          "[conformance][indexes]") {
  indexes_fixture f;
  auto& db = f.db();
  db.put<message>({"q", 1}, expiring(100));
  const auto raw_entry = [&](std::int64_t at, std::uint64_t id) {  // written around the store: no record
    ks::write_batch raw;
    std::string k;
    ks::detail::key_codec<expiry_index>::encode(k, expiry_index::key_type{at_ms(at), "q", id});
    raw.put(k, "");
    db.unsafe_backend().write(raw, {});
  };
  raw_entry(50, 2);
  {
    auto tx = db.transaction();
    const auto e = testing::thrown<ks::key_error>([&] { tx.erase_stale<expiry_index>({at_ms(100), "q", 1}); });
    REQUIRE(e);
    CHECK_THAT(e->what(), Catch::Contains("'expiry_index'") && Catch::Contains("follows from the record") &&
                              Catch::Contains("'message'") && Catch::Contains("Nothing was erased"));
    CHECK(tx.erase_stale<expiry_index>({at_ms(50), "q", 2}));
    CHECK_FALSE(tx.erase_stale<expiry_index>({at_ms(50), "q", 2}));  // gone in tx
    tx.commit();
  }
  CHECK(index_entries(db) == std::vector<std::string>{"100 \"q\" 1"});
  // A sweep meets a stale entry: it erases it (not counted) and goes on.
  raw_entry(60, 3);
  CHECK(ks::sweep<expiry_index>(db, at_ms(1000), 10, [](const auto&, const auto&) {}) == 1);
  CHECK(index_entries(db).empty());
  check_invariants(db);
}

TEST_CASE("indexes: an index new in a program over records that exist is refused on open; ks::migrate derives it",
          "[conformance][indexes][evolution]") {
  using records_only = ks::schema<message>;
  using with_index = ks::schema<message, expiry_index>;
  schema_change<records_only> change("conformance-indexes-added");
  change.write([](auto& db) {
    db.template put<message>({"q", 1}, expiring(100));
    db.template put<message>({"q", 2}, expiring(0));
  });
  // Opened with the index over those records: refused, their entries would be missing.
  const std::string refused = change.open_refusal<with_index>();
  CHECK_THAT(refused, Catch::Contains("keyspace 'expiry_index' is an index (index_of<message>) new in this program") &&
                          Catch::Contains("'message' it derives from already holds 2 records") &&
                          Catch::Contains("ks::migrate"));
  ks::migrate<records_only, with_index>(change.backend());
  const auto db = change.open<with_index>();
  CHECK(index_entries(*db) == std::vector<std::string>{"100 \"q\" 1"});
  CHECK(index_entries(*db) == derived_entries(*db));
}

}  // namespace keyschema::conformance::indexes
