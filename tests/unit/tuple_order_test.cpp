// Order preservation, the property keys exist for: for random pairs (and edge values) of every
// type, a < b exactly when pack(a) < pack(b) as unsigned bytes, equal values pack equal, and
// desc<T> reverses the order. Also checked with a following element, so that no encoding is
// disturbed by what comes after it in a key. Deterministic: the seed is printed and can be set
// with KEYSCHEMA_TEST_SEED.
#include <keyschema/tuple.hpp>

#include <catch2/catch.hpp>

#include <bit>
#include <compare>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tuple_test_util.hpp"

using keyschema::bytes;
using keyschema::desc;
using keyschema::uuid;
using tuple_test::compare_bytes;
using tuple_test::hex;
namespace tuple = keyschema::tuple;

namespace {

constexpr int kPairs = 100000;

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s = 20241129;
    if (const char* env = std::getenv("KEYSCHEMA_TEST_SEED")) s = std::strtoull(env, nullptr, 0);
    std::printf("tuple_order_test: seed %llu (set KEYSCHEMA_TEST_SEED to change)\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

int sign(int v) { return (v > 0) - (v < 0); }
int sign(std::strong_ordering o) { return o < 0 ? -1 : (o > 0 ? 1 : 0); }

// Checks the order property for `pairs` pairs drawn from gen; cmp(a, b) returns the expected
// order (<0, 0, >0). Counts mismatches and reports the first, so a failure is readable and the
// loop stays fast.
template <class T, class Gen, class Cmp>
void check_order(const char* what, Gen gen, Cmp cmp, int pairs = kPairs) {
  std::mt19937_64 rng(test_seed() ^ std::hash<std::string>{}(what));
  int mismatches = 0;
  std::string first;
  auto report = [&](const char* form, const T&, const T&, const std::string& ka, const std::string& kb, int want, int got) {
    if (mismatches++ == 0)
      first = std::string(form) + ": " + hex(ka) + " vs " + hex(kb) + " expected " + std::to_string(want) + " got " +
              std::to_string(got);
  };
  for (int i = 0; i < pairs; ++i) {
    const T a = gen(rng);
    const T b = (i % 8 == 0) ? a : gen(rng);  // equal pairs too
    const int want = sign(cmp(a, b));

    const std::string ka = tuple::pack(a);
    const std::string kb = tuple::pack(b);
    if (int got = sign(compare_bytes(ka, kb)); got != want) report("plain", a, b, ka, kb, want, got);

    const std::string da = tuple::pack(desc<T>(a));
    const std::string db = tuple::pack(desc<T>(b));
    if (int got = sign(compare_bytes(da, db)); got != -want) report("desc", a, b, da, db, -want, got);

    if (i % 4 == 0) {  // with a following element: a null, a string or an integer
      const auto x = static_cast<std::int64_t>(rng() % 3) - 1;
      const auto y = static_cast<std::int64_t>(rng() % 3) - 1;
      auto follow = [](std::string& out, std::int64_t v) {
        if (v < 0)
          tuple::pack_into(out, nullptr);
        else if (v == 0)
          tuple::pack_into(out, "");
        else
          tuple::pack_into(out, std::uint64_t{0});
      };
      const int tie = sign(x < y ? -1 : (x > y ? 1 : 0));
      std::string sa = ka, sb = kb;
      follow(sa, x);
      follow(sb, y);
      const int want_s = want != 0 ? want : tie;
      if (int got = sign(compare_bytes(sa, sb)); got != want_s) report("plain+next", a, b, sa, sb, want_s, got);
      std::string ta = da, tb = db;
      follow(ta, x);
      follow(tb, y);
      const int want_t = want != 0 ? -want : tie;
      if (int got = sign(compare_bytes(ta, tb)); got != want_t) report("desc+next", a, b, ta, tb, want_t, got);
      // Inside a nested tuple, followed by the tuple's end or by another element.
      const std::string na = tuple::pack(std::tuple<T>(a)), nb = tuple::pack(std::tuple<T, std::nullptr_t>(b, nullptr));
      const int want_n = want != 0 ? want : -1;
      if (int got = sign(compare_bytes(na, nb)); got != want_n) report("nested", a, b, na, nb, want_n, got);
      const std::string ma = tuple::pack(std::tuple<desc<T>>(a)), mb = tuple::pack(std::tuple<desc<T>, std::nullptr_t>(b, nullptr));
      const int want_m = want != 0 ? -want : -1;
      if (int got = sign(compare_bytes(ma, mb)); got != want_m) report("nested desc", a, b, ma, mb, want_m, got);
    }
  }
  INFO(what << " seed " << test_seed() << ": " << mismatches << " mismatches; first: " << first);
  CHECK(mismatches == 0);
}

template <class T>
T random_integer(std::mt19937_64& rng) {
  using L = std::numeric_limits<T>;
  switch (rng() % 8) {
    case 0: return L::min();
    case 1: return L::max();
    case 2: return static_cast<T>(static_cast<int>(rng() % 5) - 2);
    default: {
      const std::uint64_t r = rng() >> (rng() % 64);  // every byte length is likely
      return static_cast<T>((rng() & 1) && std::is_signed_v<T> ? ~r : r);
    }
  }
}

template <class T>
void check_integer(const char* what) {
  check_order<T>(what, [](std::mt19937_64& rng) { return random_integer<T>(rng); },
                 [](T a, T b) { return a < b ? -1 : (a > b ? 1 : 0); });
}

template <class F, class Bits>
F random_float(std::mt19937_64& rng) {
  using L = std::numeric_limits<F>;
  const F edges[] = {F(0), -F(0), L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN(), L::denorm_min(),
                     -L::denorm_min(), L::min(), -L::min(), L::max(), L::lowest(), F(1), F(-1)};
  switch (rng() % 4) {
    case 0: return edges[rng() % std::size(edges)];
    case 1: return static_cast<F>(static_cast<double>(static_cast<std::int64_t>(rng() % 2001) - 1000) / 8);
    default: return std::bit_cast<F>(static_cast<Bits>(rng()));  // any bits, NaN payloads included
  }
}

// UTF-8 text from an alphabet with NULs, ASCII and 2..4-byte characters (UTF-8 byte order is
// code point order).
std::string random_text(std::mt19937_64& rng) {
  static const char* const alphabet[] = {"",          "a",          "b",          "\x7f",         "\xc3\xa9",
                                         "\xe4\xb8\xad", "\xef\xbf\xbf", "\xf0\x9f\x94\xa5", "\xf4\x8f\xbf\xbf", "z"};
  std::string s;
  const std::size_t n = rng() % 6;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = rng() % std::size(alphabet);
    if (k == 0)
      s.push_back('\0');
    else
      s += alphabet[k];
  }
  return s;
}

std::string random_raw(std::mt19937_64& rng) {
  static const unsigned char alphabet[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};
  std::string s;
  const std::size_t n = rng() % 6;
  for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(rng() % 3 == 0 ? rng() : alphabet[rng() % std::size(alphabet)]));
  return s;
}

