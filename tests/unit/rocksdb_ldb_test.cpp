// tests/unit/rocksdb_ldb_test.cpp: keyschema's RocksDB databases and `ldb` (rocksdb-tools, the
// command-line tool of Debian's RocksDB) read each other's files.
//
// The backend's defaults (paranoid_checks, WAL tracking in the MANIFEST, the recovery mode) must
// not make its files unreadable to plain RocksDB: ldb scans every entry the backend wrote (in
// table files and in the write-ahead log), byte for byte, and writes entries the backend reads.
// Needs /usr/bin/ldb (scripts/install-deps.sh installs rocksdb-tools); prints KEYSCHEMA-SKIP
// without it.
#include <catch2/catch.hpp>

#include <keyschema/rocksdb.hpp>
#include <keyschema/write_batch.hpp>

#include <support/hex.hpp>
#include <support/temp_dir.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace rocksdb_ldb_test {

using keyschema::key_range;
using keyschema::rocksdb_backend;
using keyschema::write_batch;
using keyschema::write_options;

namespace {

std::string hex(std::string_view bytes) { return "0x" + keyschema::testing::hex_digits(bytes); }

// Runs command with its stdout in file out; returns the exit status.
int run(const std::string& command, const std::filesystem::path& out) {
  const int raw = std::system((command + " > '" + out.string() + "' 2>&1").c_str());
  return raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("rocksdb_backend: ldb reads the backend's database and the backend reads ldb's", "[rocksdb][interop]") {
  if (!std::filesystem::exists("/usr/bin/ldb")) {
    std::puts("KEYSCHEMA-SKIP: /usr/bin/ldb is missing (apt-get install rocksdb-tools)");
    SUCCEED();
    return;
  }
  keyschema::testing::temp_dir dir("rocksdb-ldb");
  const auto path = dir.path() / "db";
  std::string expected;  // ldb scan --hex output: "0x<key> : 0x<value>" lines in key order
  {
    rocksdb_backend db(path);
    write_batch wb;
    for (int i = 0; i < 300; ++i) {
      wb.put("t" + std::to_string(10000 + i), std::string("table\0", 6) + std::to_string(i));
    }
    db.write(wb, write_options{.sync = true});
    db.compact_range({});
    write_batch log;
    for (int i = 0; i < 100; ++i) log.put("u" + std::to_string(10000 + i), "\xFFlog-" + std::to_string(i));
    db.write(log, write_options{.sync = false});
    for (auto c = db.cursor(key_range{}, nullptr); c.valid(); c.next()) {
      expected += hex(c.key()) + " : " + hex(c.value()) + "\n";
    }
  }
  const auto out = dir.path() / "ldb.out";
  const std::string db_arg = "--db='" + path.string() + "'";
  REQUIRE(run("/usr/bin/ldb " + db_arg + " --hex scan", out) == 0);
  CHECK(read_all(out) == expected);

  REQUIRE(run("/usr/bin/ldb " + db_arg + " --hex put 0x70313030 0x00FF6C6462", out) == 0);  // "p100" -> "\0\xFFldb"
  rocksdb_backend db(path);
  std::string v;
  REQUIRE(db.get("p100", v, nullptr));
  CHECK(v == std::string("\0\xFFldb", 5));
  REQUIRE(db.get("u10042", v, nullptr));
  CHECK(v == "\xFFlog-42");
}

}  // namespace rocksdb_ldb_test
