// Unit tests of the typed store on the in-memory backend: key bytes, ordering, scans, bounds,
// fingerprints, limits, decode errors, batches, transactions, snapshots and range erases.
#include <keyschema/keyschema.hpp>

#include "../conformance/broker_schema.hpp"
#include "../support/ref_backend.hpp"
#include "../support/thrown.hpp"

#include <catch2/catch.hpp>

#include <range/v3/range/conversion.hpp>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/transform.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace store_test {

namespace {
namespace ks = keyschema;
using namespace keyschema::conformance;
using mem_store = ks::store<broker, ks::memory_backend>;
using ref_store = ks::store<broker, keyschema_test::ref_backend<>>;

ks::bytes B(std::string_view s) { return ks::bytes(s); }

template <class View>
std::vector<std::uint64_t> ids_of(const View& v) {
  std::vector<std::uint64_t> out;
  for (const auto& e : v) out.push_back(e.template get<"message_id">());
  return out;
}

}  // namespace

TEST_CASE("keys are the FoundationDB tuple of all segments", "[store][encoding]") {
  ks::memory_backend inner;
  ref_store db{keyschema_test::ref_backend<>(inner)};
  db.put<message_metadata>({"queue-7", 42}, B("meta"));
  db.put<message_content>({42, 3}, B("chunk"));
  std::string v;
  CHECK(inner.get(ks::tuple::pack("DESTINATION", "queue-7", "MESSAGE_METADATA", std::uint64_t{42}), v, nullptr));
  CHECK(v == "meta");
  CHECK(inner.get(ks::tuple::pack("MESSAGE", std::uint64_t{42}, std::uint32_t{3}, "MESSAGE_CONTENT"), v, nullptr));
  CHECK(v == "chunk");
  // Counters are stored as a packed integer.
  db.put<message_count>({"queue-7"}, 5);
  CHECK(inner.get(ks::tuple::pack("MESSAGE_COUNT", "queue-7"), v, nullptr));
  CHECK(v == ks::tuple::pack(std::int64_t{5}));
}

TEST_CASE("point operations", "[store]") {
  mem_store db;
  CHECK_FALSE(db.get<message_metadata>({"q", 1}).has_value());
  CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
  db.put<message_metadata>({"q", 1}, B("a"));
  REQUIRE(db.get<message_metadata>({"q", 1}).has_value());
  CHECK(db.get<message_metadata>({"q", 1})->view() == "a");
  db.put<message_metadata>({"q", 1}, B("b"));
  CHECK(db.get<message_metadata>({"q", 1})->view() == "b");
  CHECK(db.contains<message_metadata>({"q", 1}));
  // Same field values in another keyspace are another key.
  CHECK_FALSE(db.contains<message_expiration>({"q", 1}));
  db.erase<message_metadata>({"q", 1});
  CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
  db.erase<message_metadata>({"q", 1});  // erasing a missing key is fine
}

TEST_CASE("ids sort numerically, not as decimal text", "[store][order]") {
  mem_store db;
  for (std::uint64_t id : {100u, 9u, 10u, 2u, 1000000u}) db.put<message_metadata>({"q", id}, B("x"));
  db.put<message_metadata>({"q", UINT64_MAX}, B("x"));
  CHECK(ids_of(db.scan<message_metadata>("q")) == std::vector<std::uint64_t>{2, 9, 10, 100, 1000000, UINT64_MAX});
  CHECK(ids_of(db.scan<message_metadata>("q").reverse()) ==
        std::vector<std::uint64_t>{UINT64_MAX, 1000000, 100, 10, 9, 2});
}

TEST_CASE("destination names never leak into each other or into literals", "[store][prefix]") {
  mem_store db;
  const std::vector<std::string> names = {"q", "q1", "q.1", std::string("q\0x", 3), "MESSAGE_COUNT", "MESSAGE_METADATA",
                                          "", "q:1", "\x7f"};
  std::uint64_t id = 0;
  for (const auto& n : names) {
    db.put<message_metadata>({n, ++id}, B(n));
    db.put<message_expiration>({n, id}, 7);
    db.put<message_count>({n}, static_cast<std::int64_t>(id));
  }
  id = 0;
  for (const auto& n : names) {
    ++id;
    auto got = db.scan<message_metadata>(n) | ranges::to<std::vector>();
    REQUIRE(got.size() == 1);
    CHECK(std::get<0>(got[0].key) == n);
    CHECK(got[0].get<"message_id">() == id);
    CHECK(got[0].value.view() == n);
    CHECK(*db.get<message_count>({n}) == static_cast<std::int64_t>(id));
  }
  // Strings must be UTF-8 (binary names belong in keyschema::bytes fields); nothing is written.
  CHECK_THROWS_AS(db.put<message_metadata>({"\xff", 1}, B("x")), ks::error);
  // The whole keyspace has exactly one entry per name: no expiration entries leak in.
  CHECK(ranges::distance(db.scan<message_metadata>()) == static_cast<std::ptrdiff_t>(names.size()));
  CHECK(ranges::distance(db.scan<message_expiration>()) == static_cast<std::ptrdiff_t>(names.size()));
}

