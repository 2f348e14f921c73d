// tests/unit/lmdb_backend_test.cpp: byte-level tests of keyschema::lmdb_backend.
//
// Point operations, batches, bounded cursors in both directions, snapshot isolation, persistence,
// map growth and its ceiling, and every error the adapter documents. A randomized run compares
// the adapter with memory_backend, the reference implementation. Multi-threaded tests live in
// lmdb_backend_concurrency_test.cpp.
#include <keyschema/lmdb.hpp>
#include <keyschema/memory_backend.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace ks = keyschema;
using ks::testing::temp_dir;
using namespace std::string_literals;

static_assert(ks::backend<ks::lmdb_backend>);
static_assert(!std::is_copy_constructible_v<ks::lmdb_backend>);

namespace {

using entries = std::vector<std::pair<std::string, std::string>>;

constexpr std::size_t kib = 1024;

template <class B>
std::optional<std::string> get(const B& b, std::string_view key, const typename B::snapshot_type* snap = nullptr) {
  std::string v;
  if (!b.get(key, v, snap)) return std::nullopt;
  return v;
}

template <class B>
entries scan(const B& b, std::string_view lower, std::string_view upper, bool reverse = false,
             const typename B::snapshot_type* snap = nullptr) {
  entries out;
  for (auto c = b.cursor(ks::key_range{lower, upper, reverse}, snap); c.valid(); c.next()) {
    out.emplace_back(std::string(c.key()), std::string(c.value()));
  }
  return out;
}

void put(ks::lmdb_backend& b, std::string_view k, std::string_view v, bool sync = false) {
  ks::write_batch w;
  w.put(k, v);
  b.write(w, ks::write_options{sync});
}

void erase(ks::lmdb_backend& b, std::string_view k) {
  ks::write_batch w;
  w.erase(k);
  b.write(w, {});
}

ks::lmdb_options small_map(std::size_t map, std::size_t max) {
  ks::lmdb_options o;
  o.map_size = map;
  o.max_map_size = max;
  return o;
}

// A batch of `count` puts of `value_size` bytes under prefix.
ks::write_batch bulk(std::string_view prefix, int first, int count, std::size_t value_size) {
  ks::write_batch w;
  for (int i = first; i < first + count; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "%08d", i);
    w.put(std::string(prefix) + key, std::string(value_size, static_cast<char>('a' + i % 26)));
  }
  return w;
}

}  // namespace

TEST_CASE("lmdb_backend: point operations", "[lmdb]") {
  temp_dir dir("lmdb-point");
  ks::lmdb_backend db(dir.path() / "db");

  CHECK_FALSE(get(db, "missing"));
  put(db, "alpha", "1");
  put(db, "beta", "");  // empty values are values
  put(db, "\x00\xff"s, "\x01\x00\x02"s);
  CHECK(get(db, "alpha") == "1");
  CHECK(get(db, "beta") == "");
  CHECK(get(db, "\x00\xff"s) == "\x01\x00\x02"s);
  CHECK_FALSE(get(db, "alph"));
  CHECK_FALSE(get(db, "alpha\0"s));

  put(db, "alpha", "overwritten");
  CHECK(get(db, "alpha") == "overwritten");

  erase(db, "alpha");
  CHECK_FALSE(get(db, "alpha"));
  erase(db, "never-written");  // erasing a missing key is not an error
  CHECK(scan(db, "", "") == entries{{"\x00\xff"s, "\x01\x00\x02"s}, {"beta", ""}});
}

TEST_CASE("lmdb_backend: later operations on the same key win within a batch", "[lmdb]") {
  temp_dir dir("lmdb-batch-order");
  ks::lmdb_backend db(dir.path());
  put(db, "gone", "old");
  ks::write_batch w;
  w.put("a", "1");
  w.put("a", "2");
  w.erase("b");
  w.put("b", "3");
  w.put("c", "4");
  w.erase("c");
  w.erase("gone");
  w.put("gone", "back");
  w.erase("gone");
  db.write(w, {});
  CHECK(scan(db, "", "") == entries{{"a", "2"}, {"b", "3"}});
}

