// tests/unit/leveldb_plyvel_test.cpp: keyschema's LevelDB databases and python3-plyvel (Debian's
// Python binding of the system LevelDB) open each other's files.
//
// The backend's syncing Env and its defaults (paranoid_checks, verify_checksums, the check for a
// missing CURRENT) must not change the files: plyvel, with paranoid checks, reads every entry the
// backend wrote (in table files and in the log) and writes entries the backend then reads.
// Needs /usr/bin/python3 with python3-plyvel (scripts/install-deps.sh installs it).
#include <catch2/catch.hpp>

#include <keyschema/leveldb.hpp>
#include <keyschema/write_batch.hpp>

#include <support/temp_dir.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace leveldb_plyvel_test {

using keyschema::key_range;
using keyschema::leveldb_backend;
using keyschema::write_batch;
using keyschema::write_options;

TEST_CASE("leveldb_backend: python3-plyvel reads the backend's database and the backend reads plyvel's",
          "[leveldb][interop]") {
  keyschema::testing::temp_dir dir("leveldb-plyvel");
  const auto path = dir.path() / "db";
  {
    leveldb_backend db(path);
    write_batch wb;
    for (int i = 0; i < 2000; ++i) wb.put("t" + std::to_string(10000 + i), "table-" + std::to_string(i));
    db.write(wb, write_options{.sync = true});
    db.compact_range({});
    write_batch log;
    for (int i = 0; i < 500; ++i) log.put("l" + std::to_string(10000 + i), "log-" + std::to_string(i));
    db.write(log, write_options{.sync = false});
  }

  const auto script = dir.path() / "check.py";
  std::ofstream(script) << R"(import sys, plyvel
db = plyvel.DB(sys.argv[1], paranoid_checks=True)
t = {k: v for k, v in db.iterator(prefix=b"t", verify_checksums=True)}
l = {k: v for k, v in db.iterator(prefix=b"l", verify_checksums=True)}
assert len(t) == 2000, len(t)
assert len(l) == 500, len(l)
assert all(t[b"t%d" % (10000 + i)] == b"table-%d" % i for i in range(2000))
assert all(l[b"l%d" % (10000 + i)] == b"log-%d" % i for i in range(500))
with db.write_batch(sync=True) as wb:
    for i in range(300):
        wb.put(b"p%d" % (10000 + i), b"plyvel-%d" % i)
db.close()
)";
  const std::string command = "/usr/bin/python3 '" + script.string() + "' '" + path.string() + "'";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);

  leveldb_backend db(path);
  int n = 0;
  for (auto c = db.cursor(key_range{"p", "q"}, nullptr); c.valid(); c.next(), ++n) {
    CHECK(c.key() == "p" + std::to_string(10000 + n));
    CHECK(c.value() == "plyvel-" + std::to_string(n));
  }
  CHECK(n == 300);
}

}  // namespace leveldb_plyvel_test
