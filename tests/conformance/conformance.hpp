// tests/conformance/conformance.hpp: the backend conformance suite (single-threaded cases).
//
// Every case runs through the typed store API on the broker schema (broker_schema.hpp) and must
// pass unchanged on every backend. A backend's test program defines its factory (see
// memory_factory.hpp) and includes this file once:
//
//   #include <conformance/memory_factory.hpp>
//   #define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::memory_factory
//   #include <conformance/conformance.hpp>
//
// so each backend is its own executable (conformance_memory, conformance_leveldb, ...). Cases a
// backend cannot take part in (reopening a memory store) say so with a Catch2 WARN instead of
// passing silently. The multi-threaded cases live in conformance_concurrency.hpp.
//
// Randomized cases use fixed seeds: a failure reproduces on every run.
#pragma once

#ifndef KEYSCHEMA_CONFORMANCE_FACTORY
#error "define KEYSCHEMA_CONFORMANCE_FACTORY (the backend factory type) before including conformance.hpp"
#endif

#include <conformance/broker_schema.hpp>
#include <conformance/conformance_support.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>
#include <keyschema/keyschema.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace keyschema::conformance {

using backend_factory = KEYSCHEMA_CONFORMANCE_FACTORY;
using test_fixture = fixture<backend_factory>;

namespace {

constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();

// Destinations chosen to break hand-written key schemas: prefixes of each other, embedded NULs,
// the empty name, names equal to the schema's literals, the old delimiters '.' and ':'.
std::vector<std::string> tricky_destinations() {
  return {"q",
          "q1",
          std::string("q\0x", 3),
          std::string("q\0", 2),
          "",
          "MESSAGE_COUNT",
          "MESSAGE_METADATA",
          "MESSAGE_EXPIRATION_TIME",
          "DESTINATION",
          "a.b",
          "a:b",
          "a",
          "queue.7:MESSAGE_METADATA:9"};
}

// Message ids around the decimal-string bug ("10" < "9") and the integer encoding's size steps.
std::vector<std::uint64_t> id_pool() {
  return {0,   1,   2,    9,          10,          11,          99,          100,
          101, 255, 256,  65535,      65536,       1ull << 32,  (1ull << 63) - 1,
          1ull << 63,     u64_max - 1, u64_max};
}

std::vector<std::uint64_t> ids_of(const std::vector<entry<message_metadata>>& es) {
  std::vector<std::uint64_t> out;
  for (const auto& e : es) out.push_back(e.get<"message_id">());
  return out;
}

template <class View>
std::vector<typename View::entry_type> entries(const View& v) {
  std::vector<typename View::entry_type> out;
  for (const auto& e : v) out.push_back(e);
  return out;
}

// Random value bytes, including NUL and 0xFF.
template <class Rng>
ks::bytes random_value(Rng& rng) {
  static constexpr char alphabet[] = {'\0', '\xff', 'a', 'b', '.', ':', '\x01', '\xfe'};
  std::string s(rng() % 9, '\0');
  for (char& c : s) c = alphabet[rng() % sizeof alphabet];
  return ks::bytes(std::move(s));
}

// A 1 MiB value in which every byte value occurs.
ks::bytes large_value(unsigned salt) {
  std::string s(std::size_t{1} << 20, '\0');
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>((i * 131 + (i >> 11) + salt) & 0xff);
  return ks::bytes(std::move(s));
}

bool is_finite_key_limit(std::size_t max) { return max < (std::size_t{1} << 30); }

// Whether the backend limits key + value of one operation (LevelDB) and not only the key.
template <class Store>
bool entry_limit_counts_value(const Store& db) {
  return db.backend().limits().max_entry_bytes != ks::backend_limits::unlimited;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
TEST_CASE("point operations: put, get, contains, erase, overwrite, missing keys", "[conformance][point]") {
  test_fixture fx;
  auto& db = fx.db();

  CHECK(lookup<message_metadata>(db, {"q", 1}) == "<missing>");
  CHECK_FALSE(db.contains<message_metadata>({"q", 1}));

  db.put<message_metadata>({"q", 1}, bin("m1"));
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("m1")));
  CHECK(db.contains<message_metadata>({"q", 1}));
  // Neighbouring keys stay missing.
  CHECK(lookup<message_metadata>(db, {"q", 2}) == "<missing>");
  CHECK(lookup<message_metadata>(db, {"q", 0}) == "<missing>");
  CHECK(lookup<message_metadata>(db, {"q1", 1}) == "<missing>");
  CHECK(lookup<message_metadata>(db, {"", 1}) == "<missing>");
  CHECK(lookup<message_expiration>(db, {"q", 1}) == "<missing>");
  CHECK_FALSE(db.contains<message_expiration>({"q", 1}));

