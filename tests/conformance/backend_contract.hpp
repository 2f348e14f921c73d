// tests/conformance/backend_contract.hpp: the byte-level contract suite, templated on the backend.
//
// Checks a backend directly against <keyschema/backend.hpp>, below the typed store: point
// operations, batch order, unsigned byte order, cursor bounds in both directions, snapshot and
// cursor isolation, and a randomized differential run against keyschema::memory_backend (the
// reference implementation). A backend's conformance program includes it next to
// conformance.hpp, with the same factory, which provides for this suite
//   static std::unique_ptr<backend> open_backend(const std::filesystem::path& dir);
//   static constexpr bool accepts_empty_key;   // LMDB cannot store an empty key
// so registering the backend's conformance program registers both suites.
// Optional engine hooks used when present: compact_range(key_range) (moves data into table files
// while snapshots are open).
//
// Randomized cases run a fixed seed and Catch's --rng-seed: a failure reproduces with that seed.
#pragma once

#ifndef KEYSCHEMA_CONFORMANCE_FACTORY
#error "define KEYSCHEMA_CONFORMANCE_FACTORY (the backend factory type) before including backend_contract.hpp"
#endif

#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>
#include <keyschema/backend.hpp>
#include <keyschema/error.hpp>
#include <keyschema/memory_backend.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyschema::contract {

using contract_factory = KEYSCHEMA_CONFORMANCE_FACTORY;
using contract_backend = typename contract_factory::backend;
static_assert(keyschema::backend<contract_backend>);

using entries = std::vector<std::pair<std::string, std::string>>;

template <class B>
entries scan(const B& b, const key_range& r, const typename B::snapshot_type* snap = nullptr) {
  entries out;
  for (auto c = b.cursor(r, snap); c.valid(); c.next()) out.emplace_back(std::string(c.key()), std::string(c.value()));
  return out;
}

template <class B>
std::optional<std::string> get(const B& b, std::string_view key, const typename B::snapshot_type* snap = nullptr) {
  std::string v;
  if (!b.get(key, v, snap)) return std::nullopt;
  return v;
}

template <class B>
void put(B& b, std::string_view key, std::string_view value) {
  write_batch wb;
  wb.put(key, value);
  b.write(wb, write_options{.sync = false});
}

template <class B>
void erase(B& b, std::string_view key) {
  write_batch wb;
  wb.erase(key);
  b.write(wb, write_options{.sync = false});
}

// Moves data into the engine's table files when it has them (LevelDB), so reads merge levels.
template <class B>
void settle(B& b) {
  if constexpr (requires { b.compact_range(key_range{}); }) b.compact_range(key_range{});
}

// A fresh backend in its own directory.
struct contract_fixture {
  testing::temp_dir dir{"contract"};
  std::unique_ptr<contract_backend> db = contract_factory::open_backend(dir.path());
};

}  // namespace keyschema::contract

using namespace std::string_literals;

