// tests/unit/key_arg_test.cpp: keys given as field values convert exactly, or not at all.
//
// Point operations (get, contains, put, erase) take a key_arg<KS> (key_arg.hpp). Before it, they
// took a const KS::key_type&, and std::tuple's converting constructor narrowed silently: {"q", 300}
// for a std::uint8_t field was the key ("q", 44), {"q", -1} for a std::uint32_t field the key
// ("q", 4294967295): puts under another key, gets of another entry, no error. The slot and depth
// lines of the first case compile on those headers and fail there (no key_error; the entry lands
// under 44); the desc/optional/tuple lines and most of the second case did not compile at all.
#include <keyschema/keyschema.hpp>
#include <support/thrown.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace key_arg_test {

namespace ks = keyschema;
using ks::testing::contains;
using ks::testing::thrown;
using namespace std::chrono_literals;

namespace {

using slot = ks::keyspace<"slot", std::string, ks::lit<"S">, ks::field<"queue", std::string>, ks::field<"n", std::uint8_t>>;
using depth = ks::keyspace<"depth", std::uint64_t, ks::lit<"D">, ks::field<"queue", std::string>, ks::field<"id", std::uint32_t>>;
using expiry = ks::keyspace<"expiry", std::string, ks::lit<"E">, ks::field<"at", std::chrono::sys_time<std::chrono::milliseconds>>>;
using down = ks::keyspace<"down", std::string, ks::lit<"W">, ks::field<"n", ks::desc<std::int8_t>>>;
using maybe = ks::keyspace<"maybe", std::string, ks::lit<"M">, ks::field<"n", std::optional<std::uint16_t>>>;
using pair = ks::keyspace<"pair", std::string, ks::lit<"P">, ks::field<"xy", std::tuple<std::int32_t, std::string>>,
                          ks::field<"tag", std::string>>;
using single = ks::keyspace<"single", std::string, ks::lit<"ONE">>;
using broker = ks::schema<slot, depth, expiry, down, maybe, pair, single>;
using store_type = ks::store<broker, ks::memory_backend>;

enum priority { low = 1, high = 9 };

template <class KS>
std::size_t count(const store_type& db) {
  std::size_t n = 0;
  for (const auto& e : db.scan<KS>()) {
    (void)e;
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("an integer outside its field's range is key_error, never another key", "[key_arg]") {
  store_type db;
  const auto e = thrown<ks::key_error>([&] { db.put<slot>({"q", 300}, "x"); });
  REQUIRE(e);
  CHECK(contains(e->what(), "keyspace 'slot', field 'n'"));
  CHECK(contains(e->what(), "the value 300 is outside the field's range [0, 255]"));
  CHECK(count<slot>(db) == 0);                 // nothing written (the old code wrote ("q", 44))
  CHECK_FALSE(db.contains<slot>({"q", 44}));

  const int minus_one = -1;
  CHECK(thrown<ks::key_error>([&] { (void)db.get<depth>({"q", minus_one}); }));
  CHECK(thrown<ks::key_error>([&] { (void)db.contains<depth>({"q", std::int64_t{1} << 32}); }));
  CHECK(thrown<ks::key_error>([&] { db.erase<slot>({"q", -1}); }));

  auto b = db.batch();
  b.put<slot>({"q", 1}, "one");
  CHECK(thrown<ks::key_error>([&] { b.put<slot>({"q", 256}, "x"); }));
  CHECK(b.size() == 1);  // the failed put added nothing
  b.commit();
  auto tx = db.transaction();
  CHECK(thrown<ks::key_error>([&] { tx.put<depth>({"q", -5}, 1); }));
  CHECK(tx.size() == 0);
  tx.rollback();

  // Inside desc, optional and tuple fields too.
  CHECK(thrown<ks::key_error>([&] { db.put<down>({ks::desc<int>{200}}, "x"); }));
  CHECK(thrown<ks::key_error>([&] { db.put<maybe>({std::optional<int>(70000)}, "x"); }));
  CHECK(thrown<ks::key_error>([&] { db.put<pair>({std::make_tuple(std::int64_t{1} << 40, "a"), "t"}, "x"); }));
  CHECK(count<down>(db) + count<maybe>(db) + count<pair>(db) == 0);
}

TEST_CASE("a point read's key is the key a write stores, on the direct path and on the general one",
          "[key_arg][encode]") {
  // get, get_into and contains encode their key into a stack buffer (key_arg::encoded) when it is
  // made of literals, integers and plain text of at most 256 bytes, and into a string otherwise:
  // text with a NUL or beyond ASCII, longer keys, other field types.
  const std::vector<std::string> queues = {"", "q", std::string("nul\0inside", 11), "caf\xc3\xa9",
                                           std::string(230, 'a'), std::string(300, 'b'), std::string(300, '\0')};
  store_type db;
  std::size_t direct = 0, general = 0;
  for (const std::string& q : queues) {
    for (const std::uint8_t n : {std::uint8_t{0}, std::uint8_t{1}, std::uint8_t{255}}) {
      std::string written;
      ks::key_arg<slot>{q, n}.encode(written);
      ks::detail::key_buffer buf;
      const std::string_view read = ks::key_arg<slot>{q, n}.encoded(buf);
      CHECK(read == written);
      CHECK(read == ks::tuple::pack("S", q, n));
      std::string appended = "head";  // encode() appends, on either path
      ks::key_arg<slot>{q, n}.encode(appended);
      CHECK(appended == "head" + written);
      (read.data() == buf.data ? direct : general) += 1;
      const slot::key_type typed{q, n};
      // The thread's spill holds one key at a time: the second read is the key alone again.
      CHECK(ks::key_arg<slot>(typed).encoded(buf) == written);

      db.put<slot>({q, n}, q + "/" + std::to_string(n));
      CHECK(db.get<slot>({q, n}) == q + "/" + std::to_string(n));
      std::string v;
      CHECK(db.get_into<slot>(typed, v));
      CHECK(v == q + "/" + std::to_string(n));
      CHECK(db.contains<slot>({q, n}));
      CHECK_FALSE(db.contains<slot>({q + "x", n}));
    }
  }
  CHECK(direct == 3 * 3);   // "", "q" and 230 ASCII bytes
  CHECK(general == 4 * 3);  // a NUL, beyond ASCII, over 256 bytes
  // Other field types take the general path: desc, optional, a tuple field.
  db.put<down>({ks::desc<std::int8_t>{-7}}, "d");
  db.put<maybe>({std::nullopt}, "null");
  db.put<pair>({{3, "x"}, "t"}, "p");
  CHECK(db.get<down>({ks::desc<std::int8_t>{-7}}) == "d");
  CHECK(db.get<maybe>({std::optional<std::uint16_t>()}) == "null");
  CHECK(db.get<pair>({std::make_tuple(3, std::string("x")), "t"}) == "p");
}

TEST_CASE("field values in range, of other types, reach exactly the typed key's entry", "[key_arg]") {
  store_type db;
  // Integers of any width and signedness, string literals and views, enums.
  db.put<slot>({"q", 255}, "top");
  CHECK(db.get<slot>(slot::key_type{"q", 255}) == "top");
  CHECK(db.get<slot>({std::string_view("q"), std::uint64_t{255}}) == "top");
  CHECK(db.get<slot>({std::string("q"), high}) == std::nullopt);
  db.put<slot>({"q", high}, "high");
  CHECK(db.get<slot>({"q", 9}) == "high");
  // A std::tuple of accepted values, and the typed key itself.
  CHECK(db.get<slot>(std::make_tuple(std::string_view("q"), 255L)) == "top");
  const slot::key_type k{"q", 9};
  CHECK(db.contains<slot>(k));

  // Lossless std::chrono conversions: a seconds time point for a millisecond field.
  const std::chrono::sys_time<std::chrono::seconds> at{1700000000s};
  db.put<expiry>({at}, "due");
  CHECK(db.get<expiry>({std::chrono::sys_time<std::chrono::milliseconds>(at)}) == "due");
  CHECK(db.get<expiry>(at) == "due");  // one field: one value, no braces needed
  for (const auto& e : db.scan<expiry>()) CHECK(std::get<0>(e.key).time_since_epoch() == 1700000000000ms);

  // desc, optional (value or null) and nested braces for a tuple field.
  db.put<down>({ks::desc<int>{-7}}, "d");
  CHECK(db.get<down>({ks::desc<std::int8_t>{-7}}) == "d");
  db.put<maybe>({std::nullopt}, "null");
  db.put<maybe>({std::optional<int>(65535)}, "max");
  CHECK(db.get<maybe>({std::optional<std::uint16_t>()}) == "null");
  CHECK(db.get<maybe>({65535}) == "max");
  db.put<pair>({{3, "x"}, "t"}, "p");
  CHECK(db.get<pair>({std::make_tuple(3L, std::string_view("x")), "t"}) == "p");

  // A keyspace without fields.
  db.put<single>({}, "only");
  CHECK(db.get<single>({}) == "only");

  // Every put above landed under the key its typed form names, and nowhere else.
  std::vector<int> ns;
  for (const auto& e : db.scan<slot>()) ns.push_back(std::get<1>(e.key));
  CHECK(ns == std::vector<int>{9, 255});
  db.erase<slot>({"q", 9L});
  CHECK(count<slot>(db) == 1);
}

}  // namespace key_arg_test
