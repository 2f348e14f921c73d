// Round trips through the tuple codec: every built-in type at its edge values, alone, next to
// other elements, inside nested tuples, as optional and as desc<T>; enums, chrono types, a user
// mapped codec (a message_id strong type over std::uint64_t) and a user full codec.
#include <keyschema/tuple.hpp>

#include <catch2/catch.hpp>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tuple_test_util.hpp"

using keyschema::bytes;
using keyschema::decode_error;
using keyschema::desc;
using keyschema::uuid;
using tuple_test::B;
using tuple_test::hex;
namespace tuple = keyschema::tuple;

// --- user types -----------------------------------------------------------------------------

// A strong type for broker message ids, stored as its integer (mapped codec, no own name).
struct message_id {
  std::uint64_t value = 0;
  friend bool operator==(const message_id&, const message_id&) = default;
  friend auto operator<=>(const message_id&, const message_id&) = default;
};

template <>
struct keyschema::codec<message_id> {
  using repr = std::uint64_t;
  static std::uint64_t to_repr(const message_id& m) noexcept { return m.value; }
  static message_id from_repr(std::uint64_t v) noexcept { return message_id{v}; }
};

// A mapped codec with its own name whose from_repr validates.
struct even_number {
  std::uint32_t value = 0;
  friend bool operator==(const even_number&, const even_number&) = default;
};

template <>
struct keyschema::codec<even_number> {
  using repr = std::uint32_t;
  static constexpr std::string_view name = "even";
  static std::uint32_t to_repr(const even_number& e) noexcept { return e.value; }
  static even_number from_repr(std::uint32_t v) {
    if (v % 2 != 0) throw keyschema::decode_error("odd value for even_number");
    return even_number{v};
  }
};

// A full codec: a point stored as the nested tuple (x, y).
struct point {
  std::int32_t x = 0;
  std::int32_t y = 0;
  friend bool operator==(const point&, const point&) = default;
};

template <>
struct keyschema::codec<point> {
  using inner = std::tuple<std::int32_t, std::int32_t>;
  static constexpr std::string_view name = "point";
  static constexpr keyschema::type_code_set type_codes = keyschema::codec_traits<inner>::type_codes();
  static void encode(std::string& out, const point& p) { keyschema::codec_traits<inner>::encode(out, inner(p.x, p.y)); }
  static point decode(keyschema::tuple::reader& in) {
    const auto [x, y] = keyschema::codec_traits<inner>::decode(in);
    return point{x, y};
  }
};

enum class priority : std::uint8_t { low = 0, high = 200 };
enum class delta : std::int16_t { back = -300, none = 0, forward = 300 };
enum class letter : char { a = 'a', z = 'z' };
enum plain_enum { plain_a = -5, plain_b = 70000 };

