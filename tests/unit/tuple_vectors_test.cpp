// Byte-exact vectors of the FoundationDB tuple layer (design/tuple.md test cases and the Java
// binding's TupleSerializationTest / TuplePackingTest), keyschema's own forms (desc), and the
// malformed inputs every decoder must reject with a decode_error naming the byte offset.
#include <keyschema/tuple.hpp>
#include <keyschema/tuple_format.hpp>

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include "tuple_test_util.hpp"

using keyschema::bytes;
using keyschema::decode_error;
using keyschema::desc;
using keyschema::uuid;
using tuple_test::B;
using tuple_test::hex;
namespace tuple = keyschema::tuple;

namespace {

std::string S(const char* s) { return std::string(s); }

// Packs vs, compares with `expected` byte for byte, and decodes `expected` back into the same
// types (the value must round trip).
template <class... Ts>
void check_vector(const std::string& expected, const Ts&... vs) {
  INFO("expected " << hex(expected));
  CHECK(hex(tuple::pack(vs...)) == hex(expected));
  const std::tuple<Ts...> back = tuple::unpack<Ts...>(expected);
  CHECK(back == std::tuple<Ts...>(vs...));
  // The schema-less decoder accepts the same bytes and consumes all of them.
  CHECK_NOTHROW(tuple::unpack_dynamic(expected));
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const decode_error& e) {
    return e.what();
  }
  return "<no decode_error>";
}

uuid make_uuid(std::uint64_t hi, std::uint64_t lo) {
  uuid u;
  for (int i = 0; i < 8; ++i) {
    u.bytes[i] = static_cast<std::uint8_t>(hi >> (56 - 8 * i));
    u.bytes[8 + i] = static_cast<std::uint8_t>(lo >> (56 - 8 * i));
  }
  return u;
}

}  // namespace

TEST_CASE("design/tuple.md test cases", "[tuple][vectors]") {
  check_vector(B({0x01}) + "foo" + B({0x00, 0xff}) + "bar" + B({0x00}), bytes(std::string("foo\0bar", 7)));
  check_vector(B({0x02, 'F', 0xc3, 0x94, 'O', 0x00, 0xff, 'b', 'a', 'r', 0x00}), std::string("F\xc3\x94O\0bar", 8));
  check_vector(B({0x05, 0x01, 'f', 'o', 'o', 0x00, 0xff, 'b', 'a', 'r', 0x00, 0x00, 0xff, 0x05, 0x00, 0x00}),
               std::tuple<bytes, std::nullptr_t, std::tuple<>>(bytes(std::string("foo\0bar", 7)), nullptr, {}));
  check_vector(B({0x11, 0xab, 0x4b, 0x93}), std::int64_t{-5551212});
  check_vector(B({0x20, 0x3d, 0xd7, 0xff, 0xff}), -42.0f);
  check_vector(B({0x13, 0xfe}), -1);
}

TEST_CASE("Java TupleSerializationTest: integers", "[tuple][vectors]") {
  constexpr int FF = 0xff;
  CHECK(tuple::pack().empty());
  check_vector(B({0x14}), std::int64_t{0});
  check_vector(B({0x14}), std::uint64_t{0});
  check_vector(B({0x15, 0x01}), std::int64_t{1});
  check_vector(B({0x13, FF - 1}), std::int64_t{-1});
  check_vector(B({0x15, FF}), std::int64_t{255});
  check_vector(B({0x13, 0x00}), std::int64_t{-255});
  check_vector(B({0x16, 0x01, 0x00}), std::int64_t{256});
  check_vector(B({0x12, FF - 1, FF}), std::int64_t{-256});
  check_vector(B({0x17, 0x01, 0x00, 0x00}), std::int32_t{65536});
  check_vector(B({0x11, FF - 1, FF, FF}), std::int32_t{-65536});
  check_vector(B({0x1c, 0x7f, FF, FF, FF, FF, FF, FF, FF}), std::numeric_limits<std::int64_t>::max());
  check_vector(B({0x1c, 0x80, 0, 0, 0, 0, 0, 0, 0}), std::uint64_t{1} << 63);
  check_vector(B({0x1c, FF, FF, FF, FF, FF, FF, FF, FF}), std::numeric_limits<std::uint64_t>::max());
  check_vector(B({0x10, 0x00, 0x00, 0x00, 0x00}), -((std::int64_t{1} << 32) - 1));
  check_vector(B({0x0c, 0x80, 0, 0, 0, 0, 0, 0, 0x01}), std::numeric_limits<std::int64_t>::min() + 2);
  check_vector(B({0x0c, 0x80, 0, 0, 0, 0, 0, 0, 0x00}), std::numeric_limits<std::int64_t>::min() + 1);
  check_vector(B({0x0c, 0x7f, FF, FF, FF, FF, FF, FF, FF}), std::numeric_limits<std::int64_t>::min());
  check_vector(B({0x16, 0x30, 0x19}), std::int16_t{0x3019});
  check_vector(B({0x15, 0x03}), std::int8_t{0x03});
  check_vector(B({0x15, 0x03}), std::uint8_t{0x03});
}

