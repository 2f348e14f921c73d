// Unit tests of key encoding at the edges: bounds and prefixes of another type than their field
// (std::chrono units, integers of other widths, floating point), which keys a scan skips and which
// are decode errors (integers that do not fit, extra elements), and user codecs in scans.
#include <keyschema/keyschema.hpp>

#include "../support/ref_backend.hpp"

#include <catch2/catch.hpp>

#include <range/v3/iterator/operations.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace key_codec_test {

namespace {
namespace ks = keyschema;
using namespace std::chrono;
using namespace std::chrono_literals;

using ms_point = sys_time<milliseconds>;
using expiry = ks::keyspace<"expiry", std::string, ks::lit<"EXPIRY">, ks::field<"expires_at", ms_point>,
                            ks::field<"id", std::uint64_t>>;
using ttl = ks::keyspace<"ttl", std::string, ks::lit<"TTL">, ks::field<"ttl", milliseconds>>;
using expiry_store = ks::store<ks::schema<expiry, ttl>, ks::memory_backend>;

template <class View>
std::vector<std::uint64_t> ids(const View& v) {
  std::vector<std::uint64_t> out;
  for (const auto& e : v) out.push_back(e.template get<"id">());
  return out;
}

// The ids (= insertion index) of the entries whose expiry satisfies pred, in key order.
template <class Pred>
std::vector<std::uint64_t> expected(const std::vector<ms_point>& at, Pred pred) {
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < at.size(); ++i)
    if (pred(at[i])) out.push_back(i);
  return out;
}

// Time bounds of several units against entries every 370 ms from 10 s before `now` to 10 s
// after (id = index).
void check_time_bounds(system_clock::time_point now) {
  expiry_store db;
  const ms_point now_ms = time_point_cast<milliseconds>(now);
  std::vector<ms_point> at;
  for (ms_point t = now_ms - 10s; t <= now_ms + 10s; t += 370ms) at.push_back(t);
  for (std::size_t i = 0; i < at.size(); ++i) db.put<expiry>({at[i], i}, "x");

  // The sweeper: everything due now.
  CHECK(ids(db.scan<expiry>().through(now_ms)) == expected(at, [&](ms_point t) { return t <= now_ms; }));
  CHECK(ids(db.scan<expiry>().through(floor<milliseconds>(now))) ==
        expected(at, [&](ms_point t) { return t <= floor<milliseconds>(now); }));
  // A coarser unit converts exactly (seconds -> ms), not as a count of ms (1970).
  const sys_seconds now_s = time_point_cast<seconds>(now);
  const auto due_s = expected(at, [&](ms_point t) { return t <= now_s; });
  CHECK(!due_s.empty());
  CHECK(due_s.size() < at.size());
  CHECK(ids(db.scan<expiry>().through(now_s)) == due_s);
  CHECK(ids(db.scan<expiry>().to(now_s)) == expected(at, [&](ms_point t) { return t < now_s; }));
  CHECK(ids(db.scan<expiry>().from(now_s)) == expected(at, [&](ms_point t) { return t >= now_s; }));
  CHECK(ids(db.scan<expiry>().after(now_s)) == expected(at, [&](ms_point t) { return t > now_s; }));
  const sys_time<minutes> now_min = floor<minutes>(now);
  CHECK(ids(db.scan<expiry>().through(now_min)) == expected(at, [&](ms_point t) { return t <= now_min; }));
  CHECK(ids(db.scan<expiry>().from(now_s - 3s).to(now_s + 3s)) ==
        expected(at, [&](ms_point t) { return t >= now_s - 3s && t < now_s + 3s; }));
  CHECK(ids(db.scan<expiry>().through(now_s).reverse()).size() == due_s.size());

  // A prefix value of a coarser unit selects the entries at exactly that instant: the one put
  // there, and the entry of `at` that falls on the second when now's milliseconds are .010, .380
  // or .750; never the others of that second.
  db.put<expiry>({now_s, 1000}, "x");
  std::vector<std::uint64_t> at_now_s = expected(at, [&](ms_point t) { return t == now_s; });
  at_now_s.push_back(1000);
  CHECK(ids(db.scan<expiry>(now_s)) == at_now_s);
  CHECK(db.erase_prefix<expiry>(now_s) == at_now_s.size());
  CHECK(ranges::distance(db.scan<expiry>()) == static_cast<std::ptrdiff_t>(at.size() + 1 - at_now_s.size()));
}

}  // namespace