TEST_CASE("scans skip keys of another layout under the same leading literal", "[store][prefix]") {
  using x_int = ks::keyspace<"x_int", std::int64_t, ks::lit<"X">, ks::field<"n", std::int32_t>>;
  using x_lit = ks::keyspace<"x_lit", std::int64_t, ks::lit<"X">, ks::lit<"COUNT">>;
  using x_bytes = ks::keyspace<"x_bytes", std::int64_t, ks::lit<"X">, ks::field<"b", ks::bytes>, ks::lit<"T">>;
  ks::store<ks::schema<x_int, x_lit, x_bytes>, ks::memory_backend> db;
  db.put<x_lit>({}, 100);
  db.put<x_bytes>({B("zz")}, 200);
  for (int n = -3; n <= 3; ++n) db.put<x_int>({n}, n);
  std::vector<std::int64_t> values;
  for (const auto& e : db.scan<x_int>()) values.push_back(e.value);
  CHECK(values == std::vector<std::int64_t>{-3, -2, -1, 0, 1, 2, 3});
  CHECK(ranges::distance(db.scan<x_lit>()) == 1);
  CHECK(ranges::distance(db.scan<x_bytes>()) == 1);
  CHECK(db.erase_prefix<x_int>() == 7);
  CHECK(db.get<x_lit>({}) == 100);
  CHECK(db.get<x_bytes>({B("zz")}) == 200);
}

TEST_CASE("bounded scans match a model in both directions", "[store][scan]") {
  mem_store db;
  std::map<std::pair<std::string, std::uint64_t>, std::string> model;
  std::mt19937_64 rng(20261129);
  const std::vector<std::string> dests = {"a", "b", "bb", "c"};
  for (int i = 0; i < 600; ++i) {
    const std::string d = dests[rng() % dests.size()];
    const std::uint64_t id = rng() % 64;
    if (rng() % 5 == 0) {
      db.erase<message_metadata>({d, id});
      model.erase({d, id});
    } else {
      const std::string v = std::to_string(i);
      db.put<message_metadata>({d, id}, B(v));
      model[{d, id}] = v;
    }
  }
  for (int round = 0; round < 300; ++round) {
    const std::string d = dests[rng() % dests.size()];
    std::uint64_t lo = rng() % 70, hi = rng() % 70;
    const int lower_kind = static_cast<int>(rng() % 3);  // none, from, after
    const int upper_kind = static_cast<int>(rng() % 3);  // none, to, through
    const bool reverse = rng() % 2;
    const std::size_t limit = rng() % 4 == 0 ? rng() % 5 : SIZE_MAX;

    auto v = db.scan<message_metadata>(d);
    if (lower_kind == 1) v = v.from(lo);
    if (lower_kind == 2) v = v.after(lo);
    if (upper_kind == 1) v = v.to(hi);
    if (upper_kind == 2) v = v.through(hi);
    if (reverse) v = v.reverse();
    if (limit != SIZE_MAX) v = v.limit(limit);

    std::vector<std::uint64_t> expected;
    for (const auto& [k, val] : model) {
      if (k.first != d) continue;
      if (lower_kind == 1 && k.second < lo) continue;
      if (lower_kind == 2 && k.second <= lo) continue;
      if (upper_kind == 1 && k.second >= hi) continue;
      if (upper_kind == 2 && k.second > hi) continue;
      expected.push_back(k.second);
    }
    if (reverse) std::reverse(expected.begin(), expected.end());
    if (expected.size() > limit) expected.resize(limit);
    INFO("dest " << d << " lo " << lo << " hi " << hi << " kinds " << lower_kind << upper_kind << " rev " << reverse
                 << " limit " << limit);
    CHECK(ids_of(v) == expected);
  }
}

TEST_CASE("descending fields and user types in keys", "[store][codec]") {
  struct message_id {
    std::uint64_t value;
  };
  using by_time = ks::keyspace<"by_time", std::string, ks::lit<"T">, ks::field<"at", ks::desc<std::int64_t>>,
                               ks::field<"id", std::uint64_t>>;
  ks::store<ks::schema<by_time>, ks::memory_backend> db;
  for (std::int64_t t : {5, -1, 100, 0}) db.put<by_time>({t, 1}, std::to_string(t));
  std::vector<std::string> order;
  for (const auto& e : db.scan<by_time>()) order.push_back(e.value);
  CHECK(order == std::vector<std::string>{"100", "5", "0", "-1"});
  // Bounds are in key order: from(5) on a descending field starts at 5 and goes down.
  order.clear();
  for (const auto& e : db.scan<by_time>().from(ks::desc<std::int64_t>(5))) order.push_back(e.value);
  CHECK(order == std::vector<std::string>{"5", "0", "-1"});
}