TEST_CASE("contract: point operations", "[contract]") {
  using namespace keyschema::contract;
  contract_fixture fx;
  auto& db = *fx.db;

  CHECK_FALSE(get(db, "missing"));
  put(db, "alpha", "1");
  CHECK(get(db, "alpha") == "1");
  CHECK_FALSE(get(db, "alph"));         // a prefix is another key
  CHECK_FALSE(get(db, "alpha\0"s));     // so is an extension

  SECTION("overwrite") {
    put(db, "alpha", "2");
    CHECK(get(db, "alpha") == "2");
  }
  SECTION("erase, and erasing a missing key is not an error") {
    erase(db, "alpha");
    CHECK_FALSE(get(db, "alpha"));
    erase(db, "never-written");
    CHECK_FALSE(get(db, "never-written"));
    CHECK(scan(db, {}).empty());
  }
  SECTION("binary keys and values, the empty value") {
    const std::string k0 = "\x00"s, k1 = "a\x00"s, k2 = "a\x00\xff"s, v = "\x00\x01\xff"s;
    put(db, k0, v);
    put(db, k1, "");  // empty values are values
    put(db, "\x00\xff"s, "\x01\x00\x02"s);
    CHECK(get(db, k0) == v);
    CHECK(get(db, k1) == "");
    CHECK(get(db, "\x00\xff"s) == "\x01\x00\x02"s);
    CHECK_FALSE(get(db, k2));
    CHECK_FALSE(get(db, "a\x01"s));
  }
  SECTION("the empty key, where the engine stores it") {
    if (!contract_factory::accepts_empty_key) {
      keyschema::write_batch wb;
      wb.put("", "empty key");
      CHECK_THROWS_AS(db.write(wb, {}), keyschema::limit_error);
      CHECK_FALSE(get(db, ""));
      return;
    }
    put(db, "", "empty key");
    CHECK(get(db, "") == "empty key");
    CHECK(scan(db, {}).front() == std::pair{""s, "empty key"s});
  }
  SECTION("a large value round-trips") {
    std::string big(3 << 20, '\0');
    std::mt19937 rng(7);
    for (char& c : big) c = static_cast<char>(rng());
    if (db.limits().max_entry_bytes < 3 + big.size()) {  // etcd: 1.5 MiB requests; refused, not split
      keyschema::write_batch wb;
      wb.put("big", big);
      CHECK_THROWS_AS(db.write(wb, {}), keyschema::limit_error);
      CHECK_FALSE(get(db, "big"));
      return;
    }
    put(db, "big", big);
    CHECK(get(db, "big") == big);
    settle(db);
    CHECK(get(db, "big") == big);
  }
}

TEST_CASE("contract: keys are ordered as unsigned bytes", "[contract]") {
  using namespace keyschema::contract;
  contract_fixture fx;
  auto& db = *fx.db;
  // Inserted out of order; a signed-char comparison would put \x80 and \xff before \x01.
  std::vector<std::string> sorted = {""s,     "\x00"s, "\x00\x00"s, "\x01"s,   "\x7f"s,
                                     "\x80"s, "\xfe\xff"s, "\xff"s, "\xff\x00"s};
  if (!contract_factory::accepts_empty_key) sorted.erase(sorted.begin());
  keyschema::write_batch wb;
  for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) wb.put(*it, "v" + *it);
  db.write(wb, {});

  std::vector<std::string> forward, backward;
  for (auto& [k, v] : scan(db, {})) forward.push_back(k);
  for (auto& [k, v] : scan(db, {"", "", true})) backward.push_back(k);
  CHECK(forward == sorted);
  CHECK(backward == std::vector<std::string>(sorted.rbegin(), sorted.rend()));
}

TEST_CASE("contract: a batch is applied in order and later operations on a key win", "[contract]") {
  using namespace keyschema::contract;
  contract_fixture fx;
  auto& db = *fx.db;
  put(db, "gone", "old");

  keyschema::write_batch wb;
  wb.put("x", "1");
  wb.put("x", "2");     // overwrite inside the batch
  wb.put("y", "1");
  wb.erase("y");        // put then erase: absent
  wb.erase("z");
  wb.put("z", "back");  // erase then put: present
  wb.put("c", "4");
  wb.erase("c");
  wb.erase("gone");     // erases an earlier commit
  wb.put("gone", "back");
  wb.erase("gone");     // ... and the last operation wins
  db.write(wb, {});

  CHECK(get(db, "x") == "2");
  CHECK_FALSE(get(db, "y"));
  CHECK(get(db, "z") == "back");
  CHECK_FALSE(get(db, "c"));
  CHECK_FALSE(get(db, "gone"));
  CHECK(scan(db, {}) == entries{{"x", "2"}, {"z", "back"}});
}