TEST_CASE("time bounds convert their unit exactly like keys", "[key][chrono]") {
  // Now, and two instants whose milliseconds are chosen: .000 (now is on the second) and .380 (an
  // entry falls exactly on the second).
  const sys_seconds fixed{1'700'000'000s};
  for (const system_clock::time_point now : {system_clock::now(), system_clock::time_point(fixed),
                                             system_clock::time_point(fixed + 380ms)}) {
    INFO("now = " << duration_cast<milliseconds>(now.time_since_epoch()).count() << " ms since the epoch");
    check_time_bounds(now);
  }

  expiry_store db;
  // Durations likewise: a seconds bound on a milliseconds field.
  for (int i = 0; i < 10; ++i) db.put<ttl>({milliseconds(i * 400)}, "t");  // 0, 400, ..., 3600 ms
  CHECK(ranges::distance(db.scan<ttl>().to(2s)) == 5);       // 0..1600
  CHECK(ranges::distance(db.scan<ttl>().through(2s)) == 6);  // ..2000
  CHECK(ranges::distance(db.scan<ttl>().from(1min)) == 0);
  CHECK(ranges::distance(db.scan<ttl>(2s)) == 1);
  CHECK(ranges::distance(db.scan<ttl>(seconds(2000))) == 0);  // 2,000,000 ms, not 2000 ms
}

TEST_CASE("integer bounds of another width or sign select by value", "[key][integer]") {
  using small = ks::keyspace<"small", std::string, ks::lit<"S">, ks::field<"n", std::uint8_t>>;
  using tiny = ks::keyspace<"tiny", std::string, ks::lit<"T">, ks::field<"n", std::int8_t>>;
  using big = ks::keyspace<"big", std::string, ks::lit<"B">, ks::field<"n", std::uint64_t>>;
  using down = ks::keyspace<"down", std::string, ks::lit<"D">, ks::field<"n", ks::desc<std::uint8_t>>>;
  using maybe = ks::keyspace<"maybe", std::string, ks::lit<"M">, ks::field<"n", std::optional<std::uint8_t>>>;
  using real = ks::keyspace<"real", std::string, ks::lit<"R">, ks::field<"x", double>>;
  ks::store<ks::schema<small, tiny, big, down, maybe, real>, ks::memory_backend> db;
  for (int n = 0; n < 256; ++n) {
    db.put<small>({static_cast<std::uint8_t>(n)}, "s");
    db.put<down>({static_cast<std::uint8_t>(n)}, "d");
    db.put<maybe>({static_cast<std::uint8_t>(n)}, "m");
  }
  db.put<maybe>({std::nullopt}, "m");
  for (int n = -128; n < 128; ++n) db.put<tiny>({static_cast<std::int8_t>(n)}, "t");
  for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1} << 63, ~std::uint64_t{0}})
    db.put<big>({n}, "b");
  for (double x : {-1e300, -2.5, 0.0, 2.5, 9007199254740992.0}) db.put<real>({x}, "r");

  // An int64 bound beyond the field's range is not narrowed (300 would become 44).
  CHECK(ranges::distance(db.scan<small>().from(std::int64_t{300})) == 0);
  CHECK(ranges::distance(db.scan<small>().to(std::int64_t{300})) == 256);
  CHECK(ranges::distance(db.scan<small>().through(std::int64_t{-1})) == 0);  // not 255
  CHECK(ranges::distance(db.scan<small>().from(-1)) == 256);
  CHECK(ranges::distance(db.scan<small>().from(200).to(1000)) == 56);
  CHECK(ranges::distance(db.scan<small>(300)) == 0);
  CHECK(ranges::distance(db.scan<small>(std::int64_t{44})) == 1);
  CHECK(db.erase_prefix<small>(300) == 0);  // would erase 44 if narrowed
  CHECK(db.contains<small>({44}));
  CHECK(ranges::distance(db.scan<tiny>().from(std::uint64_t{200})) == 0);  // not -56
  CHECK(ranges::distance(db.scan<tiny>().to(std::uint64_t{200})) == 256);
  CHECK(ranges::distance(db.scan<tiny>().after(-129)) == 256);
  CHECK(ranges::distance(db.scan<big>().from(-1)) == 4);  // not 2^64 - 1
  CHECK(ranges::distance(db.scan<big>().through(-1)) == 0);
  CHECK(ranges::distance(db.scan<big>().from(std::int64_t{1} << 62)) == 2);
  // Descending: in key order the bound 300 comes before every value, -1 after.
  CHECK(ranges::distance(db.scan<down>().from(300)) == 256);
  CHECK(ranges::distance(db.scan<down>().after(std::int64_t{-1})) == 0);
  CHECK(ranges::distance(db.scan<down>().to(std::int64_t{-1})) == 256);
  CHECK(ranges::distance(db.scan<down>().from(std::int64_t{10})) == 11);  // 10, 9, ..., 0
  // Optional: null sorts first; an int bound compares by value.
  CHECK(ranges::distance(db.scan<maybe>().to(std::int64_t{-1})) == 1);  // only null
  CHECK(ranges::distance(db.scan<maybe>().from(std::nullopt)) == 257);
  CHECK(ranges::distance(db.scan<maybe>().from(std::int64_t{256})) == 0);
  // An integer bound on a double field is converted exactly (32 bits fit a double).
  CHECK(ranges::distance(db.scan<real>().from(std::int32_t{-2})) == 3);  // 0, 2.5, 2^53
  CHECK(ranges::distance(db.scan<real>().to(std::int32_t{3})) == 4);
  CHECK(ranges::distance(db.scan<real>().from(2.5f)) == 2);
}