TEST_CASE("the schema fingerprint is recorded and checked", "[store][fingerprint]") {
  ks::memory_backend inner;
  { ref_store db{keyschema_test::ref_backend<>(inner)}; }
  std::string rec;
  REQUIRE(inner.get(ks::schema_key, rec, nullptr));
  CHECK(rec == ks::layout<broker>::record());
  // Reopening with the same schema works.
  { ref_store again{keyschema_test::ref_backend<>(inner)}; }
  // Another schema is refused, naming both layouts.
  using other = ks::schema<message_metadata>;
  try {
    ks::store<other, keyschema_test::ref_backend<>> wrong{keyschema_test::ref_backend<>(inner)};
    FAIL("opened a database written with another schema");
  } catch (const ks::schema_error& e) {
    const std::string what = e.what();
    CHECK(what.find("another schema layout") != std::string::npos);
    CHECK(what.find("message_content") != std::string::npos);  // the stored layout is shown
  }
  // The refused open did not overwrite the record.
  REQUIRE(inner.get(ks::schema_key, rec, nullptr));
  CHECK(rec == ks::layout<broker>::record());
}

TEST_CASE("the schema record is read by one parser", "[store][fingerprint]") {
  using L = ks::layout<broker>;
  const std::string rec = L::record();
  const auto parsed = ks::parse_schema_record(rec);
  REQUIRE(parsed);
  CHECK(parsed->fingerprint == L::fingerprint);
  CHECK(parsed->fingerprint_text == ks::fingerprint_text(L::fingerprint));
  CHECK(parsed->layout == L::text());
  CHECK(ks::format_schema_record(parsed->fingerprint, parsed->layout) == rec);
  CHECK(ks::fingerprint_text(0x0123456789abcdefull) == "0123456789abcdef");
  // An empty layout is still a record; every damaged form is not.
  CHECK(ks::parse_schema_record("0123456789abcdef\n"));
  for (const std::string& bad : {std::string(""), std::string("0123456789abcdef"), std::string("0123456789abcde\n"),
                                std::string("0123456789ABCDEF\nx"), std::string("0123456789abcdefx"),
                                std::string("0123456789abcdeg\nx"), std::string(" 123456789abcdef\nx"),
                                std::string("0123456789abcdef\n\xff")}) {
    INFO(bad);
    CHECK_FALSE(ks::parse_schema_record(bad));
  }
  // A store refuses a damaged record as another layout, without echoing its bytes as a fingerprint.
  ks::memory_backend mb;
  ks::write_batch b;
  b.put(ks::schema_key, "\xff\xfe not a record");
  mb.write(b, {});
  try {
    mem_store db(std::move(mb));
    FAIL("opened a database with a damaged schema record");
  } catch (const ks::schema_error& e) {
    const std::string what = e.what();
    CHECK(what.find("another schema layout") != std::string::npos);
    CHECK(what.find("stored fingerprint unreadable") != std::string::npos);
    CHECK(what.find("not a record") == std::string::npos);
    CHECK(what.find(ks::fingerprint_text(L::fingerprint)) != std::string::npos);
  }
}

TEST_CASE("keys over the backend's limit are refused, naming the keyspace", "[store][limits]") {
  ks::memory_backend inner;
  ref_store db{keyschema_test::ref_backend<>(inner, ks::backend_limits{.max_key_bytes = 40})};
  const std::string long_name(64, 'q');
  try {
    db.put<message_metadata>({long_name, 1}, B("x"));
    FAIL("a key over the limit was accepted");
  } catch (const ks::limit_error& e) {
    const std::string what = e.what();
    CHECK(what.find("message_metadata") != std::string::npos);
    CHECK(what.find("max_key_bytes") != std::string::npos);
    CHECK(what.find("40") != std::string::npos);
  }
  CHECK_FALSE(db.contains<message_metadata>({long_name, 1}));
  // In a batch: the failing put leaves the batch as it was; nothing is written.
  auto b = db.batch();
  b.put<message_metadata>({"ok", 1}, B("x"));
  CHECK_THROWS_AS(b.put<message_metadata>({long_name, 2}, B("x")), ks::limit_error);
  CHECK(b.size() == 1);
  b.commit();
  CHECK(db.contains<message_metadata>({"ok", 1}));
  CHECK_FALSE(db.contains<message_metadata>({long_name, 2}));
}

namespace {
// Runs f, which must throw limit_error, and returns its message.
template <class F>
std::string limit_message(F&& f) {
  try {
    f();
  } catch (const ks::limit_error& e) {
    return e.what();
  }
  FAIL("no limit_error");
  return {};
}
bool contains_all(const std::string& what, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts) {
    if (what.find(p) == std::string::npos) {
      UNSCOPED_INFO("missing '" << p << "' in: " << what);
      return false;
    }
  }
  return true;
}
}  // namespace