TEST_CASE("contract: cursors honour bounds in both directions", "[contract]") {
  using namespace keyschema::contract;
  contract_fixture fx;
  auto& db = *fx.db;

  SECTION("empty database") {
    CHECK(scan(db, {}).empty());
    CHECK(scan(db, {"", "", true}).empty());
    CHECK(scan(db, {"a", "z", true}).empty());
  }

  SECTION("a sparse key set") {
    keyschema::write_batch wb;
    for (const char* k : {"b", "d", "f", "h"}) wb.put(k, std::string("v") + k);
    db.write(wb, {});
    const auto keys = [&](const keyschema::key_range& r) {
      std::string out;
      for (auto& [k, v] : scan(db, r)) {
        CHECK(v == "v" + k);
        out += k;
      }
      return out;
    };
    // Forward: lower <= k < upper; an empty upper is unbounded.
    CHECK(keys({"", ""}) == "bdfh");
    CHECK(keys({"d", "h"}) == "df");  // upper is exclusive, lower inclusive
    CHECK(keys({"c", "g"}) == "df");  // bounds between keys
    CHECK(keys({"d", ""}) == "dfh");
    CHECK(keys({"", "b"}) == "");     // upper at the first key
    CHECK(keys({"i", ""}) == "");     // past the last key
    CHECK(keys({"d", "d"}) == "");    // empty range
    CHECK(keys({"f", "c"}) == "");    // inverted range
    // Reverse: starts at the last key < upper, stops before lower.
    CHECK(keys({"", "", true}) == "hfdb");
    CHECK(keys({"d", "h", true}) == "fd");  // h itself is excluded
    CHECK(keys({"c", "g", true}) == "fd");
    CHECK(keys({"", "z", true}) == "hfdb");  // upper past every key: starts at the last one
    CHECK(keys({"", "b", true}) == "");      // nothing below the first key
    CHECK(keys({"", "c", true}) == "b");
    CHECK(keys({"i", "", true}) == "");
    CHECK(keys({"d", "d", true}) == "");
    CHECK(keys({"f", "c", true}) == "");
  }

  SECTION("binary keys around 0x00, 0x7f, 0x80 and 0xff") {
    // Unsigned byte order: "b\x00" < "b\x7f" < "b\x80" < "b\xff".
    const std::vector<std::string> keys{"a", "ab", "b", "b\x00"s, "b\x7f", "b\x80", "b\xff", "c"};
    keyschema::write_batch w;
    for (const auto& k : keys) w.put(k, "v" + k);
    db.write(w, {});
    const auto all = [&](std::size_t from, std::size_t to) {  // keys[from, to) ascending
      entries e;
      for (std::size_t i = from; i < to; ++i) e.emplace_back(keys[i], "v" + keys[i]);
      return e;
    };
    const auto reversed = [](entries e) {
      std::reverse(e.begin(), e.end());
      return e;
    };
    CHECK(scan(db, {}) == all(0, 8));
    CHECK(scan(db, {"", "", true}) == reversed(all(0, 8)));
    CHECK(scan(db, {"ab", "b\x7f"}) == all(1, 4));
    CHECK(scan(db, {"ab", "b\x7f", true}) == reversed(all(1, 4)));
    CHECK(scan(db, {"aa", "b\x01"}) == all(1, 4));
    CHECK(scan(db, {"aa", "b\x01", true}) == reversed(all(1, 4)));
    CHECK(scan(db, {"b\x81", ""}) == all(6, 8));
    CHECK(scan(db, {"b\x81", "", true}) == reversed(all(6, 8)));
    CHECK(scan(db, {"b\x80", ""}) == all(5, 8));
    CHECK(scan(db, {"", "ab"}) == all(0, 1));
    CHECK(scan(db, {"", "ab", true}) == all(0, 1));
    CHECK(scan(db, {"c", "", true}) == all(7, 8));
    auto c = db.cursor({"", "b\x80", true}, nullptr);
    REQUIRE(c.valid());
    CHECK(c.key() == "b\x7f");
    CHECK_FALSE(db.cursor({"", "a", true}, nullptr).valid());
    CHECK(scan(db, {"b", "b"}).empty());
    CHECK(scan(db, {"b", "b", true}).empty());
    CHECK(scan(db, {"c", "a"}).empty());
    CHECK(scan(db, {"c", "a", true}).empty());
    CHECK(scan(db, {"d", ""}).empty());
    CHECK(scan(db, {"d", "", true}).empty());

    // A moved cursor keeps its position.
    auto m = db.cursor({"b", "", false}, nullptr);
    m.next();
    auto d = std::move(m);
    REQUIRE(d.valid());
    CHECK(d.key() == "b\x00"s);
    CHECK(d.value() == "vb\x00"s);
  }
}

