// tests/unit/sqlite_corruption_test.cpp: a damaged or truncated keyschema.sqlite3 is an error,
// never silent loss.
//
// SQLite keeps no checksums of its pages, so what can be detected is structural damage: a file
// shorter than its header says, pages overwritten with zeros or garbage (broken b-tree pages,
// page links, record headers), a damaged header. Up to quick_check_max_bytes (64 MiB by default)
// such a file is refused at open (PRAGMA quick_check); without the check (larger files), a read that reaches the damage
// throws backend_error (SQLITE_CORRUPT) instead of returning fewer entries. Nothing is repaired
// or dropped by the backend in either case.
#include <keyschema/sqlite.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace sqlite_corruption_test {

namespace ks = keyschema;
namespace fs = std::filesystem;
using ks::testing::temp_dir;

namespace {

constexpr int entries = 3000;

std::string key_of(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "key-%06d", i);
  return buf;
}

// A database of `entries` entries (about 200 pages of 4 KiB), closed (checkpointed into the
// main file, no -wal left).
fs::path make_database(const temp_dir& dir) {
  const fs::path path = dir.path() / "db";
  ks::sqlite_backend db(path);
  ks::write_batch b;
  for (int i = 0; i < entries; ++i) b.put(key_of(i), std::string(200, static_cast<char>('a' + i % 26)));
  db.write(b, {});
  return path;
}

void overwrite(const fs::path& file, std::size_t offset, const std::string& bytes) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Counts the entries a full scan returns; throws what the cursor throws.
int scan_all(ks::sqlite_backend& db) {
  int n = 0;
  for (auto c = db.cursor(ks::key_range{}, nullptr); c.valid(); c.next()) ++n;
  return n;
}

void check_damaged(const ks::backend_error& e) {
  const int code = e.native_code() & 0xff;
  CHECK((code == SQLITE_CORRUPT || code == SQLITE_NOTADB));
  CHECK_THAT(e.what(), Catch::Contains("damaged") || Catch::Contains("not a database"));
}

}  // namespace

TEST_CASE("sqlite: a truncated database file is refused at open", "[sqlite][corruption]") {
  temp_dir dir("sqlite-truncated");
  const fs::path path = make_database(dir);
  const fs::path file = path / ks::sqlite_file_name;
  const auto size = fs::file_size(file);
  REQUIRE(size > 100 * 4096);
  fs::resize_file(file, size / 2);
  try {
    ks::sqlite_backend db(path);
    FAIL("opened a truncated database");
  } catch (const ks::backend_error& e) {
    INFO(e.what());
    check_damaged(e);
  }
  CHECK(fs::file_size(file) == size / 2);  // left as it was
}

TEST_CASE("sqlite: overwritten pages are an error, at open or when a read reaches them", "[sqlite][corruption]") {
  temp_dir dir("sqlite-overwritten");
  const fs::path path = make_database(dir);
  const fs::path file = path / ks::sqlite_file_name;
  const auto size = fs::file_size(file);
  const std::string filler = GENERATE(std::string(4096, '\0'), std::string(4096, '\x5a'));
  overwrite(file, (size / 4096 / 2) * 4096, filler);  // a page in the middle of the table

  SECTION("quick_check at open (the default for files up to 64 MiB)") {
    try {
      ks::sqlite_backend db(path);
      FAIL("opened a database with an overwritten page");
    } catch (const ks::backend_error& e) {
      INFO(e.what());
      check_damaged(e);
      CHECK(e.native_call() == "sqlite3_step");
    }
  }
  SECTION("without the check at open: a full scan throws instead of returning fewer entries") {
    ks::sqlite_options o;
    o.quick_check_max_bytes = 0;
    ks::sqlite_backend db(path, o);
    try {
      const int n = scan_all(db);
      FAIL("a full scan of a damaged table returned " << n << " entries of " << entries);
    } catch (const ks::backend_error& e) {
      INFO(e.what());
      check_damaged(e);
    }
  }
}

TEST_CASE("sqlite: a damaged header is refused at open", "[sqlite][corruption]") {
  temp_dir dir("sqlite-header");
  const fs::path path = make_database(dir);
  overwrite(path / ks::sqlite_file_name, 0, std::string(16, '\x01'));
  try {
    ks::sqlite_backend db(path);
    FAIL("opened a database without its header");
  } catch (const ks::backend_error& e) {
    INFO(e.what());
    check_damaged(e);
  }
}

TEST_CASE("sqlite: an intact database passes quick_check and keeps every entry", "[sqlite][corruption]") {
  temp_dir dir("sqlite-intact");
  const fs::path path = make_database(dir);
  ks::sqlite_backend db(path);
  CHECK(scan_all(db) == entries);
}

}  // namespace sqlite_corruption_test