TEST_CASE("lmdb_backend: cursors honour bounds in both directions", "[lmdb]") {
  temp_dir dir("lmdb-cursor");
  ks::lmdb_backend db(dir.path());

  SECTION("empty database") {
    CHECK(scan(db, "", "").empty());
    CHECK(scan(db, "", "", true).empty());
    CHECK(scan(db, "a", "z", true).empty());
  }

  // Unsigned byte order: "b\x00" < "b\x7f" < "b\x80" < "b\xff".
  const std::vector<std::string> keys{"a", "ab", "b", "b\x00"s, "b\x7f", "b\x80", "b\xff", "c"};
  ks::write_batch w;
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

  SECTION("unbounded") {
    CHECK(scan(db, "", "") == all(0, 8));
    CHECK(scan(db, "", "", true) == reversed(all(0, 8)));
  }
  SECTION("lower bound is inclusive, upper bound exclusive") {
    CHECK(scan(db, "ab", "b\x7f") == all(1, 4));
    CHECK(scan(db, "ab", "b\x7f", true) == reversed(all(1, 4)));
  }
  SECTION("bounds that are not stored keys") {
    CHECK(scan(db, "aa", "b\x01") == all(1, 4));
    CHECK(scan(db, "aa", "b\x01", true) == reversed(all(1, 4)));
    CHECK(scan(db, "b\x81", "") == all(6, 8));
    CHECK(scan(db, "b\x81", "", true) == reversed(all(6, 8)));
  }
  SECTION("reverse cursors start at the last key below upper") {
    auto c = db.cursor({"", "b\x80", true}, nullptr);
    REQUIRE(c.valid());
    CHECK(c.key() == "b\x7f");
    auto d = db.cursor({"", "zzz", true}, nullptr);
    REQUIRE(d.valid());
    CHECK(d.key() == "c");
    CHECK_FALSE(db.cursor({"", "a", true}, nullptr).valid());  // nothing below the first key
  }
  SECTION("only a lower or only an upper bound") {
    CHECK(scan(db, "b\x80", "") == all(5, 8));
    CHECK(scan(db, "", "ab") == all(0, 1));
    CHECK(scan(db, "", "ab", true) == all(0, 1));
    CHECK(scan(db, "c", "", true) == all(7, 8));
  }
  SECTION("empty and inverted ranges select nothing") {
    CHECK(scan(db, "b", "b").empty());
    CHECK(scan(db, "b", "b", true).empty());
    CHECK(scan(db, "c", "a").empty());
    CHECK(scan(db, "c", "a", true).empty());
    CHECK(scan(db, "d", "").empty());
    CHECK(scan(db, "d", "", true).empty());
  }
  SECTION("the cursor copies its bounds") {
    std::string lower = "ab", upper = "b\x7f";
    auto c = db.cursor({lower, upper, false}, nullptr);
    lower.assign("zzzz");
    upper.assign("a");
    entries got;
    for (; c.valid(); c.next()) got.emplace_back(std::string(c.key()), std::string(c.value()));
    CHECK(got == all(1, 4));
  }
  SECTION("a moved cursor keeps its position") {
    auto c = db.cursor({"b", "", false}, nullptr);
    c.next();
    auto d = std::move(c);
    CHECK_FALSE(c.valid());  // NOLINT(bugprone-use-after-move): moved-from cursors are invalid
    REQUIRE(d.valid());
    CHECK(d.key() == "b\x00"s);
    CHECK(d.value() == "vb\x00"s);
  }
}

