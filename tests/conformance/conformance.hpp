// tests/conformance/conformance.hpp: the backend conformance suite (single-threaded cases),
// common part: the factory, the fixture and the helpers shared by the topic files.
//
// Every case runs through the typed store API on the broker schema (broker_schema.hpp) and must
// pass unchanged on every backend. The cases live in one file per topic under cases/ (point
// operations, scans, batches, transactions, snapshots, erase, persistence); each includes this
// header. A backend is registered with one line in tests/CMakeLists.txt:
//
//   keyschema_add_conformance_test(memory FACTORY keyschema::conformance::memory_factory)
//
// which compiles every topic file for that backend (KEYSCHEMA_CONFORMANCE_FACTORY and
// KEYSCHEMA_CONFORMANCE_FACTORY_HEADER, <conformance/<backend>_factory.hpp>, are set per target)
// into one program, conformance_<backend>, in batches of KEYSCHEMA_CONFORMANCE_BATCH topic files
// per object (4 by default: two objects per backend, built in parallel; 1: one per topic; topic
// files therefore share nothing file-local: helpers here are inline). Cases a backend
// cannot take part in (reopening a memory store) say so with a Catch2 WARN instead of passing
// silently. The multi-threaded cases live in conformance_concurrency.hpp.
//
// Randomized cases use fixed seeds: a failure reproduces on every run.
#pragma once

#if !defined(KEYSCHEMA_CONFORMANCE_FACTORY) || !defined(KEYSCHEMA_CONFORMANCE_FACTORY_HEADER)
#error "conformance.hpp: compile with KEYSCHEMA_CONFORMANCE_FACTORY and _FACTORY_HEADER defined (keyschema_add_conformance_test)"
#endif

#include KEYSCHEMA_CONFORMANCE_FACTORY_HEADER

#include <conformance/broker_schema.hpp>
#include <conformance/conformance_support.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>
#include <keyschema/keyschema.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace keyschema::conformance {

using backend_factory = KEYSCHEMA_CONFORMANCE_FACTORY;
using test_fixture = fixture<backend_factory>;

inline constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();
inline constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();

// Destinations chosen to break hand-written key schemas: prefixes of each other, embedded NULs,
// the empty name, names equal to the schema's literals, the old delimiters '.' and ':'.
inline std::vector<std::string> tricky_destinations() {
  return {"q",
          "q1",
          std::string("q\0x", 3),
          std::string("q\0", 2),
          "",
          "MESSAGE_COUNT",
          "MESSAGE_METADATA",
          "MESSAGE_EXPIRATION_TIME",
          "DESTINATION",
          "a.b",
          "a:b",
          "a",
          "queue.7:MESSAGE_METADATA:9"};
}

// Message ids around the decimal-string bug ("10" < "9") and the integer encoding's size steps.
inline std::vector<std::uint64_t> id_pool() {
  return {0,   1,   2,    9,          10,          11,          99,          100,
          101, 255, 256,  65535,      65536,       1ull << 32,  (1ull << 63) - 1,
          1ull << 63,     u64_max - 1, u64_max};
}

inline std::vector<std::uint64_t> ids_of(const std::vector<entry<message_metadata>>& es) {
  std::vector<std::uint64_t> out;
  for (const auto& e : es) out.push_back(e.get<"message_id">());
  return out;
}

template <class View>
std::vector<typename View::entry_type> entries(const View& v) {
  std::vector<typename View::entry_type> out;
  for (const auto& e : v) out.push_back(e);
  return out;
}

// Random value bytes, including NUL and 0xFF.
template <class Rng>
ks::bytes random_value(Rng& rng) {
  static constexpr char alphabet[] = {'\0', '\xff', 'a', 'b', '.', ':', '\x01', '\xfe'};
  std::string s(rng() % 9, '\0');
  for (char& c : s) c = alphabet[rng() % sizeof alphabet];
  return ks::bytes(std::move(s));
}

// A 1 MiB value in which every byte value occurs.
inline ks::bytes large_value(unsigned salt) {
  std::string s(std::size_t{1} << 20, '\0');
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>((i * 131 + (i >> 11) + salt) & 0xff);
  return ks::bytes(std::move(s));
}

inline bool is_finite_key_limit(std::size_t max) { return max < (std::size_t{1} << 30); }

// Whether the backend limits key + value of one operation (LevelDB) and not only the key.
template <class Store>
bool entry_limit_counts_value(const Store& db) {
  return db.backend().limits().max_entry_bytes != ks::backend_limits::unlimited;
}

}  // namespace keyschema::conformance
