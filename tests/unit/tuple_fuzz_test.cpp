// Decoding arbitrary bytes never crashes, never reads out of bounds (run under ASan/UBSan) and
// only ever fails with keyschema::decode_error: random mutations and truncations of valid keys,
// and random byte strings, through the typed, skipping and schema-less decoders. Deterministic
// seed (printed; KEYSCHEMA_TEST_SEED overrides).
#include <keyschema/tuple.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using keyschema::bytes;
using keyschema::decode_error;
using keyschema::desc;
namespace tuple = keyschema::tuple;

namespace {

std::uint64_t fuzz_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s = 77;
    if (const char* env = std::getenv("KEYSCHEMA_TEST_SEED")) s = std::strtoull(env, nullptr, 0);
    std::printf("tuple_fuzz_test: seed %llu (set KEYSCHEMA_TEST_SEED to change)\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// Runs f; returns 0 when it succeeds, 1 on decode_error. Any other exception escapes and fails
// the test.
template <class F>
int attempt(F&& f) {
  try {
    f();
    return 0;
  } catch (const decode_error&) {
    return 1;
  }
}

using nested_t = std::tuple<std::string, std::optional<std::int64_t>, std::tuple<bytes, std::nullptr_t>>;
using desc_t = desc<std::tuple<std::string, std::optional<double>>>;

// Every decoder over the same bytes; returns how many rejected them.
int decode_all(const std::string& in) {
  int rejected = 0;
  rejected += attempt([&] { (void)tuple::unpack_dynamic(in); });
  rejected += attempt([&] {
    tuple::reader r(in);
    while (!r.at_end()) r.skip_element();
  });
  rejected += attempt([&] { (void)tuple::unpack<std::string, std::string, std::string, std::uint64_t>(in); });
  rejected += attempt([&] { (void)tuple::unpack<nested_t>(in); });
  rejected += attempt([&] { (void)tuple::unpack<desc_t, std::int8_t>(in); });
  rejected += attempt([&] { (void)tuple::unpack<float, double, bool, keyschema::uuid>(in); });
  rejected += attempt([&] { (void)tuple::unpack<desc<std::uint64_t>, bytes>(in); });
  rejected += attempt([&] { (void)tuple::unpack_prefix<std::int64_t>(in); });
  return rejected;
}

}  // namespace

TEST_CASE("mutated and truncated keys only ever raise decode_error", "[tuple][fuzz]") {
  std::mt19937_64 rng(fuzz_seed());
  const std::vector<std::string> seeds = {
      tuple::pack("DESTINATION", "queue-7", "MESSAGE_METADATA", std::uint64_t{1234567890123}),
      tuple::pack(nested_t("a\0b", -5, {bytes(std::string("\x00\xff", 2)), nullptr})),
      tuple::pack(desc_t({"zz", 2.5}), std::int8_t{-3}),
      tuple::pack(1.5f, -0.0, true, keyschema::uuid{}),
      tuple::pack(desc<std::uint64_t>(99), bytes(std::string(70, '\0'))),
      tuple::pack(std::string(200, 'x'), std::string("\xf0\x9f\x94\xa5\xe4\xb8\xad")),
      std::string("\x1d\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0b\xf6\x00\x00", 15),
  };
  int rejected = 0;
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string k = seeds[rng() % seeds.size()];
    switch (rng() % 4) {
      case 0: k.resize(rng() % (k.size() + 1)); break;                                        // truncate
      case 1: k[rng() % k.size()] = static_cast<char>(rng()); break;                          // flip a byte
      case 2: k.insert(rng() % (k.size() + 1), 1, static_cast<char>(rng() % 2 ? 0x00 : 0xff)); break;  // insert
      default:
        for (int j = 0; j < 3; ++j) k[rng() % k.size()] = static_cast<char>(rng());
    }
    const int r = decode_all(k);
    rejected += r;
    accepted += 8 - r;
  }
  INFO("accepted " << accepted << ", rejected " << rejected);
  CHECK(rejected > 0);
  CHECK(accepted > 0);
}

TEST_CASE("random byte strings only ever raise decode_error", "[tuple][fuzz]") {
  std::mt19937_64 rng(fuzz_seed() + 1);
  static const unsigned char interesting[] = {0x00, 0x01, 0x02, 0x05, 0x0b, 0x0c, 0x13, 0x14, 0x15, 0x1c, 0x1d,
                                              0x20, 0x21, 0x26, 0x27, 0x30, 0x33, 0x40, 0x41, 0xbf, 0xff};
  int rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string k(rng() % 24, '\0');
    for (char& c : k) c = static_cast<char>(rng() % 2 ? interesting[rng() % std::size(interesting)] : rng());
    rejected += decode_all(k);
  }
  CHECK(rejected > 0);
}