TEST_CASE("every backend limit is checked by the store, naming the keyspace and the limit", "[store][limits]") {
  ks::memory_backend inner;

  SECTION("value: max_value_bytes, on put, batch and transaction; nothing added") {
    ref_store db{keyschema_test::ref_backend<>(inner, ks::backend_limits{.max_value_bytes = 10})};
    // A bytes value encodes as itself: 10 bytes fit, 11 do not.
    db.put<message_metadata>({"q", 1}, B(std::string(10, 'v')));
    const std::string what = limit_message([&] { db.put<message_metadata>({"q", 2}, B(std::string(11, 'v'))); });
    CHECK(contains_all(what, {"message_metadata", "value", "11 bytes", "max_value_bytes", "10 bytes"}));
    auto b = db.batch();
    b.put<message_metadata>({"q", 3}, B("x"));
    CHECK_THROWS_AS(b.put<message_metadata>({"q", 4}, B(std::string(11, 'v'))), ks::limit_error);
    CHECK(b.size() == 1);
    auto tx = db.transaction();
    tx.put<message_metadata>({"q", 5}, B("x"));
    CHECK_THROWS_AS(tx.put<message_metadata>({"q", 6}, B(std::string(11, 'v'))), ks::limit_error);
    CHECK(tx.size() == 1);
    tx.commit();
    b.commit();
    CHECK(db.contains<message_metadata>({"q", 1}));
    CHECK_FALSE(db.contains<message_metadata>({"q", 2}));
    CHECK(db.contains<message_metadata>({"q", 3}));
    CHECK_FALSE(db.contains<message_metadata>({"q", 4}));
    CHECK(db.contains<message_metadata>({"q", 5}));
    CHECK_FALSE(db.contains<message_metadata>({"q", 6}));
  }

  SECTION("entry: max_entry_bytes counts key + value of a put, the key alone of an erase") {
    // message_count keys ("MESSAGE_COUNT", d) are 17 + |d| bytes; an int64 value 1 to 9 bytes.
    ref_store db{keyschema_test::ref_backend<>(inner, ks::backend_limits{.max_entry_bytes = 20})};
    db.put<message_count>({"a"}, 1);  // 18 + 2 (0x15 0x01)
    const std::string what = limit_message([&] { db.put<message_count>({"ab"}, 1); });
    CHECK(contains_all(what, {"message_count", "entry (key + value)", "21 bytes", "max_entry_bytes", "20 bytes"}));
    db.erase<message_count>({"abc"});  // 20 bytes of key: fits
    const std::string erase_what = limit_message([&] { db.erase<message_count>({"abcd"}); });
    CHECK(contains_all(erase_what, {"message_count", "21 bytes", "max_entry_bytes", "20 bytes"}));
    CHECK(db.get<message_count>({"a"}) == std::optional<std::int64_t>(1));
    CHECK_FALSE(db.contains<message_count>({"ab"}));
  }

  SECTION("operations per write: max_ops_per_write, at commit; nothing written, batch kept") {
    keyschema_test::ref_backend<> backend(inner, ks::backend_limits{.max_ops_per_write = 3});
    ref_store db{backend};
    auto b = db.batch();
    for (std::uint64_t i = 0; i < 3; ++i) b.put<message_metadata>({"q", i}, B("x"));
    b.commit();  // exactly the limit
    for (std::uint64_t i = 10; i < 13; ++i) b.put<message_metadata>({"q", i}, B("x"));
    b.put<message_count>({"q"}, 3);
    const std::string what = limit_message([&] { b.commit(); });
    CHECK(contains_all(what, {"'message_metadata', 'message_count'", "4 operations", "max_ops_per_write",
                              "3 operations"}));
    CHECK(b.size() == 4);
    CHECK_FALSE(db.contains<message_metadata>({"q", 10}));
    CHECK_FALSE(db.contains<message_count>({"q"}));
    // A byte-level batch through store::write is checked too.
    CHECK_THROWS_AS(db.write(b.operations()), ks::limit_error);

    // A transaction whose commit is refused stays open and may be trimmed and retried.
    auto tx = db.transaction();
    for (std::uint64_t i = 20; i < 24; ++i) tx.put<message_metadata>({"q", i}, B("x"));
    const std::string tx_what = limit_message([&] { tx.commit(); });
    CHECK(contains_all(tx_what, {"'message_metadata'", "4 operations", "max_ops_per_write"}));
    CHECK(tx.is_open());
    CHECK_FALSE(db.contains<message_metadata>({"q", 20}));
    tx.erase<message_metadata>({"q", 20});  // still 4 distinct keys, one an erasure
    CHECK_THROWS_AS(tx.commit(), ks::limit_error);
    tx.rollback();
    auto tx2 = db.transaction();
    for (std::uint64_t i = 21; i < 24; ++i) tx2.put<message_metadata>({"q", i}, B("x"));
    tx2.commit();
    CHECK(db.contains<message_metadata>({"q", 23}));
  }

  SECTION("bytes per write: max_bytes_per_write, at commit and on single puts") {
    // message_metadata ("DESTINATION", "q", "MESSAGE_METADATA", i) keys: 13 + 3 + 18 + 2 = 36
    // bytes for 0 < i < 256; a bytes value is stored as itself.
    ref_store db{keyschema_test::ref_backend<>(inner, ks::backend_limits{.max_bytes_per_write = 86})};
    auto b = db.batch();
    b.put<message_metadata>({"q", 1}, B(std::string(7, 'v')));  // 43
    b.put<message_metadata>({"q", 2}, B(std::string(7, 'v')));  // 86: exactly the limit
    b.commit();
    b.put<message_metadata>({"q", 3}, B(std::string(7, 'v')));
    b.put<message_metadata>({"q", 4}, B(std::string(8, 'v')));  // 87
    const std::string what = limit_message([&] { b.commit(); });
    CHECK(contains_all(what, {"'message_metadata'", "87 bytes", "max_bytes_per_write", "86 bytes"}));
    CHECK(b.size() == 2);
    CHECK_FALSE(db.contains<message_metadata>({"q", 3}));
    const std::string put_what = limit_message([&] { db.put<message_metadata>({"q", 5}, B(std::string(60, 'v'))); });
    CHECK(contains_all(put_what, {"'message_metadata'", "96 bytes", "max_bytes_per_write"}));
    CHECK_FALSE(db.contains<message_metadata>({"q", 5}));
    CHECK(db.contains<message_metadata>({"q", 2}));
  }
}