TEST_CASE("contract: a cursor keeps its own copy of the bounds", "[contract]") {
  using namespace keyschema::contract;
  contract_fixture fx;
  auto& db = *fx.db;
  keyschema::write_batch wb;
  for (const char* k : {"a1", "a2", "a3", "b1"}) wb.put(k, "v");
  db.write(wb, {});

  for (bool reverse : {false, true}) {
    auto lower = std::make_unique<std::string>("a2");
    auto upper = std::make_unique<std::string>("b");
    auto c = db.cursor(keyschema::key_range{*lower, *upper, reverse}, nullptr);
    lower.reset();  // freed: a cursor that kept views would read freed memory (ASan)
    upper.reset();
    std::vector<std::string> seen;
    for (; c.valid(); c.next()) seen.emplace_back(c.key());
    CHECK(seen == (reverse ? std::vector<std::string>{"a3", "a2"} : std::vector<std::string>{"a2", "a3"}));
  }
}

TEST_CASE("contract: snapshots and cursors see one state while writes go on", "[contract]") {
  using namespace keyschema::contract;
  contract_fixture fx;
  auto& db = *fx.db;
  keyschema::write_batch wb;
  for (int i = 0; i < 100; ++i) wb.put("k" + std::to_string(1000 + i), "old");
  db.write(wb, {});
  const entries before = scan(db, {});

  const auto change_everything = [&] {
    keyschema::write_batch w;
    for (int i = 0; i < 100; i += 2) w.put("k" + std::to_string(1000 + i), "new");
    for (int i = 1; i < 100; i += 2) w.erase("k" + std::to_string(1000 + i));
    w.put("k0999", "inserted");
    w.put("k2000", "inserted");
    db.write(w, {});
  };

  SECTION("snapshot: get and cursors; copies share it and outlive the original") {
    auto snap = std::make_optional(db.snapshot());
    auto copy = std::make_optional(*snap);
    change_everything();
    settle(db);  // compaction must keep what a live snapshot sees
    CHECK(get(db, "k1001", &*snap) == "old");
    CHECK(get(db, "k1001") == std::nullopt);
    CHECK(get(db, "k1000") == "new");
    CHECK_FALSE(get(db, "k0999", &*snap));
    CHECK(scan(db, {}, &*snap) == before);
    CHECK(scan(db, {"k1050", "", true}, &*copy).size() == 50);
    CHECK(scan(db, {"k1050", "", false}, &*copy).size() == 50);
    snap.reset();
    CHECK(scan(db, {}, &*copy) == before);
    CHECK(get(db, "k1099", &*copy) == "old");
    copy.reset();
    CHECK(scan(db, {}).size() == 52);
  }
  SECTION("a cursor without a snapshot reads the state of its creation") {
    auto fwd = db.cursor({}, nullptr);
    auto rev = db.cursor({"", "", true}, nullptr);
    REQUIRE(fwd.valid());
    REQUIRE(rev.valid());
    CHECK(fwd.key() == "k1000");
    change_everything();
    entries seen_fwd, seen_rev;
    for (; fwd.valid(); fwd.next()) seen_fwd.emplace_back(std::string(fwd.key()), std::string(fwd.value()));
    for (; rev.valid(); rev.next()) seen_rev.emplace_back(std::string(rev.key()), std::string(rev.value()));
    CHECK(seen_fwd == before);
    CHECK(seen_rev == entries(before.rbegin(), before.rend()));
  }
  SECTION("a cursor keeps its snapshot alive") {
    std::optional<typename contract_backend::cursor_type> c;
    {
      const auto snap = db.snapshot();
      c.emplace(db.cursor({}, &snap));
    }
    change_everything();
    settle(db);
    std::size_t n = 0;
    for (; c->valid(); c->next(), ++n) CHECK(c->value() == "old");
    CHECK(n == before.size());
  }
}