int cmp_text(const std::string& a, const std::string& b) { return compare_bytes(a, b); }

template <class T>
int cmp_opt(const std::optional<T>& a, const std::optional<T>& b, int (*inner)(const T&, const T&)) {
  if (!a || !b) return (a ? 1 : 0) - (b ? 1 : 0);
  return inner(*a, *b);
}

int cmp_i32(const std::int32_t& a, const std::int32_t& b) { return a < b ? -1 : (a > b ? 1 : 0); }

}  // namespace

TEST_CASE("integers: a < b <=> pack(a) < pack(b)", "[tuple][order]") {
  check_integer<std::int8_t>("i8");
  check_integer<std::int16_t>("i16");
  check_integer<std::int32_t>("i32");
  check_integer<std::int64_t>("i64");
  check_integer<std::uint8_t>("u8");
  check_integer<std::uint16_t>("u16");
  check_integer<std::uint32_t>("u32");
  check_integer<std::uint64_t>("u64");
}

TEST_CASE("floating point follows IEEE total order (NaNs by sign and payload)", "[tuple][order]") {
  check_order<float>("float", [](std::mt19937_64& rng) { return random_float<float, std::uint32_t>(rng); },
                     [](float a, float b) { return sign(std::strong_order(a, b)); });
  check_order<double>("double", [](std::mt19937_64& rng) { return random_float<double, std::uint64_t>(rng); },
                      [](double a, double b) { return sign(std::strong_order(a, b)); });
  // Spot checks of the placement the spec describes.
  using L = std::numeric_limits<double>;
  const double ascending[] = {-L::quiet_NaN(), -L::infinity(), -L::max(), -1.0, -L::denorm_min(), -0.0,
                              0.0,             L::denorm_min(), 1.0,       L::max(), L::infinity(), L::quiet_NaN()};
  for (std::size_t i = 1; i < std::size(ascending); ++i) {
    INFO("index " << i);
    CHECK(compare_bytes(tuple::pack(ascending[i - 1]), tuple::pack(ascending[i])) < 0);
  }
}

TEST_CASE("text, bytes, bool and uuid order", "[tuple][order]") {
  check_order<std::string>("string", random_text, cmp_text);
  check_order<bytes>("bytes", [](std::mt19937_64& rng) { return bytes(random_raw(rng)); },
                     [](const bytes& a, const bytes& b) { return sign(a <=> b); });
  check_order<bool>("bool", [](std::mt19937_64& rng) { return (rng() & 1) != 0; },
                    [](bool a, bool b) { return int(a) - int(b); }, 1000);
  check_order<uuid>("uuid",
                    [](std::mt19937_64& rng) {
                      uuid u;
                      for (auto& b : u.bytes) b = static_cast<std::uint8_t>(rng() % 3 == 0 ? rng() : (rng() % 2) * 0xff);
                      return u;
                    },
                    [](const uuid& a, const uuid& b) { return sign(a <=> b); });
  // Edge values: the empty string first, embedded NULs and 0xff bytes.
  CHECK(compare_bytes(tuple::pack(""), tuple::pack(std::string(1, '\0'))) < 0);
  CHECK(compare_bytes(tuple::pack(std::string(1, '\0')), tuple::pack(std::string(2, '\0'))) < 0);
  CHECK(compare_bytes(tuple::pack(std::string(2, '\0')), tuple::pack("\x01")) < 0);
  CHECK(compare_bytes(tuple::pack(bytes(std::string("\xfe\xff"))), tuple::pack(bytes(std::string("\xff")))) < 0);
  CHECK(compare_bytes(tuple::pack(desc<std::string>("a"), nullptr), tuple::pack(desc<std::string>(std::string("a\0", 2)))) > 0);
}