namespace {
template <class T>
using int_ks = ks::keyspace<"numbers", std::string, ks::lit<"N">, ks::field<"n", T>>;

// Writes key with value "v" under a store's nose, as another program would.
void put_raw(ks::memory_backend& b, const std::string& key) {
  ks::write_batch w;
  w.put(key, "v");
  b.write(w, {});
}

// Scanning KS over a database holding one valid entry and `key` throws a decode_error naming
// the keyspace and showing the key; so does an erase of the range.
template <class KS, class Valid>
void check_refused(const Valid& valid, const std::string& key, const std::string& shown,
                   const std::string& reason = "") {
  INFO("keyspace " << KS::name << ", key " << shown);
  ks::memory_backend inner;
  ks::store<ks::schema<KS>, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
  db.template put<KS>(valid, "v");
  put_raw(inner, key);
  try {
    (void)ranges::distance(db.template scan<KS>());
    FAIL("a key that does not decode as the keyspace's was skipped or decoded");
  } catch (const ks::decode_error& e) {
    const std::string what = e.what();
    CHECK(what.find("keyspace '" + std::string(KS::name) + "'") != std::string::npos);
    CHECK(what.find(shown) != std::string::npos);
    CHECK(what.find(reason) != std::string::npos);
  }
  CHECK_THROWS_AS(ranges::distance(db.template scan<KS>().reverse()), ks::decode_error);
  CHECK_THROWS_AS(ranges::distance(db.template scan<KS>().keys_only()), ks::decode_error);
  // A range erase refuses the same keys (before erasing anything of this batch).
  CHECK_THROWS_AS(db.template erase_prefix<KS>(), ks::decode_error);
  CHECK(db.template contains<KS>(valid));
  {
    auto txn = db.transaction();
    CHECK_THROWS_AS(txn.template erase_prefix<KS>(), ks::decode_error);
    txn.rollback();
  }
  std::string v;
  CHECK(inner.get(key, v, nullptr));
}
}  // namespace

TEMPLATE_TEST_CASE("an integer that does not fit its field is a decode error for every width",
                   "[key][integer]", std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t,
                   std::uint32_t, std::int64_t, std::uint64_t) {
  using T = TestType;
  using KS = int_ks<T>;
  const typename KS::key_type valid{T{1}};
  // One past the maximum (as u64) and one below the minimum (as i64, when it exists).
  if constexpr (sizeof(T) < 8 || std::is_signed_v<T>) {
    const std::uint64_t above = static_cast<std::uint64_t>(std::numeric_limits<T>::max()) + 1;
    check_refused<KS>(valid, ks::tuple::pack("N", above), std::to_string(above));
  }
  if constexpr (std::is_unsigned_v<T>) {
    check_refused<KS>(valid, ks::tuple::pack("N", std::int64_t{-1}), "-1");
  } else if constexpr (sizeof(T) < 8) {
    const std::int64_t below = static_cast<std::int64_t>(std::numeric_limits<T>::min()) - 1;
    check_refused<KS>(valid, ks::tuple::pack("N", below), std::to_string(below));
  }
  // The same with the widest values of the 64-bit encoding.
  if constexpr (!std::is_same_v<T, std::uint64_t>)
    check_refused<KS>(valid, ks::tuple::pack("N", std::numeric_limits<std::uint64_t>::max()),
                      std::to_string(std::numeric_limits<std::uint64_t>::max()));
  if constexpr (std::is_unsigned_v<T>)
    check_refused<KS>(valid, ks::tuple::pack("N", std::numeric_limits<std::int64_t>::min()),
                      std::to_string(std::numeric_limits<std::int64_t>::min()));
  // FoundationDB's arbitrary-precision forms (2^64 and -2^64 - 1 here) are integers too.
  check_refused<KS>(valid, std::string("\x02N\x00\x1d\x09\x01\x00\x00\x00\x00\x00\x00\x00\x00", 14), "N");
  check_refused<KS>(valid, std::string("\x02N\x00\x0b\xf6\xfe\xff\xff\xff\xff\xff\xff\xff\xfe", 14), "N");
}