namespace {

// Packs v alone, between neighbours, inside a nested tuple and as an optional; decodes each and
// checks equality, that skip_element() consumes exactly the element, and that the schema-less
// decoder accepts the bytes.
template <class T, class Eq>
void roundtrip_with(const T& v, Eq eq) {
  const std::string alone = tuple::pack(v);
  INFO("encoding " << hex(alone));
  CHECK(eq(std::get<0>(tuple::unpack<T>(alone)), v));

  const std::string prefix = tuple::pack("pre");
  const std::string framed = tuple::pack("pre", v, std::int64_t{-7});
  CHECK(framed == prefix + alone + tuple::pack(std::int64_t{-7}));
  const auto [a, b, c] = tuple::unpack<std::string, T, std::int64_t>(framed);
  CHECK(a == "pre");
  CHECK(eq(b, v));
  CHECK(c == -7);

  tuple::reader r(framed);
  r.skip_element();
  r.skip_element();
  CHECK(r.remaining() == tuple::pack(std::int64_t{-7}));

  const std::string nested = tuple::pack(std::tuple<T, std::string>(v, "post"));
  const auto [n] = tuple::unpack<std::tuple<T, std::string>>(nested);
  CHECK(eq(std::get<0>(n), v));
  CHECK(std::get<1>(n) == "post");

  if constexpr (!keyschema::codec_traits<T>::type_codes().contains(0x00)) {
    const auto [some, none] = tuple::unpack<std::optional<T>, std::optional<T>>(
        tuple::pack(std::optional<T>(v), std::optional<T>()));
    REQUIRE(some.has_value());
    CHECK(eq(*some, v));
    CHECK_FALSE(none.has_value());
  }

  const std::string descending = tuple::pack(desc<T>(v), std::int64_t{5});
  const auto [d, tail] = tuple::unpack<desc<T>, std::int64_t>(descending);
  CHECK(eq(d.value, v));
  CHECK(tail == 5);

  CHECK_NOTHROW(tuple::unpack_dynamic(framed));
  CHECK_NOTHROW(tuple::unpack_dynamic(nested));
  CHECK_NOTHROW(tuple::unpack_dynamic(descending));
}

template <class T>
void roundtrip(const T& v) {
  roundtrip_with(v, [](const T& x, const T& y) { return x == y; });
}

template <class T>
void integer_edges() {
  using L = std::numeric_limits<T>;
  std::vector<T> values = {L::min(), L::max(), T{0}, T{1}, static_cast<T>(L::max() - 1), static_cast<T>(L::min() + 1)};
  if constexpr (std::is_signed_v<T>) values.push_back(T{-1});
  for (unsigned bits = 1; bits < sizeof(T) * 8; ++bits) {  // every byte-length boundary
    const auto p = static_cast<T>(std::uint64_t{1} << (bits - (std::is_signed_v<T> ? 1 : 0)) % (sizeof(T) * 8));
    values.push_back(p);
    values.push_back(static_cast<T>(p - 1));
    if constexpr (std::is_signed_v<T>) {
      values.push_back(static_cast<T>(-p));
      values.push_back(static_cast<T>(-p + 1));
    }
  }
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 200; ++i) values.push_back(static_cast<T>(rng() >> (rng() % 64)));
  for (const T v : values) {
    INFO("value " << +v);
    const std::string k = tuple::pack(v);
    CHECK(std::get<0>(tuple::unpack<T>(k)) == v);
    // Any integer also decodes into int64/uint64 when it fits them.
    if constexpr (std::is_signed_v<T>) CHECK(std::get<0>(tuple::unpack<std::int64_t>(k)) == v);
    if constexpr (std::is_unsigned_v<T>) CHECK(std::get<0>(tuple::unpack<std::uint64_t>(k)) == v);
  }
  roundtrip(L::min());
  roundtrip(L::max());
  roundtrip(T{0});
}

uuid random_uuid(std::mt19937_64& rng) {
  uuid u;
  for (auto& b : u.bytes) b = static_cast<std::uint8_t>(rng());
  return u;
}

}  // namespace

TEST_CASE("integers of every width round trip at their edges", "[tuple][roundtrip]") {
  integer_edges<std::int8_t>();
  integer_edges<std::int16_t>();
  integer_edges<std::int32_t>();
  integer_edges<std::int64_t>();
  integer_edges<std::uint8_t>();
  integer_edges<std::uint16_t>();
  integer_edges<std::uint32_t>();
  integer_edges<std::uint64_t>();
  integer_edges<long long>();
  integer_edges<unsigned long>();
}

TEST_CASE("the shortest integer form is used", "[tuple][roundtrip]") {
  CHECK(tuple::pack(std::uint64_t{0}).size() == 1);
  CHECK(tuple::pack(std::uint64_t{255}).size() == 2);
  CHECK(tuple::pack(std::uint64_t{256}).size() == 3);
  CHECK(tuple::pack(std::int64_t{-255}).size() == 2);
  CHECK(tuple::pack(std::int64_t{-256}).size() == 3);
  CHECK(tuple::pack(std::numeric_limits<std::uint64_t>::max()).size() == 9);
  // The same value packs identically whatever its C++ type.
  CHECK(tuple::pack(std::int8_t{42}) == tuple::pack(std::uint64_t{42}));
  CHECK(tuple::pack(std::int16_t{-2}) == tuple::pack(std::int64_t{-2}));
}