namespace keyschema::contract {

// One randomized differential run: random batches over a small alphabet (shared prefixes,
// overwrites, erases), compared with memory_backend through gets and bounded scans in both
// directions, on the latest state and on a snapshot held across writes.
struct model_run {
  std::uint32_t seed;
  int rounds;
  int max_ops;              // per batch
  std::size_t max_padding;  // extra value bytes, so data reaches table files
  int check_every;          // rounds between comparisons
};

inline void run_against_model(contract_backend& db, const model_run& run) {
  keyschema::memory_backend ref;
  INFO("seed " << run.seed);
  std::mt19937 rng(run.seed);
  const std::string alphabet = "\x00\x01\x7f\x80\xfe\xff" "a"s;
  const std::size_t min_len = contract_factory::accepts_empty_key ? 0 : 1;
  const auto random_key = [&] {
    std::string k(min_len + rng() % 4, '\0');
    for (char& c : k) c = alphabet[rng() % alphabet.size()];
    return k;
  };
  const auto random_range = [&] {
    std::string a = random_key(), b = random_key();
    if (rng() % 2 && b < a) std::swap(a, b);
    if (rng() % 5 == 0) b.clear();  // unbounded
    if (rng() % 7 == 0) a.clear();
    return std::pair{a, b};
  };
  std::optional<typename contract_backend::snapshot_type> dsnap;
  std::optional<keyschema::memory_backend::snapshot_type> msnap;
  const auto compare = [&](int round) {
    for (int i = 0; i < 12; ++i) {
      const auto [lo, hi] = random_range();
      const bool reverse = rng() % 2 == 1;
      INFO("round " << round << " range [" << lo.size() << " bytes, " << hi.size() << " bytes) reverse " << reverse);
      REQUIRE(scan(db, {lo, hi, reverse}) == scan(ref, {lo, hi, reverse}));
      if (dsnap) REQUIRE(scan(db, {lo, hi, reverse}, &*dsnap) == scan(ref, {lo, hi, reverse}, &*msnap));
      const std::string k = random_key();
      REQUIRE(get(db, k) == get(ref, k));
      if (dsnap) REQUIRE(get(db, k, &*dsnap) == get(ref, k, &*msnap));
    }
    REQUIRE(scan(db, {}) == scan(ref, {}));
  };
  for (int round = 0; round < run.rounds; ++round) {
    keyschema::write_batch wb;
    const int n = 1 + static_cast<int>(rng() % static_cast<unsigned>(run.max_ops));
    for (int i = 0; i < n; ++i) {
      if (rng() % 3 == 0) wb.erase(random_key());
      else wb.put(random_key(), std::to_string(rng() % 1000) + std::string(rng() % (run.max_padding + 1), 'v'));
    }
    db.write(wb, {.sync = false});  // logic, not durability
    ref.write(wb, {});
    if (round % 10 == 3) {  // a snapshot taken now must keep matching while writes go on
      dsnap.emplace(db.snapshot());
      msnap.emplace(ref.snapshot());
    }
    if (round % 20 == 11) settle(db);  // move data into table files, drop tombstones
    if (round % run.check_every == run.check_every - 1) compare(round);
  }
  compare(run.rounds);
  CHECK_FALSE(scan(db, {}).empty());
}

}  // namespace keyschema::contract