TEST_CASE("erase_range chunks shrink to the backend's per-write limits", "[store][erase][limits]") {
  ks::memory_backend inner;
  SECTION("max_ops_per_write") {
    keyschema_test::ref_backend<> backend(inner, ks::backend_limits{.max_ops_per_write = 7});
    ref_store db{backend};
    for (std::uint64_t i = 0; i < 50; ++i) db.put<message_metadata>({"q", i}, B("x"));
    const std::size_t writes_before = db.backend().writes();
    CHECK(db.erase_prefix<message_metadata>("q") == 50);
    CHECK(db.backend().writes() - writes_before == 8);  // 7 * 7 + 1
    CHECK(db.backend().largest_write() == 7);
    CHECK(ranges::distance(db.scan<message_metadata>("q")) == 0);
  }
  SECTION("max_bytes_per_write") {
    // 36-byte keys (35 for id 0; see above), at most 180 bytes per write: 5 keys per chunk.
    keyschema_test::ref_backend<> backend(inner, ks::backend_limits{.max_bytes_per_write = 180});
    ref_store db{backend};
    for (std::uint64_t i = 0; i < 50; ++i) db.put<message_metadata>({"q", i}, B("x"));
    const std::size_t writes_before = db.backend().writes();
    CHECK(db.erase_range(db.scan<message_metadata>("q").reverse()) == 50);
    CHECK(db.backend().writes() - writes_before == 10);
    CHECK(db.backend().largest_write() == 5);
    CHECK(ranges::distance(db.scan<message_metadata>("q")) == 0);
  }
  SECTION("unlimited: erase_chunk keys per write") {
    ref_store db{keyschema_test::ref_backend<>(inner)};
    auto b = db.batch();
    for (std::uint64_t i = 0; i < ref_store::erase_chunk + 1; ++i) b.put<message_metadata>({"q", i}, B("x"));
    b.commit();
    const std::size_t writes_before = db.backend().writes();
    CHECK(db.erase_prefix<message_metadata>("q") == ref_store::erase_chunk + 1);
    CHECK(db.backend().writes() - writes_before == 2);  // erase_chunk keys, then one
  }
}

// A record keyspace with a declared count and an index: each erased record brings up to 3 more
// operations (its count, its index entry), which range-erase chunks must leave room for.
namespace derived_chunks {
using record = ks::keyspace<"record", std::int64_t, ks::lit<"R">, ks::field<"queue", std::string>,
                            ks::field<"id", std::uint64_t>>;
struct by_value {
  std::optional<std::tuple<std::int64_t, std::string, std::uint64_t>> operator()(const record::key_type& k,
                                                                                 const record::value_type& v) const {
    return std::tuple(v, std::get<0>(k), std::get<1>(k));
  }
};
using record_index = ks::keyspace<"record_index", ks::index_of<record, by_value>, ks::lit<"I">,
                                  ks::field<"value", std::int64_t>, ks::field<"queue", std::string>,
                                  ks::field<"id", std::uint64_t>>;
using record_count = ks::keyspace<"record_count", ks::count_of<record, 1>, ks::lit<"C">, ks::field<"queue", std::string>>;
using derived_schema = ks::schema<record, record_index, record_count>;
}  // namespace derived_chunks