  // Overwrite replaces, it does not add.
  db.put<message_metadata>({"q", 1}, bin("m1-v2"));
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("m1-v2")));
  CHECK(count(db.scan<message_metadata>("q")) == 1);

  db.erase<message_metadata>({"q", 1});
  CHECK(lookup<message_metadata>(db, {"q", 1}) == "<missing>");
  CHECK_FALSE(db.contains<message_metadata>({"q", 1}));
  CHECK(count(db.scan<message_metadata>()) == 0);
  // Erasing a missing key is not an error.
  CHECK_NOTHROW(db.erase<message_metadata>({"q", 1}));
  CHECK_NOTHROW(db.erase<message_count>({"never-written"}));

  // Every value codec of the schema round-trips.
  db.put<message_count>({"q"}, -5);
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(-5));
  db.put<message_expiration>({"q", 7}, i64_min);
  CHECK(db.get<message_expiration>({"q", 7}) == std::optional<std::int64_t>(i64_min));
  db.put<message_destination>({7}, "queue-7");
  CHECK(db.get<message_destination>({7}) == std::optional<std::string>("queue-7"));
  // An empty value is a present value, not a missing one.
  db.put<message_destination>({8}, "");
  CHECK(db.get<message_destination>({8}) == std::optional<std::string>(""));
  CHECK(db.contains<message_destination>({8}));
  db.put<dtx_entry>({bin("xid-1"), 3}, bin(""));
  CHECK(lookup<dtx_entry>(db, {bin("xid-1"), 3}) == show(bin("")));
  db.put<expiry>({1000, 7}, {});
  CHECK(db.get<expiry>({1000, 7}).has_value());
  CHECK_FALSE(db.get<expiry>({1000, 8}).has_value());
  db.put<recent>({"q", ks::desc<std::uint64_t>(7)}, bin("r7"));
  CHECK(lookup<recent>(db, {"q", ks::desc<std::uint64_t>(7)}) == show(bin("r7")));
  db.put<message_content>({7, 0}, bin("chunk"));
  CHECK(lookup<message_content>(db, {7, 0}) == show(bin("chunk")));
  CHECK(lookup<message_content>(db, {7, 1}) == "<missing>");

  // A durable single put.
  db.put<message_count>({"durable"}, 1, ks::write_options{.sync = true});
  CHECK(db.get<message_count>({"durable"}) == std::optional<std::int64_t>(1));

  db.erase<message_count>({"q"});
  db.erase<message_expiration>({"q", 7});
  db.erase<message_destination>({7});
  db.erase<message_destination>({8});
  db.erase<dtx_entry>({bin("xid-1"), 3});
  db.erase<expiry>({1000, 7});
  db.erase<recent>({"q", ks::desc<std::uint64_t>(7)});
  db.erase<message_content>({7, 0});
  CHECK_FALSE(db.contains<message_count>({"q"}));
  CHECK_FALSE(db.contains<message_expiration>({"q", 7}));
  CHECK_FALSE(db.contains<message_destination>({7}));
  CHECK_FALSE(db.contains<message_destination>({8}));
  CHECK_FALSE(db.contains<dtx_entry>({bin("xid-1"), 3}));
  CHECK_FALSE(db.contains<expiry>({1000, 7}));
  CHECK_FALSE(db.contains<recent>({"q", ks::desc<std::uint64_t>(7)}));
  CHECK_FALSE(db.contains<message_content>({7, 0}));
  CHECK(collect(db.scan<message_count>()) == std::vector<std::string>{show_entry<message_count>({"durable"}, 1)});
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("integer fields sort numerically; negative before positive; desc fields newest first",
          "[conformance][order]") {
  test_fixture fx;
  auto& db = fx.db();
  std::mt19937_64 rng(9);

  std::vector<std::uint64_t> ids = id_pool();
  std::shuffle(ids.begin(), ids.end(), rng);
  {
    auto b = db.batch();
    for (std::uint64_t id : ids) {
      b.put<message_metadata>({"q", id}, bin(std::to_string(id)));
      b.put<recent>({"q", id}, bin(std::to_string(id)));
    }
    b.commit();
  }
  std::vector<std::uint64_t> ascending = id_pool();
  std::sort(ascending.begin(), ascending.end());
  std::vector<std::uint64_t> descending(ascending.rbegin(), ascending.rend());

  const auto forward = ids_of(entries(db.scan<message_metadata>("q")));
  CHECK(forward == ascending);
  // The bug of the decimal dotted keys: 9 < 10 < 100 < 2^63, not "10" < "100" < "9".
  REQUIRE(forward.size() >= 7);
  CHECK(std::vector<std::uint64_t>(forward.begin() + 2, forward.begin() + 7) ==
        std::vector<std::uint64_t>{2, 9, 10, 11, 99});
  CHECK(ids_of(entries(db.scan<message_metadata>("q").reverse())) == descending);
  {
    std::vector<std::uint64_t> want;
    for (std::uint64_t id : ascending)
      if (id >= 10 && id <= (1ull << 63)) want.push_back(id);
    CHECK(ids_of(entries(db.scan<message_metadata>("q").from(10).through(1ull << 63))) == want);
  }

  // desc<u64>: key order is descending id order; bounds follow key order.
  std::vector<std::uint64_t> got;
  for (const auto& e : db.scan<recent>("q")) got.push_back(e.get<"message_id">().value);
  CHECK(got == descending);
  auto desc_ids = [](const auto& view) {
    std::vector<std::uint64_t> out;
    for (const auto& e : view) out.push_back(e.template get<"message_id">().value);
    return out;
  };
  auto filtered = [&](auto pred) {
    std::vector<std::uint64_t> out;
    for (std::uint64_t id : descending)
      if (pred(id)) out.push_back(id);
    return out;
  };
  CHECK(desc_ids(db.scan<recent>("q").from(std::uint64_t{100})) == filtered([](std::uint64_t i) { return i <= 100; }));
  CHECK(desc_ids(db.scan<recent>("q").after(std::uint64_t{100})) == filtered([](std::uint64_t i) { return i < 100; }));
  CHECK(desc_ids(db.scan<recent>("q").to(std::uint64_t{10})) == filtered([](std::uint64_t i) { return i > 10; }));
  CHECK(desc_ids(db.scan<recent>("q").through(std::uint64_t{10})) == filtered([](std::uint64_t i) { return i >= 10; }));
  CHECK(desc_ids(db.scan<recent>("q").reverse()) == ascending);
  CHECK(desc_ids(db.scan<recent>("q").limit(3)) == std::vector<std::uint64_t>(descending.begin(), descending.begin() + 3));
  CHECK(desc_ids(db.scan<recent>("q").from(ks::desc<std::uint64_t>(11)).to(ks::desc<std::uint64_t>(9))) ==
        std::vector<std::uint64_t>{11, 10});

  // Signed integers: negative before zero before positive, at every size step.
  std::vector<std::int64_t> ats = {i64_min,     -(1ll << 40), -65536, -256, -255, -1, 0, 1, 255, 256, 65536,
                                   (1ll << 40), i64_max};
  std::vector<std::int64_t> shuffled = ats;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  for (std::int64_t at : shuffled) db.put<expiry>({at, 42}, {});
  std::vector<std::int64_t> at_order;
  for (const auto& e : db.scan<expiry>()) at_order.push_back(e.get<"at">());
  CHECK(at_order == ats);
  std::vector<std::int64_t> negatives;
  for (const auto& e : db.scan<expiry>().to(0)) negatives.push_back(e.get<"at">());
  CHECK(negatives == std::vector<std::int64_t>(ats.begin(), ats.begin() + 6));
  std::vector<std::int64_t> non_negative;
  for (const auto& e : db.scan<expiry>().from(0).reverse()) non_negative.push_back(e.get<"at">());
  CHECK(non_negative == std::vector<std::int64_t>(ats.rbegin(), ats.rbegin() + 7));
  CHECK(count(db.scan<expiry>(std::int64_t{-1})) == 1);
  CHECK(count(db.scan<expiry>(std::int64_t{-2})) == 0);

  // u32 fields after a u64 field.
  const std::vector<std::uint32_t> offsets = {0, 1, 255, 256, 65535, 65536, std::numeric_limits<std::uint32_t>::max()};
  for (auto it = offsets.rbegin(); it != offsets.rend(); ++it) db.put<message_content>({10, *it}, bin("c"));
  db.put<message_content>({9, 7}, bin("other message"));
  db.put<message_content>({11, 0}, bin("other message"));
  std::vector<std::uint32_t> offset_order;
  for (const auto& e : db.scan<message_content>(std::uint64_t{10})) offset_order.push_back(e.get<"offset">());
  CHECK(offset_order == offsets);
  std::vector<std::uint64_t> message_order;
  for (const auto& e : db.scan<message_content>()) message_order.push_back(e.get<"message_id">());
  CHECK(message_order == std::vector<std::uint64_t>{9, 10, 10, 10, 10, 10, 10, 10, 11});
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("empty strings, embedded NULs, 0xFF bytes and 1 MiB values round-trip", "[conformance][values]") {
  test_fixture fx;
  auto& db = fx.db();

  // Text fields: NULs anywhere, the empty string, multi-byte UTF-8 up to U+10FFFF.
  std::vector<std::string> dests = {"",
                                    std::string("\0", 1),
                                    std::string("\0\0", 2),
                                    "a",
                                    std::string("a\0", 2),
                                    std::string("a\0b", 3),
                                    "\x7f",
                                    "\xc3\xbf",          // U+00FF
                                    "\xef\xbf\xbf",      // U+FFFF
                                    "\xf4\x8f\xbf\xbf"};  // U+10FFFF
  for (const std::string& d : dests) {
    db.put<message_metadata>({d, 1}, ks::bytes(std::string("\0\xff\0", 3) + d));
    db.put<message_count>({d}, static_cast<std::int64_t>(d.size()));
  }
  std::sort(dests.begin(), dests.end());  // byte order, which the tuple encoding preserves
  std::vector<std::string> want_all;
  for (const std::string& d : dests) {
    INFO("destination " << show(d));
    CHECK(lookup<message_metadata>(db, {d, 1}) == show(ks::bytes(std::string("\0\xff\0", 3) + d)));
    const auto es = entries(db.scan<message_metadata>(d));
    REQUIRE(es.size() == 1);
    CHECK(es[0].get<"destination">() == d);
    CHECK(es[0].value == ks::bytes(std::string("\0\xff\0", 3) + d));
    CHECK(db.get<message_count>({d}) == std::optional<std::int64_t>(static_cast<std::int64_t>(d.size())));
    want_all.push_back(show_entry<message_metadata>({d, 1}, ks::bytes(std::string("\0\xff\0", 3) + d)));
  }
  CHECK(collect(db.scan<message_metadata>()) == want_all);

  // Binary fields: NUL and 0xFF bytes, the empty byte string, prefixes of each other.
  std::vector<std::string> xids = {"", std::string("\0", 1), std::string("\0\0", 2), std::string("\0\xff", 2),
                                   "\xff", "\xff\xff", "a", std::string("a\0", 2), std::string("a\xff", 2)};
  for (const std::string& x : xids) {
    db.put<dtx_entry>({ks::bytes(x), 2}, ks::bytes(x + "/2"));
    db.put<dtx_entry>({ks::bytes(x), 1}, ks::bytes(x + "/1"));
  }
  std::sort(xids.begin(), xids.end());
  std::vector<std::string> want_xids;
  for (const std::string& x : xids) {
    INFO("xid " << show_bytes(x));
    CHECK(collect(db.scan<dtx_entry>(ks::bytes(x))) ==
          std::vector<std::string>{show_entry<dtx_entry>({ks::bytes(x), 1}, ks::bytes(x + "/1")),
                                   show_entry<dtx_entry>({ks::bytes(x), 2}, ks::bytes(x + "/2"))});
    want_xids.push_back(show_entry<dtx_entry>({ks::bytes(x), 1}, ks::bytes(x + "/1")));
    want_xids.push_back(show_entry<dtx_entry>({ks::bytes(x), 2}, ks::bytes(x + "/2")));
  }
  CHECK(collect(db.scan<dtx_entry>()) == want_xids);

  // Values with every byte value, the empty value.
  std::string all_bytes;
  for (int c = 0; c < 256; ++c) all_bytes.push_back(static_cast<char>(c));
  db.put<message_metadata>({"v", 1}, ks::bytes(all_bytes));
  db.put<message_metadata>({"v", 2}, bin(""));
  db.put<message_destination>({1}, std::string("\0q\xff", 3));
  CHECK(db.get<message_metadata>({"v", 1}) == std::optional<ks::bytes>(ks::bytes(all_bytes)));
  CHECK(db.get<message_metadata>({"v", 2}) == std::optional<ks::bytes>(bin("")));
  CHECK(db.get<message_destination>({1}) == std::optional<std::string>(std::string("\0q\xff", 3)));

  // 1 MiB values: point ops, scans, a batch of several, overwrite with a small value.
  const ks::bytes big = large_value(0);
  db.put<message_metadata>({"big", 1}, big);
  const std::optional<ks::bytes> big_read = db.get<message_metadata>({"big", 1});
  REQUIRE(big_read.has_value());
  CHECK(big_read->size() == big.size());
  CHECK(*big_read == big);
  {
    auto b = db.batch();
    for (std::uint32_t off = 0; off < 3; ++off) b.put<message_content>({99, off}, large_value(off + 1));
    b.commit();
  }
  std::uint32_t chunks = 0;
  for (const auto& e : db.scan<message_content>(std::uint64_t{99})) {
    CHECK(e.value == large_value(e.get<"offset">() + 1));
    ++chunks;
  }
  CHECK(chunks == 3);
  std::uint32_t reverse_chunks = 0;
  for (const auto& e : db.scan<message_content>(std::uint64_t{99}).reverse()) {
    CHECK(e.get<"offset">() == 2 - reverse_chunks);
    CHECK(e.value == large_value(e.get<"offset">() + 1));
    ++reverse_chunks;
  }
  CHECK(reverse_chunks == 3);
  db.put<message_metadata>({"big", 1}, bin("small"));
  CHECK(lookup<message_metadata>(db, {"big", 1}) == show(bin("small")));

  // Invalid UTF-8 in a text field is refused before anything is written.
  const std::size_t before = count(db.scan<message_metadata>());
  CHECK_THROWS_AS(db.put<message_metadata>({std::string("\xff"), 1}, bin("x")), ks::error);
  CHECK_THROWS_AS(db.put<message_metadata>({std::string("a\xc3"), 1}, bin("x")), ks::error);
  CHECK(count(db.scan<message_metadata>()) == before);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("scans never leak into a neighbouring keyspace or destination", "[conformance][scan][boundary]") {
  test_fixture fx;
  auto& db = fx.db();
  const std::vector<std::string> dests = tricky_destinations();
  {
    auto b = db.batch();
    for (const std::string& d : dests) {
      for (std::uint64_t id : {1u, 2u, 10u}) {
        b.put<message_metadata>({d, id}, ks::bytes("meta:" + d));
        b.put<message_expiration>({d, id}, static_cast<std::int64_t>(id) * 1000);
      }
      b.put<message_count>({d}, static_cast<std::int64_t>(d.size()));
      b.put<recent>({d, 5}, ks::bytes("recent:" + d));
    }
    for (std::uint64_t id : {1u, 2u, 3u}) {
      b.put<message_content>({id, 0}, bin("c0"));
      b.put<message_content>({id, 1}, bin("c1"));
      b.put<message_destination>({id}, "q");
    }
    b.commit();
  }

  for (const std::string& d : dests) {
    INFO("destination " << show(d));
    std::vector<std::string> want_meta, want_exp;
    for (std::uint64_t id : {1u, 2u, 10u}) {
      want_meta.push_back(show_entry<message_metadata>({d, id}, ks::bytes("meta:" + d)));
      want_exp.push_back(show_entry<message_expiration>({d, id}, static_cast<std::int64_t>(id) * 1000));
    }
    CHECK(collect(db.scan<message_metadata>(d)) == want_meta);
    CHECK(collect(db.scan<message_expiration>(d)) == want_exp);
    std::reverse(want_meta.begin(), want_meta.end());
    CHECK(collect(db.scan<message_metadata>(d).reverse()) == want_meta);
    // Bounds on the id stay inside the destination.
    CHECK(count(db.scan<message_metadata>(d).from(0).through(u64_max)) == 3);
    CHECK(count(db.scan<message_metadata>(d).after(10)) == 0);
    CHECK(count(db.scan<message_metadata>(d).after(10).reverse()) == 0);
    CHECK(count(db.scan<message_metadata>(d).to(1)) == 0);
    CHECK(count(db.scan<message_metadata>(d).to(1).reverse()) == 0);
    CHECK(collect(db.scan<message_count>(d)) ==
          std::vector<std::string>{show_entry<message_count>({d}, static_cast<std::int64_t>(d.size()))});
    CHECK(count(db.scan<recent>(d)) == 1);
  }
  // Whole-keyspace scans see exactly their own keys.
  CHECK(count(db.scan<message_metadata>()) == 3 * dests.size());
  CHECK(count(db.scan<message_metadata>().reverse()) == 3 * dests.size());
  CHECK(count(db.scan<message_expiration>()) == 3 * dests.size());
  CHECK(count(db.scan<message_count>()) == dests.size());
  CHECK(count(db.scan<recent>()) == dests.size());
  for (const auto& e : db.scan<message_metadata>()) CHECK(e.value == ks::bytes("meta:" + e.get<"destination">()));
  // Destinations that were never written, but sit next to written ones.
  for (const std::string& d : {std::string("q\0", 2) + std::string("\0", 1), std::string("q0"), std::string("qq"),
                              std::string("MESSAGE"), std::string("a."), std::string("p"), std::string("\0", 1)}) {
    INFO("absent destination " << show(d));
    CHECK(count(db.scan<message_metadata>(d)) == 0);
    CHECK(count(db.scan<message_metadata>(d).reverse()) == 0);
    CHECK(count(db.scan<message_count>(d)) == 0);
  }
  // Bounds on the destination field of a whole-keyspace scan.
  std::vector<std::string> sorted = dests;
  std::sort(sorted.begin(), sorted.end());
  std::size_t from_q = 0, through_q = 0;
  for (const std::string& d : sorted) {
    if (d >= "q") from_q += 3;
    if (d <= "q") through_q += 3;
  }
  CHECK(count(db.scan<message_metadata>().from("q")) == from_q);
  CHECK(count(db.scan<message_metadata>().through("q")) == through_q);
  CHECK(count(db.scan<message_metadata>().after("q").reverse()) == from_q - 3);

  // message_content and message_destination share ("MESSAGE", id).
  for (std::uint64_t id : {1u, 2u, 3u}) {
    CHECK(collect(db.scan<message_content>(id)) ==
          std::vector<std::string>{show_entry<message_content>({id, 0}, bin("c0")),
                                   show_entry<message_content>({id, 1}, bin("c1"))});
    CHECK(count(db.scan<message_content>(id).reverse()) == 2);
    CHECK(collect(db.scan<message_destination>(id)) ==
          std::vector<std::string>{show_entry<message_destination>({id}, "q")});
  }
  CHECK(count(db.scan<message_content>()) == 6);
  CHECK(count(db.scan<message_content>().reverse()) == 6);
  CHECK(count(db.scan<message_destination>()) == 3);
  CHECK(count(db.scan<message_destination>().reverse()) == 3);
  // Erasing one keyspace's prefix leaves the neighbour sharing its leading segments alone.
  CHECK(db.erase_prefix<message_content>(std::uint64_t{2}) == 2);
  CHECK(count(db.scan<message_content>()) == 4);
  CHECK(db.get<message_destination>({2}) == std::optional<std::string>("q"));
  CHECK(db.erase_prefix<message_metadata>(std::string("q")) == 3);
  CHECK(count(db.scan<message_expiration>("q")) == 3);
  CHECK(count(db.scan<message_metadata>("q1")) == 3);
  CHECK(count(db.scan<message_metadata>(std::string("q\0x", 3))) == 3);
  CHECK(count(db.scan<message_metadata>()) == 3 * (dests.size() - 1));
  // Erasing a whole keyspace skips the keys of the keyspace interleaved with it in key order.
  CHECK(db.erase_prefix<message_metadata>() == 3 * (dests.size() - 1));
  CHECK(count(db.scan<message_metadata>()) == 0);
  CHECK(count(db.scan<message_expiration>()) == 3 * dests.size());
  CHECK(db.erase_prefix<message_content>() == 4);
  CHECK(count(db.scan<message_destination>()) == 3);
  {
    auto tx = db.transaction();
    CHECK(tx.erase_prefix<message_expiration>() == 3 * dests.size());
    CHECK(count(tx.scan<message_count>()) == dests.size());
    tx.commit();
  }
  CHECK(count(db.scan<message_expiration>()) == 0);
  CHECK(count(db.scan<recent>()) == dests.size());
  CHECK(count(db.scan<message_count>()) == dests.size());
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("prefix and bounded scans in both directions agree with a model", "[conformance][scan][model]") {
  test_fixture fx;
  auto& db = fx.db();
  std::mt19937_64 rng(20240611);
  const std::vector<std::string> dests = tricky_destinations();
  std::vector<std::string> probe_dests = dests;
  for (const char* d : {"p", "qq", "z", "MESSAGE", "a.", "\x7f"}) probe_dests.emplace_back(d);
  probe_dests.push_back(std::string("q\0\0", 3));
  const std::vector<std::uint64_t> ids = id_pool();
  auto pick_dest = [&] { return dests[rng() % dests.size()]; };
  auto pick_id = [&] { return ids[rng() % ids.size()]; };
  auto probe_id = [&]() -> std::uint64_t {
    const std::uint64_t id = pick_id();
    switch (rng() % 4) {
      case 0: return id == u64_max ? id : id + 1;
      case 1: return id == 0 ? id : id - 1;
      default: return id;
    }
  };
  auto probe_dest = [&] { return probe_dests[rng() % probe_dests.size()]; };

  model<message_metadata> meta;
  model<message_expiration> exp;
  for (int round = 0; round < 4; ++round) {
    for (int op = 0; op < 400; ++op) {
      const auto r = rng() % 10;
      if (r < 5) {
        const std::string d = pick_dest();
        const std::uint64_t id = pick_id();
        const ks::bytes v = random_value(rng);
        db.put<message_metadata>({d, id}, v, {.sync = false});  // logic, not durability
        meta.put({d, id}, v);
      } else if (r < 7) {
        const std::string d = pick_dest();
        const std::uint64_t id = pick_id();
        db.erase<message_metadata>({d, id}, {.sync = false});
        meta.erase({d, id});
      } else if (r < 8) {
        const std::string d = pick_dest();
        const std::uint64_t id = pick_id();
        const auto v = static_cast<std::int64_t>(rng());
        db.put<message_expiration>({d, id}, v, {.sync = false});
        exp.put({d, id}, v);
      } else if (r < 9) {
        db.put<message_count>({pick_dest()}, static_cast<std::int64_t>(rng() % 100), {.sync = false});
      } else {
        auto b = db.batch();
        for (int i = 0; i < 4; ++i) {
          const std::string d = pick_dest();
          const std::uint64_t id = pick_id();
          if (rng() % 3 == 0) {
            b.erase<message_metadata>({d, id});
            meta.erase({d, id});
          } else {
            const ks::bytes v = random_value(rng);
            b.put<message_metadata>({d, id}, v);
            meta.put({d, id}, v);
          }
        }
        b.commit({.sync = false});
      }
    }
    INFO("round " << round << ": " << meta.size() << " metadata entries");
    CHECK(collect(db.scan<message_metadata>()) == meta.all());
    CHECK(collect(db.scan<message_expiration>()) == exp.all());
    for (const std::string& d : probe_dests) {
      const auto prefix = std::tuple<std::string>(d);
      check_scan(db, meta, prefix, scan_bounds<std::uint64_t>{});
      check_scan(db, meta, prefix, scan_bounds<std::uint64_t>{.reverse = true});
      for (int i = 0; i < 16; ++i) check_scan(db, meta, prefix, random_bounds<std::uint64_t>(rng, probe_id));
      for (int i = 0; i < 4; ++i) check_scan(db, exp, prefix, random_bounds<std::uint64_t>(rng, probe_id));
      for (int i = 0; i < 2; ++i) {
        check_scan(db, meta, std::tuple<std::string, std::uint64_t>(d, pick_id()),
                   scan_bounds<std::uint64_t>{.reverse = rng() % 2 == 0});
      }
    }
    for (int i = 0; i < 24; ++i) check_scan(db, meta, std::tuple<>{}, random_bounds<std::string>(rng, probe_dest));
    // The same scans through a snapshot.
    const auto snap = db.snapshot();
    for (int i = 0; i < 16; ++i) {
      check_scan(snap, meta, std::tuple<std::string>(pick_dest()), random_bounds<std::uint64_t>(rng, probe_id));
    }
    for (const auto& [k, v] : meta.entries()) {
      if (rng() % 8 == 0) CHECK(lookup<message_metadata>(db, k) == show(v));
    }
  }
}

TEST_CASE("scans of a keyspace with two adjacent fields agree with a model", "[conformance][scan][model]") {
  test_fixture fx;
  auto& db = fx.db();
  std::mt19937_64 rng(77);
  const std::vector<std::uint64_t> ids = {0, 1, 9, 10, 255, 256, 1ull << 40, u64_max};
  const std::vector<std::uint32_t> offsets = {0, 1, 2, 255, 256, 70000, std::numeric_limits<std::uint32_t>::max()};
  auto pick_id = [&] { return ids[rng() % ids.size()]; };
  auto pick_offset = [&] { return offsets[rng() % offsets.size()]; };

  model<message_content> content;
  model<message_destination> destination;
  for (int op = 0; op < 600; ++op) {
    const auto r = rng() % 6;
    const std::uint64_t id = pick_id();
    if (r < 3) {
      const std::uint32_t off = pick_offset();
      const ks::bytes v = random_value(rng);
      db.put<message_content>({id, off}, v, {.sync = false});  // logic, not durability
      content.put({id, off}, v);
    } else if (r < 4) {
      const std::uint32_t off = pick_offset();
      db.erase<message_content>({id, off}, {.sync = false});
      content.erase({id, off});
    } else if (r < 5) {
      const std::string v = "dest-" + std::to_string(rng() % 5);
      db.put<message_destination>({id}, v, {.sync = false});
      destination.put({id}, v);
    } else {
      db.erase<message_destination>({id}, {.sync = false});
      destination.erase({id});
    }
  }
  CHECK(collect(db.scan<message_content>()) == content.all());
  CHECK(collect(db.scan<message_destination>()) == destination.all());
  for (int i = 0; i < 40; ++i) check_scan(db, content, std::tuple<>{}, random_bounds<std::uint64_t>(rng, pick_id));
  for (std::uint64_t id : ids) {
    for (int i = 0; i < 12; ++i) {
      check_scan(db, content, std::tuple<std::uint64_t>(id), random_bounds<std::uint32_t>(rng, pick_offset));
    }
    check_scan(db, content, std::tuple<std::uint64_t, std::uint32_t>(id, pick_offset()), scan_bounds<int>{});
    check_scan(db, destination, std::tuple<std::uint64_t>(id), scan_bounds<int>{.reverse = true});
  }
  for (int i = 0; i < 20; ++i) check_scan(db, destination, std::tuple<>{}, random_bounds<std::uint64_t>(rng, pick_id));
}

// ---------------------------------------------------------------------------------------------
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
      raw_entry.put(std::string(1, '\x02'), std::string(entry_max, 'v'));
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

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
TEST_CASE("foreign keys are skipped; undecodable keys and values raise decode_error", "[conformance][decode]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_metadata>({"q", 1}, bin("m1"));
  db.put<message_metadata>({"q", 3}, bin("m3"));
  db.put<message_count>({"good"}, 1);

  // Byte-level keys written around the typed layer (as a native tool might), built from the
  // typed encodings of real keys.
  auto typed = db.batch();
  typed.put<message_count>({"bad"}, 0);
  typed.put<message_metadata>({"q", 2}, bin(""));
  const std::string count_key(typed.operations()[0].key);
  const std::string meta_key(typed.operations()[1].key);
  // ("DESTINATION", "q", "MESSAGE_METADATA", "2"): the layout of message_metadata up to its last
  // field, which is a string here: a key of no keyspace, that scans must step over.
  const std::string foreign = meta_key.substr(0, meta_key.size() - 2) + std::string("\x02" "2\x00", 3);
  ks::write_batch raw;
  raw.put(count_key, "\x99 not a packed i64");
  raw.put(foreign, "foreign");
  db.write(raw);

  CHECK(collect(db.scan<message_metadata>()) ==
        std::vector<std::string>{show_entry<message_metadata>({"q", 1}, bin("m1")),
                                 show_entry<message_metadata>({"q", 3}, bin("m3"))});
  CHECK(count(db.scan<message_metadata>().reverse()) == 2);
  CHECK(count(db.scan<message_metadata>("q")) == 2);

  CHECK(db.contains<message_count>({"bad"}));
  try {
    (void)db.get<message_count>({"bad"});
    FAIL("an undecodable value was returned");
  } catch (const ks::decode_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("message_count") && Catch::Contains("bad"));
  }
  CHECK_THROWS_AS(count(db.scan<message_count>()), ks::decode_error);
  CHECK(db.get<message_count>({"good"}) == std::optional<std::int64_t>(1));
  CHECK(count(db.scan<message_count>("good")) == 1);  // the bad key is outside this scan

  // A key that starts like message_metadata but is cut inside the destination.
  ks::write_batch truncated;
  truncated.put(meta_key.substr(0, meta_key.find('q') + 1), "cut");
  db.write(truncated);
  CHECK_THROWS_AS(count(db.scan<message_metadata>()), ks::decode_error);
  CHECK(count(db.scan<message_metadata>("q")) == 2);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("the store records the schema fingerprint under the reserved key", "[conformance][schema]") {
  test_fixture fx;
  std::string record;
  REQUIRE(fx.db().backend().get(ks::schema_key, record, nullptr));
  CHECK(record == ks::layout<broker>::record());
  // The reserved key is invisible to typed scans of every keyspace.
  CHECK(count(fx.db().scan<message_metadata>()) == 0);
  CHECK(count(fx.db().scan<dtx_entry>().reverse()) == 0);
  CHECK(count(fx.db().scan<recent>().reverse()) == 0);
}

TEST_CASE("data survives closing and reopening the database", "[conformance][persistence]") {
  if (!backend_factory::persistent) {
    WARN(backend_factory::name << " backend keeps nothing on disk: reopen case skipped");
    SUCCEED();
    return;
  }
  test_fixture fx;
  {
    auto& db = fx.db();
    auto b = db.batch();
    for (const std::string& d : tricky_destinations()) {
      for (std::uint64_t id : {1u, 10u, 9u}) b.put<message_metadata>({d, id}, ks::bytes(d + std::to_string(id)));
      b.put<message_count>({d}, -3);
    }
    b.put<message_content>({5, 0}, large_value(5));
    b.put<expiry>({-7, 5}, {});
    b.put<recent>({"q", 5}, bin("r"));
    b.put<dtx_entry>({ks::bytes(std::string("\0\xff", 2)), 1}, bin(""));
    b.commit();
    db.erase<message_metadata>({"q", 9});
    db.put<message_destination>({5}, "q", ks::write_options{.sync = true});
  }
  auto snapshot_of = [&] {
    auto& db = fx.db();
    return std::vector<std::vector<std::string>>{
        collect(db.scan<message_metadata>()), collect(db.scan<message_count>()), collect(db.scan<expiry>()),
        collect(db.scan<recent>()),           collect(db.scan<dtx_entry>()),     collect(db.scan<message_destination>())};
  };
  const auto before = snapshot_of();
  REQUIRE(before[0].size() == 3 * tricky_destinations().size() - 1);

  fx.reopen();
  CHECK(snapshot_of() == before);
  CHECK(fx.db().get<message_content>({5, 0}) == std::optional<ks::bytes>(large_value(5)));
  CHECK_FALSE(fx.db().contains<message_metadata>({"q", 9}));

  // Write after reopening, through a transaction, and reopen again.
  {
    auto tx = fx.db().transaction();
    tx.put<message_count>({"q"}, tx.get<message_count>({"q"}).value_or(0) + 10);
    tx.erase<message_content>({5, 0});
    tx.commit();
  }
  fx.reopen();
  CHECK(fx.db().get<message_count>({"q"}) == std::optional<std::int64_t>(7));
  CHECK_FALSE(fx.db().contains<message_content>({5, 0}));
  CHECK(collect(fx.db().scan<message_metadata>()) == before[0]);
}

TEST_CASE("reopening with another schema throws schema_error", "[conformance][persistence][schema]") {
  if (!backend_factory::persistent) {
    WARN(backend_factory::name << " backend keeps nothing on disk: schema fingerprint reopen case skipped");
    SUCCEED();
    return;
  }
  test_fixture fx;
  fx.db().put<message_count>({"q"}, 4);
  fx.close();
  try {
    auto other = backend_factory::open<broker_v2>(fx.dir());
    FAIL("a database written with another schema layout was opened");
  } catch (const ks::schema_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("message_count=packed<i64>") && Catch::Contains("message_count=packed<u64>"));
  }
  // The refused open neither damaged nor kept the database.
  fx.reopen();
  CHECK(fx.db().get<message_count>({"q"}) == std::optional<std::int64_t>(4));

  // And the other way round: a database created with broker_v2 refuses broker.
  testing::temp_dir other_dir("conformance-v2");
  {
    auto v2 = backend_factory::open<broker_v2>(other_dir.path());
    v2->put<message_count_v2>({"q"}, 4u);
  }
  CHECK_THROWS_AS(backend_factory::open<broker>(other_dir.path()), ks::schema_error);
  auto v2 = backend_factory::open<broker_v2>(other_dir.path());
  CHECK(v2->get<message_count_v2>({"q"}) == std::optional<std::uint64_t>(4));
}

TEST_CASE("a database is open in one store at a time", "[conformance][persistence]") {
  if (!backend_factory::persistent) {
    WARN(backend_factory::name << " backend has no database to share: exclusive-open case skipped");
    SUCCEED();
    return;
  }
  test_fixture fx;
  fx.db().put<message_count>({"q"}, 1);
  CHECK_THROWS_AS(backend_factory::open<broker>(fx.dir()), ks::locked_error);
  CHECK(fx.db().get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  fx.close();
  auto again = backend_factory::open<broker>(fx.dir());
  CHECK(again->get<message_count>({"q"}) == std::optional<std::int64_t>(1));
}

}  // namespace keyschema::conformance
