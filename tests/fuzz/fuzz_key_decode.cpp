// tests/fuzz/fuzz_key_decode.cpp: typed key decoding for every keyspace of the broker schema
// (tests/conformance/broker_schema.hpp), directly and through a store's scans.
//
// Input: one stored key, arbitrary bytes. Properties:
//   - only keyschema::decode_error is ever thrown (by key_codec::decode, matches and scans);
//   - a keyspace that decodes the key re-encodes the decoded fields to exactly the key
//     (canonical), and its matches() agrees; a keyspace that does not decode it does not match it;
//   - at most one keyspace decodes any key (the schema check's promise: keyspaces are disjoint);
//   - stored in a store (memory backend), the key is yielded by the scan of exactly the keyspace
//     that decodes it, once, with the same fields; every other keyspace's scan yields nothing.
#include "fuzz_support.hpp"

#include "../conformance/broker_schema.hpp"

#include <keyschema/keyschema.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

namespace ks = keyschema;
namespace fz = keyschema::fuzz;
namespace bk = keyschema::conformance;

namespace {

using store_type = ks::store<bk::broker, ks::memory_backend>;

// Decodes `in` as KS; returns 1 when KS decodes it, 0 otherwise (checking the properties above).
template <class KS>
int decode_as(std::string_view in) {
  using codec = ks::detail::key_codec<KS>;
  typename KS::key_type key{};
  bool decoded = false;
  if (!fz::only_decode_errors([&] { decoded = codec::decode(in, key); })) return 0;
  bool matched = false;
  const bool matches_returned = fz::only_decode_errors([&] { matched = codec::matches(in); });
  if (!decoded) {
    KEYSCHEMA_FUZZ_CHECK(!matches_returned || !matched,
                         std::string(KS::name) + ": matches() accepts a key decode() rejects");
    return 0;
  }
  KEYSCHEMA_FUZZ_CHECK(matches_returned && matched,
                       std::string(KS::name) + ": decode() accepts a key matches() rejects");
  std::string again;
  codec::encode(again, key);
  KEYSCHEMA_FUZZ_CHECK(again == in, std::string(KS::name) +
                                        ": decoded key re-encodes to other bytes: " + fz::hex(again));
  return 1;
}

// Scans KS over the store holding only the schema record and `in`; returns how many entries the
// scan yielded (-1 when it threw decode_error).
template <class KS>
int scan_count(const store_type& db, std::string_view in) {
  int n = 0;
  const bool ok = fz::only_decode_errors([&] {
    for (const auto& e : db.scan<KS>()) {
      std::string again;
      ks::detail::key_codec<KS>::encode(again, e.key);
      KEYSCHEMA_FUZZ_CHECK(again == in, std::string(KS::name) + ": scan yielded a key that is not the stored one");
      ++n;
    }
  });
  return ok ? n : -1;
}

template <class... KS>
void check_all(std::string_view in, std::tuple<KS...>*) {
  const int decoders[] = {decode_as<KS>(in)...};
  int total = 0;
  for (const int d : decoders) total += d;
  KEYSCHEMA_FUZZ_CHECK(total <= 1, "more than one keyspace decodes the same key");

  if (in.empty() || static_cast<unsigned char>(in[0]) == 0xff) return;  // not a key a store holds
  static store_type db;
  std::string value;  // a value the decoding keyspace can read (its value type's default)
  std::size_t i = 0;
  ((decoders[i++] == 1 ? ks::value_traits<typename KS::value_type>::encode(value, typename KS::value_type{}) : void()),
   ...);
  ks::write_batch b;
  b.put(in, value);
  db.unsafe_backend().write(b, {});
  const int counts[] = {scan_count<KS>(db, in)...};
  ks::write_batch e;
  e.erase(in);
  db.unsafe_backend().write(e, {});
  for (std::size_t k = 0; k < sizeof...(KS); ++k) {
    if (counts[k] < 0) continue;  // the scan reported the key as malformed
    KEYSCHEMA_FUZZ_CHECK(counts[k] == decoders[k], "keyspace #" + std::to_string(k) + " scan yielded " +
                                                       std::to_string(counts[k]) + " entries, decode says " +
                                                       std::to_string(decoders[k]));
  }
}

template <class S>
struct keyspaces_of;
template <class... KS>
struct keyspaces_of<ks::schema<KS...>> {
  using type = std::tuple<KS...>;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fz::input_view(data, size);
  check_all(in, static_cast<keyspaces_of<bk::broker>::type*>(nullptr));
  return 0;
}