TEST_CASE("erase_range chunks leave room for the count and index updates of each erased record",
          "[store][erase][limits][count][index]") {
  using namespace derived_chunks;
  static_assert(ks::detail::derived_writes<derived_schema>::ops_per_write<record> == 4);
  static_assert(ks::detail::derived_writes<derived_schema>::ops_per_write<record_count> == 1);
  ks::memory_backend inner;
  keyschema_test::ref_backend<> backend(inner, ks::backend_limits{.max_ops_per_write = 16});
  ks::store<derived_schema, keyschema_test::ref_backend<>> db{backend};
  for (std::uint64_t i = 0; i < 50; ++i) db.put<record>({"q", i}, static_cast<std::int64_t>(i % 7));
  REQUIRE(db.get<record_count>({"q"}) == std::optional<std::int64_t>(50));
  const std::size_t writes_before = db.backend().writes();
  // Before chunks counted them, 16 erases + 16 index erases + 1 count were one 33-operation write.
  CHECK(db.erase_prefix<record>("q") == 50);
  CHECK(db.backend().writes() - writes_before == 13);  // 4 records (up to 16 operations) per write
  CHECK(db.backend().largest_write() <= 16);
  CHECK(ranges::distance(db.scan<record>("q")) == 0);
  CHECK(ranges::distance(db.scan<record_index>()) == 0);
  CHECK(db.get<record_count>({"q"}) == std::nullopt);
}

TEST_CASE("a raw write of a key cut short of a keyspace's key is refused or named as that keyspace's",
          "[store][errors][truncated]") {
  using namespace derived_chunks;
  {
    // key_error naming the keyspace and why, nothing of the batch written, the count unchanged
    // (accepted, the key would make every later scan and range erase of 'record' fail).
    ks::memory_backend inner;
    ks::store<derived_schema, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
    db.put<record>({"q", 1}, 5);
    for (const std::string& bad : {ks::tuple::pack("R", "q"), ks::tuple::pack("R", "q") + "\x15"}) {
      ks::write_batch raw;
      raw.put(ks::tuple::pack("OTHER"), "kept out too");
      raw.put(bad, "x");
      const auto e = ks::testing::thrown<ks::key_error>([&] { db.write(raw); });
      REQUIRE(e);
      CHECK_THAT(e->what(), Catch::Contains("puts key") && Catch::Contains("keyspace 'record'") &&
                                Catch::Contains("Nothing was written"));
      std::string v;
      CHECK_FALSE(inner.get(bad, v, nullptr));
      CHECK_FALSE(inner.get(ks::tuple::pack("OTHER"), v, nullptr));
    }
    CHECK(db.get<record_count>({"q"}) == std::optional<std::int64_t>(1));
    CHECK(ranges::distance(db.scan<record>()) == 1);
  }
  {
    // Such a key written by another program makes scans fail; a raw erase through the store
    // removes it (the keyspace has no count or index here), and scans work again.
    ks::memory_backend inner;
    ref_store db{keyschema_test::ref_backend<>(inner)};
    db.put<message_metadata>({"q", 1}, B("m"));
    ks::write_batch raw;
    raw.put(ks::tuple::pack("DESTINATION", "q"), "x");
    inner.write(raw, {});
    CHECK_THROWS_AS(ranges::distance(db.scan<message_metadata>()), ks::decode_error);
    const std::string what = [&] {
      try {
        db.write(raw);
      } catch (const ks::key_error& e) {
        return std::string(e.what());
      }
      return std::string("no key_error");
    }();
    CHECK_THAT(what, Catch::Contains("keyspace 'message_metadata'") && Catch::Contains("ends before its segment 3 of 4"));
    ks::write_batch repair;
    repair.erase(ks::tuple::pack("DESTINATION", "q"));
    db.write(repair);
    CHECK(ranges::distance(db.scan<message_metadata>()) == 1);
  }
  {
    // Erases of such keys over the backend's limits: still the limit error, naming the keyspaces
    // the cut-short keys start like (not a decode_error raised while naming the keyspaces).
    ks::memory_backend inner;
    keyschema_test::ref_backend<> backend(inner, ks::backend_limits{.max_ops_per_write = 2});
    ref_store db{backend};
    db.put<message_count>({"q"}, 1);
    ks::write_batch raw;
    raw.erase(ks::tuple::pack("MESSAGE_COUNT"));
    raw.erase(ks::tuple::pack("MESSAGE", std::uint64_t{1}));
    raw.erase(ks::tuple::pack("OTHER"));
    raw.erase(ks::tuple::pack("MESSAGE_COUNT", "q"));
    const std::string what = limit_message([&] { db.write(raw); });
    CHECK(contains_all(what, {"'message_content', 'message_destination', 'message_count' and other keys",
                              "4 operations", "max_ops_per_write"}));
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  }
}