TEST_CASE("Java TupleSerializationTest: integers beyond 64 bits decode dynamically", "[tuple][vectors]") {
  constexpr int FF = 0xff;
  // 2^64: positive arbitrary precision.
  const auto two64 = tuple::unpack_dynamic(B({0x1d, 0x09, 0x01, 0, 0, 0, 0, 0, 0, 0, 0}));
  REQUIRE(two64.size() == 1);
  CHECK(two64[0].type == tuple::element::kind::big_integer);
  CHECK(tuple::to_string(two64) == "(18446744073709551616,)");
  // -(2^63) - 1 and -(2^64 - 1) fit the 8-byte negative form but not int64.
  const auto below_min = tuple::unpack_dynamic(B({0x0c, 0x7f, FF, FF, FF, FF, FF, FF, FF - 1}));
  CHECK(tuple::to_string(below_min) == "(-9223372036854775809,)");
  CHECK_FALSE(below_min[0].as_int64().has_value());
  const auto most_negative = tuple::unpack_dynamic(B({0x0c, 0, 0, 0, 0, 0, 0, 0, 0}));
  CHECK(tuple::to_string(most_negative) == "(-18446744073709551615,)");
  // The Java encoding of -(2^64): 0x0b, complemented length 9, one's complement magnitude.
  const auto neg_two64 = tuple::unpack_dynamic(B({0x0b, 0x09 ^ 0xff, 0xfe, FF, FF, FF, FF, FF, FF, FF, FF}));
  CHECK(tuple::to_string(neg_two64) == "(-18446744073709551616,)");
}

TEST_CASE("Java TupleSerializationTest: floating point", "[tuple][vectors]") {
  constexpr int FF = 0xff;
  check_vector(B({0x20, 0xc0, 0x48, 0xf5, 0xc3}), 3.14f);
  check_vector(B({0x20, 0x3f, 0xb7, 0x0a, 0x3c}), -3.14f);
  check_vector(B({0x21, 0xc0, 0x09, 0x1e, 0xb8, 0x51, 0xeb, 0x85, 0x1f}), 3.14);
  check_vector(B({0x21, 0x3f, 0xf6, 0xe1, 0x47, 0xae, 0x14, 0x7a, 0xe0}), -3.14);
  check_vector(B({0x20, 0x80, 0x00, 0x00, 0x00}), 0.0f);
  check_vector(B({0x21, 0x80, 0, 0, 0, 0, 0, 0, 0}), 0.0);
  check_vector(B({0x20, FF, 0x80, 0x00, 0x00}), std::numeric_limits<float>::infinity());
  check_vector(B({0x20, 0x00, 0x7f, FF, FF}), -std::numeric_limits<float>::infinity());
  check_vector(B({0x21, FF, 0xf0, 0, 0, 0, 0, 0, 0}), std::numeric_limits<double>::infinity());
  check_vector(B({0x21, 0x00, 0x0f, FF, FF, FF, FF, FF, FF}), -std::numeric_limits<double>::infinity());

  // -0.0 == 0.0 in C++, so compare the decoded sign too.
  CHECK(hex(tuple::pack(-0.0f)) == hex(B({0x20, 0x7f, FF, FF, FF})));
  CHECK(hex(tuple::pack(-0.0)) == hex(B({0x21, 0x7f, FF, FF, FF, FF, FF, FF, FF})));
  CHECK(std::signbit(std::get<0>(tuple::unpack<float>(B({0x20, 0x7f, FF, FF, FF})))));
  CHECK(std::signbit(std::get<0>(tuple::unpack<double>(B({0x21, 0x7f, FF, FF, FF, FF, FF, FF, FF})))));

  // NaNs keep their exact bits (NaN != NaN, so compare bits).
  struct nan_case {
    std::uint64_t bits;
    std::string expected;
    bool single;
  };
  const nan_case cases[] = {
      {0x7fffffffu, B({0x20, FF, FF, FF, FF}), true},
      {0xffffffffu, B({0x20, 0, 0, 0, 0}), true},
      {0x7fffffffffffffffull, B({0x21, FF, FF, FF, FF, FF, FF, FF, FF}), false},
      {0xffffffffffffffffull, B({0x21, 0, 0, 0, 0, 0, 0, 0, 0}), false},
  };
  for (const auto& c : cases) {
    INFO("bits " << std::hex << c.bits);
    if (c.single) {
      const auto f = std::bit_cast<float>(static_cast<std::uint32_t>(c.bits));
      CHECK(hex(tuple::pack(f)) == hex(c.expected));
      CHECK(std::bit_cast<std::uint32_t>(std::get<0>(tuple::unpack<float>(c.expected))) == c.bits);
    } else {
      const auto d = std::bit_cast<double>(c.bits);
      CHECK(hex(tuple::pack(d)) == hex(c.expected));
      CHECK(std::bit_cast<std::uint64_t>(std::get<0>(tuple::unpack<double>(c.expected))) == c.bits);
    }
  }
}

