// tests/durability/lmdb.cpp: the durability checks of keyschema::lmdb_backend that have no
// counterpart in another engine (the shared ones: cases/, through lmdb_traits.hpp).
//
// Damaged files: impossible option figures (max_map_size below map_size) are refused before
// anything is created; a damaged page header is an error where LMDB checks it and a named abort
// where only LMDB's own assertions catch it (checked in a forked child). Processes: the store's
// transactions run inside LMDB's write transaction, so a transaction that outgrows the map is
// applied after growing it, and never commits over a state another process changed while the map
// grew (conflict_error). Children are forked and open their own store: LMDB handles must not
// cross fork(), so the parent holds no environment open while they run.
//
// Compiled with the cases into unit_group_lmdb (see durability.hpp).
#include <durability/durability.hpp>

#include <keyschema/keyschema.hpp>
#include <keyschema/lmdb.hpp>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace keyschema::durability::lmdb_only {

namespace ks = keyschema;
using ks::testing::in_child;
using ks::testing::outcome;

using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"COUNTER">, ks::field<"name", std::string>>;
using item = ks::keyspace<"item", std::string, ks::lit<"ITEM">, ks::field<"process", std::uint32_t>,
                          ks::field<"n", std::uint32_t>>;
using lmdb_store = ks::store<ks::schema<counter, item>, ks::lmdb_backend>;

// --- damaged files ---------------------------------------------------------------------------------

TEST_CASE("lmdb: max_map_size below map_size is refused at open", "[damaged_files]") {
  temp_dir dir("lmdb-maxmap");
  ks::lmdb_options o;
  o.map_size = std::size_t{8} << 20;
  o.max_map_size = std::size_t{4} << 20;
  try {
    ks::lmdb_backend db(dir.path() / "env", o);
    FAIL("opened with max_map_size < map_size");
  } catch (const ks::backend_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("max_map_size (4194304 bytes)"));
    CHECK_THAT(e.what(), Catch::Contains("map_size (8388608 bytes)"));
    CHECK(e.native_code() == EINVAL);
  }
  CHECK_FALSE(fs::exists(dir.path() / "env"));  // nothing created
}