namespace keyschema::contract {

// A write transaction of db used after its commit: each use is a usage_error, nothing is written.
// Using one after it ended violates a REQUIRES of the concept; keyschema's adapters check it.
template <class B>
void check_ended_write_transaction(B& db) {
  keyschema::write_batch wb;
  wb.put("a", "1");
  db.write(wb, {});
  auto t = db.begin_write();
  t.commit(keyschema::write_batch{}, {});
  CHECK_FALSE(t.is_open());
  std::string v;
  CHECK_THROWS_AS(t.get("a", v), keyschema::usage_error);
  CHECK_THROWS_AS(t.cursor(keyschema::key_range{}), keyschema::usage_error);
  keyschema::write_batch erase;
  erase.erase("a");
  CHECK_THROWS_AS(t.commit(erase, {}), keyschema::usage_error);
  CHECK(db.get("a", v, nullptr));  // nothing was written
}

}  // namespace keyschema::contract

TEST_CASE("contract: a write transaction used after it ended is a usage_error", "[contract][error]") {
  using namespace keyschema::contract;
  if constexpr (keyschema::backend_with_write_transaction<contract_backend>) {
    contract_fixture fx;
    check_ended_write_transaction(*fx.db);
  } else {
    SUCCEED("the backend has no write transactions");
  }
}

TEST_CASE("contract: matches memory_backend on random batches", "[contract][model]") {
  using namespace keyschema::contract;
  SECTION("small batches, compared after each") {
    contract_fixture fx;
    run_against_model(*fx.db, {20240611u, 120, 12, 0, 1});
  }
  SECTION("large batches with padded values") {
    contract_fixture fx;
    run_against_model(*fx.db, {7u, 60, 40, 2000, 5});
  }
  SECTION("Catch's --rng-seed") {
    contract_fixture fx;
    run_against_model(*fx.db, {Catch::rngSeed(), 60, 40, 2000, 5});
  }
}