TEST_CASE("optional, nested tuples and mixed keys order element by element", "[tuple][order]") {
  check_order<std::optional<std::int64_t>>(
      "optional<i64>",
      [](std::mt19937_64& rng) { return rng() % 5 == 0 ? std::optional<std::int64_t>() : random_integer<std::int64_t>(rng); },
      [](const std::optional<std::int64_t>& a, const std::optional<std::int64_t>& b) {
        if (!a || !b) return (a ? 1 : 0) - (b ? 1 : 0);
        return *a < *b ? -1 : (*a > *b ? 1 : 0);
      });

  using nested = std::tuple<std::string, std::optional<std::int32_t>, std::tuple<std::optional<std::string>>>;
  check_order<nested>(
      "tuple<string,optional<i32>,tuple<optional<string>>>",
      [](std::mt19937_64& rng) {
        std::optional<std::int32_t> o;
        if (rng() % 3 != 0) o = static_cast<std::int32_t>(static_cast<int>(rng() % 5) - 2);
        std::optional<std::string> s;
        if (rng() % 3 != 0) s = random_text(rng);
        return nested(random_text(rng), o, std::tuple<std::optional<std::string>>(s));
      },
      [](const nested& a, const nested& b) {
        if (int c = cmp_text(std::get<0>(a), std::get<0>(b))) return c;
        if (int c = cmp_opt<std::int32_t>(std::get<1>(a), std::get<1>(b), cmp_i32)) return c;
        return cmp_opt<std::string>(std::get<0>(std::get<2>(a)), std::get<0>(std::get<2>(b)), cmp_text);
      });

  // Mixed flat keys: ("DESTINATION" | "MESSAGE", queue, id, desc<time>) with many ties.
  using key = std::tuple<std::string, std::string, std::uint64_t, desc<std::int64_t>>;
  std::mt19937_64 rng(test_seed() + 7);
  auto gen = [&] {
    static const char* const tags[] = {"DESTINATION", "MESSAGE", "DESTINATION.MESSAGE_COUNT"};
    static const char* const queues[] = {"", "q", "q-1", "q-10", "q-9", "queue\xe4\xb8\xad"};
    return key(tags[rng() % 3], queues[rng() % 6], rng() % 4 == 0 ? rng() : rng() % 12,
               static_cast<std::int64_t>(rng() % 5) - 2);
  };
  int mismatches = 0;
  std::string first;
  for (int i = 0; i < kPairs; ++i) {
    const key a = gen();
    const key b = gen();
    int want = cmp_text(std::get<0>(a), std::get<0>(b));
    if (want == 0) want = cmp_text(std::get<1>(a), std::get<1>(b));
    if (want == 0) want = std::get<2>(a) < std::get<2>(b) ? -1 : (std::get<2>(a) > std::get<2>(b) ? 1 : 0);
    if (want == 0) want = std::get<3>(a).value > std::get<3>(b).value ? -1 : (std::get<3>(a).value < std::get<3>(b).value ? 1 : 0);
    const std::string ka = std::apply([](const auto&... e) { return tuple::pack(e...); }, a);
    const std::string kb = std::apply([](const auto&... e) { return tuple::pack(e...); }, b);
    if (sign(compare_bytes(ka, kb)) != want && mismatches++ == 0) first = hex(ka) + " vs " + hex(kb);
  }
  INFO("mixed keys seed " << test_seed() << ": " << mismatches << " mismatches; first: " << first);
  CHECK(mismatches == 0);
}

TEST_CASE("packed prefixes are byte prefixes, so prefix scans find exactly the extensions", "[tuple][order]") {
  const std::string prefix = tuple::pack("DESTINATION", "q-1");
  for (std::uint64_t id : {std::uint64_t{0}, std::uint64_t{9}, std::uint64_t{10}, std::numeric_limits<std::uint64_t>::max()}) {
    const std::string k = tuple::pack("DESTINATION", "q-1", "MESSAGE_METADATA", id);
    CHECK(k.compare(0, prefix.size(), prefix) == 0);
  }
  // A queue named like a longer queue's prefix is not a byte prefix of it.
  CHECK(tuple::pack("DESTINATION", "q-10").compare(0, prefix.size(), prefix) != 0);
  // Decimal ids sort numerically: 9 < 10.
  CHECK(compare_bytes(tuple::pack(std::uint64_t{9}), tuple::pack(std::uint64_t{10})) < 0);
}