TEST_CASE("floating point round trips bit for bit", "[tuple][roundtrip]") {
  auto same_bits_f = [](float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); };
  auto same_bits_d = [](double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); };
  using F = std::numeric_limits<float>;
  using D = std::numeric_limits<double>;
  for (float f : {0.0f, -0.0f, 1.0f, -1.0f, F::min(), -F::min(), F::max(), F::lowest(), F::epsilon(), F::denorm_min(),
                  -F::denorm_min(), F::infinity(), -F::infinity(), F::quiet_NaN(), -F::quiet_NaN(), F::signaling_NaN(),
                  std::bit_cast<float>(0x7fc01234u), std::bit_cast<float>(0xffffffffu)}) {
    roundtrip_with(f, same_bits_f);
  }
  for (double d : {0.0, -0.0, 1.0, -1.0, D::min(), -D::min(), D::max(), D::lowest(), D::epsilon(), D::denorm_min(),
                   -D::denorm_min(), D::infinity(), -D::infinity(), D::quiet_NaN(), -D::quiet_NaN(), D::signaling_NaN(),
                   std::bit_cast<double>(0x7ff8000000abcdefull), std::bit_cast<double>(0xffffffffffffffffull)}) {
    roundtrip_with(d, same_bits_d);
  }
}

TEST_CASE("strings, bytes, bool, null and uuid round trip", "[tuple][roundtrip]") {
  for (const std::string& s : {std::string(), std::string("a"), std::string(1, '\0'), std::string(5, '\0'),
                               std::string("a\0b\0", 4), std::string("\0\xc3\xa9\0", 4), std::string("\x7f"),
                               std::string("\xf4\x8f\xbf\xbf"), std::string("queue-\xe4\xb8\xad"), std::string(300, 'x'),
                               std::string(70, '\0')}) {
    roundtrip(s);
  }
  for (const std::string& raw : {std::string(), B({0x00}), B({0xff}), B({0x00, 0xff}), B({0xff, 0x00}), B({0x00, 0x00, 0xff, 0xff}),
                                 B({0x80, 0xc0, 0xed, 0xa0, 0x80}), std::string(100, '\xff'), std::string(100, '\0')}) {
    roundtrip(bytes(raw));
  }
  roundtrip(true);
  roundtrip(false);
  std::mt19937_64 rng(99);
  roundtrip(uuid{});
  for (int i = 0; i < 20; ++i) roundtrip(random_uuid(rng));

  // nullptr: alone, and as a nested null.
  CHECK(std::get<0>(tuple::unpack<std::nullptr_t>(tuple::pack(nullptr))) == nullptr);
  const auto [n] = tuple::unpack<std::tuple<std::nullptr_t, std::nullptr_t>>(
      tuple::pack(std::tuple<std::nullptr_t, std::nullptr_t>(nullptr, nullptr)));
  CHECK(std::get<0>(n) == nullptr);

  // A long string through desc takes the heap path, also with a long tail after it.
  const std::string long_text(500, 'q');
  const auto [d, tail] = tuple::unpack<desc<std::string>, std::string>(tuple::pack(desc<std::string>(long_text), long_text));
  CHECK(d.value == long_text);
  CHECK(tail == long_text);
}

TEST_CASE("optional, nested tuples and desc round trip", "[tuple][roundtrip]") {
  roundtrip(std::optional<std::string>(""));  // an empty string is not null
  CHECK(tuple::pack(std::optional<std::string>("")) != tuple::pack(std::optional<std::string>()));
  roundtrip(std::optional<std::uint64_t>(0));
  roundtrip(std::tuple<>());
  roundtrip(std::tuple<std::tuple<>>());
  roundtrip(std::tuple<std::nullptr_t, std::string, std::optional<std::int32_t>>(nullptr, std::string("a\0", 2), std::nullopt));
  roundtrip(std::tuple<std::tuple<std::string, std::optional<bytes>>, std::int64_t>({"in", bytes(B({0x00}))}, -1));
  roundtrip(std::tuple<std::tuple<std::tuple<std::optional<std::string>>>>({{std::nullopt}}));
  roundtrip(desc<std::uint64_t>(7));
  roundtrip(desc<std::optional<std::string>>(std::nullopt));
  roundtrip(desc<std::tuple<std::string, std::optional<std::int32_t>>>({"x", std::nullopt}));
  roundtrip(desc<desc<std::string>>(desc<std::string>("twice")));
  roundtrip(std::tuple<desc<std::string>, std::optional<desc<std::int64_t>>>({"n"}, desc<std::int64_t>(-3)));
}