namespace {
// What decoding `key` (prefix + one integer element + maybe more) gives, as text: "other" (the
// key is another keyspace's), "error" (decode_error) or the value.
template <class KS>
std::string decoded(std::string_view key, std::size_t prefix_size, bool after_prefix) {
  typename KS::key_type out{};
  try {
    const bool mine = after_prefix ? ks::detail::key_codec<KS>::template decode_after<1>(key, prefix_size, out)
                                   : ks::detail::key_codec<KS>::decode(key, out);
    return mine ? std::to_string(std::get<0>(out)) : "other";
  } catch (const ks::decode_error&) {
    return "error";
  }
}

// The same by the element decoder alone (codec_traits<T>::decode, which never takes the key's
// final-element path): what a key ending with that element must decode to.
template <class T>
std::string decoded_by_element(std::string_view element) {
  ks::tuple::reader r(element);
  if (r.at_end() || !ks::codec_traits<T>::type_codes().contains(r.peek())) return "other";
  try {
    const T v = ks::detail::read_integer_general<T>(r);
    return r.at_end() ? std::to_string(v) : "error";
  } catch (const ks::decode_error&) {
    return "error";
  }
}

// One integer element read at byte pos of input, as text: the value and where the reader stopped,
// or "error". By read_integer (its fast path try_read_integer first, as a key's inner fields and
// codec_traits<T>::decode read) or by the general path alone.
template <class T, bool General>
std::string read_at(std::string_view input, std::size_t pos) {
  ks::tuple::reader r(input);
  r.skip(pos);
  try {
    const T v = General ? ks::detail::read_integer_general<T>(r) : ks::detail::read_integer<T>(r);
    return std::to_string(v) + " up to byte " + std::to_string(r.offset());
  } catch (const ks::decode_error&) {
    return "error";
  }
}
}  // namespace