// The text of numbers that are not finite, signs included: to_string and to_json (tools, and
// the key codec's decode errors) name NaN, -NaN, inf and -inf, of both widths.
TEST_CASE("tuple::to_string and to_json of non-finite and signed numbers", "[tuple][vectors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const float nanf = std::numeric_limits<float>::quiet_NaN();
  const float inff = std::numeric_limits<float>::infinity();
  CHECK(tuple::to_string(tuple::unpack_dynamic(tuple::pack(nan, -nan, inf, -inf))) == "(nan, -nan, inf, -inf)");
  CHECK(tuple::to_string(tuple::unpack_dynamic(tuple::pack(nanf, -nanf, inff, -inff))) == "(nanf, -nanf, inff, -inff)");
  CHECK(tuple::to_string(tuple::unpack_dynamic(tuple::pack(-0.0, 1.5, -0.0f, 2.5f))) == "(-0.0, 1.5, -0.0f, 2.5f)");
  CHECK(tuple::to_json(tuple::unpack_dynamic(tuple::pack(-nan, inf, -inff, 0.25))) ==
        "[{\"double\":\"-nan\"},{\"double\":\"inf\"},{\"float\":\"-inf\"},0.25]");
}

TEST_CASE("Java TupleSerializationTest: byte strings and text", "[tuple][vectors]") {
  constexpr int FF = 0xff;
  check_vector(B({0x01, 0x00}), bytes());
  check_vector(B({0x01, 0x01, 0x02, 0x03, 0x00}), bytes(B({1, 2, 3})));
  check_vector(B({0x01, 0x00, FF, 0x00, FF, 0x00, FF, 0x04, 0x00}), bytes(B({0, 0, 0, 4})));
  check_vector(B({0x02, 0x00}), S(""));
  check_vector(B({0x02, 'h', 'e', 'l', 'l', 'o', 0x00}), S("hello"));
  check_vector(B({0x02, 0xe4, 0xb8, 0xad, 0xe6, 0x96, 0x87, 0x00}), S("\u4e2d\u6587"));
  check_vector(B({0x02, 0xce, 0xbc, 0xce, 0xac, 0xce, 0xb8, 0xce, 0xb7, 0xce, 0xbc, 0xce, 0xb1, 0x00}),
               S("\u03bc\u03ac\u03b8\u03b7\u03bc\u03b1"));
  check_vector(B({0x02, 0xf0, 0x9f, 0x94, 0xa5, 0x00}), S("\U0001F525"));
  check_vector(B({0x02, 0xf0, 0x9f, 0xa5, 0xaf, 0x00}), S("\U0001F96F"));
  check_vector(B({0x02, 0xf0, 0x9f, 0xa6, 0xa5, 0x00}), S("\U0001F9A5"));
  check_vector(B({0x02, 0xf4, 0x8f, 0xbf, 0xbf, 0x00}), S("\U0010FFFF"));
  // Literals, std::string_view and const char* encode exactly like std::string.
  CHECK(tuple::pack("hello") == B({0x02, 'h', 'e', 'l', 'l', 'o', 0x00}));
  CHECK(tuple::pack(std::string_view("hello")) == tuple::pack(S("hello")));
  const char* c_string = "hello";
  CHECK(tuple::pack(c_string) == tuple::pack(S("hello")));
}

