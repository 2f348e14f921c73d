// tests/unit/lmdb_damaged_file_test.cpp: a damaged data.mdb is an error, never a crash.
//
// A truncated file, a garbage meta page, a file of another format and impossible option figures
// must each be refused at open with a clear error naming the file and the figures, instead of a
// SIGBUS once LMDB maps the file. Every open runs in a forked child, so that a crash fails the
// test instead of killing the test runner. A damaged page header that only LMDB's own
// assertions can catch must abort with a message naming the database (checked in a child).
#include <keyschema/keyschema.hpp>
#include <keyschema/lmdb.hpp>
#include <support/child_process.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace lmdb_damaged_file_test {

namespace ks = keyschema;
namespace fs = std::filesystem;
using ks::testing::in_child;
using ks::testing::outcome;
using ks::testing::temp_dir;

namespace {

using record = ks::keyspace<"record", std::string, ks::lit<"R">, ks::field<"n", std::uint32_t>>;
using schema = ks::schema<record>;
using lmdb_store = ks::store<schema, ks::lmdb_backend>;

// A database of `count` records of 100 bytes (several pages).
void fill(const fs::path& env, std::uint32_t count) {
  lmdb_store db(env);
  auto b = db.batch();
  for (std::uint32_t i = 0; i < count; ++i) b.put<record>({i}, std::string(100, static_cast<char>('a' + i % 26)));
  b.commit();
}

// Opens env in a child and returns what it printed: "backend_error <native_call>|<code>|<what>".
// Fails the test when the child crashes or the open succeeds.
std::string open_fails(const fs::path& env) {
  const outcome o = in_child([&] {
    try {
      lmdb_store db(env);
    } catch (const ks::backend_error& e) {
      std::fprintf(stderr, "backend_error %s|%d|%s\n", e.native_call().c_str(), e.native_code(), e.what());
      std::fflush(stderr);
      ::_exit(2);
    }
  });
  INFO("child stderr: " << o.err);
  CHECK(o.signal == 0);  // no SIGBUS, no abort
  CHECK(o.exited);
  CHECK(o.code == 2);  // a backend_error, not success
  return o.err;
}

std::uintmax_t size_of(const fs::path& p) { return fs::file_size(p); }

void truncate_to(const fs::path& p, std::uintmax_t size) { fs::resize_file(p, size); }

void overwrite(const fs::path& p, std::uintmax_t offset, const std::string& bytes) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("lmdb: a truncated data.mdb is an error at open, not a crash", "[lmdb][damaged]") {
  temp_dir dir("lmdb-trunc");
  const fs::path env = dir.path() / "env";
  fill(env, 2000);  // about 60 pages
  const fs::path data = env / "data.mdb";
  const std::uintmax_t full = size_of(data);
  REQUIRE(full > 100000);
  // Control: the intact file opens and reads back.
  const outcome intact = in_child([&] {
    lmdb_store db(env);
    if (db.get<record>({1999}) != std::string(100, static_cast<char>('a' + 1999 % 26))) ::_exit(4);
  });
  INFO("child stderr: " << intact.err);
  REQUIRE((intact.exited && intact.code == 0));

  for (const std::uintmax_t size : {std::uintmax_t{0}, std::uintmax_t{100}, std::uintmax_t{4096},
                                    std::uintmax_t{8192}, std::uintmax_t{40000}, full / 2, full - 4096}) {
    DYNAMIC_SECTION("truncated to " << size << " bytes of " << full) {
      truncate_to(data, size);
      const std::string err = open_fails(env);
      CHECK_THAT(err, Catch::Contains(data.string()));
      CHECK_THAT(err, Catch::Contains("mdb_env_open"));
      if (size >= 8192) {
        CHECK_THAT(err, Catch::Contains(std::to_string(size) + " bytes"));  // both figures
        CHECK_THAT(err, Catch::Contains("truncated"));
      }
      if (size == 0) CHECK_THAT(err, Catch::Contains("empty"));
    }
  }
}

TEST_CASE("lmdb: a garbage or foreign data.mdb is an error at open", "[lmdb][damaged]") {
  temp_dir dir("lmdb-garbage");
  const fs::path env = dir.path() / "env";
  fill(env, 200);
  const fs::path data = env / "data.mdb";
  const std::size_t page = 4096;  // Debian's LMDB on x86-64: the system page size

  SECTION("garbage over meta page 0") {
    overwrite(data, 0, std::string(200, '\x5a'));
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("not an LMDB data file"));
    CHECK_THAT(err, Catch::Contains("meta page 0"));
    CHECK_THAT(err, Catch::Contains(data.string()));
  }
  SECTION("garbage over meta page 1") {
    overwrite(data, page, std::string(200, '\x5a'));
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("meta page 1"));
  }
  SECTION("an impossible page size in meta page 0") {
    overwrite(data, 16 + 24, std::string("\x00\x30\x00\x00", 4));  // 0x3000: not a power of two
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("page size of 12288"));
  }
  SECTION("an impossible last page in both meta pages") {
    // mm_last_pg far beyond the file: the truncation check names both figures.
    const std::string huge("\xff\xff\xff\x00\x00\x00\x00\x00", 8);
    overwrite(data, 16 + 120, huge);  // mm_last_pg
    overwrite(data, page + 16 + 120, huge);
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("pages 0 to 16777215"));
    CHECK_THAT(err, Catch::Contains(std::to_string(size_of(data)) + " bytes"));
  }
  SECTION("another LMDB data format version") {
    overwrite(data, 16 + 4, std::string("\x02\x00\x00\x00", 4));
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("|" + std::to_string(MDB_VERSION_MISMATCH) + "|"));
    CHECK_THAT(err, Catch::Contains("version 2"));
  }
  SECTION("a file of another format") {
    fs::remove(data);
    std::ofstream(data, std::ios::binary) << std::string("SQLite format 3\0", 16) << std::string(20000, '\x01');
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("|" + std::to_string(MDB_INVALID) + "|"));
    CHECK_THAT(err, Catch::Contains("not an LMDB data file"));
  }
}

TEST_CASE("lmdb: max_map_size below map_size is refused at open", "[lmdb][damaged]") {
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
          "[lmdb][damaged]") {
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

}  // namespace lmdb_damaged_file_test
