// tests/unit/lmdb_backend_test.cpp: byte-level tests of keyschema::lmdb_backend.
//
// Persistence, map growth and its ceiling, limits, and every error the adapter documents. The
// byte-level contract (point operations, batches, bounded cursors, snapshot isolation, a
// randomized comparison with memory_backend) is checked by tests/conformance/backend_contract.hpp
// in conformance_lmdb. Multi-threaded tests live in lmdb_backend_concurrency_test.cpp.
#include <keyschema/lmdb.hpp>
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

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace lmdb_backend_test {

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

// Point operations, batch order, cursor bounds, snapshots and the randomized comparison with
// memory_backend are the byte-level contract suite's (tests/conformance/backend_contract.hpp,
// run by conformance_lmdb). Below: what is particular to LMDB.

TEST_CASE("lmdb_backend: a moved-from cursor is invalid, the moved-to one keeps its position", "[lmdb]") {
  temp_dir dir("lmdb-cursor-move");
  ks::lmdb_backend db(dir.path());
  ks::write_batch w;
  for (const auto& k : {"a"s, "b"s, "b\x00"s, "c"s}) w.put(k, "v" + k);
  db.write(w, {});
  auto c = db.cursor({"b", "", false}, nullptr);
  c.next();
  auto d = std::move(c);
  CHECK_FALSE(c.valid());  // NOLINT(bugprone-use-after-move): moved-from cursors are invalid
  REQUIRE(d.valid());
  CHECK(d.key() == "b\x00"s);
  CHECK(d.value() == "vb\x00"s);
}

TEST_CASE("lmdb_backend: a cursor of a write transaction that has ended is a usage_error", "[lmdb][error]") {
  temp_dir dir("lmdb-cursor-ended");
  ks::lmdb_backend db(dir.path());
  ks::write_batch w;
  for (const auto& k : {"a"s, "b"s, "c"s}) w.put(k, "v" + k);
  db.write(w, {});
  auto t = db.begin_write();
  auto c = t.cursor(ks::key_range{});
  REQUIRE(c.valid());
  t.commit(ks::write_batch{}, {});
  CHECK_THROWS_AS(c.next(), ks::usage_error);
  CHECK_FALSE(c.valid());
}

// A cursor on a private read transaction hands its MDB_cursor back to the environment, and the
// next such cursor renews it (mdb_cursor_renew) in its own transaction instead of allocating one.
TEST_CASE("lmdb_backend: a kept LMDB cursor reads the state of the transaction it is renewed in", "[lmdb]") {
  temp_dir dir("lmdb-cursor-renew");
  ks::lmdb_backend db(dir.path(), small_map(64 * kib, 64 << 20));
  for (int i = 0; i < 40; ++i) {
    put(db, "k" + std::to_string(i % 4), std::to_string(i));  // a commit between two cursors
    auto c = db.cursor({"k", "l", false}, nullptr);
    REQUIRE(c.valid());
    std::string last;
    std::size_t n = 0;
    for (; c.valid(); c.next(), ++n) last = std::string(c.value());
    CHECK(n == static_cast<std::size_t>(std::min(i + 1, 4)));
    if (i % 4 == 3) CHECK(last == std::to_string(i));  // "k3" is the last key
    auto r = db.cursor({"k", "l", true}, nullptr);
    REQUIRE(r.valid());
    CHECK(r.key() == "k" + std::to_string(std::min(i, 3)));
  }
  {
    // Two at once: each has its own LMDB cursor and its own state.
    auto a = db.cursor({"k0", "k1", false}, nullptr);
    put(db, "k0", "new");
    auto b = db.cursor({"k0", "k1", false}, nullptr);
    CHECK(a.native() != b.native());
    REQUIRE(a.valid());
    REQUIRE(b.valid());
    CHECK(a.value() == "36");
    CHECK(b.value() == "new");
  }
  // The kept cursor survives the map growing under it (no transaction is open then).
  const std::size_t before = db.map_size();
  db.write(bulk("big/", 0, 200, 2 * kib), {});
  REQUIRE(db.map_size() > before);
  CHECK(scan(db, "big/", "big0").size() == 200);
  CHECK(scan(db, "k", "l").size() == 4);
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
  CHECK(scan(db, "parent", "parent0").size() == 1);  // and a kept LMDB cursor
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

}  // namespace lmdb_backend_test