TEST_CASE("enums and chrono types round trip as integers", "[tuple][roundtrip]") {
  roundtrip(priority::low);
  roundtrip(priority::high);
  roundtrip(delta::back);
  roundtrip(delta::forward);
  roundtrip(letter::z);
  roundtrip(plain_a);
  roundtrip(plain_b);
  CHECK(tuple::pack(priority::high) == tuple::pack(std::uint8_t{200}));
  CHECK(tuple::pack(delta::back) == tuple::pack(-300));
  // Every value of the underlying type decodes (no range check).
  CHECK(std::get<0>(tuple::unpack<priority>(tuple::pack(7))) == static_cast<priority>(7));

  using namespace std::chrono;
  roundtrip(milliseconds(1234));
  roundtrip(nanoseconds(std::numeric_limits<std::int64_t>::min()));
  roundtrip(duration<std::int32_t, std::ratio<60>>(-5));
  roundtrip(duration<std::uint16_t>(65535));
  roundtrip(sys_seconds(seconds(1700000000)));
  roundtrip(time_point_cast<microseconds>(system_clock::time_point(microseconds(1700000000123456))));
  CHECK(tuple::pack(milliseconds(5)) == tuple::pack(std::int64_t{5}));
  CHECK(tuple::pack(sys_seconds(seconds(9))) == tuple::pack(std::int64_t{9}));
}

TEST_CASE("user codecs: mapped strong type and full codec", "[tuple][roundtrip]") {
  roundtrip(message_id{0});
  roundtrip(message_id{42});
  roundtrip(message_id{std::numeric_limits<std::uint64_t>::max()});
  CHECK(tuple::pack(message_id{42}) == tuple::pack(std::uint64_t{42}));
  CHECK(keyschema::codec_traits<message_id>::name() == "u64");
  CHECK(keyschema::codec_traits<message_id>::type_codes() == keyschema::codec_traits<std::uint64_t>::type_codes());

  roundtrip(even_number{4});
  CHECK(keyschema::codec_traits<even_number>::name() == "even");
  CHECK_THROWS_WITH(tuple::unpack<even_number>(tuple::pack(std::uint32_t{5})), "odd value for even_number");
  CHECK_THROWS_AS(tuple::unpack<even_number>(tuple::pack(std::uint64_t{1} << 40)), decode_error);  // overflow of repr

  roundtrip(point{1, -2});
  roundtrip(point{std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()});
  CHECK(tuple::pack(point{1, -2}) == tuple::pack(std::tuple<std::int32_t, std::int32_t>(1, -2)));
  roundtrip(std::tuple<point, message_id, std::optional<point>>({3, 4}, {5}, std::nullopt));
  roundtrip(desc<point>(point{9, 9}));
  roundtrip(desc<message_id>(message_id{77}));
}

TEST_CASE("pack_into appends and unpack_prefix reads the first element", "[tuple][roundtrip]") {
  std::string out = "prefix";
  tuple::pack_into(out, "a", std::uint64_t{1});
  CHECK(out == "prefix" + tuple::pack("a", std::uint64_t{1}));
  tuple::pack_into(out);
  CHECK(out == "prefix" + tuple::pack("a", std::uint64_t{1}));
  const auto [first, used] = tuple::unpack_prefix<std::string>(tuple::pack("abc", 5));
  CHECK(first == "abc");
  CHECK(used == 5);
}