TEST_CASE("lmdb_backend: matches memory_backend on random batches", "[lmdb]") {
  temp_dir dir("lmdb-model");
  ks::lmdb_backend db(dir.path());
  ks::memory_backend model;
  std::mt19937 rng(20240611u);
  const std::string alphabet("\x00\x01\x7f\x80\xff"
                             "a",
                             6);
  const auto random_key = [&] {
    std::string k(1 + rng() % 3, '\0');
    for (char& ch : k) ch = alphabet[rng() % alphabet.size()];
    return k;
  };
  const auto random_bound = [&] { return rng() % 4 == 0 ? std::string() : random_key(); };

  std::optional<ks::lmdb_backend::snapshot_type> db_snap;
  std::optional<ks::memory_backend::snapshot_type> model_snap;
  for (int round = 0; round < 120; ++round) {
    ks::write_batch w;
    const int ops = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < ops; ++i) {
      if (rng() % 3 == 0) w.erase(random_key());
      else w.put(random_key(), std::to_string(rng() % 1000));
    }
    db.write(w, {.sync = false});  // logic, not durability
    model.write(w, {});
    if (round % 30 == 10) {  // keep a snapshot for a while and compare it too
      db_snap.emplace(db.snapshot());
      model_snap.emplace(model.snapshot());
    }
    for (int q = 0; q < 6; ++q) {
      const std::string lo = random_bound(), hi = random_bound();
      const bool rev = (rng() & 1) != 0;
      INFO("round " << round << " query " << q << " reverse " << rev);
      REQUIRE(scan(db, lo, hi, rev) == scan(model, lo, hi, rev));
      if (db_snap) REQUIRE(scan(db, lo, hi, rev, &*db_snap) == scan(model, lo, hi, rev, &*model_snap));
      const std::string k = random_key();
      REQUIRE(get(db, k) == get(model, k));
    }
  }
  CHECK(scan(db, "", "") == scan(model, "", ""));
  CHECK_FALSE(scan(db, "", "").empty());
}

TEST_CASE("lmdb_backend: snapshots and cursors see one state while writes go on", "[lmdb]") {
  temp_dir dir("lmdb-snapshot");
  ks::lmdb_backend db(dir.path());
  ks::write_batch w;
  w.put("k1", "a");
  w.put("k2", "a");
  w.put("k3", "a");
  db.write(w, {});

  auto snap = db.snapshot();
  auto live_cursor = db.cursor({"k", "l", false}, nullptr);  // private snapshot taken now
  REQUIRE(live_cursor.valid());
  CHECK(live_cursor.key() == "k1");

  ks::write_batch w2;
  w2.put("k1", "b");
  w2.erase("k2");
  w2.put("k25", "new");
  w2.put("k4", "new");
  db.write(w2, {});

  CHECK(get(db, "k1", &snap) == "a");
  CHECK(get(db, "k2", &snap) == "a");
  CHECK_FALSE(get(db, "k25", &snap));
  CHECK(get(db, "k1") == "b");
  CHECK_FALSE(get(db, "k2"));
  CHECK(scan(db, "k", "l", false, &snap) == entries{{"k1", "a"}, {"k2", "a"}, {"k3", "a"}});
  CHECK(scan(db, "k", "l", true, &snap) == entries{{"k3", "a"}, {"k2", "a"}, {"k1", "a"}});
  CHECK(scan(db, "k", "l") == entries{{"k1", "b"}, {"k25", "new"}, {"k3", "a"}, {"k4", "new"}});

  // The cursor opened before the write keeps reading its own state.
  entries rest;
  for (live_cursor.next(); live_cursor.valid(); live_cursor.next()) {
    rest.emplace_back(std::string(live_cursor.key()), std::string(live_cursor.value()));
  }
  CHECK(rest == entries{{"k2", "a"}, {"k3", "a"}});

  // A copy outlives the original; a cursor outlives the snapshot it reads.
  auto copy = std::make_optional(snap);
  auto on_snap = db.cursor({"k2", "", false}, &snap);
  { auto gone = std::move(snap); }
  CHECK(get(db, "k2", &*copy) == "a");
  copy.reset();
  REQUIRE(on_snap.valid());
  CHECK(on_snap.key() == "k2");
  on_snap.next();
  REQUIRE(on_snap.valid());
  CHECK(on_snap.key() == "k3");
  on_snap.next();
  CHECK_FALSE(on_snap.valid());
}

TEST_CASE("lmdb_backend: a batch that fails a limit writes nothing", "[lmdb]") {
  temp_dir dir("lmdb-atomic");
  ks::lmdb_backend db(dir.path());
  put(db, "keep", "1");

  const std::string too_long(db.limits().max_key_bytes + 1, 'k');
  for (int bad = 0; bad < 3; ++bad) {
    INFO("bad operation " << bad << ": too long key, empty key, erase of an empty key");
    ks::write_batch w;
    w.put("first", "x");
    w.erase("keep");
    if (bad == 0) w.put(too_long, "x");
    if (bad == 1) w.put("", "x");
    if (bad == 2) w.erase("");
    w.put("last", "x");
    CHECK_THROWS_AS(db.write(w, {}), ks::limit_error);
    CHECK(scan(db, "", "") == entries{{"keep", "1"}});
  }
}