TEST_CASE("stored bytes that do not decode name the keyspace and the key", "[store][errors]") {
  ks::memory_backend inner;
  ref_store db{keyschema_test::ref_backend<>(inner)};
  ks::write_batch raw;
  raw.put(ks::tuple::pack("MESSAGE_COUNT", "queue-1"), "not a tuple");
  inner.write(raw, {});
  try {
    (void)db.get<message_count>({"queue-1"});
    FAIL("garbage decoded");
  } catch (const ks::decode_error& e) {
    const std::string what = e.what();
    CHECK(what.find("message_count") != std::string::npos);
    CHECK(what.find("queue-1") != std::string::npos);
  }
  CHECK_THROWS_AS(ranges::distance(db.scan<message_count>()), ks::decode_error);
  // A corrupt key element (a truncated string) inside the keyspace's range is an error too.
  raw.clear();
  raw.put(std::string("\x02MESSAGE_COUNT\x00\x02unterminated", 28), ks::tuple::pack(std::int64_t{1}));
  inner.write(raw, {});
  try {
    (void)ranges::distance(db.scan<message_count>().reverse());
    FAIL("a corrupt key was skipped");
  } catch (const ks::decode_error& e) {
    const std::string what = e.what();
    CHECK(what.find("message_count") != std::string::npos);
    CHECK(what.find("the key does not decode") != std::string::npos);
  }
}

TEST_CASE("batches are atomic across keyspaces", "[store][batch]") {
  mem_store db;
  auto snap_before = db.snapshot();
  auto b = db.batch();
  b.put<message_metadata>({"q", 1}, B("m"));
  b.put<message_content>({1, 0}, B("c"));
  b.put<message_count>({"q"}, 1);
  b.erase<message_metadata>({"q", 99});
  CHECK(b.size() == 4);
  CHECK_FALSE(db.contains<message_metadata>({"q", 1}));  // nothing visible before commit
  b.commit({.sync = true});
  CHECK(b.empty());
  CHECK(db.contains<message_metadata>({"q", 1}));
  CHECK(db.contains<message_content>({1, 0}));
  CHECK(db.get<message_count>({"q"}) == 1);
  CHECK_FALSE(snap_before.contains<message_metadata>({"q", 1}));
}

TEST_CASE("transactions read their own writes and serialize writers", "[store][transaction]") {
  mem_store db;
  db.put<message_metadata>({"q", 1}, B("one"));
  db.put<message_metadata>({"q", 2}, B("two"));
  {
    auto tx = db.transaction();
    tx.put<message_metadata>({"q", 3}, B("three"));
    tx.erase<message_metadata>({"q", 1});
    tx.put<message_metadata>({"q", 2}, B("TWO"));
    CHECK_FALSE(tx.contains<message_metadata>({"q", 1}));
    CHECK(tx.get<message_metadata>({"q", 2})->view() == "TWO");
    std::vector<std::string> seen;
    for (const auto& e : tx.scan<message_metadata>("q")) seen.push_back(std::string(e.value.view()));
    CHECK(seen == std::vector<std::string>{"TWO", "three"});
    seen.clear();
    for (const auto& e : tx.scan<message_metadata>("q").reverse()) seen.push_back(std::string(e.value.view()));
    CHECK(seen == std::vector<std::string>{"three", "TWO"});
    // Not visible outside before commit.
    CHECK(db.contains<message_metadata>({"q", 1}));
    // A write on the store from the thread holding the transaction would deadlock: refused.
    CHECK_THROWS_AS(db.put<message_count>({"q"}, 1), ks::error);
    tx.commit();
    CHECK_FALSE(tx.is_open());
    CHECK_THROWS_AS(tx.put<message_count>({"q"}, 1), ks::error);
  }
  CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
  CHECK(db.get<message_metadata>({"q", 3})->view() == "three");
  db.put<message_count>({"q"}, 1);  // the writer lock was released
  {
    auto tx = db.transaction();
    tx.put<message_count>({"q"}, 100);
  }  // rolled back
  CHECK(db.get<message_count>({"q"}) == 1);
  {
    auto tx = db.transaction();
    CHECK(tx.erase_prefix<message_metadata>("q") == 2);
    CHECK(ranges::distance(tx.scan<message_metadata>("q")) == 0);
    CHECK(ranges::distance(db.scan<message_metadata>("q")) == 2);
    tx.commit();
  }
  CHECK(ranges::distance(db.scan<message_metadata>("q")) == 0);
}

