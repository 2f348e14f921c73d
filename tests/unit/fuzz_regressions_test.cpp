// Inputs the fuzz targets (tests/fuzz/) found, each kept as a regression test. The same bytes
// are also in tests/fuzz/regressions/<target>/, which the fuzz_replay.* tests run through the
// targets' full property checks.
//
// 1. Integers in a longer-than-shortest form decoded to the value of the shortest form
//    (fuzz_tuple_unpack, fuzz_value_decode, fuzz_key_decode, first minutes of fuzzing). Two
//    stored keys then decoded to the same typed key: a scan returned an entry whose key get()
//    and erase() could not reach. Typed decoding now accepts only the shortest form.
#include <keyschema/keyschema.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <tuple>

#include "../conformance/broker_schema.hpp"
#include "tuple_test_util.hpp"

namespace ks = keyschema;
namespace bk = keyschema::conformance;
using tuple_test::B;

TEST_CASE("fuzz: a non-shortest integer does not decode to the shortest form's value", "[fuzz][tuple]") {
  // fuzz_tuple_unpack: selector 02 (int64), 16 00 00 is zero in two bytes.
  CHECK_THROWS_AS(ks::tuple::unpack<std::int64_t>(B({0x16, 0x00, 0x00})), ks::decode_error);
  // fuzz_value_decode: a u64 value 1c 00 80 00 00 00 00 00 00 (seven significant bytes in eight).
  CHECK_THROWS_AS(ks::value_traits<std::uint64_t>::decode(B({0x1c, 0x00, 0x80, 0, 0, 0, 0, 0, 0})), ks::decode_error);
  // fuzz_key_decode: the "recent" keyspace's desc<u64> holding the complement of 16 00 00 00.
  const std::string recent = ks::tuple::pack(std::string("RECENT"), std::string("q")) + B({0x40, 0xe9, 0xff, 0xff, 0xff});
  bk::recent::key_type k;
  CHECK_THROWS_AS(ks::detail::key_codec<bk::recent>::decode(recent, k), ks::decode_error);
}

TEST_CASE("fuzz: a stored key with a non-shortest integer is an error, not an unreachable entry", "[fuzz][store]") {
  ks::memory_backend inner;
  // Message 42 of "orders", written by another program with 42 in two bytes (16 00 2a).
  const std::string key = ks::tuple::pack(std::string("DESTINATION"), std::string("orders"),
                                          std::string("MESSAGE_METADATA")) + B({0x16, 0x00, 0x2a});
  ks::write_batch b;
  b.put(key, "body");
  inner.write(b, {});
  ks::store<bk::broker, ks::memory_backend> db(ks::adopt, std::move(inner));  // keys without a schema record
  // Before the fix the scan yielded ("orders", 42), yet get and erase of that key missed it.
  CHECK_FALSE(db.get<bk::message_metadata>({"orders", 42}).has_value());
  CHECK_THROWS_WITH(
      [&] {
        for (const auto& e : db.scan<bk::message_metadata>("orders")) (void)e;
      }(),
      Catch::Contains("non-canonical integer"));
}