TEST_CASE("lmdb_backend: key size limits", "[lmdb]") {
  temp_dir dir("lmdb-keysize");
  ks::lmdb_backend db(dir.path());
  const std::size_t max = db.limits().max_key_bytes;
  CHECK(max == static_cast<std::size_t>(mdb_env_get_maxkeysize(db.native())));
  CHECK(db.limits().max_value_bytes == std::size_t{0xffffffffu});
  CHECK(db.limits().max_entry_bytes == ks::backend_limits::unlimited);
  CHECK(db.limits().max_ops_per_write == ks::backend_limits::unlimited);
  REQUIRE(max > 1);

  const std::string longest(max, 'x');
  put(db, longest, "ok");
  put(db, "y", "after");
  CHECK(get(db, longest) == "ok");

  SECTION("too long: limit_error names the size and the limit") {
    try {
      put(db, std::string(max + 1, 'x'), "no");
      FAIL("write accepted a key longer than limits().max_key_bytes");
    } catch (const ks::limit_error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains(std::to_string(max + 1) + " bytes"));
      CHECK_THAT(what, Catch::Contains(std::to_string(max) + " bytes"));
    }
    CHECK_FALSE(get(db, std::string(max + 1, 'x')));
  }
  SECTION("empty: limit_error") {
    try {
      put(db, "", "no");
      FAIL("write accepted an empty key");
    } catch (const ks::limit_error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("empty key"));
    }
    CHECK_FALSE(get(db, ""));
  }
  SECTION("cursor bounds longer than any storable key") {
    // Only `longest` lies between longest and longest + "\x00"...; the cursor must step over it.
    CHECK(scan(db, longest + "a", "") == entries{{"y", "after"}});
    CHECK(scan(db, longest + "a", "", true) == entries{{"y", "after"}});
    CHECK(scan(db, "", longest + "a") == entries{{longest, "ok"}});
    CHECK(scan(db, "", longest + "a", true) == entries{{longest, "ok"}});
    CHECK(scan(db, longest, longest + "a") == entries{{longest, "ok"}});
    CHECK(scan(db, longest + "a", longest + "b").empty());
    CHECK(scan(db, longest + "a", longest + "b", true).empty());
  }
}

TEST_CASE("lmdb_backend: data persists across reopen", "[lmdb]") {
  temp_dir dir("lmdb-reopen");
  const auto path = dir.path() / "env";
  std::size_t grown = 0;
  {
    ks::lmdb_backend db(path, small_map(64 * kib, 64 << 20));
    put(db, "plain", "1");
    put(db, "synced", "2", true);
    db.write(bulk("bulk/", 0, 300, 1000), {});  // about 300 KiB: the map grows
    grown = db.map_size();
    CHECK(grown > 64 * kib);
    put(db, "last", "3");  // this commit records the grown map size in the file
    db.write(ks::write_batch{}, ks::write_options{true});  // flushes, writes nothing
  }
  ks::lmdb_backend db(path, small_map(64 * kib, 64 << 20));
  CHECK(get(db, "plain") == "1");
  CHECK(get(db, "synced") == "2");
  CHECK(scan(db, "bulk/", "bulk0").size() == 300);
  CHECK(db.map_size() >= grown);  // the grown map is kept, not shrunk to map_size
}

TEST_CASE("lmdb_backend: durable by default; a no-sync write leaves MDB_NOSYNC cleared for the others", "[lmdb]") {
  STATIC_REQUIRE(ks::write_options{}.sync);
  temp_dir dir("lmdb-sync");
  ks::lmdb_backend db(dir.path());
  unsigned flags = 0;
  REQUIRE(mdb_env_get_flags(db.native(), &flags) == MDB_SUCCESS);
  CHECK((flags & MDB_NOSYNC) == 0);
  CHECK((flags & MDB_NOTLS) != 0);
  put(db, "a", "1", false);
  REQUIRE(mdb_env_get_flags(db.native(), &flags) == MDB_SUCCESS);
  CHECK((flags & MDB_NOSYNC) == 0);
  put(db, "b", "2", true);
  CHECK(get(db, "a") == "1");
  CHECK(get(db, "b") == "2");
}