// Counts its live objects and its copies and moves. unpack builds each element from its
// decoder's result (detail/codec/decode_in_place.hpp): no copy or move, and no element left
// behind or destroyed twice when a decoder throws. DefaultConstructible = false takes the path
// that moves (std::tuple's own constructor).
template <bool DefaultConstructible>
struct tracked {
  static inline int live = 0;
  static inline int moves = 0;
  std::uint64_t value = 0;
  tracked() noexcept
    requires DefaultConstructible
  {
    ++live;
  }
  explicit tracked(std::uint64_t v) noexcept : value(v) { ++live; }
  tracked(const tracked& o) noexcept : value(o.value) { ++live, ++moves; }
  tracked(tracked&& o) noexcept : value(o.value) { ++live, ++moves; }
  tracked& operator=(const tracked&) = default;
  tracked& operator=(tracked&&) = default;
  ~tracked() { --live; }
  static void reset() { live = moves = 0; }
};

template <bool D>
struct keyschema::codec<tracked<D>> {
  using repr = std::uint64_t;
  static std::uint64_t to_repr(const tracked<D>& t) noexcept { return t.value; }
  static tracked<D> from_repr(std::uint64_t v) {
    if (v == 13) throw keyschema::decode_error("13 is refused");
    return tracked<D>(v);
  }
};

// The same unpack calls over T = tracked<true> (built in place: no move) and tracked<false>
// (moved): the values, and no object left behind when a decoder throws.
template <class T>
void check_unpack_of() {
  constexpr bool in_place = keyschema::detail::decodable_in_place<T>;
  const std::string key = tuple::pack(std::uint64_t{7}, "queue", std::uint64_t{9});
  T::reset();
  {
    const auto [a, name, b] = tuple::unpack<T, std::string, T>(key);
    CHECK(a.value == 7);
    CHECK(name == "queue");
    CHECK(b.value == 9);
    CHECK(T::live == 2);
    const auto [first, used] = tuple::unpack_prefix<T>(key);
    CHECK(first.value == 7);
    CHECK(used == 2);
    const auto nested = tuple::unpack<std::tuple<T, std::string>>(tuple::pack(std::tuple<std::uint64_t, std::string>(5, "n")));
    CHECK(std::get<0>(std::get<0>(nested)).value == 5);
    CHECK(std::get<1>(std::get<0>(nested)) == "n");
    if constexpr (in_place) CHECK(T::moves == 0);
  }
  CHECK(T::live == 0);
  // A decoder that throws: elements before it, after it (never decoded), and inside a nested tuple.
  CHECK_THROWS_WITH((tuple::unpack<T, T, T>(tuple::pack(1, 13, 3))), "13 is refused");
  CHECK_THROWS_WITH((tuple::unpack<std::string, std::tuple<T, T>>(tuple::pack("a", std::tuple<int, int>(2, 13)))),
                    "13 is refused");
  CHECK_THROWS_WITH(tuple::unpack_prefix<T>(tuple::pack(13)), "13 is refused");
  CHECK_THROWS_AS((tuple::unpack<T, T>(tuple::pack(1, 2, 3))), decode_error);  // trailing bytes
  CHECK(T::live == 0);
}

TEST_CASE("unpack builds its elements in place, in order, and leaves nothing behind when one fails", "[tuple][roundtrip]") {
  STATIC_REQUIRE(keyschema::detail::decodable_in_place<tracked<true>>);
  STATIC_REQUIRE_FALSE(keyschema::detail::decodable_in_place<tracked<false>>);
  check_unpack_of<tracked<true>>();
  check_unpack_of<tracked<false>>();
}

TEST_CASE("unpack rejects too few elements", "[tuple][roundtrip]") {
  CHECK_THROWS_AS((tuple::unpack<std::string, std::int64_t>(tuple::pack("a"))), decode_error);
  CHECK_THROWS_AS((tuple::unpack<std::tuple<std::string, std::int64_t>>(tuple::pack(std::tuple<std::string>("a")))),
                  decode_error);
  CHECK_THROWS_AS((tuple::unpack<std::int64_t>("")), decode_error);
  CHECK(tuple::unpack<>("") == std::tuple<>());
}