TEST_CASE("snapshots see one state while writes go on", "[store][snapshot]") {
  mem_store db;
  for (std::uint64_t i = 0; i < 10; ++i) db.put<message_metadata>({"q", i}, B("v1"));
  auto snap = db.snapshot();
  for (std::uint64_t i = 0; i < 10; ++i) db.put<message_metadata>({"q", i}, B("v2"));
  db.erase<message_metadata>({"q", 0});
  db.put<message_metadata>({"q", 10}, B("v2"));
  std::size_t n = 0;
  for (const auto& e : snap.scan<message_metadata>("q")) {
    CHECK(e.value.view() == "v1");
    ++n;
  }
  CHECK(n == 10);
  CHECK(snap.get<message_metadata>({"q", 0})->view() == "v1");
  CHECK(db.get<message_metadata>({"q", 1})->view() == "v2");
  CHECK(ranges::distance(db.scan<message_metadata>("q")) == 10);
}

TEST_CASE("erase_range works in bounded batches and honours bounds and limits", "[store][erase]") {
  mem_store db;
  const std::uint64_t n = 2 * mem_store::erase_chunk + 500;
  auto b = db.batch();
  for (std::uint64_t i = 0; i < n; ++i) b.put<message_metadata>({"q", i}, B("x"));
  b.put<message_metadata>({"p", 1}, B("x"));
  b.put<message_metadata>({"r", 1}, B("x"));
  b.commit();
  CHECK(db.erase_range(db.scan<message_metadata>("q").from(std::uint64_t{100}).to(std::uint64_t{200})) == 100);
  CHECK(db.erase_range(db.scan<message_metadata>("q").reverse().limit(10)) == 10);
  CHECK_FALSE(db.contains<message_metadata>({"q", n - 1}));
  CHECK(db.contains<message_metadata>({"q", n - 11}));
  CHECK(db.erase_prefix<message_metadata>("q") == n - 110);
  CHECK(ranges::distance(db.scan<message_metadata>("q")) == 0);
  CHECK(db.contains<message_metadata>({"p", 1}));
  CHECK(db.contains<message_metadata>({"r", 1}));
}

TEST_CASE("scans compose with range-v3 views", "[store][ranges]") {
  mem_store db;
  for (std::uint64_t i = 1; i <= 20; ++i) db.put<message_expiration>({"q", i}, static_cast<std::int64_t>(i * 10));
  auto expired = db.scan<message_expiration>("q") |
                 ranges::views::filter([](const auto& e) { return e.value <= 50; }) |
                 ranges::views::transform([](const auto& e) { return e.template get<"message_id">(); }) |
                 ranges::to<std::vector>();
  CHECK(expired == std::vector<std::uint64_t>{1, 2, 3, 4, 5});
  // Iterating a view twice scans twice and sees new data.
  auto v = db.scan<message_expiration>("q");
  CHECK(ranges::distance(v) == 20);
  db.put<message_expiration>({"q", 21}, 1);
  CHECK(ranges::distance(v) == 21);
}

// A transaction's commit builds its batch in a batch kept per thread
// (detail/backend/thread_batch.hpp) and hands it to the backend's write(). A backend of the
// user's may commit through another store from there, on the same thread: that inner commit
// must get a batch of its own, not empty the one the outer write is still reading.
namespace {
class mirroring_backend : public keyschema_test::ref_backend<> {
 public:
  mirroring_backend(ks::memory_backend& inner, mem_store& mirror) : ref_backend(inner), mirror_(&mirror) {}
  void write(const ks::write_batch& b, const ks::write_options& o) {
    auto tx = mirror_->transaction();  // a whole commit, nested in the outer one
    tx.put<message_metadata>({"mirror", b.size()}, ks::bytes("seen"));
    tx.commit();
    ref_backend::write(b, o);
  }

 private:
  mem_store* mirror_;
};
}  // namespace

TEST_CASE("a backend's write() may commit through another store on the same thread", "[store][transaction]") {
  ks::memory_backend inner;
  mem_store mirror;
  ks::store<broker, mirroring_backend> db{mirroring_backend(inner, mirror)};
  for (int round = 0; round < 3; ++round) {  // the kept batch is lent again after each commit
    auto tx = db.transaction();
    for (std::uint64_t id = 0; id < 5; ++id) tx.put<message_metadata>({"q", 10 * round + id}, ks::bytes("body"));
    tx.commit();
  }
  std::size_t n = 0;
  for (const auto& e : db.scan<message_metadata>("q")) {
    CHECK(e.value == ks::bytes("body"));
    ++n;
  }
  CHECK(n == 15);
  // Each outer write carried the 5 puts (the mirror saw the batch whole, and committed its own).
  const auto seen = mirror.get<message_metadata>({"mirror", 5});
  REQUIRE(seen.has_value());
  CHECK(*seen == ks::bytes("seen"));
}

}  // namespace store_test
