// Foreign databases: another engine's files, databases written without keyschema, adopting them,
// and read-only opens of a database without a schema record. The foreign databases are written
// by programs keyschema did not write: python3-plyvel (LevelDB), python3-lmdb and mdb_load
// (lmdb-utils) for LMDB, Python's sqlite3 module (scripts/install-deps.sh installs them).
#include <cli.hpp>  // tools/keyschema-dump (keyschema::dump_support)
#include <keyschema/engine_probe.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fingerprint.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>
#include <keyschema/memory_backend.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/store.hpp>
#include <keyschema/types.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace foreign_database_test {

namespace ks = keyschema;
namespace fs = std::filesystem;

namespace {

using message_metadata =
    ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                 ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
using broker = ks::schema<message_metadata>;

// Python: key(i) is the tuple ("DESTINATION", "q", "MESSAGE_METADATA", i) for 0 < i < 65536.
constexpr const char* py_key =
    "def key(i):\n"
    "    n = bytes([0x15, i]) if i < 256 else bytes([0x16]) + i.to_bytes(2, 'big')\n"
    "    return b'\\x02DESTINATION\\x00\\x02q\\x00\\x02MESSAGE_METADATA\\x00' + n\n";

// Runs a shell command; returns its exit status (-1 when it did not exit normally).
int sh(const std::string& cmd) {
  const int raw = std::system(cmd.c_str());
  return raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

// Runs python3 with `code`; REQUIREs success (the modules come from scripts/install-deps.sh).
void python(const std::string& code) {
  const std::string file = (fs::temp_directory_path() / "script.py").string();
  std::ofstream(file) << code;
  INFO("python3 failed (needs python3-plyvel and python3-lmdb, see scripts/install-deps.sh):\n" << code);
  // Debian's interpreter, which python3-plyvel and python3-lmdb belong to, even when another
  // python3 comes first in PATH.
  const std::string interpreter = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  REQUIRE(sh(interpreter + " '" + file + "'") == 0);
}

// Writes keys 1..n of message_metadata (and nothing else) with plyvel into a new LevelDB at dir.
void plyvel_write(const std::string& dir, int n) {
  python(std::string(py_key) + "import plyvel\ndb = plyvel.DB('" + dir + "', create_if_missing=True)\nfor i in range(1, " +
         std::to_string(n + 1) + "):\n    db.put(key(i), b'payload')\ndb.close()\n");
}

// The same with python3-lmdb into a new LMDB environment at dir.
void py_lmdb_write(const std::string& dir, int n) {
  python(std::string(py_key) + "import lmdb\nenv = lmdb.open('" + dir + "', map_size=1 << 24)\nwith env.begin(write=True) as t:\n" +
         "    for i in range(1, " + std::to_string(n + 1) + "):\n        t.put(key(i), b'payload')\nenv.close()\n");
}

template <class Backend>
bool has_schema_record(Backend& b) {
  std::string v;
  return b.get(ks::schema_key, v, nullptr);
}

// What a store open throws, as text ("" when it opens).
template <class Store, class... Args>
std::string open_error(Args&&... args) {
  try {
    Store s(std::forward<Args>(args)...);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

using lmdb_store = ks::store<broker, ks::lmdb_backend>;
using leveldb_store = ks::store<broker, ks::leveldb_backend>;

void write_file(const fs::path& p, std::string_view content) {
  std::ofstream out(p, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

}  // namespace

TEST_CASE("the engine probe names what it finds", "[foreign][probe]") {
  ks::testing::temp_dir dir("probe");
  auto engines = [](const fs::path& p) {
    std::vector<std::string> r;
    for (const auto& e : ks::probe_engines(p)) r.push_back(std::string(ks::engine_name(e.engine)) + ":" + e.file);
    return r;
  };
  using v = std::vector<std::string>;
  CHECK(engines(dir / "missing") == v{});
  CHECK(engines(dir.path()) == v{});

  const fs::path lock_only = dir / "lock-only";  // what a failed LevelDB open leaves
  fs::create_directory(lock_only);
  write_file(lock_only / "LOCK", "");
  write_file(lock_only / "LOG", "x");
  write_file(lock_only / "notes.txt", "SQLite format 2");  // not the header
  CHECK(engines(lock_only) == v{});

  { ks::leveldb_backend l(dir / "leveldb"); }
  CHECK(engines(dir / "leveldb") == v{"LevelDB:CURRENT"});
  { ks::lmdb_backend m(dir / "lmdb"); }
  CHECK((engines(dir / "lmdb") == v{"LMDB:data.mdb"} || engines(dir / "lmdb") == v{"LMDB:lock.mdb"}));

  const fs::path rocks = dir / "rocks";
  fs::create_directory(rocks);
  write_file(rocks / "CURRENT", "MANIFEST-000004\n");
  write_file(rocks / "IDENTITY", "1b4e28ba-2fa1-11d2-883f-0016d3cca427\n");
  CHECK(engines(rocks) == v{"RocksDB:IDENTITY"});
  write_file(rocks / "OPTIONS-000007", "[Version]\n  rocksdb_version=7.8.3\n");
  CHECK(engines(rocks) == v{"RocksDB:OPTIONS-000007"});

  const fs::path lite = dir / "lite";
  fs::create_directory(lite);
  write_file(lite / "app.db", std::string("SQLite format 3\0", 16) + std::string(100, '\0'));
  CHECK(engines(lite) == v{"SQLite:app.db"});
  CHECK(engines(lite / "app.db") == v{"SQLite:" + (lite / "app.db").string()});
}

// The probe reads the directory and the files' first bytes with POSIX calls (it includes no
// <filesystem> or <fstream>): what it makes of entries that are not plain files.
TEST_CASE("the engine probe follows symbolic links and reads only regular files", "[foreign][probe]") {
  ks::testing::temp_dir dir("probe_entries");
  auto engines = [](const fs::path& p) {
    std::vector<std::string> r;
    for (const auto& e : ks::probe_engines(p)) r.push_back(std::string(ks::engine_name(e.engine)) + ":" + e.file);
    return r;
  };
  using v = std::vector<std::string>;
  const std::string header("SQLite format 3\0", 16);
  const fs::path outside = dir / "outside";
  fs::create_directory(outside);
  write_file(outside / "real.db", header + std::string(100, '\0'));

  // Not regular files: a FIFO (opening it would wait for a writer), a subdirectory holding a
  // database (not looked into), a dangling link; and a file holding only the first 15 bytes.
  const fs::path odd = dir / "odd";
  fs::create_directory(odd);
  REQUIRE(::mkfifo((odd / "pipe.db").c_str(), 0600) == 0);
  fs::create_directory(odd / "sub");
  write_file(odd / "sub" / "inner.db", header);
  fs::create_symlink(odd / "missing.db", odd / "dangling.db");
  write_file(odd / "short.db", header.substr(0, 15));
  CHECK(engines(odd) == v{});

  // A link to a database is the database, by the link's name; a link to the directory is the
  // directory; a link to the database given as the path is the path.
  fs::create_symlink(outside / "real.db", odd / "alias.db");
  CHECK(engines(odd) == v{"SQLite:alias.db"});
  fs::create_directory_symlink(odd, dir / "odd-link");
  CHECK(engines(dir / "odd-link") == v{"SQLite:alias.db"});
  CHECK(engines(odd / "alias.db") == v{"SQLite:" + (odd / "alias.db").string()});
  CHECK(engines(odd / "pipe.db") == v{});

  // The refusal names the path as it was given.
  try {
    ks::require_engine(dir / "odd-link", ks::storage_engine::lmdb, "who");
    FAIL("no wrong_engine_error");
  } catch (const ks::wrong_engine_error& e) {
    CHECK(e.found() == ks::storage_engine::sqlite);
    CHECK(std::string(e.what()).find("who: " + fs::path(dir / "odd-link").string() + " holds a SQLite database (alias.db)") !=
          std::string::npos);
  }
}

TEST_CASE("an SQLite database among thousands of other files is still found", "[foreign][probe]") {
  // The probe once read the header of the first 64 unknown files only: an SQLite database listed
  // after them was missed, and an adapter would have opened its own database next to it.
  ks::testing::temp_dir dir("crowd");
  const fs::path crowd = dir / "crowd";
  fs::create_directory(crowd);
  for (int i = 0; i < 2000; ++i) write_file(crowd / ("note-" + std::to_string(i) + ".txt"), "not a database");
  write_file(crowd / "zz-last.db", std::string("SQLite format 3\0", 16) + std::string(100, '\0'));
  const auto found = ks::probe_engines(crowd);
  REQUIRE(found.size() == 1);
  CHECK(found[0].engine == ks::storage_engine::sqlite);
  CHECK(found[0].file == "zz-last.db");
  const auto e = [&]() -> std::optional<ks::wrong_engine_error> {
    try {
      ks::lmdb_backend m(crowd);
    } catch (const ks::wrong_engine_error& w) {
      return w;
    }
    return std::nullopt;
  }();
  REQUIRE(e);
  CHECK(std::string(e->what()).find("SQLite") != std::string::npos);
  CHECK_FALSE(fs::exists(crowd / "data.mdb"));
}

TEST_CASE("an adapter refuses another engine's directory and creates nothing in it", "[foreign][engine]") {
  ks::testing::temp_dir dir("engine");
  const std::string lv = dir / "leveldb", md = dir / "lmdb";
  {
    leveldb_store s(lv);
    s.put<message_metadata>({"q", 1}, ks::bytes("one"));
  }
  {
    lmdb_store s(md);
    s.put<message_metadata>({"q", 1}, ks::bytes("one"));
  }

  SECTION("a LevelDB directory opened with lmdb_backend") {
    CHECK_THROWS_AS(ks::lmdb_backend(lv), ks::wrong_engine_error);
    const std::string e = open_error<lmdb_store>(lv);
    CHECK_THAT(e, Catch::Contains("holds a LevelDB database (CURRENT)") && Catch::Contains(lv) &&
                      Catch::Contains("keyschema::leveldb_backend"));
    CHECK_FALSE(fs::exists(fs::path(lv) / "data.mdb"));
    CHECK_FALSE(fs::exists(fs::path(lv) / "lock.mdb"));
    ks::lmdb_options ro;
    ro.read_only = true;
    CHECK_THAT(open_error<lmdb_store>(lv, ro), Catch::Contains("holds a LevelDB database"));
    leveldb_store s(lv);  // still intact for its own engine
    CHECK(s.get<message_metadata>({"q", 1}) == ks::bytes("one"));
  }
  SECTION("an LMDB directory opened with leveldb_backend") {
    try {
      ks::leveldb_backend b(md);
      FAIL("opened");
    } catch (const ks::wrong_engine_error& e) {
      CHECK(e.found() == ks::storage_engine::lmdb);
      CHECK(e.native_call() == "keyschema::probe_engines");
    }
    CHECK_THAT(open_error<leveldb_store>(md), Catch::Contains("holds an LMDB database") && Catch::Contains(md));
    for (const char* f : {"CURRENT", "LOCK", "LOG"}) CHECK_FALSE(fs::exists(fs::path(md) / f));
    lmdb_store s(md);
    CHECK(s.get<message_metadata>({"q", 1}) == ks::bytes("one"));
  }
  SECTION("a RocksDB directory is refused by both") {
    const fs::path rocks = dir / "rocks";
    fs::create_directory(rocks);
    write_file(rocks / "CURRENT", "MANIFEST-000004\n");
    write_file(rocks / "MANIFEST-000004", std::string(64, '\x01'));
    write_file(rocks / "OPTIONS-000007", "[Version]\n  rocksdb_version=7.8.3\n");
    CHECK_THAT(open_error<leveldb_store>(rocks), Catch::Contains("holds a RocksDB database (OPTIONS-000007)") &&
                                                     Catch::Contains(rocks.string()));
    CHECK_THAT(open_error<lmdb_store>(rocks), Catch::Contains("holds a RocksDB database (OPTIONS-000007)"));
    fs::remove(rocks / "OPTIONS-000007");
    write_file(rocks / "IDENTITY", "1b4e28ba-2fa1-11d2-883f-0016d3cca427\n");
    CHECK_THAT(open_error<leveldb_store>(rocks), Catch::Contains("holds a RocksDB database (IDENTITY)"));
    CHECK_FALSE(fs::exists(rocks / "data.mdb"));
    CHECK_FALSE(fs::exists(rocks / "LOCK"));
  }
  SECTION("a SQLite database (written by Python's sqlite3) is refused by both") {
    const fs::path lite = dir / "lite";
    fs::create_directory(lite);
    python("import sqlite3\nc = sqlite3.connect('" + (lite / "app.db").string() +
           "')\nc.execute('create table t(x)')\nc.execute('insert into t values (1)')\nc.commit()\nc.close()\n");
    CHECK_THAT(open_error<leveldb_store>(lite), Catch::Contains("holds a SQLite database (app.db)"));
    CHECK_THAT(open_error<lmdb_store>(lite), Catch::Contains("holds a SQLite database (app.db)"));
    CHECK_THAT(open_error<lmdb_store>(lite / "app.db"), Catch::Contains("holds a SQLite database"));
    CHECK_THAT(open_error<leveldb_store>(lite / "app.db"), Catch::Contains("holds a SQLite database"));
    CHECK_FALSE(fs::exists(lite / "data.mdb"));
    CHECK_FALSE(fs::exists(lite / "CURRENT"));
  }
}

TEST_CASE("a non-empty LevelDB without a schema record is refused unless adopted", "[foreign][adopt][leveldb]") {
  ks::testing::temp_dir dir("foreign-leveldb");
  const std::string path = dir / "db";
  plyvel_write(path, 3);

  const std::string e = open_error<leveldb_store>(path);
  CHECK_THAT(e, Catch::Contains(path) && Catch::Contains("holds 3 keys not written by keyschema") &&
                    Catch::Contains("ks::adopt"));
  CHECK_THROWS_AS(leveldb_store(path), ks::schema_error);
  {
    ks::leveldb_backend raw(path);
    CHECK_FALSE(has_schema_record(raw));  // the refusal wrote nothing
  }
  {
    leveldb_store s(ks::adopt, path);
    CHECK(s.get<message_metadata>({"q", 2}) == ks::bytes("payload"));
    CHECK(has_schema_record(s.backend()));
  }
  leveldb_store again(path);  // an ordinary open now
  CHECK(again.get<message_metadata>({"q", 3}) == ks::bytes("payload"));
}

TEST_CASE("adopt does not override another schema's record", "[foreign][adopt]") {
  ks::testing::temp_dir dir("adopt-other");
  const std::string path = dir / "db";
  { lmdb_store s(path); }
  using other = ks::schema<ks::keyspace<"other", ks::bytes, ks::lit<"OTHER">, ks::field<"id", std::uint64_t>>>;
  try {
    ks::store<other, ks::lmdb_backend> s(ks::adopt, path);
    FAIL("opened");
  } catch (const ks::schema_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("another schema layout"));
  }
  ks::store<broker, ks::memory_backend> mem(ks::adopt);  // an empty database: adopting just records
  CHECK(has_schema_record(mem.backend()));
}

TEST_CASE("a non-empty LMDB without a schema record is refused unless adopted", "[foreign][adopt][lmdb]") {
  ks::testing::temp_dir dir("foreign-lmdb");

  SECTION("written by python3-lmdb, more keys than are counted") {
    const std::string path = dir / "py";
    py_lmdb_write(path, 1200);
    CHECK_THAT(open_error<lmdb_store>(path),
               Catch::Contains(path) && Catch::Contains("holds 1000+ keys not written by keyschema"));
    {
      ks::lmdb_backend raw(path);
      CHECK_FALSE(has_schema_record(raw));
    }
    {
      lmdb_store s(ks::adopt, path);
      CHECK(s.get<message_metadata>({"q", 7}) == ks::bytes("payload"));
    }
    lmdb_store again(path);
    CHECK(again.get<message_metadata>({"q", 9}) == ks::bytes("payload"));
  }
  SECTION("written by mdb_load (lmdb-utils)") {
    const fs::path path = dir / "loaded";
    fs::create_directory(path);
    INFO("mdb_load failed (lmdb-utils, see scripts/install-deps.sh)");
    REQUIRE(sh("printf 'legacy.key.1\\nvalue\\nlegacy.key.2\\nvalue\\n' | mdb_load -T '" + path.string() + "'") == 0);
    CHECK_THAT(open_error<lmdb_store>(path), Catch::Contains("holds 2 keys not written by keyschema"));
    lmdb_store s(ks::adopt, path);  // legacy keys of no keyspace: adopted, and skipped by scans
    CHECK(ranges::distance(s.scan<message_metadata>()) == 0);
  }
}

TEST_CASE("a read-only LMDB open of a database without a schema record says so", "[foreign][read_only][lmdb]") {
  ks::testing::temp_dir dir("readonly");
  ks::lmdb_options ro;
  ro.read_only = true;
  const std::string exact =
      "read-only open of a database that has no keyschema schema record; open it read-write once, or with adopt";

  SECTION("an empty environment") {
    const std::string path = dir / "empty";
    python("import lmdb\nlmdb.open('" + path + "').close()\n");
    const std::string e = open_error<lmdb_store>(path, ro);
    CHECK_THAT(e, Catch::Contains(exact) && Catch::Contains(path));
    CHECK_THAT(e, !Catch::Contains("mdb_txn_begin"));
    CHECK_THROWS_AS(lmdb_store(path, ro), ks::schema_error);
    { lmdb_store rw(path); }  // read-write once
    lmdb_store s(path, ro);
    CHECK(ranges::distance(s.scan<message_metadata>()) == 0);
  }
  SECTION("a foreign environment") {
    const std::string path = dir / "foreign";
    py_lmdb_write(path, 5);
    CHECK_THAT(open_error<lmdb_store>(path, ro), Catch::Contains(exact));
    CHECK_THAT(open_error<lmdb_store>(ks::adopt, path, ro), Catch::Contains(exact) && Catch::Contains("adopting"));
    { lmdb_store adopted(ks::adopt, path); }
    lmdb_store s(path, ro);
    CHECK(s.get<message_metadata>({"q", 5}) == ks::bytes("payload"));
  }
}

TEST_CASE("keyschema-dump names the database it cannot read", "[foreign][dump]") {
  ks::testing::temp_dir dir("dump-foreign");
  auto run = [](const std::string& path, std::string& err) {
    std::ostringstream out, e;
    const int status = ks::dump::run(std::vector<std::string_view>{path}, out, e);
    err = e.str();
    return status;
  };
  const fs::path rocks = dir / "rocks";
  fs::create_directory(rocks);
  write_file(rocks / "CURRENT", "MANIFEST-000004\n");
  write_file(rocks / "OPTIONS-000007", "[Version]\n");
  std::string err;
  CHECK(run(rocks.string(), err) == 2);  // detected as RocksDB; RocksDB refuses the missing MANIFEST
  CHECK_THAT(err, Catch::Contains(rocks.string()) && Catch::Contains("(RocksDB)") && Catch::Contains("rocksdb::DB::Open"));

  const fs::path lite = dir / "app.db";
  write_file(lite, std::string("SQLite format 3\0", 16) + std::string(100, '\0'));
  CHECK(run(lite.string(), err) == 2);
  CHECK_THAT(err, Catch::Contains("a SQLite database file, not a directory"));

  const std::string foreign = dir / "foreign";  // a schema-less LevelDB lists fine: the tool needs no schema
  plyvel_write(foreign, 2);
  std::ostringstream out, e;
  CHECK(ks::dump::run(std::vector<std::string_view>{foreign}, out, e) == 0);
  CHECK_THAT(out.str(), Catch::Contains("(\"DESTINATION\", \"q\", \"MESSAGE_METADATA\", 2)"));
}

}  // namespace foreign_database_test
