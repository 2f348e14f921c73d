// tests/conformance/cases/sums.cpp: conformance cases:
// declared sums (sum_of, keyschema/sum.hpp) maintained with their records by every write path,
// refused direct writes, overflow, prepared transactions and ks::migrate's rebuild.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake). Its
// schema is its own (a store of it is another database than the broker fixture's).
#include <conformance/conformance.hpp>
#include <conformance/derived_fixture.hpp>
#include <support/thrown.hpp>

#include <keyschema/sum.hpp>

#include <map>

namespace keyschema::conformance::sums {

// A message: (size in bytes, priority), keyed by destination and id.
using message = ks::keyspace<"message", std::tuple<std::int64_t, std::uint8_t>, ks::lit<"DESTINATION">,
                             ks::field<"destination", std::string>, ks::lit<"MESSAGE">,
                             ks::field<"message_id", std::uint64_t>>;
// Bytes per destination, and in all.
using queue_bytes = ks::keyspace<"queue_bytes", ks::sum_of<message, ks::sum_element<0>, 1>, ks::lit<"QUEUE_BYTES">,
                                 ks::field<"destination", std::string>>;
struct priority_of {
  std::uint32_t operator()(const message::key_type&, const message::value_type& v) const { return std::get<1>(v); }
};
using total_priority = ks::keyspace<"total_priority", ks::sum_of<message, priority_of, 0>, ks::lit<"TOTAL_PRIORITY">>;
using sums_schema = ks::schema<message, queue_bytes, total_priority>;

static_assert(std::is_same_v<queue_bytes::value_type, std::int64_t>);
// The layout names the sum and its projection's version.
using queue_bytes_v2 = ks::keyspace<"queue_bytes", ks::sum_of<message, ks::sum_element<0>, 1, 2>,
                                    ks::lit<"QUEUE_BYTES">, ks::field<"destination", std::string>>;
static_assert(ks::layout<ks::schema<message, queue_bytes>>::fingerprint !=
              ks::layout<ks::schema<message, queue_bytes_v2>>::fingerprint);

struct sums_fixture : schema_fixture<sums_schema> {
  sums_fixture() : schema_fixture("conformance-sums") {}
};

inline message::value_type m(std::int64_t size, std::uint8_t prio = 1) { return {size, prio}; }

// The sums as stored ("dest=n", and "total=n"), and as recomputed from the records.
template <class Source>
std::vector<std::string> stored(const Source& src) {
  std::vector<std::string> out;
  for (const auto& e : src.template scan<queue_bytes>())
    out.push_back(e.template get<"destination">() + "=" + std::to_string(e.value));
  out.push_back("total=" + std::to_string(src.template get<total_priority>({}).value_or(0)));
  return out;
}
template <class Source>
std::vector<std::string> recomputed(const Source& src) {
  std::map<std::string, std::int64_t> n;
  std::int64_t total = 0;
  for (const auto& e : src.template scan<message>()) {
    n[e.template get<"destination">()] += std::get<0>(e.value);
    total += std::get<1>(e.value);
  }
  std::vector<std::string> out;
  for (const auto& [d, s] : n)
    if (s != 0) out.push_back(d + "=" + std::to_string(s));
  out.push_back("total=" + std::to_string(total));
  return out;
}
template <class Source>
void check_sums(const Source& src) {
  CHECK(stored(src) == recomputed(src));
}

TEST_CASE("sums: puts, overwrites and erases by every write path keep each sum exact", "[conformance][sums]") {
  sums_fixture f;
  auto& db = f.db();
  db.put<message>({"q", 1}, m(10, 2));
  db.put<message>({"q", 2}, m(5));
  db.put<message>({"r", 1}, m(7));
  CHECK(stored(db) == std::vector<std::string>{"q=15", "r=7", "total=4"});
  db.put<message>({"q", 1}, m(3, 2));  // an overwrite adds the difference
  CHECK(stored(db) == std::vector<std::string>{"q=8", "r=7", "total=4"});
  db.erase<message>({"r", 1});  // a sum reaching 0 is erased
  CHECK(stored(db) == std::vector<std::string>{"q=8", "total=3"});
  CHECK_FALSE(db.get<queue_bytes>({"r"}));

  {
    auto b = db.batch();
    b.put<message>({"s", 1}, m(100));
    b.put<message>({"s", 1}, m(50));  // within one batch, in order
    b.erase<message>({"q", 2});
    b.commit();
  }
  check_sums(db);
  CHECK(db.get<queue_bytes>({"s"}) == std::optional<std::int64_t>(50));
  {
    auto tx = db.transaction();
    tx.put<message>({"t", 1}, m(9));
    CHECK(tx.get<queue_bytes>({"t"}) == std::optional<std::int64_t>(9));  // read its own sums
    tx.erase<message>({"s", 1});
    tx.commit();
  }
  check_sums(db);
  {
    ks::write_batch raw;
    std::string k;
    ks::detail::key_codec<message>::encode(k, message::key_type{"t", 1});
    raw.erase(k);
    db.write(raw);
  }
  check_sums(db);
  for (std::uint64_t id = 1; id <= 20; ++id) db.put<message>({"u", id}, m(static_cast<std::int64_t>(id)));
  CHECK(db.get<queue_bytes>({"u"}) == std::optional<std::int64_t>(210));
  CHECK(db.erase_range(db.scan<message>("u").limit(5)) == 5);
  CHECK(db.get<queue_bytes>({"u"}) == std::optional<std::int64_t>(210 - 15));
  CHECK(db.erase_prefix<message>("u") == 15);
  check_sums(db);
  CHECK(stored(db) == std::vector<std::string>{"q=3", "total=2"});
}

TEST_CASE("sums: a write whose sum overflows is refused and writes nothing; direct writes are refused",
          "[conformance][sums]") {
  sums_fixture f;
  auto& db = f.db();
  db.put<message>({"q", 1}, m(std::numeric_limits<std::int64_t>::max()));
  const auto e = testing::thrown<ks::overflow_error>([&] { db.put<message>({"q", 2}, m(1)); });
  REQUIRE(e);
  CHECK_THAT(e->what(), Catch::Contains("'queue_bytes'") && Catch::Contains("nothing of this write was written"));
  CHECK_FALSE(db.contains<message>({"q", 2}));
  {
    auto tx = db.transaction();
    tx.put<message>({"r", 1}, m(1));
    CHECK(testing::thrown<ks::overflow_error>([&] { tx.put<message>({"q", 2}, m(1)); }));
    CHECK_FALSE(tx.contains<message>({"q", 2}));  // the transaction goes on without it
    tx.commit();
  }
  check_sums(db);

  ks::write_batch raw;
  std::string k;
  ks::detail::key_codec<queue_bytes>::encode(k, queue_bytes::key_type{"q"});
  raw.put(k, "x");
  const auto ke = testing::thrown<ks::key_error>([&] { db.write(raw); });
  REQUIRE(ke);
  CHECK_THAT(ke->what(), Catch::Contains("'queue_bytes'") && Catch::Contains("sum_of<message,1>") &&
                             Catch::Contains("Nothing was written"));
  check_sums(db);
}

TEST_CASE("sums: commit_prepared derives the sums again from the state it commits to",
          "[conformance][sums][prepared]") {
  sums_fixture f;
  auto& db = f.db();
  db.put<message>({"q", 1}, m(10));
  {
    auto tx = db.transaction();
    tx.put<message>({"q", 2}, m(5));
    ks::prepare(tx, "xid-1");
  }
  db.put<message>({"q", 3}, m(100));  // another writer meanwhile
  CHECK(ks::commit_prepared(db, "xid-1"));
  CHECK(db.get<queue_bytes>({"q"}) == std::optional<std::int64_t>(115));
  check_sums(db);
}

// --- ks::migrate derives a sum new in the schema -------------------------------------------------

using plain_schema = ks::schema<message>;

TEST_CASE("sums: ks::migrate derives the sums of the new schema from the records", "[conformance][sums][migrate]") {
  schema_change<plain_schema> change("conformance-sums-migrate");
  change.write([](auto& db) {
    for (std::uint64_t id = 1; id <= 10; ++id)
      db.template put<message>({id % 2 ? "a" : "b", id}, m(static_cast<std::int64_t>(id), 1));
  });
  // Opened with the sums over records that exist: refused, the sums would start at 0.
  const std::string refused = change.open_refusal<sums_schema>();
  CHECK_THAT(refused, Catch::Contains("keyspace 'queue_bytes' is a declared sum (sum_of<message,1>) new in this "
                                      "program") &&
                          Catch::Contains("'message' it derives from already holds 10 records") &&
                          Catch::Contains("ks::migrate"));
  ks::migrate<plain_schema, sums_schema>(change.backend(), ks::migrate_options{.batch_entries = 3});
  const auto db = change.open<sums_schema>();
  CHECK(stored(*db) == std::vector<std::string>{"a=25", "b=30", "total=10"});
}

}  // namespace keyschema::conformance::sums