// backend_with_write_guards (required of backends other processes can write): a guarded write or
// commit applies its batch only when every condition holds, compared byte for byte (a prefix, an
// extension or the empty value is another value; an empty value is not a missing key), and
// otherwise returns false having applied nothing.
namespace keyschema::contract {
template <class B>
void check_guarded_writes(B& db) {
  using keyschema::write_guard;
  put(db, "guard", "v1");
  put(db, "empty", "");
  keyschema::write_batch wb;
  wb.put("data", "written");
  auto guarded = [&](std::initializer_list<write_guard> g) {
    return db.write(wb, keyschema::write_options{.sync = false}, keyschema::write_guards(g.begin(), g.size()));
  };
  // Each failing condition alone, then with one that holds.
  const std::string extended("v1\0", 3);
  for (const write_guard& bad : {write_guard{"guard", "v2", true}, write_guard{"guard", "v", true},
                                 write_guard{"guard", extended, true}, write_guard{"guard", {}, false},
                                 write_guard{"missing", "", true}, write_guard{"empty", {}, false},
                                 write_guard{"empty", "x", true}}) {
    INFO("condition on " << std::string(bad.key) << (bad.exists ? " holding " + std::string(bad.value) : " absent"));
    CHECK_FALSE(guarded({bad}));
    CHECK_FALSE(guarded({write_guard{"guard", "v1", true}, bad}));
    CHECK_FALSE(get(db, "data"));
  }
  CHECK(guarded({write_guard{"guard", "v1", true}, write_guard{"missing", {}, false}, write_guard{"empty", "", true}}));
  CHECK(get(db, "data") == "written");
  CHECK(guarded({}));  // no condition: an ordinary write

  // Several conditions on neighbouring and distant keys, in any order (an engine may find the
  // next key by stepping from the previous one).
  for (int i = 0; i < 6; ++i) put(db, "h" + std::to_string(i), "x");
  CHECK(guarded({write_guard{"h5", "x", true}, write_guard{"guard", "v1", true}}));
  CHECK(guarded({write_guard{"h5", "x", true}, write_guard{"h3", "x", true}, write_guard{"h4", "x", true}}));
  CHECK(guarded({write_guard{"h5", "x", true}, write_guard{"h25", {}, false}, write_guard{"zz", {}, false},
                 write_guard{"a", {}, false}, write_guard{"h0", "x", true}}));
  CHECK_FALSE(guarded({write_guard{"h5", "x", true}, write_guard{"h2", "y", true}}));
  CHECK_FALSE(guarded({write_guard{"h5", "x", true}, write_guard{"h25", "x", true}}));
  CHECK_FALSE(guarded({write_guard{"h0", "x", true}, write_guard{"h5", {}, false}}));

  // A guarded write right after another with the same conditions still sees what changed between
  // (an engine may skip reading the keys again only when nothing was committed since): a plain
  // write, a guarded write of another condition, or the guarded write's own batch.
  CHECK(guarded({write_guard{"guard", "v1", true}}));
  put(db, "guard", "v1-changed");
  CHECK_FALSE(guarded({write_guard{"guard", "v1", true}}));
  put(db, "guard", "v1");
  CHECK(guarded({write_guard{"guard", "v1", true}}));
  {
    keyschema::write_batch self;
    self.put("guard", "v1-own");
    const write_guard g[] = {write_guard{"guard", "v1", true}};
    CHECK(db.write(self, keyschema::write_options{}, g));
    CHECK_FALSE(db.write(wb, keyschema::write_options{}, g));
    put(db, "guard", "v1");
  }
  CHECK(guarded({write_guard{"guard", "v1", true}}));
  {
    auto t = db.begin_write();
    keyschema::write_batch self;
    self.erase("guard");
    const write_guard g[] = {write_guard{"guard", "v1", true}};
    CHECK(t.commit(self, keyschema::write_options{}, g));
  }
  CHECK_FALSE(guarded({write_guard{"guard", "v1", true}}));
  put(db, "guard", "v1");

  // In a write transaction: checked on the state it reads, before its batch.
  keyschema::write_batch tb;
  tb.put("tx", "committed");
  {
    auto t = db.begin_write();
    std::string v;
    CHECK(t.get("guard", v));
    const write_guard g[] = {write_guard{"guard", "v2", true}};
    CHECK_FALSE(t.commit(tb, keyschema::write_options{}, g));
    CHECK_FALSE(t.is_open());
  }
  CHECK_FALSE(get(db, "tx"));
  {
    auto t = db.begin_write();
    const write_guard g[] = {write_guard{"guard", "v1", true}, write_guard{"missing", {}, false}};
    CHECK(t.commit(tb, keyschema::write_options{}, g));
  }
  CHECK(get(db, "tx") == "committed");

  if constexpr (keyschema::backend_with_erase_range<B>) {
    const write_guard g[] = {write_guard{"guard", "v2", true}};
    CHECK_FALSE(db.erase_range(keyschema::key_range{"d", "e"}, keyschema::write_options{}, g));
    CHECK(get(db, "data") == "written");
    const write_guard ok[] = {write_guard{"guard", "v1", true}};
    CHECK(db.erase_range(keyschema::key_range{"d", "e"}, keyschema::write_options{}, ok));
    CHECK_FALSE(get(db, "data"));
  }
}
}  // namespace keyschema::contract

namespace keyschema::contract {
// In a template, so that a backend without guarded writes instantiates nothing of the above.
template <class B>
void guarded_writes_case() {
  if constexpr (!keyschema::backend_with_write_guards<B>) {
    SUCCEED("the backend does not model backend_with_write_guards (one process at a time)");
  } else {
    contract_fixture fx;
    check_guarded_writes(*fx.db);
  }
}
}  // namespace keyschema::contract

TEST_CASE("contract: guarded writes apply only when every condition holds", "[contract][guards]") {
  keyschema::contract::guarded_writes_case<keyschema::contract::contract_backend>();
}