TEST_CASE("Java TupleSerializationTest: nested tuples, uuid, bool", "[tuple][vectors]") {
  constexpr int FF = 0xff;
  check_vector(B({0x05, 0x00, FF, 0x00}), std::tuple<std::nullptr_t>(nullptr));
  check_vector(B({0x05, 0x00, FF, 0x02, 'h', 'e', 'l', 'l', 'o', 0x00, 0x00}),
               std::tuple<std::nullptr_t, std::string>(nullptr, "hello"));
  check_vector(B({0x05, 0x00, FF, 0x02, 'h', 'e', 'l', 'l', 0x00, FF, 0x00, 0x00}),
               std::tuple<std::nullptr_t, std::string>(nullptr, std::string("hell\0", 5)));
  check_vector(B({0x05, 0x00, FF, 0x00, 0x02, 'h', 'e', 'l', 'l', 'o', 0x00}), std::tuple<std::nullptr_t>(nullptr),
               S("hello"));
  check_vector(B({0x05, 0x00, FF, 0x00, 0x02, 'h', 'e', 'l', 'l', 'o', 0x00, 0x01, 0x01, 0x00, FF, 0x00, 0x01, 0x00}),
               std::tuple<std::nullptr_t>(nullptr), S("hello"), bytes(B({0x01, 0x00})), bytes());
  // An empty optional inside a nested tuple is a nested null too.
  check_vector(B({0x05, 0x00, FF, 0x00}), std::tuple<std::optional<std::int64_t>>(std::nullopt));
  check_vector(B({0x00}), std::optional<std::int64_t>());
  check_vector(B({0x15, 0x07}), std::optional<std::int64_t>(7));
  // Java: new UUID(0xba5eba11, 0x5ca1ab1e) (the int literal 0xba5eba11 sign-extends).
  check_vector(B({0x30, FF, FF, FF, FF, 0xba, 0x5e, 0xba, 0x11, 0x00, 0x00, 0x00, 0x00, 0x5c, 0xa1, 0xab, 0x1e}),
               make_uuid(0xffffffffba5eba11ull, 0x5ca1ab1eull));
  check_vector(B({0x26}), false);
  check_vector(B({0x27}), true);
  check_vector(B({0x00}), nullptr);
}

TEST_CASE("keyschema desc<T>: 0x40, complement of T's encoding, 0xff", "[tuple][vectors]") {
  check_vector(B({0x40, 0xea, 0xfe, 0xff}), desc<std::uint64_t>(1));           // ~(15 01)
  check_vector(B({0x40, 0xeb, 0xff}), desc<std::uint64_t>(0));                 // ~(14)
  check_vector(B({0x40, 0xec, 0x01, 0xff}), desc<std::int64_t>(-1));           // ~(13 fe)
  check_vector(B({0x40, 0xfd, 0x9e, 0xff, 0xff}), desc<std::string>("a"));     // ~(02 61 00)
  check_vector(B({0x40, 0xfd, 0xff, 0x00, 0xff, 0xff}), desc<std::string>(std::string("\0", 1)));  // ~(02 00 ff 00)
  check_vector(B({0x40, 0xff, 0xff}), desc<std::optional<std::int32_t>>(std::nullopt));  // ~(00)
  // desc of desc: 40 ~(40 ~x ff) ff = 40 bf x 00 ff.
  check_vector(B({0x40, 0xbf, 0x15, 0x01, 0x00, 0xff}), desc<desc<std::uint64_t>>(desc<std::uint64_t>(1)));
  const auto d = tuple::unpack_dynamic(B({0x40, 0xea, 0xfe, 0xff}));
  CHECK(tuple::to_string(d) == "(desc(1),)");
  // The terminator is required.
  CHECK_THROWS_AS(tuple::unpack<desc<std::uint64_t>>(B({0x40, 0xea, 0xfe})), decode_error);
  CHECK_THROWS_AS(tuple::unpack<desc<std::uint64_t>>(B({0x40, 0xea, 0xfe, 0x00})), decode_error);
  CHECK_THROWS_AS(tuple::unpack_dynamic(B({0x40, 0xea, 0xfe})), decode_error);
  CHECK_THROWS_AS(tuple::unpack_dynamic(B({0x40, 0xea, 0xfe, 0x14})), decode_error);
}