TEST_CASE("strings of every short length with a special byte at every position", "[tuple][roundtrip]") {
  // Exercises the word-at-a-time scanners at every alignment: a NUL (escaped), a 2-byte
  // character (validated), an invalid byte (rejected with its offset).
  for (std::size_t len = 1; len <= 40; ++len) {
    for (std::size_t pos = 0; pos < len; ++pos) {
      INFO("length " << len << " position " << pos);
      std::string with_nul(len, 'a');
      with_nul[pos] = '\0';
      std::string escaped = B({0x02});
      for (char c : with_nul) {
        escaped += c;
        if (c == '\0') escaped += '\xff';
      }
      escaped += '\0';
      CHECK(hex(tuple::pack(with_nul)) == hex(escaped));
      CHECK(std::get<0>(tuple::unpack<std::string>(escaped)) == with_nul);
      CHECK(std::get<0>(tuple::unpack<std::string, std::int64_t>(escaped + tuple::pack(1))) == with_nul);
      // The same bytes as a byte string: the escaped NUL is not its end, before more elements or not.
      const bytes with_nul_bytes(with_nul);
      CHECK(std::get<0>(tuple::unpack<bytes>(tuple::pack(with_nul_bytes))) == with_nul_bytes);
      CHECK(std::get<0>(tuple::unpack<bytes, std::int64_t>(tuple::pack(with_nul_bytes, 1))) == with_nul_bytes);

      std::string accented(len, 'a');
      accented.replace(pos, 1, "\xc3\xa9");
      CHECK(tuple::pack(accented) == B({0x02}) + accented + B({0x00}));
      CHECK(std::get<0>(tuple::unpack<std::string>(tuple::pack(accented))) == accented);

      std::string invalid(len, 'a');
      invalid[pos] = '\x80';
      CHECK_THROWS_AS(tuple::pack(invalid), keyschema::error);
      const std::string raw = B({0x02}) + invalid + B({0x00});
      CHECK_THROWS_WITH(tuple::unpack<std::string>(raw), "invalid UTF-8 in string at byte " + std::to_string(pos + 1));
      CHECK(std::get<0>(tuple::unpack<bytes>(tuple::pack(bytes(invalid)))).str() == invalid);
    }
  }
}

TEST_CASE("integers of every byte length at the end of the input and before more bytes", "[tuple][roundtrip]") {
  for (unsigned n = 0; n <= 8; ++n) {
    std::uint64_t v = n == 0 ? 0 : 0x8f;  // top byte 0x8f, then 01 02 ...: exactly n bytes
    for (unsigned k = 1; k < n; ++k) v = (v << 8) | k;
    INFO("bytes " << n << " value " << v);
    const std::string k = tuple::pack(v);
    CHECK(k.size() == n + 1);
    CHECK(std::get<0>(tuple::unpack<std::uint64_t>(k)) == v);
    CHECK(std::get<1>(tuple::unpack<std::string, std::uint64_t>(tuple::pack("", v))) == v);
    CHECK(std::get<0>(tuple::unpack<std::uint64_t, std::string>(tuple::pack(v, std::string(20, 'z')))) == v);
    if (n >= 1) {
      // A value of n - 1 bytes behind a zero byte: not the shortest form, refused wherever the
      // element stands (alone, after other bytes, before other bytes).
      std::string padded = B({0x14 + static_cast<int>(n), 0x00});
      for (unsigned b = 1; b < n; ++b) padded += static_cast<char>(b);
      CHECK_THROWS_WITH(tuple::unpack<std::uint64_t>(padded), Catch::Contains("non-canonical integer"));
      CHECK_THROWS_WITH((tuple::unpack<std::string, std::uint64_t>(tuple::pack("") + padded)),
                        Catch::Contains("non-canonical integer"));
      CHECK_THROWS_WITH((tuple::unpack<std::uint64_t, std::string>(padded + tuple::pack(std::string(20, 'z')))),
                        Catch::Contains("non-canonical integer"));
    }
    if (n <= 7) {
      const auto neg = -static_cast<std::int64_t>(v);
      CHECK(std::get<0>(tuple::unpack<std::int64_t>(tuple::pack(neg))) == neg);
      CHECK(std::get<0>(tuple::unpack<std::int64_t, bool>(tuple::pack(neg, true))) == neg);
    }
  }
}