TEST_CASE("lmdb_backend: the map grows transparently", "[lmdb]") {
  temp_dir dir("lmdb-grow");
  ks::lmdb_backend db(dir.path(), small_map(32 * kib, 256 << 20));
  const std::size_t initial = db.map_size();
  CHECK(initial <= 64 * kib);

  SECTION("many small batches") {
    for (int i = 0; i < 64; ++i) db.write(bulk("k/", i * 16, 16, 2000), {.sync = false});
    CHECK(scan(db, "k/", "k0").size() == 64 * 16);
  }
  SECTION("one batch much larger than the map") {
    db.write(bulk("k/", 0, 1000, 2000), {});  // about 2 MiB in one commit
    CHECK(scan(db, "k/", "k0").size() == 1000);
  }
  SECTION("a single value larger than the map") {
    put(db, "big", std::string(1 << 20, 'b'));
    CHECK(get(db, "big") == std::string(1 << 20, 'b'));
  }
  CHECK(db.map_size() > initial);
  MDB_envinfo info;
  REQUIRE(mdb_env_info(db.native(), &info) == MDB_SUCCESS);
  CHECK(info.me_mapsize == db.map_size());
}

TEST_CASE("lmdb_backend: growth stops at max_map_size", "[lmdb]") {
  temp_dir dir("lmdb-ceiling");
  const std::size_t ceiling = 512 * kib;
  ks::lmdb_backend db(dir.path(), small_map(64 * kib, ceiling));
  int written = 0;
  bool hit = false;
  for (int i = 0; i < 200 && !hit; ++i) {
    try {
      db.write(bulk("k/", i * 8, 8, 4000), {.sync = false});
      written = i + 1;
    } catch (const ks::limit_error& e) {
      hit = true;
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("max_map_size"));
      CHECK_THAT(what, Catch::Contains(std::to_string(ceiling)));
    }
  }
  REQUIRE(hit);
  CHECK(written > 0);
  CHECK(db.map_size() <= ceiling);
  // The failed batch left nothing behind; every earlier one is complete.
  CHECK(scan(db, "k/", "k0").size() == static_cast<std::size_t>(written) * 8);
  // Batches of erases only may use 1/8 more, so a full database can be cleaned up. LMDB reuses
  // the pages freed by commit T from commit T + 2 on, so two erase batches make room for puts.
  const entries stored = scan(db, "k/", "k0");
  ks::write_batch first_half, second_half;
  for (std::size_t i = 0; i < stored.size(); ++i) (i % 2 == 0 ? first_half : second_half).erase(stored[i].first);
  db.write(first_half, {});
  db.write(second_half, {});
  CHECK(scan(db, "k/", "k0").empty());
  CHECK(db.map_size() <= ceiling + ceiling / 8);
  db.write(bulk("k/", 0, 8, 4000), {});
  CHECK(scan(db, "k/", "k0").size() == 8);
}

TEST_CASE("lmdb_backend: a resize waits for open snapshots, then gives up", "[lmdb]") {
  temp_dir dir("lmdb-resize-wait");
  auto opts = small_map(64 * kib, 256 << 20);
  opts.resize_wait = std::chrono::milliseconds(100);
  ks::lmdb_backend db(dir.path(), opts);
  put(db, "before", "1");
  const ks::write_batch big = bulk("k/", 0, 500, 2000);  // about 1 MiB: needs several doublings
  {
    auto snap = db.snapshot();
    try {
      db.write(big, {});
      FAIL("a resize ran while a snapshot was open");
    } catch (const ks::limit_error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("snapshot"));
      CHECK_THAT(std::string(e.what()), Catch::Contains("resize_wait"));
    }
    CHECK(get(db, "before", &snap) == "1");  // the snapshot is unharmed
    CHECK(scan(db, "k/", "k0").empty());     // nothing of the batch was written
  }
  db.write(big, {});
  CHECK(scan(db, "k/", "k0").size() == 500);
}

