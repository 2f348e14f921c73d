// tests/unit/leveldb_store_test.cpp: what keyschema::store does on LevelDB beyond the byte-level
// contract (conformance_leveldb runs the store's cases over it).
//
// The schema record of a new database goes to a table of its own: it sorts after every keyspace's
// keys (0xFF), so in a table with the first records written after it, that table's key range would
// overlap every later table of keys written in ascending order, and LevelDB's compactions would
// rewrite those tables instead of moving them down a level.
#include <catch2/catch.hpp>

#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>

#include <support/temp_dir.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace leveldb_store_test {

namespace ks = keyschema;

using message = ks::keyspace<"message", ks::bytes, ks::lit<"MSG">, ks::field<"id", std::uint64_t>>;
using schema = ks::schema<message>;
using store_type = ks::store<schema, ks::leveldb_backend>;

// The table lines of LevelDB's "leveldb.sstables" (" <number>:<size>[<smallest> .. <largest>]").
std::vector<std::string> tables(const store_type& db) {
  const std::optional<std::string> p = db.backend().property("leveldb.sstables");
  REQUIRE(p);
  std::vector<std::string> out;
  std::istringstream in(*p);
  for (std::string line; std::getline(in, line);) {
    if (line.find('[') != std::string::npos) out.push_back(line);
  }
  return out;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

TEST_CASE("store on LevelDB: a new database's schema record is in a table of its own", "[leveldb]") {
  ks::testing::temp_dir dir("leveldb");
  const auto path = dir.path() / "db";
  {
    store_type db(path);
    const std::vector<std::string> t = tables(db);
    INFO(db.backend().property("leveldb.sstables").value_or(""));
    REQUIRE(t.size() == 1);
    CHECK(count(t[0], "keyschema/schema") == 2);  // its smallest and its largest key
    // Messages written in ascending order go to tables that do not overlap it.
    auto b = db.batch();
    for (std::uint64_t id = 1; id <= 100; ++id) b.put<message>({id}, ks::bytes(std::string(100, 'm')));
    b.commit({.sync = false});
    // Flushes the memtable and compacts every key below the reserved ones.
    db.unsafe_backend().compact_range(ks::key_range{std::string(), std::string(1, '\xff'), false});
    CHECK(tables(db).size() >= 2);
    std::size_t with_record = 0;
    for (const std::string& line : tables(db)) with_record += count(line, "keyschema/schema") > 0 ? 1 : 0;
    CHECK(with_record == 1);
    for (const std::string& line : tables(db)) {
      if (count(line, "keyschema/schema") > 0) CHECK(count(line, "keyschema/schema") == 2);
    }
  }
  // Reopening records nothing and compacts nothing.
  store_type db(path);
  CHECK(db.get<message>({100}) == std::optional<ks::bytes>(ks::bytes(std::string(100, 'm'))));
}

}  // namespace leveldb_store_test
