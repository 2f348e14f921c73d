// tests/unit/sqlite_shell_test.cpp: the sqlite3 shell reads what keyschema writes.
//
// A store writes keys of several keyspaces through keyschema::sqlite_backend; the sqlite3
// command-line shell (Debian package sqlite3) then lists the kv table ORDER BY k as hex. The
// shell's order must be the store's scan order (memcmp of the encoded keys) and its hex must be
// exactly the encoded keys and values: the file is an ordinary SQLite database any SQLite tool
// can read, and its BLOB order is keyschema's byte order.
// Without the sqlite3 shell the test prints "KEYSCHEMA-SKIP: ..." and CTest reports it skipped.
#include <keyschema/keyschema.hpp>
#include <keyschema/sqlite.hpp>
#include <support/hex.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace sqlite_shell_test {

namespace ks = keyschema;
using ks::testing::temp_dir;

namespace {

using message = ks::keyspace<"message", std::string, ks::lit<"M">, ks::field<"queue", std::string>,
                             ks::field<"id", std::int64_t>>;
using depth = ks::keyspace<"depth", std::int64_t, ks::lit<"D">, ks::field<"queue", std::string>>;
using schema = ks::schema<message, depth>;

std::string hex(std::string_view s) { return keyschema::testing::hex_digits(s); }

}  // namespace

TEST_CASE("sqlite: the sqlite3 shell lists keyschema's keys in scan order, as hex", "[sqlite][shell]") {
  if (std::system("sqlite3 -version > /dev/null 2>&1") != 0) {
    std::printf("KEYSCHEMA-SKIP: the sqlite3 shell is not installed (apt-get install sqlite3)\n");
    WARN("sqlite3 shell missing: not checked");
    return;
  }
  temp_dir dir("sqlite-shell");
  const auto path = dir.path() / "db";
  std::vector<std::string> expected;  // "<hex key>|<hex value>" in the store's scan order
  {
    ks::store<schema, ks::sqlite_backend> db(path);
    for (const std::int64_t id : std::vector<std::int64_t>{-70000, -1, 0, 1, 255, 256, std::int64_t{1} << 40}) {
      db.put<message>({"orders", id}, "body " + std::to_string(id));
      db.put<message>({"audit", id}, std::string("\0\xff", 2));
    }
    db.put<depth>({"orders"}, 7);
    db.put<depth>({"a\0b"}, 1);  // an embedded NUL in a key field
    for (auto c = db.backend().cursor(ks::key_range{}, nullptr); c.valid(); c.next()) {
      expected.push_back(hex(c.key()) + "|" + hex(c.value()));
    }
  }  // closed: the log is checkpointed and the shell reads a quiet file
  REQUIRE(expected.size() == 17);  // 14 messages, 2 depths, the schema record

  const std::string out = (dir.path() / "shell.txt").string();
  const std::string cmd = "sqlite3 -readonly '" + (path / ks::sqlite_file_name).string() +
                          "' 'SELECT hex(k), hex(v) FROM kv ORDER BY k' > '" + out + "' 2>&1";
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(out);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  CHECK(lines == expected);
}

}  // namespace sqlite_shell_test