TEST_CASE("lmdb_backend: a writer holding a snapshot across its commits still gets room", "[lmdb]") {
  // The pattern of a read-modify-write transaction: snapshot, commit, then release the snapshot.
  // A resize cannot run during such a commit; it runs when the snapshot is released.
  temp_dir dir("lmdb-held-snapshot");
  auto opts = small_map(256 * kib, 256 << 20);
  opts.resize_wait = std::chrono::milliseconds(50);
  ks::lmdb_backend db(dir.path(), opts);
  const std::size_t initial = db.map_size();
  for (int i = 0; i < 100; ++i) {
    auto snap = db.snapshot();
    std::string v;
    CHECK(db.get("k/00000000", v, &snap) == (i > 0));
    db.write(bulk("k/", i * 4, 4, 4000), {.sync = false});  // about 16 KiB per commit, 1.6 MiB in all
  }
  CHECK(scan(db, "k/", "k0").size() == 400);
  CHECK(db.map_size() > initial);
}

TEST_CASE("lmdb_backend: open errors", "[lmdb]") {
  temp_dir dir("lmdb-open");
  const auto file = dir.path() / "a-file";
  std::ofstream(file) << "not a directory";

  SECTION("a path that cannot be created names the path") {
    const auto bad = file / "sub";
    try {
      ks::lmdb_backend db(bad);
      FAIL("opened below a regular file");
    } catch (const ks::backend_error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(bad.string()));
      CHECK(e.native_call() == "std::filesystem::create_directories");
      CHECK(e.native_code() != 0);
    }
  }
  SECTION("a regular file is not an environment") {
    try {
      ks::lmdb_backend db(file);
      FAIL("opened a regular file");
    } catch (const ks::backend_error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(file.string()));
      CHECK(e.native_code() == ENOTDIR);
    }
  }
  SECTION("create_if_missing = false") {
    ks::lmdb_options o;
    o.create_if_missing = false;
    const auto missing = dir.path() / "missing";
    try {
      ks::lmdb_backend db(missing, o);
      FAIL("opened a missing database");
    } catch (const ks::backend_error& e) {
      CHECK(e.native_code() == ENOENT);
      CHECK_THAT(std::string(e.what()), Catch::Contains("create_if_missing"));
    }
    CHECK_FALSE(std::filesystem::exists(missing));
    std::filesystem::create_directory(missing);  // a directory without data.mdb is no database
    CHECK_THROWS_AS(ks::lmdb_backend(missing, o), ks::backend_error);
    { ks::lmdb_backend created(missing); }
    ks::lmdb_backend db(missing, o);  // now it exists
    CHECK(scan(db, "", "").empty());
  }
  SECTION("read_only") {
    ks::lmdb_options ro;
    ro.read_only = true;
    CHECK_THROWS_AS(ks::lmdb_backend(dir.path() / "none", ro), ks::backend_error);
    CHECK_FALSE(std::filesystem::exists(dir.path() / "none"));
    {
      ks::lmdb_backend db(dir.path() / "env");
      put(db, "k", "v");
    }
    ks::lmdb_backend db(dir.path() / "env", ro);
    CHECK(get(db, "k") == "v");
    CHECK(scan(db, "", "") == entries{{"k", "v"}});
    try {
      put(db, "k", "w");
      FAIL("a read-only backend accepted a write");
    } catch (const ks::backend_error& e) {
      CHECK(e.native_call() == "mdb_txn_begin");
      CHECK(e.native_code() == EACCES);
    }
    CHECK(get(db, "k") == "v");
  }
  SECTION("not an LMDB file") {
    const auto env = dir.path() / "garbage";
    std::filesystem::create_directory(env);
    std::ofstream(env / "data.mdb") << std::string(8192, 'g');
    try {
      ks::lmdb_backend db(env);
      FAIL("opened a garbage data.mdb");
    } catch (const ks::backend_error& e) {
      CHECK(e.native_call() == "mdb_env_open");
      CHECK(e.native_code() == MDB_INVALID);
    }
  }
  SECTION("invalid options") {
    ks::lmdb_options o;
    o.max_readers = 0;
    CHECK_THROWS_AS(ks::lmdb_backend(dir.path() / "r", o), ks::backend_error);
    ks::lmdb_options m;
    m.map_size = 0;
    CHECK_THROWS_AS(ks::lmdb_backend(dir.path() / "m", m), ks::backend_error);
  }
}

