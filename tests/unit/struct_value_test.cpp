// Struct values (struct_value.hpp): round trips through put/get/scan/transactions, members by
// name, the stored bytes (the tuple of the members), and damaged values -> decode_error naming
// the keyspace and the key, for every truncation and for flipped bytes.
#include <keyschema/keyschema.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ks = keyschema;

namespace struct_value_test {

struct message_meta {
  std::int64_t priority = 0;
  std::uint64_t expires = 0;
  std::optional<std::string> reply_to;
  ks::bytes correlation;
  int not_stored = 7;

  friend bool operator==(const message_meta&, const message_meta&) = default;
};

}  // namespace struct_value_test

template <>
struct ks::value_fields<struct_value_test::message_meta>
    : ks::members<ks::member<"priority", &struct_value_test::message_meta::priority>,
                  ks::member<"expires", &struct_value_test::message_meta::expires>,
                  ks::member<"reply_to", &struct_value_test::message_meta::reply_to>,
                  ks::member<"correlation", &struct_value_test::message_meta::correlation>> {};

namespace struct_value_test {

using meta = ks::keyspace<"message_meta", message_meta, ks::lit<"META">, ks::field<"destination", std::string>,
                          ks::field<"message_id", std::uint64_t>>;
using db_schema = ks::schema<meta>;

message_meta sample(std::uint64_t i) {
  message_meta m;
  m.priority = -static_cast<std::int64_t>(i);
  m.expires = 1000 + i;
  if (i % 2 == 0) m.reply_to = "reply-" + std::to_string(i);
  m.correlation = ks::bytes(std::string("c\0\xff", 3) + std::to_string(i));
  return m;
}

TEST_CASE("struct values round-trip through put, get, scans and transactions", "[struct_value]") {
  ks::store<db_schema, ks::memory_backend> db;
  for (std::uint64_t i = 0; i < 5; ++i) db.put<meta>({"q", i}, sample(i));
  for (std::uint64_t i = 0; i < 5; ++i) {
    const std::optional<message_meta> m = db.get<meta>({"q", i});
    REQUIRE(m);
    CHECK(*m == sample(i));
    CHECK(ks::get<"priority">(*m) == -static_cast<std::int64_t>(i));
    CHECK(ks::get<"expires">(*m) == 1000 + i);
  }
  std::uint64_t n = 0;
  for (const auto& e : db.scan<meta>("q")) CHECK(e.value == sample(n++));
  CHECK(n == 5);
  // get_into reuses the value; a member not listed keeps what it had.
  message_meta into;
  into.not_stored = 99;
  REQUIRE(db.get_into<meta>({"q", 2}, into));
  CHECK(into.not_stored == 99);
  CHECK(ks::get<"reply_to">(into) == std::optional<std::string>("reply-2"));
  {
    auto tx = db.transaction();
    message_meta m = *tx.get<meta>({"q", 1});
    ks::get<"priority">(m) = 50;
    tx.put<meta>({"q", 1}, m);
    CHECK(tx.get<meta>({"q", 1})->priority == 50);
    tx.commit();
  }
  CHECK(db.get<meta>({"q", 1})->priority == 50);
}

TEST_CASE("a struct value is stored as the tuple of its members", "[struct_value]") {
  ks::store<db_schema, ks::memory_backend> db;
  const message_meta m = sample(4);
  db.put<meta>({"q", 4}, m);
  std::string stored;
  REQUIRE(db.backend().get(ks::tuple::pack("META", "q", std::uint64_t{4}), stored, nullptr));
  CHECK(stored == ks::tuple::pack(m.priority, m.expires, m.reply_to, m.correlation));
  CHECK(ks::tuple::unpack<std::int64_t, std::uint64_t, std::optional<std::string>, ks::bytes>(stored) ==
        std::tuple(m.priority, m.expires, m.reply_to, m.correlation));
  // The schema layout names the members.
  CHECK(ks::layout<db_schema>::text().find("struct<priority:i64,expires:u64,reply_to:optional<string>,"
                                           "correlation:bytes>") != std::string::npos);
}

TEST_CASE("a damaged struct value is a decode_error naming the keyspace and the key", "[struct_value][errors]") {
  ks::store<db_schema, ks::memory_backend> db;
  const std::string good = ks::tuple::pack(std::int64_t{-3}, std::uint64_t{7}, std::optional<std::string>("r"),
                                           ks::bytes(std::string("x\0y", 3)));
  const std::string key = ks::tuple::pack("META", "dest-9", std::uint64_t{9});
  std::vector<std::string> damaged;
  for (std::size_t n = 0; n < good.size(); ++n) damaged.push_back(good.substr(0, n));  // every truncation
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (char flip : {'\x01', '\x80', '\xff'}) {
      std::string d = good;
      d[i] = static_cast<char>(d[i] ^ flip);
      damaged.push_back(d);
    }
  }
  damaged.push_back(good + std::string("\x15\x01", 2));  // an extra member
  damaged.push_back(ks::tuple::pack(std::int64_t{1}, std::uint64_t{2}));  // fewer members
  damaged.push_back(ks::tuple::pack(std::uint64_t{2}, std::int64_t{-1}, std::optional<std::string>(), ks::bytes()));
  std::size_t errors = 0, decoded = 0;
  for (const std::string& d : damaged) {
    ks::write_batch raw;
    raw.put(key, d);
    db.write(raw);
    try {
      (void)db.get<meta>({"dest-9", 9});
      ++decoded;  // a flip that still spells the right types (a digit of a number) is a valid value
    } catch (const ks::decode_error& e) {
      ++errors;
      const std::string what = e.what();
      CHECK(what.find("message_meta") != std::string::npos);
      CHECK(what.find("dest-9") != std::string::npos);
    }
    message_meta out = sample(1);
    try {
      db.get_into<meta>({"dest-9", 9}, out);
    } catch (const ks::decode_error&) {
      CHECK(out == sample(1));  // nothing assigned on an error
    }
  }
  CHECK(errors > damaged.size() / 2);
  CHECK(errors + decoded == damaged.size());
  // A truncation inside the last element is mostly an error, but not always: cutting "x\0\xffy\0"
  // after "x\0" leaves the valid bytes "x". Cutting a whole member never decodes.
  for (std::size_t n : {0u, 2u, 4u, 7u}) {
    ks::write_batch raw;
    raw.put(key, good.substr(0, n));
    db.write(raw);
    INFO("truncated to " << n << " of " << good.size() << " bytes");
    CHECK_THROWS_AS(db.get<meta>({"dest-9", 9}), ks::decode_error);
  }
}

}  // namespace struct_value_test