TEMPLATE_TEST_CASE("a key's integers decode on their fast paths exactly as the general integer decoder does",
                   "[key][integer]", std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t,
                   std::uint32_t, std::int64_t, std::uint64_t) {
  using T = TestType;
  // Keys shorter than 8 bytes (the value bytes are read one by one) and longer (one 8-byte load
  // ending at the key's end).
  using short_ks = ks::keyspace<"short", std::string, ks::lit<"N">, ks::field<"n", T>>;
  using long_ks = ks::keyspace<"long", std::string, ks::lit<"LONGWORD">, ks::field<"n", T>>;
  const std::string short_prefix = ks::tuple::pack("N");
  const std::string long_prefix = ks::tuple::pack("LONGWORD");
  const unsigned char patterns[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
  std::size_t compared = 0, values = 0;
  std::vector<std::string> mismatches;  // one CHECK for all (a CHECK per key is slow under ASan)
  for (int code = 0x00; code <= 0x20; ++code) {
    for (std::size_t len = 0; len <= 9; ++len) {
      for (unsigned char first : patterns) {
        for (int tail = 0; tail < 2; ++tail) {  // nothing after the element, another element
          std::string element(1, static_cast<char>(code));
          for (std::size_t i = 0; i < len; ++i) element.push_back(static_cast<char>(i == 0 ? first : 0x5a + i));
          if (tail == 1) element.push_back('\x14');
          const std::string want = decoded_by_element<T>(element);
          // decode() on the short key (the reader form of try_read_final_integer), decode_after() (a
          // scan's: the same function on the key itself) on the long one.
          const std::string got[] = {decoded<short_ks>(short_prefix + element, short_prefix.size(), false),
                                     decoded<long_ks>(long_prefix + element, long_prefix.size(), true)};
          for (const std::string& g : got)
            if (g != want)
              mismatches.push_back("code " + std::to_string(code) + ", " + std::to_string(len) + " bytes, first " +
                                   std::to_string(first) + ", tail " + std::to_string(tail) + ": " + g +
                                   " instead of " + want);
          // The same element inside a key (try_read_integer), after a short and a long prefix.
          for (const std::string& prefix : {short_prefix, long_prefix}) {
            const std::string input = prefix + element;
            const std::string inner = read_at<T, false>(input, prefix.size());
            const std::string general = read_at<T, true>(input, prefix.size());
            if (inner != general)
              mismatches.push_back("inner, code " + std::to_string(code) + ", " + std::to_string(len) +
                                   " bytes, first " + std::to_string(first) + ", tail " + std::to_string(tail) +
                                   ", prefix of " + std::to_string(prefix.size()) + ": " + inner + " instead of " +
                                   general);
          }
          ++compared;
          if (want != "other" && want != "error") ++values;
        }
      }
    }
  }
  CHECK(mismatches == std::vector<std::string>{});
  CHECK(compared == 33 * 10 * 5 * 2);
  CHECK(values > 5);  // the fast path's own case (a value that fits T) was compared, not only refusals
}

TEST_CASE("a valid key with extra elements appended is a decode error, not a shorter key", "[key][trailing]") {
  using KS = int_ks<std::uint64_t>;
  check_refused<KS>(KS::key_type{1}, ks::tuple::pack("N", std::uint64_t{5}, "extra"), "5, \"extra\"");
  check_refused<KS>(KS::key_type{1}, ks::tuple::pack("N", std::uint64_t{5}, nullptr), "5, null");
  check_refused<KS>(KS::key_type{1}, ks::tuple::pack("N", std::uint64_t{5}) + std::string(1, '\x14'), "5");
  // A keyspace ending with a literal, and one ending with a string field.
  using lit_end = ks::keyspace<"lit_end", std::string, ks::lit<"L">, ks::field<"n", std::int64_t>, ks::lit<"END">>;
  check_refused<lit_end>(lit_end::key_type{1}, ks::tuple::pack("L", std::int64_t{2}, "END", std::int64_t{3}), "\"END\", 3");
  using str_end = ks::keyspace<"str_end", std::string, ks::lit<"S">, ks::field<"s", std::string>>;
  check_refused<str_end>(str_end::key_type{"a"}, ks::tuple::pack("S", "b", "c"), "\"b\", \"c\"");

  // The store does not decode the key as if the extra element were absent, and does not erase it.
  ks::memory_backend inner;
  ks::store<ks::schema<KS>, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
  put_raw(inner, ks::tuple::pack("N", std::uint64_t{5}, "extra"));
  CHECK_FALSE(db.contains<KS>({5}));
  CHECK_THROWS_AS(db.erase_prefix<KS>(), ks::decode_error);
  std::string v;
  CHECK(inner.get(ks::tuple::pack("N", std::uint64_t{5}, "extra"), v, nullptr));
}

TEST_CASE("a key that ends before its keyspace's last segment is a decode error, not another keyspace's key",
          "[key][truncated]") {
  // By prefix-disjointness such a key begins a key of this keyspace and of no other: it ends
  // after a field (before a literal or a field), after a literal, or inside one.
  using meta = ks::keyspace<"meta", std::string, ks::lit<"DESTINATION">, ks::field<"q", std::string>,
                            ks::lit<"MESSAGE_METADATA">, ks::field<"id", std::uint64_t>>;
  const meta::key_type q1{"q", 1};
  check_refused<meta>(q1, ks::tuple::pack("DESTINATION", "q", "MESSAGE_METADATA"), "MESSAGE_METADATA",
                      "ends before its segment 4 of 4");
  check_refused<meta>(q1, ks::tuple::pack("DESTINATION", "q"), "\"q\"", "ends before its segment 3 of 4");
  check_refused<meta>(q1, ks::tuple::pack("DESTINATION", "q") + "\x02" "MESSAGE_", "MESSAGE_",
                      "ends before its segment 3 of 4");
  using lit_end = ks::keyspace<"lit_end", std::string, ks::lit<"L">, ks::field<"n", std::int64_t>,
                               ks::field<"m", std::int64_t>, ks::lit<"END">>;
  check_refused<lit_end>(lit_end::key_type{1, 2}, ks::tuple::pack("L", std::int64_t{2}, std::int64_t{3}), "3",
                         "ends before its segment 4 of 4");
  check_refused<lit_end>(lit_end::key_type{1, 2}, ks::tuple::pack("L", std::int64_t{2}), "2",
                         "ends before its segment 3 of 4");
  check_refused<lit_end>(lit_end::key_type{1, 2}, ks::tuple::pack("L", std::int64_t{2}, std::int64_t{3}) + "\x02" "EN",
                         "L", "ends before its segment 4 of 4");
  // A key that ends right after the leading literals is below every scan's range (which starts at
  // the first field's lowest type code), so no scan or range erase meets it; decoding it refuses it.
  const auto refusal = []<class KS>(std::type_identity<KS>, const std::string& key) -> std::string {
    typename KS::key_type out{};
    try {
      return ks::detail::key_codec<KS>::decode(key, out) ? "decoded" : "another keyspace's";
    } catch (const ks::decode_error& e) {
      return e.what();
    }
  };
  CHECK_THAT(refusal(std::type_identity<meta>{}, ks::tuple::pack("DESTINATION")),
             Catch::Contains("ends before its segment 2 of 4") && Catch::Contains("keyspace 'meta'"));
  CHECK_THAT(refusal(std::type_identity<int_ks<std::uint64_t>>{}, ks::tuple::pack("N")),
             Catch::Contains("ends before its segment 2 of 2"));
  CHECK_THAT(refusal(std::type_identity<meta>{}, std::string("\x02" "DESTIN")), Catch::Contains("ends before its segment 1 of 4"));
  CHECK(refusal(std::type_identity<meta>{}, ks::tuple::pack("DESTINATION", "q", "MESSAGE_EXPIRATION_TIME")) ==
        "another keyspace's");

  // Two keyspaces that share their first segments: a key that ends within what they share is
  // refused by both; one that ends after the literal that sets them apart only by its own, and its
  // neighbour steps over it.
  using expiration = ks::keyspace<"expiration", std::string, ks::lit<"DESTINATION">, ks::field<"q", std::string>,
                                  ks::lit<"MESSAGE_EXPIRATION_TIME">, ks::field<"id", std::uint64_t>>;
  ks::memory_backend inner;
  ks::store<ks::schema<meta, expiration>, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
  db.put<meta>({"q", 1}, "m");
  db.put<expiration>({"q", 1}, "e");
  put_raw(inner, ks::tuple::pack("DESTINATION", "q", "MESSAGE_METADATA"));
  CHECK_THROWS_AS(ranges::distance(db.scan<meta>()), ks::decode_error);
  CHECK(ranges::distance(db.scan<expiration>()) == 1);
  CHECK(db.erase_prefix<expiration>() == 1);
  CHECK_THROWS_AS(db.erase_prefix<meta>(), ks::decode_error);
  CHECK(db.contains<meta>({"q", 1}));
  put_raw(inner, ks::tuple::pack("DESTINATION", "q"));
  CHECK_THROWS_AS(ranges::distance(db.scan<expiration>()), ks::decode_error);
  CHECK_THROWS_AS(ranges::distance(db.scan<meta>().keys_only()), ks::decode_error);
  // A transaction's range erase that meets such a key changes nothing of the transaction, also
  // when the key comes after one it would erase.
  db.put<meta>({"a", 1}, "a");
  {
    auto txn = db.transaction();
    txn.put<expiration>({"q", 2}, "e2");
    CHECK_THROWS_AS(txn.erase_prefix<meta>(), ks::decode_error);
    txn.commit();
  }
  CHECK(db.contains<meta>({"a", 1}));
  CHECK(db.contains<meta>({"q", 1}));
  CHECK(db.contains<expiration>({"q", 2}));
}

TEST_CASE("a scan steps over runs of another keyspace's keys between its own", "[key][neighbours]") {
  // Over the whole keyspace, each queue's "named" keys (a string element, code 02) sort before its
  // "numbered" ones (integers, codes 14..1c): the scan meets them after an entry it decoded, on its
  // per-step path, one or several in a row, and at its end.
  using numbered = ks::keyspace<"numbered", std::string, ks::lit<"Q">, ks::field<"q", std::string>, ks::field<"id", std::uint64_t>>;
  using named = ks::keyspace<"named", std::string, ks::lit<"Q">, ks::field<"q", std::string>, ks::field<"name", std::string>>;
  ks::store<ks::schema<numbered, named>, ks::memory_backend> db;
  for (std::uint64_t id : {1u, 2u, 300u}) db.put<numbered>({"a", id}, "a" + std::to_string(id));
  db.put<named>({"b", "x"}, "");
  db.put<named>({"b", "y"}, "");
  for (std::uint64_t id : {1u, 1u << 20}) db.put<numbered>({"b", id}, "b" + std::to_string(id));
  db.put<named>({"c", "x"}, "");
  db.put<numbered>({"c", std::uint64_t{1} << 63}, "c");
  db.put<named>({"d", "x"}, "");
  std::vector<std::string> seen;
  for (const auto& e : db.scan<numbered>()) seen.push_back(e.value + "@" + std::to_string(e.get<"id">()));
  CHECK(seen == std::vector<std::string>{"a1@1", "a2@2", "a300@300", "b1@1", "b1048576@1048576",
                                         "c@9223372036854775808"});
  seen.clear();
  for (const auto& e : db.scan<numbered>().keys_only().limit(4)) seen.push_back(e.get<"q">() + std::to_string(e.get<"id">()));
  CHECK(seen == std::vector<std::string>{"a1", "a2", "a300", "b1"});
  seen.clear();
  for (const auto& e : db.scan<numbered>().reverse()) seen.push_back(e.value);
  CHECK(seen == std::vector<std::string>{"c", "b1048576", "b1", "a300", "a2", "a1"});
}

TEST_CASE("keys of other keyspaces in a scan's byte range are skipped", "[key][neighbours]") {
  // optional<i64> spans the codes 00..1c, which includes a string element (02): the other
  // keyspace's keys lie inside the scan's byte range and are skipped, not decoded.
  using opt = ks::keyspace<"opt", std::string, ks::lit<"O">, ks::field<"n", std::optional<std::int64_t>>>;
  using str = ks::keyspace<"str", std::string, ks::lit<"O">, ks::field<"s", std::string>>;
  ks::store<ks::schema<opt, str>, ks::memory_backend> db;
  db.put<opt>({std::nullopt}, "null");
  db.put<opt>({7}, "seven");
  db.put<str>({"zz"}, "s");
  std::vector<std::string> seen;
  for (const auto& e : db.scan<opt>()) seen.push_back(e.value);
  CHECK(seen == std::vector<std::string>{"null", "seven"});
  CHECK(db.erase_prefix<opt>() == 2);
  CHECK(db.contains<str>({"zz"}));
}

}  // namespace key_codec_test