TEST_CASE("lmdb_backend: a second open in the same process is refused", "[lmdb]") {
  temp_dir dir("lmdb-locked");
  const auto path = dir.path() / "env";
  std::optional<ks::lmdb_backend> first(std::in_place, path);
  put(*first, "k", "v");

  SECTION("same spelling") {
    try {
      ks::lmdb_backend second(path);
      FAIL("opened one environment twice");
    } catch (const ks::locked_error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(first->path()));
    }
  }
  SECTION("another spelling of the same directory") {
    CHECK_THROWS_AS(ks::lmdb_backend(path / "." / ".." / "env"), ks::locked_error);
    std::filesystem::create_directory_symlink(path, dir.path() / "link");
    CHECK_THROWS_AS(ks::lmdb_backend(dir.path() / "link"), ks::locked_error);
  }
  SECTION("a moved backend keeps the environment") {
    ks::lmdb_backend moved(std::move(*first));
    first.reset();
    CHECK_THROWS_AS(ks::lmdb_backend(path), ks::locked_error);
    CHECK(get(moved, "k") == "v");
  }
  first.reset();
  ks::lmdb_backend again(path);  // free once the first is destroyed
  CHECK(get(again, "k") == "v");
}

TEST_CASE("lmdb_backend: reader slots are a limit", "[lmdb]") {
  temp_dir dir("lmdb-readers");
  ks::lmdb_options o;
  o.max_readers = 2;
  ks::lmdb_backend db(dir.path(), o);
  put(db, "k", "v");
  std::optional<ks::lmdb_backend::snapshot_type> a(db.snapshot()), b(db.snapshot());
  try {
    (void)db.snapshot();
    FAIL("a third reader got a slot");
  } catch (const ks::limit_error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("MDB_READERS_FULL"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("max_readers"));
  }
  CHECK_THROWS_AS(get(db, "k"), ks::limit_error);
  CHECK_THROWS_AS(db.cursor({}, nullptr), ks::limit_error);
  CHECK(get(db, "k", &*a) == "v");  // existing snapshots keep working
  a.reset();
  CHECK(get(db, "k") == "v");
  auto c = db.snapshot();
  CHECK(get(db, "k", &c) == "v");
}

TEST_CASE("lmdb_backend: follows a map grown by another process", "[lmdb]") {
  temp_dir dir("lmdb-resized");
  const auto path = dir.path() / "env";
  ks::lmdb_backend db(path, small_map(64 * kib, 256 << 20));
  put(db, "parent", "1");
  CHECK(get(db, "parent") == "1");  // leaves a pooled read transaction behind
  const std::size_t before = db.map_size();

  // Another process opens the environment with a larger map and fills it. Only the raw C API is
  // used in the child: LMDB handles must not cross fork().
  const std::string p = db.path();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    MDB_dbi dbi = 0;
    int rc = mdb_env_create(&env);
    if (rc == 0) rc = mdb_env_set_mapsize(env, 8u << 20);
    if (rc == 0) rc = mdb_env_open(env, p.c_str(), MDB_NOTLS, 0644);
    if (rc == 0) rc = mdb_txn_begin(env, nullptr, 0, &txn);
    if (rc == 0) rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
    std::string value(2000, 'c');
    for (int i = 0; rc == 0 && i < 1000; ++i) {
      std::string key = "child/" + std::to_string(1000000 + i);
      MDB_val k{key.size(), key.data()}, v{value.size(), value.data()};
      rc = mdb_put(txn, dbi, &k, &v, 0);
    }
    if (rc == 0) rc = mdb_txn_commit(txn);
    ::_exit(rc == 0 ? 0 : 1);  // no destructors, no atexit handlers in the child
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  CHECK(get(db, "child/1000000") == std::string(2000, 'c'));  // MDB_MAP_RESIZED handled
  CHECK(scan(db, "child/", "child0").size() == 1000);
  CHECK(db.map_size() > before);
  put(db, "parent", "2");
  CHECK(get(db, "parent") == "2");
}
