// Value codecs: raw strings and bytes, packed tuples and scalars, a user value codec, and
// decode errors for stored values that do not match.
#include <keyschema/tuple.hpp>
#include <keyschema/value_codec.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <tuple>

#include "tuple_test_util.hpp"

using keyschema::bytes;
using keyschema::decode_error;
using keyschema::value_traits;
using tuple_test::B;

namespace {
struct metadata {
  std::uint32_t size = 0;
  std::string type;
  friend bool operator==(const metadata&, const metadata&) = default;
};
}  // namespace

// A user value codec with its own framing: 4 bytes little-endian size, then the type text.
template <>
struct keyschema::value_codec<metadata> {
  static constexpr std::string_view name = "metadata.v1";
  static void encode(std::string& out, const metadata& m) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((m.size >> (8 * i)) & 0xff));
    out += m.type;
  }
  static metadata decode(std::string_view in) {
    if (in.size() < 4) throw keyschema::decode_error("metadata: truncated at byte " + std::to_string(in.size()));
    metadata m;
    for (int i = 0; i < 4; ++i) m.size |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
    m.type.assign(in.substr(4));
    return m;
  }
};

namespace {
template <class T>
T value_roundtrip(const T& v) {
  std::string out;
  value_traits<T>::encode(out, v);
  return value_traits<T>::decode(out);
}
}  // namespace

TEST_CASE("strings and bytes are stored raw, without framing or validation", "[tuple][value]") {
  const std::string binary = B({0x00, 0xff, 0x80, 'x'});
  std::string out;
  value_traits<std::string>::encode(out, binary);
  CHECK(out == binary);
  CHECK(value_traits<std::string>::decode(binary) == binary);
  out.clear();
  value_traits<bytes>::encode(out, bytes(binary));
  CHECK(out == binary);
  CHECK(value_roundtrip(bytes(binary)) == bytes(binary));
  CHECK(value_roundtrip(std::string()) == std::string());
  // Appends: encode never clears what is already there.
  out = "head";
  value_traits<std::string>::encode(out, "tail");
  CHECK(out == "headtail");
}

TEST_CASE("bytes::assign copies exactly when it grows, shrinks or empties, also from a view of itself",
          "[tuple][value][assign]") {
  // Shorter or equal data is moved into the storage held (memmove: the data may be part of it);
  // longer data goes through std::string::assign.
  const std::string long_text = B({'a', 0x00, 'b', 0xff}) + std::string(300, 'L');
  bytes b;
  b.assign(long_text);
  CHECK(b.view() == long_text);
  const std::size_t capacity = b.str().capacity();
  b.assign(B({0x00, 'x', 0x00}));  // shorter: the storage is kept
  CHECK(b.view() == B({0x00, 'x', 0x00}));
  CHECK(b.str().capacity() == capacity);
  b.assign(B({0x01, 0x02, 0x03}));  // equal length
  CHECK(b.view() == B({0x01, 0x02, 0x03}));
  b.assign(long_text + "more");  // longer
  CHECK(b.view() == long_text + "more");
  b.assign(b.view().substr(2, 5));  // a view of itself, not at its start
  CHECK(b.view() == (long_text + "more").substr(2, 5));
  b.assign(b.view());  // all of itself
  CHECK(b.view() == (long_text + "more").substr(2, 5));
  b.assign(std::string_view());
  CHECK(b.empty());
  b.assign("z");
  CHECK(b.view() == "z");

  // The same copy fills a std::string value decoded into a reused string.
  std::string s = long_text;
  value_traits<std::string>::decode_into(B({0x00, 0x7f}), s);
  CHECK(s == B({0x00, 0x7f}));
  value_traits<std::string>::decode_into(long_text, s);
  CHECK(s == long_text);
  value_traits<std::string>::decode_into("", s);
  CHECK(s.empty());
}

TEST_CASE("bytes::swap exchanges contents and storage with a string, copying nothing", "[tuple][value][assign]") {
  const std::string long_text = B({'a', 0x00, 'b'}) + std::string(300, 'L');
  bytes b(long_text);
  std::string s = B({0x00, 'x'});
  const char* const b_storage = b.data();
  b.swap(s);
  CHECK(b.view() == B({0x00, 'x'}));
  CHECK(s == long_text);
  CHECK(s.data() == b_storage);  // the storage moved, the bytes were not copied
  std::string empty;
  b.swap(empty);
  CHECK(b.empty());
  CHECK(empty == B({0x00, 'x'}));
}

TEST_CASE("tuples are packed flat and scalars as one element", "[tuple][value]") {
  using row = std::tuple<std::int64_t, std::string, std::optional<double>>;
  const row r(-5, "q", std::nullopt);
  std::string out;
  value_traits<row>::encode(out, r);
  CHECK(out == keyschema::tuple::pack(std::int64_t{-5}, "q", std::optional<double>()));
  CHECK(value_traits<row>::decode(out) == r);
  out.clear();
  value_traits<std::uint64_t>::encode(out, 300);
  CHECK(out == keyschema::tuple::pack(std::uint64_t{300}));
  CHECK(value_roundtrip(std::uint64_t{300}) == 300u);
  CHECK(value_roundtrip(keyschema::desc<std::int32_t>(-9)).value == -9);
  CHECK(value_roundtrip(metadata{1234, "text/plain"}) == metadata{1234, "text/plain"});
  CHECK(value_traits<metadata>::name() == "metadata.v1");
}

TEST_CASE("stored values that do not decode are decode errors", "[tuple][value]") {
  CHECK_THROWS_AS(value_traits<std::uint64_t>::decode(""), decode_error);
  CHECK_THROWS_AS(value_traits<std::uint64_t>::decode(keyschema::tuple::pack("x")), decode_error);
  CHECK_THROWS_WITH(value_traits<std::uint8_t>::decode(keyschema::tuple::pack(std::uint64_t{256})),
                    "integer overflow: value does not fit uint8_t at byte 0");
  CHECK_THROWS_WITH(value_traits<std::uint64_t>::decode(keyschema::tuple::pack(1, 2)), "trailing bytes at byte 2");
  CHECK_THROWS_AS((value_traits<std::tuple<std::int64_t, std::string>>::decode(keyschema::tuple::pack(1))), decode_error);
  CHECK_THROWS_AS(value_traits<metadata>::decode("ab"), decode_error);
}
