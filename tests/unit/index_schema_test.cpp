// An index entry belongs to one record: the index key holds every field of the record's key (a
// compile-time check of the schema, tests/compile_fail/index_lacks_record_field.cpp), and Derive
// must copy their values; an entry that does not is refused with a schema_error naming the index,
// the record and the field, and nothing of the write is written.
#include <keyschema/keyschema.hpp>

#include "../support/ref_backend.hpp"
#include "../support/thrown.hpp"

#include <catch2/catch.hpp>

#include <range/v3/range/primitives.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace index_schema_test {
namespace {
namespace ks = keyschema;

using message = ks::keyspace<"message", std::int64_t, ks::lit<"M">, ks::field<"destination", std::string>,
                             ks::field<"id", std::uint64_t>>;  // -> expires at
using message_count = ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"C">,
                                   ks::field<"destination", std::string>>;

// Copies the record's key fields: an entry per message.
struct by_expiry {
  std::optional<std::tuple<std::int64_t, std::string, std::uint64_t>> operator()(const message::key_type& k,
                                                                                 const std::int64_t& at) const {
    return std::tuple(at, std::get<0>(k), std::get<1>(k));
  }
};
using expiry_index = ks::keyspace<"expiry", ks::index_of<message, by_expiry>, ks::lit<"E">, ks::field<"at", std::int64_t>,
                                  ks::field<"destination", std::string>, ks::field<"id", std::uint64_t>>;
using good_schema = ks::schema<message, expiry_index, message_count>;

// Has the fields, but puts 0 in "id" for every message: messages of one destination expiring
// together would share one entry.
struct by_expiry_without_id {
  std::optional<std::tuple<std::int64_t, std::string, std::uint64_t>> operator()(const message::key_type& k,
                                                                                 const std::int64_t& at) const {
    return std::tuple(at, std::get<0>(k), std::uint64_t{0});
  }
};
using lossy_index = ks::keyspace<"lossy_expiry", ks::index_of<message, by_expiry_without_id>, ks::lit<"E">,
                                 ks::field<"at", std::int64_t>, ks::field<"destination", std::string>,
                                 ks::field<"id", std::uint64_t>>;
using lossy_schema = ks::schema<message, lossy_index, message_count>;

using memory_store = ks::store<good_schema, ks::memory_backend>;

TEST_CASE("two records with one derived time keep one index entry each", "[index][schema]") {
  static_assert(ks::detail::derived_checks<good_schema>::value);
  memory_store db;
  db.put<message>({"q", 1}, 100);
  db.put<message>({"q", 2}, 100);
  CHECK(ranges::distance(db.scan<expiry_index>()) == 2);
  db.erase<message>({"q", 1});
  // The other message is still indexed, and the sweep reaches it.
  REQUIRE(ranges::distance(db.scan<expiry_index>()) == 1);
  CHECK(db.scan<expiry_index>().begin()->get<"id">() == 2);
  CHECK(ks::sweep<expiry_index>(db, std::int64_t{101}, 10, [](const message::key_type&, const std::int64_t&) {}) == 1);
  CHECK(ranges::distance(db.scan<message>()) == 0);
}

// The refusal: schema_error naming the index, the record keyspace and the field, and the record
// keyspace, index and count unchanged.
void check_refused(const std::optional<ks::schema_error>& e) {
  REQUIRE(e);
  CHECK_THAT(e->what(), Catch::Contains("keyschema::index_of: index 'lossy_expiry'") &&
                            Catch::Contains("keyspace 'message'") && Catch::Contains("field 'id' differs") &&
                            Catch::Contains("Nothing of this write was written"));
}

TEST_CASE("an index entry whose record key fields Derive does not copy is refused in every kind of write",
          "[index][schema][errors]") {
  ks::memory_backend inner;
  ks::store<lossy_schema, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
  const auto unchanged = [&] {
    CHECK(ranges::distance(db.scan<message>()) == 0);
    CHECK(ranges::distance(db.scan<lossy_index>()) == 0);
    CHECK(db.get<message_count>({"q"}) == std::nullopt);
  };
  // Id 0 is the one record whose entry is right.
  db.put<message>({"q", 0}, 100);
  CHECK(ranges::distance(db.scan<lossy_index>()) == 1);
  db.erase<message>({"q", 0});
  unchanged();

  check_refused(ks::testing::thrown<ks::schema_error>([&] { db.put<message>({"q", 1}, 100); }));
  unchanged();

  auto b = db.batch();
  b.put<message>({"q", 2}, 100);
  b.put<message>({"q", 3}, 100);
  check_refused(ks::testing::thrown<ks::schema_error>([&] { b.commit(); }));
  unchanged();

  {
    // The transaction is left as it was before the put: its count not bumped, its index not
    // changed, so committing what else it wrote stays consistent.
    auto tx = db.transaction();
    check_refused(ks::testing::thrown<ks::schema_error>([&] { tx.put<message>({"q", 4}, 100); }));
    CHECK(tx.size() == 0);
    CHECK(tx.get<message_count>({"q"}) == std::nullopt);
    tx.commit();
  }
  unchanged();
}

TEST_CASE("ks::migrate refuses to rebuild an index whose Derive does not copy the record's key fields",
          "[index][schema][migrate][errors]") {
  using v1 = ks::schema<message, message_count>;
  ks::memory_backend inner;
  {
    ks::store<v1, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
    db.put<message>({"q", 1}, 100);
    db.put<message>({"q", 2}, 100);
  }
  check_refused(ks::testing::thrown<ks::schema_error>([&] { ks::migrate<v1, lossy_schema>(inner); }));
}

}  // namespace
}  // namespace index_schema_test