namespace {

std::uint64_t read_u64(const std::string& bytes, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}
std::uint16_t read_u16(const std::string& bytes, std::size_t at) {
  std::uint16_t v = 0;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

// The page number of the second child of the main tree's root (a branch page), read from the
// file with LMDB 0.9's x86-64 layout: the latest meta page's main root, then branch node 1.
std::uint64_t second_leaf(const fs::path& data, std::size_t page) {
  std::ifstream in(data, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t txn0 = 16 + 128, txn1 = page + 16 + 128, root_at = 16 + 112;  // mm_txnid, main md_root
  const std::size_t meta = read_u64(file, txn0) < read_u64(file, txn1) ? page : 0;
  const std::uint64_t root = read_u64(file, meta + root_at);
  const std::string r = file.substr(root * page, page);
  REQUIRE((read_u16(r, 10) & 0x01) != 0);  // P_BRANCH: the tree has two levels
  const std::uint16_t node = read_u16(r, 16 + 2);  // mp_ptrs[1]
  return read_u16(r, node) | (std::uint64_t{read_u16(r, node + 2)} << 16) |
         (std::uint64_t{read_u16(r, node + 4)} << 32);
}

}  // namespace

TEST_CASE("lmdb: a damaged page header is an error where LMDB checks it, a named abort where it asserts",
          "[damaged_files]") {
  temp_dir dir("lmdb-page");
  const fs::path env = dir.path() / "env";
  {
    ks::lmdb_backend db(env);
    ks::write_batch b;
    for (int i = 0; i < 2000; ++i) b.put("key-" + std::to_string(100000 + i), std::string(100, 'v'));
    db.write(b, {});
  }
  const fs::path data = env / "data.mdb";
  const std::uint64_t leaf = second_leaf(data, 4096);
  overwrite(data, leaf * 4096 + 10, std::string("\0\0", 2));  // mp_flags: neither leaf nor branch

  // The file's envelope is intact: it opens, and keys outside the damaged page still read.
  SECTION("a lookup that descends into the page: backend_error, no crash") {
    const outcome o = in_child([&] {
      ks::lmdb_backend db(env);
      std::string v;
      if (!db.get("key-100000", v, nullptr)) ::_exit(4);  // first leaf, intact
      for (int i = 0; i < 2000; ++i) {
        try {
          db.get("key-" + std::to_string(100000 + i), v, nullptr);
        } catch (const ks::backend_error& e) {
          std::fprintf(stderr, "backend_error %s|%d|%s\n", e.native_call().c_str(), e.native_code(), e.what());
          ::_exit(2);
        }
      }
    });
    INFO(o.err);
    CHECK(o.signal == 0);
    CHECK(o.code == 2);
    CHECK_THAT(o.err, Catch::Contains("mdb_get|" + std::to_string(MDB_CORRUPTED) + "|"));
  }
  SECTION("a scan stepping onto the page: LMDB asserts; the abort names the database and the check") {
    const outcome o = in_child([&] {
      ks::lmdb_backend db(env);
      for (auto c = db.cursor(ks::key_range{}, nullptr); c.valid(); c.next()) {
      }
    });
    INFO(o.err);
    if (o.signal == 0) {
      // An LMDB built with NDEBUG has no assertions: the step must then fail cleanly.
      CHECK(o.code == 3);
      CHECK_THAT(o.err, Catch::Contains("mdb_cursor_get"));
    } else {
      CHECK(o.signal == SIGABRT);
      CHECK_THAT(o.err, Catch::Contains("keyschema::lmdb_backend: LMDB found a damaged page in " + env.string()));
      CHECK_THAT(o.err, Catch::Contains("IS_LEAF"));
      CHECK_THAT(o.err, Catch::Contains("restore the database from a copy"));
    }
  }
}

// --- several processes -----------------------------------------------------------------------------

TEST_CASE("lmdb store: a transaction that outgrows the map is applied after growing it", "[processes]") {
  temp_dir dir("lmdb-mp-grow");
  ks::lmdb_options o;
  o.map_size = 64 * 1024;
  lmdb_store db(dir.path() / "env", o);
  const std::size_t before = db.backend().map_size();
  db.put<counter>({"c"}, 41);
  auto tx = db.transaction();
  const std::int64_t n = tx.get<counter>({"c"}).value_or(0);
  tx.put<counter>({"c"}, n + 1);
  for (std::uint32_t i = 0; i < 300; ++i) tx.put<item>({0, i}, std::string(2000, 'x'));
  tx.commit();  // MDB_MAP_FULL inside LMDB's write transaction: grown, begun again, replayed
  CHECK_FALSE(tx.is_open());
  CHECK(db.backend().map_size() > before);
  CHECK(db.get<counter>({"c"}) == 42);
  CHECK(db.get<item>({0, 299}) == std::string(2000, 'x'));
}

TEST_CASE("lmdb store: a transaction never commits over a state another process changed while the map grew",
          "[processes]") {
  temp_dir dir("lmdb-mp-conflict");
  const auto path = dir.path() / "env";
  ks::lmdb_options small;
  small.map_size = 64 * 1024;
  { lmdb_store db(path, small); }

  // The order is forced with pipes, no timing: (1) the parent's transaction reads "total";
  // (2) the child, told so, begins its own transaction and waits for LMDB's write lock;
  // (3) the parent's commit outgrows the map, which ends its LMDB write transaction, and the
  // growth waits for a snapshot the parent holds in another thread; (4) the child gets the lock,
  // increments "total", commits and says so; (5) the snapshot is released, the map grows, the
  // parent begins again and finds another transaction id: conflict_error, nothing written.
  int go[2], done[2];
  REQUIRE(::pipe(go) == 0);
  REQUIRE(::pipe(done) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(go[1]);
    ::close(done[0]);
    int rc = 0;
    try {
      lmdb_store db(path);
      char c = 0;
      if (::read(go[0], &c, 1) != 1) ::_exit(2);
      auto tx = db.transaction();  // waits for the parent's write lock
      tx.put<counter>({"total"}, tx.get<counter>({"total"}).value_or(0) + 1);
      tx.commit({.sync = false});
      if (::write(done[1], "d", 1) != 1) rc = 3;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      rc = 1;
    }
    ::_exit(rc);
  }

  ::close(go[0]);
  ::close(done[1]);  // a child that dies closes the last write end: the reader below sees EOF
  bool conflict = false;
  {
    lmdb_store db(path, small);
    auto snap = db.snapshot();  // holds back the map growth until the child has committed
    std::thread release([&, s = std::move(snap)]() mutable {
      char c = 0;
      (void)!::read(done[0], &c, 1);
      { auto gone = std::move(s); }
    });
    {
      auto tx = db.transaction();
      tx.put<counter>({"total"}, tx.get<counter>({"total"}).value_or(0) + 1);  // reads 0
      for (std::uint32_t i = 0; i < 200; ++i) tx.put<item>({7, i}, std::string(2000, 'y'));  // >> 64 KiB
      REQUIRE(::write(go[1], "g", 1) == 1);
      try {
        tx.commit({.sync = false});
      } catch (const ks::conflict_error& e) {
        conflict = true;
        CHECK_FALSE(tx.is_open());
        CHECK_THAT(e.what(), Catch::Contains("another process committed 1 transaction(s)"));
        CHECK_THAT(e.what(), Catch::Contains("Nothing was written: run the transaction again"));
      }
    }
    release.join();
    CHECK(conflict);
    CHECK(db.get<counter>({"total"}) == 1);  // the child's increment only
    CHECK_FALSE(db.contains<item>({7, 0}));

    // Run again: it reads the child's increment and commits.
    auto tx = db.transaction();
    tx.put<counter>({"total"}, tx.get<counter>({"total"}).value_or(0) + 1);
    for (std::uint32_t i = 0; i < 200; ++i) tx.put<item>({7, i}, std::string(2000, 'y'));
    tx.commit();
    CHECK(db.get<counter>({"total"}) == 2);
    CHECK(db.contains<item>({7, 199}));
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  ::close(go[1]);
  ::close(done[0]);
}


}  // namespace keyschema::durability::lmdb_only