TEST_CASE("typed integer decoding accepts only the shortest form", "[tuple][vectors]") {
  // One value, one encoding: a decoded key must re-encode to the bytes it was read from (see
  // tests/unit/fuzz_regressions_test.cpp). Forms no FoundationDB binding writes for 64-bit
  // values are decode errors naming the offset; values wider than 64 bits stay overflow errors.
  constexpr int FF = 0xff;
  CHECK_THROWS_WITH(tuple::unpack<std::uint64_t>(B({0x1d, 0x08, 0, 0, 0, 0, 0, 0, 0, 42})),
                    Catch::Contains("non-canonical integer") && Catch::Contains("at byte 0"));
  CHECK_THROWS_AS(tuple::unpack<std::uint64_t>(B({0x1d, 0x09, 0, FF, FF, FF, FF, FF, FF, FF, FF})), decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::int32_t>(B({0x1d, 0x00})), decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::int64_t>(B({0x0b, 0x08 ^ 0xff, FF, FF, FF, FF, FF, FF, FF, 0xd5})), decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::int16_t>(B({0x16, 0x00, 0x2a})), decode_error);  // 42 in two bytes
  CHECK_THROWS_AS(tuple::unpack<std::uint8_t>(B({0x13, 0xff})), decode_error);         // "-0"
  CHECK_THROWS_AS(tuple::unpack<std::int64_t>(B({0x12, 0xff, 0xd5})), decode_error);   // -42 in two bytes
  CHECK_THROWS_WITH(tuple::unpack<std::int64_t>(B({0x1d, 0x09, 1, 0, 0, 0, 0, 0, 0, 0, 0})),
                    Catch::Contains("integer overflow"));
  CHECK(std::get<0>(tuple::unpack<std::int8_t>(B({0x13, 0x7f}))) == -128);
  CHECK(std::get<0>(tuple::unpack<std::int8_t>(B({0x15, 0x7f}))) == 127);
  CHECK(std::get<0>(tuple::unpack<std::int64_t>(B({0x12, 0xfe, 0xff}))) == -256);
  CHECK(std::get<0>(tuple::unpack<std::uint64_t>(B({0x1c, FF, FF, FF, FF, FF, FF, FF, FF}))) ==
        std::numeric_limits<std::uint64_t>::max());
  CHECK(std::get<0>(tuple::unpack<std::int64_t>(B({0x0c, 0x7f, FF, FF, FF, FF, FF, FF, FF}))) ==
        std::numeric_limits<std::int64_t>::min());
  // The schema-less decoder (keyschema-dump) still reads every form FoundationDB defines.
  CHECK_NOTHROW(tuple::unpack_dynamic(B({0x1d, 0x08, 0, 0, 0, 0, 0, 0, 0, 42})));
  CHECK_NOTHROW(tuple::unpack_dynamic(B({0x16, 0x00, 0x2a})));
}