namespace keyschema_test_codecs {
// A user type with its own encoding: FDB user type code 0x41 and a 32-bit big-endian payload.
struct tag {
  std::uint32_t v;
  friend bool operator==(const tag&, const tag&) = default;
};
}  // namespace keyschema_test_codecs

template <>
struct keyschema::codec<keyschema_test_codecs::tag> {
  static constexpr std::string_view name = "tag";
  static constexpr type_code_set type_codes = type_code_set::of(0x41);
  static void encode(std::string& out, const keyschema_test_codecs::tag& t) {
    out.push_back('\x41');
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((t.v >> s) & 0xff));
  }
  static keyschema_test_codecs::tag decode(tuple::reader& in) {
    if (in.at_end() || in.peek() != 0x41) in.fail_unexpected("tag");
    const std::string_view b = in.take(5);
    std::uint32_t v = 0;
    for (int i = 1; i < 5; ++i) v = (v << 8) | static_cast<unsigned char>(b[static_cast<std::size_t>(i)]);
    return {v};
  }
};

namespace key_codec_test {

TEST_CASE("a user codec as the first segment never sees the schema record or neighbours", "[key][codec]") {
  // The keyspace's range is bounded by the codec's type_codes, so the schema record (0xFF...) and
  // the other keyspace's keys are outside it.
  using tags = ks::keyspace<"tags", std::string, ks::field<"t", keyschema_test_codecs::tag>>;
  using names = ks::keyspace<"names", std::string, ks::lit<"NAME">, ks::field<"n", std::string>>;
  ks::memory_backend inner;
  ks::store<ks::schema<tags, names>, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
  std::string rec;
  REQUIRE(inner.get(ks::schema_key, rec, nullptr));
  db.put<names>({"n"}, "name");
  db.put<tags>({{2}}, "two");
  db.put<tags>({{1}}, "one");
  std::vector<std::string> seen;
  for (const auto& e : db.scan<tags>()) seen.push_back(e.value);
  CHECK(seen == std::vector<std::string>{"one", "two"});
  seen.clear();
  for (const auto& e : db.scan<tags>().reverse()) seen.push_back(e.value);
  CHECK(seen == std::vector<std::string>{"two", "one"});
  CHECK(ranges::distance(db.scan<names>()) == 1);
}

TEST_CASE("changing a time field's unit or clock is a schema error on open", "[key][chrono][fingerprint]") {
  using exp_ms = ks::keyspace<"exp", std::string, ks::lit<"E">, ks::field<"t", sys_time<milliseconds>>>;
  using exp_us = ks::keyspace<"exp", std::string, ks::lit<"E">, ks::field<"t", sys_time<microseconds>>>;
  using exp_steady = ks::keyspace<"exp", std::string, ks::lit<"E">, ks::field<"t", time_point<steady_clock, milliseconds>>>;
  using ttl_s = ks::keyspace<"exp", std::string, ks::lit<"E">, ks::field<"t", seconds>>;
  ks::memory_backend inner;
  {
    ks::store<ks::schema<exp_ms>, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
    db.put<exp_ms>({sys_time<milliseconds>(1500ms)}, "x");
  }
  try {
    ks::store<ks::schema<exp_us>, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
    FAIL("microseconds opened a database written in milliseconds");
  } catch (const ks::schema_error& e) {
    const std::string what = e.what();
    CHECK(what.find("duration<i64,1/1000>") != std::string::npos);
    CHECK(what.find("duration<i64,1/1000000>") != std::string::npos);
  }
  using steady_store = ks::store<ks::schema<exp_steady>, keyschema_test::ref_backend<>>;
  CHECK_THROWS_AS(steady_store{keyschema_test::ref_backend<>(inner)}, ks::schema_error);
  using ttl_store = ks::store<ks::schema<ttl_s>, keyschema_test::ref_backend<>>;
  CHECK_THROWS_AS(ttl_store{keyschema_test::ref_backend<>(inner)}, ks::schema_error);
  // The same schema still opens and reads the value back.
  ks::store<ks::schema<exp_ms>, keyschema_test::ref_backend<>> db{keyschema_test::ref_backend<>(inner)};
  CHECK(db.get<exp_ms>({sys_time<milliseconds>(1500ms)}) == "x");
}

TEST_CASE("keys written directly are the tuple encoding of their segments", "[key][encode]") {
  // Keys of literals, integers and text are written in one piece unless the text needs escaping
  // or validating, or the key may be longer than the direct writer's buffer; every case must give
  // exactly the general encoder's bytes.
  using mixed = ks::keyspace<"mixed", std::string, ks::lit<"M">, ks::field<"name", std::string>,
                             ks::field<"n", std::int64_t>, ks::field<"u", std::uint32_t>>;
  using codec = ks::detail::key_codec<mixed>;
  const auto key = [](const ks::key_arg<mixed>& k) {
    std::string out = "pre";  // appended to what the buffer holds
    k.encode(out);
    return out.substr(3);
  };
  const std::string long_name(300, 'x');
  const std::string nul_name("a\0b", 3);
  const std::string utf8_name = "caf\xc3\xa9";
  for (const std::string& name : {std::string(), std::string("q"), std::string(15, 'y'), long_name, nul_name, utf8_name}) {
    for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, std::int64_t{255}, std::int64_t{-256},
                                 std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::min(),
                                 std::numeric_limits<std::int64_t>::max()}) {
      const std::uint32_t u = 0xfffffffeu;
      INFO("name size " << name.size() << ", n " << n);
      CHECK(key({name, n, u}) == ks::tuple::pack("M", name, n, u));
      mixed::key_type back;  // and decodes back (the last integer read with one load when it can)
      REQUIRE(codec::decode(key({name, n, u}), back));
      CHECK(back == mixed::key_type{name, n, u});
      REQUIRE(codec::decode(ks::tuple::pack("M", name, n, static_cast<std::uint32_t>(n & 0xff)), back));
      CHECK(std::get<2>(back) == static_cast<std::uint32_t>(n & 0xff));
      CHECK(key({std::string_view(name), n, std::uint8_t{7}}) == ks::tuple::pack("M", name, n, std::uint32_t{7}));
      CHECK(key({name, static_cast<int>(n & 0x7fffffff), u}) ==
            ks::tuple::pack("M", name, static_cast<std::int64_t>(n & 0x7fffffff), u));
      std::string prefix;
      codec::encode_prefix(prefix, name, n);
      CHECK(prefix == ks::tuple::pack("M", name, n));
    }
  }
  std::string p;
  codec::encode_prefix(p, "abc");  // a string literal: its terminator is not part of the text
  CHECK(p == ks::tuple::pack("M", "abc"));
  const char with_nul[4] = {'a', '\0', 'b', '\0'};  // a char array holds the text up to its first NUL
  p.clear();
  codec::encode_prefix(p, with_nul);
  CHECK(p == ks::tuple::pack("M", "a"));
  const char unterminated[3] = {'a', 'b', 'c'};
  p.clear();
  codec::encode_prefix(p, unterminated);
  CHECK(p == ks::tuple::pack("M", "abc"));
  p.clear();
  CHECK_THROWS_WITH(codec::encode_prefix(p, std::string("bad \xff")), Catch::Contains("invalid UTF-8"));
}

}  // namespace key_codec_test
