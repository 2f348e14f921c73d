// tests/conformance/cases/point.cpp: conformance cases:
// point operations (put, get, contains, erase, overwrite), numeric key order and value bytes.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

namespace keyschema::conformance {

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

}  // namespace keyschema::conformance
