// tests/unit/lmdb_store_reads_test.cpp: typed reads inside a store transaction on LMDB.
//
// A store transaction on LMDB holds LMDB's write transaction, and every read through it (get,
// get_into, contains, scans in all three modes) must go through that transaction: it needs no
// reader slot, sees the transaction's own writes and the state it locked, and works while every
// reader slot is taken (where a read outside the transaction fails with limit_error).
#include <keyschema/keyschema.hpp>
#include <keyschema/lmdb.hpp>

#include "../conformance/broker_schema.hpp"
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <range/v3/range/operations.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace lmdb_store_reads_test {

namespace {
namespace ks = keyschema;
using namespace keyschema::conformance;
using ks::testing::temp_dir;
using lmdb_store = ks::store<broker, ks::lmdb_backend>;
}  // namespace

TEST_CASE("lmdb: reads inside a transaction use its write transaction, not a reader slot", "[lmdb][store][reads]") {
  temp_dir dir("lmdb-tx-reads");
  ks::lmdb_options o;
  o.max_readers = 2;
  lmdb_store db(dir.path(), o);
  {
    auto b = db.batch();
    for (std::uint64_t id = 1; id <= 5; ++id) b.put<message_metadata>({"q", id}, ks::bytes("v" + std::to_string(id)));
    b.put<message_destination>({1}, "q");
    b.commit();
  }
  // Take every reader slot.
  std::optional<lmdb_store::snapshot_type> s1(db.snapshot()), s2(db.snapshot());
  CHECK_THROWS_AS(db.get<message_destination>({1}), ks::limit_error);
  CHECK_THROWS_AS(ranges::distance(db.scan<message_metadata>("q")), ks::limit_error);

  auto tx = db.transaction();
  CHECK(tx.get<message_destination>({1}) == std::string("q"));
  std::string name;
  CHECK(tx.get_into<message_destination>({1}, name));
  CHECK(name == "q");
  CHECK(tx.contains<message_metadata>({"q", 3}));
  CHECK(ranges::distance(tx.scan<message_metadata>("q")) == 5);
  CHECK(ranges::distance(tx.scan<message_metadata>("q").keys_only()) == 5);
  std::vector<std::string> values;
  for (const auto& e : tx.scan<message_metadata>("q").reverse().value_views()) values.emplace_back(e.value);
  CHECK(values == std::vector<std::string>{"v5", "v4", "v3", "v2", "v1"});
  // Its own writes are visible to its reads, in every mode.
  tx.put<message_metadata>({"q", 6}, ks::bytes("v6"));
  tx.erase<message_metadata>({"q", 1});
  CHECK(ranges::distance(tx.scan<message_metadata>("q").keys_only()) == 5);
  ks::bytes v;
  CHECK(tx.get_into<message_metadata>({"q", 6}, v));
  CHECK(v == ks::bytes("v6"));
  CHECK_FALSE(tx.get_into<message_metadata>({"q", 1}, v));
  tx.commit();

  s1.reset();
  CHECK(db.get<message_metadata>({"q", 6}) == ks::bytes("v6"));
  CHECK_FALSE(db.get<message_metadata>({"q", 1}));
  CHECK(ranges::distance(s2->scan<message_metadata>("q")) == 5);  // the snapshot still sees its state
  CHECK(s2->get<message_metadata>({"q", 1}) == ks::bytes("v1"));
}

TEST_CASE("lmdb: a transaction's reads see the state it locked while another snapshot reads the old one",
          "[lmdb][store][reads]") {
  temp_dir dir("lmdb-tx-state");
  lmdb_store db(dir.path());
  db.put<message_count>({"q"}, 1);
  auto before = db.snapshot();
  {
    auto tx = db.transaction();
    tx.put<message_count>({"q"}, tx.get<message_count>({"q"}).value_or(0) + 1);
    std::int64_t n = 0;
    CHECK(tx.get_into<message_count>({"q"}, n));
    CHECK(n == 2);
    CHECK(before.get<message_count>({"q"}) == 1);
    tx.commit();
  }
  CHECK(db.get<message_count>({"q"}) == 2);
  CHECK(before.get<message_count>({"q"}) == 1);
}

// get_into on LMDB reads the engine's bytes straight into the caller's value (the backend's reads
// leave it alone on a miss: backend_with_value_kept_on_miss); a miss, in the store, a snapshot
// and a transaction (a key never written, one the transaction erased), leaves it unchanged.
TEST_CASE("lmdb: get_into reads into the caller's value and leaves it alone on a miss", "[lmdb][store][reads]") {
  static_assert(ks::backend_with_value_kept_on_miss<ks::lmdb_backend>);
  temp_dir dir("lmdb-get-into");
  lmdb_store db(dir.path());
  db.put<message_metadata>({"q", 1}, ks::bytes(std::string("a\0b", 3)));
  db.put<message_destination>({1}, std::string(1000, 'd'));
  ks::bytes b("previous, longer content");
  std::string s = "kept";
  CHECK_FALSE(db.get_into<message_metadata>({"q", 2}, b));
  CHECK(b == ks::bytes("previous, longer content"));
  CHECK_FALSE(db.get_into<message_destination>({2}, s));
  CHECK(s == "kept");
  CHECK(db.get_into<message_metadata>({"q", 1}, b));
  CHECK(b == ks::bytes(std::string("a\0b", 3)));
  CHECK(db.get_into<message_destination>({1}, s));
  CHECK(s == std::string(1000, 'd'));
  const auto snap = db.snapshot();
  db.put<message_destination>({2}, "after the snapshot");
  CHECK_FALSE(snap.get_into<message_destination>({2}, s));
  CHECK(s == std::string(1000, 'd'));
  CHECK(snap.get_into<message_destination>({1}, s));
  {
    auto tx = db.transaction();
    tx.erase<message_destination>({1});
    s = "kept";
    CHECK_FALSE(tx.get_into<message_destination>({1}, s));
    CHECK_FALSE(tx.get_into<message_destination>({3}, s));
    CHECK(s == "kept");
    CHECK(tx.get_into<message_destination>({2}, s));
    CHECK(s == "after the snapshot");
  }
}

}  // namespace lmdb_store_reads_test