// pack_into writes integers and plain ASCII text through a stack buffer
// (detail/codec/direct_write.hpp); every other element, and text with a NUL or a byte above 0x7f,
// through codec_traits<T>::encode. Both must give the same bytes.
namespace {
template <class... Ts>
std::string element_by_element(const Ts&... vs) {
  std::string out;
  (keyschema::codec_traits<Ts>::encode(out, vs), ...);
  return out;
}
}  // namespace

TEST_CASE("pack's buffered path writes the bytes of the element-by-element path", "[tuple][roundtrip]") {
  using i64 = std::numeric_limits<std::int64_t>;
  using u64 = std::numeric_limits<std::uint64_t>;
  const std::vector<std::int64_t> signed_values{0, 1, -1, 255, 256, -255, -256, 65535, -65536, i64::max(), i64::min(),
                                                i64::min() + 1, 1'000'000'000'007};
  for (const std::int64_t v : signed_values) {
    INFO("value " << v);
    CHECK(hex(tuple::pack(v)) == hex(element_by_element(v)));
    CHECK(hex(tuple::pack("DESTINATION", std::string("q"), v)) == hex(element_by_element("DESTINATION", std::string("q"), v)));
    CHECK(hex(tuple::pack(static_cast<std::int8_t>(v), static_cast<std::int16_t>(v), static_cast<std::int32_t>(v))) ==
          hex(element_by_element(static_cast<std::int8_t>(v), static_cast<std::int16_t>(v), static_cast<std::int32_t>(v))));
  }
  for (const std::uint64_t v : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{0x80}, std::uint64_t{1} << 63, u64::max()}) {
    INFO("value " << v);
    CHECK(hex(tuple::pack(v, static_cast<std::uint8_t>(v))) == hex(element_by_element(v, static_cast<std::uint8_t>(v))));
  }
  // Text: plain ASCII (buffered), with a NUL (escaped), non-ASCII UTF-8 (validated): same bytes.
  for (const std::string& s : {std::string(), std::string("queue-7"), std::string("a\0b", 3), std::string("\xc3\xa9t\xc3\xa9"),
                              std::string(300, 'x')}) {
    INFO("text of " << s.size() << " bytes");
    CHECK(hex(tuple::pack(s, std::string_view(s), 7)) == hex(element_by_element(s, std::string_view(s), 7)));
  }
  // Char arrays: a literal's terminator is not text; an array without one is all text; an
  // embedded NUL ends the text (as codec<char[N]> says).
  const char no_terminator[3] = {'a', 'b', 'c'};
  const char embedded[6] = {'a', 'b', '\0', 'c', 'd', '\0'};
  CHECK(hex(tuple::pack("MESSAGE_METADATA", no_terminator, embedded)) ==
        hex(element_by_element("MESSAGE_METADATA", no_terminator, embedded)));
  CHECK(hex(tuple::pack(no_terminator)) == "02 61 62 63 00");
  CHECK(hex(tuple::pack(embedded)) == "02 61 62 00");
  // Bounds past the buffer (256 bytes) take the element-by-element path whole.
  const std::string long_text(250, 'y');
  CHECK(hex(tuple::pack(long_text, std::uint64_t{42})) == hex(element_by_element(long_text, std::uint64_t{42})));
  // A non-direct element among them (a double) sends the whole tuple down the general path.
  CHECK(hex(tuple::pack("A", 1.5, std::uint64_t{9})) == hex(element_by_element("A", 1.5, std::uint64_t{9})));
  // Invalid UTF-8 is refused on either path, and pack_into leaves what it appended before alone.
  std::string out = "kept";
  CHECK_THROWS_AS(tuple::pack_into(out, "A", std::string("\xff")), keyschema::error);
  CHECK(out.substr(0, 4) == "kept");
  // pack_into appends.
  out = "x";
  tuple::pack_into(out, "A", std::uint64_t{1});
  CHECK(hex(out) == "78 " + hex(tuple::pack("A", std::uint64_t{1})));
}
