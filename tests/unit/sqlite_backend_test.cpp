// tests/unit/sqlite_backend_test.cpp: keyschema::sqlite_backend beyond the conformance suite:
// the files and table it creates, what it refuses to open (and leaves untouched), the write lock
// held by another connection, limits, and the durability switch.
#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>
#include <keyschema/sqlite.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace sqlite_backend_test {

namespace ks = keyschema;
namespace fs = std::filesystem;
using ks::testing::temp_dir;

namespace {

using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"C">, ks::field<"name", std::string>>;
using schema = ks::schema<counter>;
using sqlite_store = ks::store<schema, ks::sqlite_backend>;

// A raw connection of the test's own (another "process" as far as SQLite's locks go).
struct raw_db {
  explicit raw_db(const fs::path& file) { REQUIRE(::sqlite3_open(file.c_str(), &db) == SQLITE_OK); }
  ~raw_db() { ::sqlite3_close_v2(db); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = ::sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    INFO(sql << ": " << (err ? err : ""));
    ::sqlite3_free(err);
    REQUIRE(rc == SQLITE_OK);
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    REQUIRE(::sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
    std::string out;
    if (::sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = ::sqlite3_column_text(st, 0);
      out = t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    ::sqlite3_finalize(st);
    return out;
  }
  sqlite3* db = nullptr;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

}  // namespace

TEST_CASE("sqlite: the directory holds keyschema.sqlite3 in WAL mode with one kv table", "[sqlite]") {
  temp_dir dir("sqlite-files");
  const fs::path path = dir.path() / "db";
  {
    ks::sqlite_backend db(path);
    CHECK(db.file() == (path / "keyschema.sqlite3").string());
    ks::write_batch b;
    b.put("k", "v");
    db.write(b, {});
    raw_db raw(path / "keyschema.sqlite3");
    CHECK(raw.text("PRAGMA journal_mode") == "wal");
    CHECK(raw.text("SELECT sql FROM sqlite_schema WHERE name = 'kv'") ==
          "CREATE TABLE kv (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID");
    CHECK(raw.text("SELECT hex(v) FROM kv WHERE k = x'6b'") == "76");
  }
  // The last connection checkpoints and removes the log.
  CHECK(fs::exists(path / "keyschema.sqlite3"));
  CHECK_FALSE(fs::exists(path / "keyschema.sqlite3-wal"));
}

TEST_CASE("sqlite: a file that is not an SQLite database is refused and left as it was", "[sqlite][foreign]") {
  temp_dir dir("sqlite-notadb");
  const fs::path path = dir.path() / "db";
  fs::create_directories(path);
  const std::string junk(4096, 'x');
  write_file(path / "keyschema.sqlite3", junk);
  try {
    ks::sqlite_backend db(path);
    FAIL("opened a file that is not a database");
  } catch (const ks::backend_error& e) {
    CHECK((e.native_code() & 0xff) == SQLITE_NOTADB);
    CHECK_THAT(e.what(), Catch::Contains("sqlite3_") && Catch::Contains("file is not a database") &&
                             Catch::Contains("keyschema.sqlite3"));
  }
  CHECK(read_file(path / "keyschema.sqlite3") == junk);
}

TEST_CASE("sqlite: another program's SQLite database is refused, naming what it holds", "[sqlite][foreign]") {
  temp_dir dir("sqlite-foreign");
  const fs::path path = dir.path() / "db";
  fs::create_directories(path);
  SECTION("no kv table") {
    {
      raw_db raw(path / "keyschema.sqlite3");
      raw.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'ann')");
    }
    const std::string before = read_file(path / "keyschema.sqlite3");
    CHECK_THROWS_WITH(ks::sqlite_backend(path), Catch::Contains("table users") && Catch::Contains("no table kv"));
    CHECK(read_file(path / "keyschema.sqlite3") == before);  // not even switched to WAL mode
    CHECK_FALSE(fs::exists(path / "keyschema.sqlite3-wal"));
  }
  SECTION("a kv table of another shape") {
    {
      raw_db raw(path / "keyschema.sqlite3");
      raw.exec("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)");
    }
    CHECK_THROWS_AS(ks::sqlite_backend(path), ks::schema_error);
    CHECK_THROWS_WITH(ks::sqlite_backend(path), Catch::Contains("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)"));
  }
  SECTION("another SQLite file and no keyschema.sqlite3") {
    {
      raw_db raw(path / "app.db");
      raw.exec("CREATE TABLE t (x)");
    }
    CHECK_THROWS_WITH(ks::sqlite_backend(path), Catch::Contains("app.db"));
    CHECK_FALSE(fs::exists(path / "keyschema.sqlite3"));
  }
  SECTION("a non-empty kv table without schema record needs adopt") {
    {
      ks::sqlite_backend db(path);
      ks::write_batch b;
      b.put("foreign-key", "v");
      db.write(b, {});
    }
    CHECK_THROWS_AS(sqlite_store(path), ks::schema_error);
    sqlite_store adopted{ks::adopt, path};
    adopted.put<counter>({"c"}, 1);
    CHECK(adopted.get<counter>({"c"}) == std::optional<std::int64_t>(1));
  }
}

TEST_CASE("sqlite: other engines' directories are refused both ways", "[sqlite][foreign]") {
  temp_dir dir("sqlite-engines");
  SECTION("LevelDB and LMDB directories given to sqlite_backend") {
    { ks::leveldb_backend l(dir.path() / "leveldb"); }
    { ks::lmdb_backend m(dir.path() / "lmdb"); }
    CHECK_THROWS_AS(ks::sqlite_backend(dir.path() / "leveldb"), ks::wrong_engine_error);
    CHECK_THROWS_WITH(ks::sqlite_backend(dir.path() / "lmdb"), Catch::Contains("LMDB"));
    CHECK_FALSE(fs::exists(dir.path() / "lmdb" / "keyschema.sqlite3"));
  }
  SECTION("a RocksDB directory given to sqlite_backend") {
    fs::create_directories(dir.path() / "rocks");
    write_file(dir.path() / "rocks" / "CURRENT", "MANIFEST-000005\n");
    write_file(dir.path() / "rocks" / "IDENTITY", "id\n");
    write_file(dir.path() / "rocks" / "OPTIONS-000007", "[Version]\n");
    CHECK_THROWS_WITH(ks::sqlite_backend(dir.path() / "rocks"), Catch::Contains("RocksDB"));
  }
  SECTION("an SQLite directory given to leveldb_backend and lmdb_backend") {
    { ks::sqlite_backend s(dir.path() / "sqlite"); }
    try {
      ks::leveldb_backend l(dir.path() / "sqlite");
      FAIL("LevelDB opened an SQLite directory");
    } catch (const ks::wrong_engine_error& e) {
      CHECK(e.found() == ks::storage_engine::sqlite);
      CHECK_THAT(e.what(), Catch::Contains("keyschema.sqlite3") && Catch::Contains("keyschema::sqlite_backend"));
    }
    CHECK_THROWS_AS(ks::lmdb_backend(dir.path() / "sqlite"), ks::wrong_engine_error);
    CHECK(ks::probe_engines(dir.path() / "sqlite").size() == 1);
  }
  SECTION("a database file instead of its directory") {
    { ks::sqlite_backend s(dir.path() / "sqlite"); }
    CHECK_THROWS_WITH(ks::sqlite_backend(dir.path() / "sqlite" / "keyschema.sqlite3"),
                      Catch::Contains("directory that holds"));
  }
}

TEST_CASE("sqlite: one backend per database per process; a missing database without create", "[sqlite]") {
  temp_dir dir("sqlite-open");
  ks::sqlite_backend db(dir.path() / "db");
  CHECK_THROWS_AS(ks::sqlite_backend(dir.path() / "db"), ks::locked_error);
  ks::sqlite_options o;
  o.create_if_missing = false;
  fs::create_directories(dir.path() / "empty");
  try {
    ks::sqlite_backend none(dir.path() / "empty", o);
    FAIL("opened a missing database");
  } catch (const ks::backend_error& e) {
    CHECK(e.native_call() == "sqlite3_open_v2");
    CHECK((e.native_code() & 0xff) == SQLITE_CANTOPEN);
  }
}

TEST_CASE("sqlite: a write lock held by another connection gives locked_error after busy_timeout", "[sqlite]") {
  temp_dir dir("sqlite-locked");
  const fs::path path = dir.path() / "db";
  ks::sqlite_options o;
  o.busy_timeout = std::chrono::milliseconds(50);
  ks::sqlite_backend db(path, o);
  ks::write_batch b;
  b.put("k", "1");
  db.write(b, {});
  raw_db other(path / "keyschema.sqlite3");
  other.exec("BEGIN IMMEDIATE");
  try {
    db.write(b, {});
    FAIL("wrote while another connection held the write lock");
  } catch (const ks::locked_error& e) {
    CHECK(e.native_call() == "sqlite3_step");
    CHECK((e.native_code() & 0xff) == SQLITE_BUSY);
    CHECK_THAT(e.what(), Catch::Contains("write lock") && Catch::Contains("busy_timeout"));
  }
  CHECK_THROWS_AS(db.begin_write(), ks::locked_error);
  // Readers do not wait for the writer.
  std::string v;
  CHECK(db.get("k", v, nullptr));
  other.exec("ROLLBACK");
  db.write(b, {});  // the lock is free again
  auto t = db.begin_write();
  CHECK(t.is_open());
}

TEST_CASE("sqlite: a scan that ended holds no read transaction, also when it stopped early", "[sqlite]") {
  // Cursors reuse their connection's statements; one given back without a reset would keep its
  // read transaction, and with it every WAL frame, alive: checkpoints could never truncate the WAL.
  temp_dir dir("sqlite-scan-ends");
  const fs::path path = dir.path() / "db";
  ks::sqlite_backend db(path);
  ks::write_batch b;
  for (int i = 0; i < 100; ++i) b.put("k" + std::to_string(1000 + i), std::string(100, 'v'));
  db.write(b, {});
  raw_db other(path / "keyschema.sqlite3");
  auto checkpoint_busy = [&] { return other.text("PRAGMA wal_checkpoint(TRUNCATE)"); };  // first column: busy
  for (int round = 0; round < 3; ++round) {  // the second and third rounds reuse the statement
    {
      auto c = db.cursor(ks::key_range{"k", "l", round == 1}, nullptr);
      REQUIRE(c.valid());
      c.next();
      REQUIRE(c.valid());
      db.write(b, {});                  // WAL frames the open cursor's read transaction predates
      CHECK(checkpoint_busy() == "1");  // control: an open cursor does block the truncation
    }
    CHECK(checkpoint_busy() == "0");
    CHECK(fs::file_size(path / "keyschema.sqlite3-wal") == 0);
  }
}

TEST_CASE("sqlite: limits, empty keys and values, and the durability switch", "[sqlite]") {
  temp_dir dir("sqlite-limits");
  ks::sqlite_options o;
  o.max_entry_bytes = 1000;
  ks::sqlite_backend db(dir.path() / "db", o);
  CHECK(db.limits().max_entry_bytes == 1000);
  ks::write_batch big;
  big.put("k", std::string(1000, 'v'));
  CHECK_THROWS_AS(db.write(big, {}), ks::limit_error);

  ks::write_batch b;
  b.put("", "");
  b.put("e", "");
  db.write(b, {.sync = false});
  db.write(ks::write_batch{}, {.sync = true});  // syncs the unsynced commit
  std::string v = "x";
  CHECK(db.get("", v, nullptr));
  CHECK(v.empty());
  CHECK(db.get("e", v, nullptr));
  CHECK(v.empty());

  ks::sqlite_options d;
  ks::sqlite_backend def(dir.path() / "default", d);
  CHECK(def.limits().max_entry_bytes == static_cast<std::size_t>(::sqlite3_limit(def.native(), SQLITE_LIMIT_LENGTH, -1)) - 64);
}

}  // namespace sqlite_backend_test