TEST_CASE("Java TuplePackingTest malformed sequences are decode errors", "[tuple][malformed]") {
  constexpr int FF = 0xff;
  const std::string malformed[] = {
      B({0x01, 0xde, 0xad, 0xc0, 0xde}),
      B({0x01, 0xde, 0xad, 0x00, FF, 0xc0, 0xde}),
      B({0x02, 'h', 'e', 'l', 'l', 'o'}),
      B({0x02, 'h', 'e', 'l', 0x00, FF, 'l', 'o'}),
      B({0x02, 'u', 't', 'f', 0x08, 0x80, 0x00}),
      B({0x02, 'u', 't', 'f', 0x08, 0xc0, 0x01, 0x00}),
      B({0x02, 'u', 't', 'f', 0x10, 0xed, 0xa0, 0xbd, 0x00}),
      B({0x02, 'u', 't', 'f', 0x10, 0xed, 0xb4, 0xa5, 0x00}),
      B({0x02, 'u', 't', 'f', 0x10, 0xed, 0xa0, 0xbd, 0xed, 0xb4, 0xa5, 0x00}),
      B({0x05, 0x02, 'h', 'e', 'l', 'l', 'o', 0x00}),
      B({0x05, 0x02, 'h', 'e', 'l', 'l', 'o', 0x00, 0x00, FF, 0x02, 't', 'h', 'e', 'r', 'e', 0x00}),
      B({0x16, 0x01}),
      B({0x12, 0x01}),
      B({0x1d, 0x09, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}),
      B({0x0b, 0x09 ^ FF, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}),
      B({0x20, 0x01, 0x02, 0x03}),
      B({0x21, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07}),
      B({0x30, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e}),
      B({0x33, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b}),
      B({FF}),
  };
  for (std::size_t i = 0; i < std::size(malformed); ++i) {
    const std::string& m = malformed[i];
    INFO("input " << hex(m));
    CHECK_THROWS_AS(tuple::unpack_dynamic(m), decode_error);
    // skip_element() measures without decoding, so it does not validate UTF-8 (inputs 4..8).
    if (i < 4 || i > 8) {
      keyschema::tuple::reader r(m);
      CHECK_THROWS_AS(r.skip_element(), decode_error);
    }
  }
  // The same inputs through typed decoders.
  CHECK_THROWS_AS(tuple::unpack<bytes>(malformed[0]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<bytes>(malformed[1]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::string>(malformed[2]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::string>(malformed[3]), decode_error);
  for (int i = 4; i <= 8; ++i) CHECK_THROWS_AS(tuple::unpack<std::string>(malformed[i]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::tuple<std::string>>(malformed[9]), decode_error);
  CHECK_THROWS_AS((tuple::unpack<std::tuple<std::string, std::optional<std::string>, std::string>>(malformed[10])),
                  decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::int64_t>(malformed[11]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::int64_t>(malformed[12]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::uint64_t>(malformed[13]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<std::int64_t>(malformed[14]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<float>(malformed[15]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<double>(malformed[16]), decode_error);
  CHECK_THROWS_AS(tuple::unpack<uuid>(malformed[17]), decode_error);
}

TEST_CASE("decode errors name what was expected and the byte offset", "[tuple][malformed]") {
  using Catch::Matchers::Contains;
  using Catch::Matchers::Equals;
  // Unterminated and truncated elements point at the element's type code.
  CHECK_THAT(error_of([] { tuple::unpack<std::string, std::string>(tuple::pack("ab") + B({0x02, 'h', 'i'})); }),
             Equals("unterminated string at byte 4"));
  CHECK_THAT(error_of([] { tuple::unpack<std::string, std::int64_t>(tuple::pack("ab") + B({0x16, 0x01})); }),
             Contains("truncated integer") && Contains("at byte 4"));
  // Invalid UTF-8 points at the offending byte.
  CHECK_THAT(error_of([] { tuple::unpack<std::string>(B({0x02, 'u', 't', 'f', 0x08, 0x80, 0x00})); }),
             Equals("invalid UTF-8 in string at byte 5"));
  CHECK_THAT(error_of([] { tuple::unpack<std::string>(B({0x02, 'a', 0x00, 0xff, 'b', 0xed, 0xa0, 0xbd, 0x00})); }),
             Equals("invalid UTF-8 in string at byte 5"));
  // Wrong type for the requested C++ type.
  CHECK_THAT(error_of([] { tuple::unpack<std::int32_t>(tuple::pack("x")); }),
             Equals("expected integer, found type code 0x02 at byte 0"));
  CHECK_THAT(error_of([] { tuple::unpack<std::string, bool>(tuple::pack("x", 1)); }),
             Equals("expected bool, found type code 0x15 at byte 3"));
  CHECK_THAT(error_of([] { tuple::unpack<bytes>(tuple::pack("x")); }), Contains("expected byte string") && Contains("at byte 0"));
  CHECK_THAT(error_of([] { tuple::unpack<std::string>(tuple::pack(bytes(std::string("x")))); }),
             Contains("expected string") && Contains("at byte 0"));
  CHECK_THAT(error_of([] { tuple::unpack<std::string, std::string>(tuple::pack("x")); }),
             Equals("expected string, found end of input at byte 3"));
  // Overflow into a narrow type names the type and the element's offset.
  CHECK_THAT(error_of([] { tuple::unpack<std::int8_t>(tuple::pack(300)); }),
             Equals("integer overflow: value does not fit int8_t at byte 0"));
  CHECK_THAT(error_of([] { tuple::unpack<std::string, std::uint8_t>(tuple::pack("a", 256)); }),
             Equals("integer overflow: value does not fit uint8_t at byte 3"));
  CHECK_THAT(error_of([] { tuple::unpack<std::uint32_t>(tuple::pack(-1)); }),
             Equals("integer overflow: value does not fit uint32_t at byte 0"));
  CHECK_THAT(error_of([] { tuple::unpack<std::int8_t>(tuple::pack(-129)); }),
             Equals("integer overflow: value does not fit int8_t at byte 0"));
  CHECK_THAT(error_of([] { tuple::unpack<std::int64_t>(tuple::pack(std::numeric_limits<std::uint64_t>::max())); }),
             Equals("integer overflow: value does not fit int64_t at byte 0"));
  CHECK_THAT(error_of([] { tuple::unpack<std::uint64_t>(B({0x1d, 0x09, 0x01, 0, 0, 0, 0, 0, 0, 0, 0})); }),
             Equals("integer overflow: value does not fit uint64_t at byte 0"));
  // Trailing bytes.
  CHECK_THAT(error_of([] { tuple::unpack<std::int64_t>(tuple::pack(1, 2)); }), Equals("trailing bytes at byte 2"));
  // Unknown type codes.
  CHECK_THAT(error_of([] { tuple::unpack_dynamic(tuple::pack(1) + B({0xff})); }), Equals("unknown type code 0xff at byte 2"));
  CHECK_THAT(error_of([] { tuple::unpack_dynamic(B({0x25})); }), Equals("unknown type code 0x25 at byte 0"));
  // A nested tuple with an element too many.
  CHECK_THAT(error_of([] { tuple::unpack<std::tuple<std::int64_t>>(tuple::pack(std::tuple<int, int>(1, 2))); }),
             Contains("expected end of nested tuple") && Contains("at byte 3"));
  // The reader's base offset shifts every reported offset.
  CHECK_THAT(error_of([] {
               const std::string key = tuple::pack("x");
               keyschema::tuple::reader r(key, 10);
               keyschema::codec_traits<std::int64_t>::decode(r);
             }),
             Equals("expected integer, found type code 0x02 at byte 10"));
}

TEST_CASE("strict UTF-8: overlongs, surrogates, out of range and truncated sequences", "[tuple][malformed]") {
  const std::string bad[] = {
      B({0xc0, 0x80}),              // overlong NUL
      B({0xc1, 0xbf}),              // overlong
      B({0xe0, 0x80, 0x80}),        // overlong
      B({0xe0, 0x9f, 0xbf}),        // overlong
      B({0xf0, 0x80, 0x80, 0x80}),  // overlong
      B({0xf0, 0x8f, 0xbf, 0xbf}),  // overlong
      B({0xed, 0xa0, 0x80}),        // U+D800
      B({0xed, 0xbf, 0xbf}),        // U+DFFF
      B({0xf4, 0x90, 0x80, 0x80}),  // U+110000
      B({0xf5, 0x80, 0x80, 0x80}),  // > U+10FFFF
      B({0xff}),
      B({0x80}),                    // stray continuation
      B({0xe4, 0xb8}),              // truncated at the end
      B({0xe4, 0xb8, 'a'}),         // truncated by an ASCII byte
      B({'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 0xf0, 0x9f, 0x94}),  // truncated after the fast path
  };
  for (const auto& b : bad) {
    INFO("payload " << hex(b));
    const std::string encoded = B({0x02}) + b + B({0x00});
    CHECK_THROWS_AS(tuple::unpack<std::string>(encoded), decode_error);
    CHECK_THROWS_AS(tuple::unpack_dynamic(encoded), decode_error);
    // Encoding refuses the same bytes, so a key that cannot be read back is never written.
    CHECK_THROWS_AS(tuple::pack(b), keyschema::error);
    // The same payload is fine as a byte string.
    CHECK(std::get<0>(tuple::unpack<bytes>(tuple::pack(bytes(b)))).str() == b);
  }
  // A rejected encode leaves the output untouched.
  std::string out = tuple::pack(1);
  CHECK_THROWS_AS(tuple::pack_into(out, std::string("ok"), B({0xff})), keyschema::error);
  CHECK(out == tuple::pack(1, "ok"));
  // Boundary code points are accepted.
  for (const char* good : {"\u0080", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0010FFFF"}) {
    INFO("code point " << hex(good));
    CHECK(std::get<0>(tuple::unpack<std::string>(tuple::pack(good))) == good);
  }
}

TEST_CASE("unpack_dynamic renders keys as text and JSON", "[tuple][dynamic]") {
  const std::string key = tuple::pack("DESTINATION", "queue-1", "MESSAGE_METADATA", std::uint64_t{42});
  CHECK(tuple::to_string(tuple::unpack_dynamic(key)) == "(\"DESTINATION\", \"queue-1\", \"MESSAGE_METADATA\", 42)");
  CHECK(tuple::to_json(tuple::unpack_dynamic(key)) == "[\"DESTINATION\",\"queue-1\",\"MESSAGE_METADATA\",42]");

  const std::string mixed = tuple::pack(nullptr, bytes(B({0x00, 'a', 0xff})), std::string("q\"\\\n"), -7, true,
                                        std::tuple<std::nullptr_t, std::tuple<>>(nullptr, {}), 1.5, 0.25f,
                                        make_uuid(0x0011223344556677ull, 0x8899aabbccddeeffull), desc<std::string>("z"));
  CHECK(tuple::to_string(tuple::unpack_dynamic(mixed)) ==
        "(null, b\"\\x00a\\xff\", \"q\\\"\\\\\\n\", -7, true, (null, ()), 1.5, 0.25f, "
        "00112233-4455-6677-8899-aabbccddeeff, desc(\"z\"))");
  CHECK(tuple::to_json(tuple::unpack_dynamic(mixed)) ==
        "[null,{\"bytes\":\"0061ff\"},\"q\\\"\\\\\\n\",-7,true,[null,[]],1.5,0.25,"
        "{\"uuid\":\"00112233-4455-6677-8899-aabbccddeeff\"},{\"desc\":\"z\"}]");
  CHECK(tuple::to_json(tuple::unpack_dynamic(tuple::pack(std::numeric_limits<double>::quiet_NaN()))) ==
        "[{\"double\":\"nan\"}]");
  CHECK(tuple::to_string(tuple::unpack_dynamic(tuple::pack(2.0))) == "(2.0,)");
  CHECK(tuple::to_string(tuple::unpack_dynamic("")) == "()");
  // Versionstamps and other FoundationDB types the typed codec does not produce.
  const auto vs = tuple::unpack_dynamic(B({0x33, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x02, 0x91}));
  CHECK(tuple::to_string(vs) == "(versionstamp(0102030405060708090a0291),)");
  // A user type code other than 0x40 takes the rest of the input at top level only.
  const auto user = tuple::unpack_dynamic(tuple::pack(1) + B({0x41, 0x00, 0x01}));
  REQUIRE(user.size() == 2);
  CHECK(user[1].type == tuple::element::kind::user_type);
  CHECK(tuple::to_string(user) == "(1, user_type(0x41, b\"\\x00\\x01\"))");
  CHECK_THROWS_AS(tuple::unpack_dynamic(B({0x05, 0x41, 0x00, 0x00})), decode_error);
  // Element accessors.
  const auto ints = tuple::unpack_dynamic(tuple::pack(std::numeric_limits<std::int64_t>::min(), std::uint64_t{1} << 63));
  CHECK(ints[0].as_int64() == std::numeric_limits<std::int64_t>::min());
  CHECK_FALSE(ints[0].as_uint64().has_value());
  CHECK(ints[1].as_uint64() == (std::uint64_t{1} << 63));
  CHECK_FALSE(ints[1].as_int64().has_value());
}

TEST_CASE("nesting depth from untrusted bytes is bounded", "[tuple][malformed]") {
  std::string deep(100000, '\x05');
  deep += std::string(100000, '\x00');
  CHECK_THAT(error_of([&] { tuple::unpack_dynamic(deep); }), Catch::Matchers::Contains("nesting too deep"));
  keyschema::tuple::reader r(deep);
  CHECK_THROWS_AS(r.skip_element(), decode_error);
  std::string deep_desc(100000, '\x40');
  CHECK_THROWS_AS(tuple::unpack_dynamic(deep_desc), decode_error);
  // Moderate nesting is fine.
  const std::string ok = std::string(50, '\x05') + std::string(50, '\x00');
  CHECK(tuple::unpack_dynamic(ok).size() == 1);
}
