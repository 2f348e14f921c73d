// tests/unit/rocksdb_backend_test.cpp: byte-level tests of keyschema::rocksdb_backend.
//
// Sync default and opt-out, persistence, native range erase, limits, locking, refusal of another
// engine's directory and of a foreign database without a schema record, interchange with plain
// RocksDB. The byte-level contract (point operations, batches, byte order, bounded cursors,
// snapshots, a randomized comparison with memory_backend) is checked by
// tests/conformance/backend_contract.hpp in conformance_rocksdb; damaged files by
// the durability suite (tests/durability/). Also the info log: rocksdb_info_log writes LOG (and keeps LOG.old),
// drops what it cannot write, and a logger of the user's replaces it.
#include <catch2/catch.hpp>

#include <keyschema/backend.hpp>
#include <keyschema/engine_probe.hpp>
#include <keyschema/error.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>
#include <keyschema/rocksdb.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/store.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/types.hpp>
#include <keyschema/write_batch.hpp>

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>

#include <support/direct_batch_checks.hpp>
#include <support/temp_dir.hpp>
#include <support/thrown.hpp>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace rocksdb_backend_test {

namespace ks = keyschema;
namespace fs = std::filesystem;
using keyschema::key_range;
using keyschema::rocksdb_backend;
using keyschema::rocksdb_options;
using keyschema::write_batch;
using keyschema::write_options;
using keyschema::testing::contains;
using keyschema::testing::thrown;

static_assert(keyschema::backend<rocksdb_backend>);
static_assert(keyschema::backend_with_erase_range<rocksdb_backend>);
static_assert(!std::is_copy_constructible_v<rocksdb_backend>);
static_assert(std::is_nothrow_move_constructible_v<rocksdb_backend>);
static_assert(std::is_nothrow_move_constructible_v<rocksdb_backend::cursor_type>);

namespace {

using message_metadata =
    ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                 ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
using broker = ks::schema<message_metadata>;
using rocksdb_store = ks::store<broker, rocksdb_backend>;

using entries = std::vector<std::pair<std::string, std::string>>;

entries scan(const rocksdb_backend& b, const key_range& r) {
  entries out;
  for (auto c = b.cursor(r, nullptr); c.valid(); c.next()) out.emplace_back(std::string(c.key()), std::string(c.value()));
  return out;
}

std::optional<std::string> get(const rocksdb_backend& b, std::string_view key) {
  std::string v;
  if (!b.get(key, v, nullptr)) return std::nullopt;
  return v;
}

void put(rocksdb_backend& b, std::string_view key, std::string_view value, const write_options& opts) {
  write_batch wb;
  wb.put(key, value);
  b.write(wb, opts);
}

// The number of write-ahead log syncs RocksDB counted since the database was opened, from the
// "Cumulative WAL: <n> writes, <m> syncs" line of the rocksdb.dbstats property.
std::uint64_t wal_syncs(const rocksdb_backend& b) {
  const std::optional<std::string> stats = b.property("rocksdb.dbstats");
  REQUIRE(stats);
  const std::size_t line = stats->find("Cumulative WAL:");
  REQUIRE(line != std::string::npos);
  const std::size_t syncs = stats->find(" syncs", line);
  REQUIRE(syncs != std::string::npos);
  const std::size_t start = stats->rfind(' ', syncs - 1) + 1;
  return std::stoull(stats->substr(start, syncs - start));
}

template <class Store, class... Args>
std::string open_error(Args&&... args) {
  try {
    Store s(std::forward<Args>(args)...);
  } catch (const std::exception& e) {
    return e.what();
  }
  FAIL("opened");
  return {};
}

}  // namespace

TEST_CASE("rocksdb_backend: a commit is synced by default, {.sync = false} opts out", "[rocksdb]") {
  ks::testing::temp_dir dir("rocksdb");
  rocksdb_store s(dir.path() / "db");
  const std::uint64_t before = wal_syncs(s.backend());
  s.put<message_metadata>({"q", 1}, ks::bytes("synced"));  // default write_options
  CHECK(wal_syncs(s.backend()) == before + 1);
  s.put<message_metadata>({"q", 2}, ks::bytes("not synced"), {.sync = false});
  CHECK(wal_syncs(s.backend()) == before + 1);
  auto b = s.batch();
  b.put<message_metadata>({"q", 3}, ks::bytes("batch"));
  b.commit();
  CHECK(wal_syncs(s.backend()) == before + 2);
  s.write(write_batch{}, write_options{false});  // nothing to do
  s.write(write_batch{}, write_options{true});   // rocksdb::DB::SyncWAL
  CHECK(s.get<message_metadata>({"q", 2}) == ks::bytes("not synced"));
}

TEST_CASE("rocksdb_backend: data persists across reopen", "[rocksdb]") {
  ks::testing::temp_dir dir("rocksdb");
  const auto path = dir.path() / "nested" / "db";  // missing parents are created
  {
    rocksdb_backend db(path);
    write_batch wb;
    for (int i = 0; i < 500; ++i) wb.put("k" + std::to_string(i), std::to_string(i * i));
    db.write(wb, write_options{true});
    put(db, "unsynced", "still there after a clean close", write_options{false});
    write_batch e;
    e.erase("k7");
    db.write(e, {});
    db.compact_range({"k1", "k2"});
    put(db, "k10", "after compaction", {});
  }
  rocksdb_backend db(path);
  CHECK(get(db, "k3") == "9");
  CHECK(get(db, "k499") == std::to_string(499 * 499));
  CHECK(get(db, "unsynced") == "still there after a clean close");
  CHECK_FALSE(get(db, "k7"));
  CHECK(get(db, "k10") == "after compaction");
  CHECK(scan(db, {}).size() == 500);  // 500 - k7 + unsynced
}

TEST_CASE("rocksdb_backend: erase_range writes one range tombstone", "[rocksdb]") {
  ks::testing::temp_dir dir("rocksdb");
  rocksdb_store s(dir.path() / "db");
  auto b = s.batch();
  for (std::uint64_t i = 1; i <= 3000; ++i) b.put<message_metadata>({"q", i}, ks::bytes("m"));
  b.put<message_metadata>({"r", 1}, ks::bytes("kept"));
  b.commit();
  const std::string deletes_before = *s.backend().property("rocksdb.num-deletes-active-mem-table");

  CHECK(s.erase_prefix<message_metadata>(std::string("q")) == 3000);
  CHECK(s.scan<message_metadata>(std::string("q")).begin() == s.scan<message_metadata>(std::string("q")).end());
  CHECK(s.get<message_metadata>({"r", 1}) == ks::bytes("kept"));
  // A chunked erase would have written 3000 point tombstones.
  CHECK(*s.backend().property("rocksdb.num-deletes-active-mem-table") == deletes_before);

  SECTION("a scan limit falls back to bounded batches") {
    auto b2 = s.batch();
    for (std::uint64_t i = 1; i <= 10; ++i) b2.put<message_metadata>({"q", i}, ks::bytes("m"));
    b2.commit();
    CHECK(s.erase_range(s.scan<message_metadata>(std::string("q")).limit(4)) == 4);
    CHECK(s.get<message_metadata>({"q", 5}) == ks::bytes("m"));
    CHECK_FALSE(s.get<message_metadata>({"q", 4}));
  }
  SECTION("the backend's erase_range without an upper bound") {
    rocksdb_backend& raw = s.unsafe_backend();
    put(raw, "x1", "1", {});
    put(raw, "x2", "2", {});
    raw.erase_range({"x", ""}, {});
    CHECK(scan(raw, {"x", ""}).empty());
    raw.erase_range({"y", ""}, {});  // nothing at or after "y"
    CHECK(s.get<message_metadata>({"r", 1}) == ks::bytes("kept"));
  }
}

TEST_CASE("rocksdb_backend: limits", "[rocksdb]") {
  ks::testing::temp_dir dir("rocksdb");
  rocksdb_options o;
  o.max_entry_bytes = 100;
  rocksdb_backend db(dir.path() / "db", o);
  CHECK(db.limits().max_entry_bytes == 100);
  CHECK(db.limits().max_key_bytes == 100);
  CHECK(db.limits().max_ops_per_write == 0xFFFFFFFF);
  put(db, "k", std::string(99, 'v'), {});
  const auto e = thrown<ks::limit_error>([&] { put(db, "k", std::string(100, 'v'), {}); });
  REQUIRE(e);
  CHECK(contains(e->what(), "max_entry_bytes"));
  CHECK(get(db, "k") == std::string(99, 'v'));
  rocksdb_options huge;
  huge.max_entry_bytes = std::size_t{1} << 40;
  CHECK(rocksdb_backend(dir.path() / "db2", huge).limits().max_entry_bytes == ks::rocksdb_max_entry_bytes);
}

static_assert(ks::backend_with_direct_batch<rocksdb_backend>);
static_assert(ks::detail::direct_batch_for<rocksdb_backend>);
static_assert(std::is_nothrow_move_constructible_v<ks::rocksdb_direct_batch>);

// What keyschema::store_batch commits on RocksDB without placements: the engine's batch, built
// directly (with placements: rocksdb_placement_test.cpp, whose batches land in their families).
TEST_CASE("rocksdb_backend: rocksdb_direct_batch's size, byte_size and append_to give back its operations in order",
          "[rocksdb]") {
  ks::testing::check_direct_batch_gives_back<ks::rocksdb_direct_batch>();
}

TEST_CASE("rocksdb_backend: write_direct writes as write() does", "[rocksdb]") {
  // Each scenario through write() on one database and write_direct() on another: the same state,
  // the same log syncs, the same errors.
  const bool direct = GENERATE(false, true);
  INFO((direct ? "write_direct" : "write"));
  ks::testing::temp_dir dir("rocksdb");
  rocksdb_options o;
  o.max_entry_bytes = 6000;
  rocksdb_backend db(dir.path() / "db", o);
  const auto write = [&](const write_batch& wb, write_options wo) {
    if (!direct) return db.write(wb, wo);
    ks::rocksdb_direct_batch d = ks::testing::direct_of<ks::rocksdb_direct_batch>(wb);
    db.write_direct(d, wo);
    CHECK(d.size() == wb.size());  // left as it was
  };

  SECTION("later operations win; erases; sync") {
    write_batch wb;
    wb.put("a", "1");
    wb.put("b", "2");
    wb.erase("a");
    wb.put("b", "3");
    wb.put("c", std::string(5000, 'c'));
    const std::uint64_t syncs = wal_syncs(db);
    write(wb, write_options{false});
    CHECK(wal_syncs(db) == syncs);
    CHECK(scan(db, {}) == entries{{"b", "3"}, {"c", std::string(5000, 'c')}});
    write_batch more;
    more.erase("b");
    write(more, write_options{true});
    CHECK(wal_syncs(db) == syncs + 1);
    CHECK(scan(db, {}) == entries{{"c", std::string(5000, 'c')}});
  }
  SECTION("an empty batch: nothing without sync, rocksdb::DB::SyncWAL with it") {
    // (SyncWAL is not counted in rocksdb.dbstats' WAL syncs: what it does is seen through a
    // failing file system in tests/durability/rocksdb.cpp.)
    put(db, "k", "v", {.sync = false});
    const std::uint64_t syncs = wal_syncs(db);
    write(write_batch{}, write_options{false});
    write(write_batch{}, write_options{true});
    CHECK(wal_syncs(db) == syncs);
    CHECK(scan(db, {}) == entries{{"k", "v"}});
  }
  SECTION("an operation over max_entry_bytes: the same limit_error naming the first one, nothing written") {
    write_batch wb;
    wb.put("first", "fits");
    wb.put(std::string(10, 'k'), std::string(5991, 'v'));  // 6001: the first one over
    wb.put(std::string(7000, 'k'), "");                     // the largest
    const auto e = thrown<ks::limit_error>([&] { write(wb, {}); });
    REQUIRE(e);
    CHECK(contains(e->what(), "an operation of 10 key bytes and 5991 value bytes exceeds the limit of 6000 bytes"));
    CHECK_FALSE(get(db, "first"));
  }
}

// A second open, in this process or another, is locked_error: tests/durability/cases/processes.cpp.

TEST_CASE("rocksdb_backend: LevelDB, LMDB and RocksDB directories are told apart and refused", "[rocksdb][engine]") {
  ks::testing::temp_dir dir("rocksdb");
  const fs::path lv = dir.path() / "leveldb", md = dir.path() / "lmdb", rk = dir.path() / "rocksdb";
  { ks::leveldb_backend l(lv); }
  { ks::lmdb_backend m(md); }
  { rocksdb_backend r(rk); }
  const auto engines = [](const fs::path& p) {
    std::vector<ks::storage_engine> v;
    for (const ks::engine_evidence& e : ks::probe_engines(p)) v.push_back(e.engine);
    return v;
  };
  CHECK(engines(lv) == std::vector{ks::storage_engine::leveldb});
  CHECK(engines(md) == std::vector{ks::storage_engine::lmdb});
  CHECK(engines(rk) == std::vector{ks::storage_engine::rocksdb});

  SECTION("rocksdb_backend refuses LevelDB and LMDB and creates nothing") {
    const auto e = thrown<ks::wrong_engine_error>([&] { rocksdb_backend b(lv); });
    REQUIRE(e);
    CHECK(e->found() == ks::storage_engine::leveldb);
    CHECK(e->native_call() == "keyschema::probe_engines");
    CHECK(contains(e->what(), "holds a LevelDB database (CURRENT)"));
    CHECK(contains(e->what(), "keyschema::leveldb_backend"));
    CHECK_FALSE(fs::exists(lv / "IDENTITY"));
    CHECK(contains(open_error<rocksdb_store>(md), "holds an LMDB database"));
    CHECK_FALSE(fs::exists(md / "CURRENT"));
    ks::leveldb_backend still(lv);  // intact for its own engine
  }
  SECTION("leveldb_backend and lmdb_backend refuse RocksDB") {
    const auto e = thrown<ks::wrong_engine_error>([&] { ks::leveldb_backend b(rk); });
    REQUIRE(e);
    CHECK(e->found() == ks::storage_engine::rocksdb);
    CHECK(contains(e->what(), "holds a RocksDB database (OPTIONS-"));
    CHECK(contains(e->what(), "open it with keyschema::rocksdb_backend"));
    CHECK(thrown<ks::wrong_engine_error>([&] { ks::lmdb_backend b(rk); }));
    CHECK_FALSE(fs::exists(rk / "data.mdb"));
    rocksdb_backend still(rk);
  }
  SECTION("a RocksDB creation cut short (IDENTITY and MANIFEST, no CURRENT) is still RocksDB's") {
    const fs::path cut = dir.path() / "cut";
    fs::create_directory(cut);
    std::ofstream(cut / "IDENTITY") << "1b4e28ba-2fa1-11d2-883f-0016d3cca427\n";
    std::ofstream(cut / "MANIFEST-000001") << "x";
    CHECK(engines(cut) == std::vector{ks::storage_engine::rocksdb});
    CHECK(thrown<ks::wrong_engine_error>([&] { ks::leveldb_backend b(cut); }));
  }
}

TEST_CASE("rocksdb_backend: a non-empty RocksDB without a schema record is refused unless adopted",
          "[rocksdb][adopt]") {
  ks::testing::temp_dir dir("rocksdb");
  const std::string path = dir / "db";
  {
    // Written with plain RocksDB, as another program would.
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(o, path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    const std::string key = ks::tuple::pack("DESTINATION", "q", "MESSAGE_METADATA", std::uint64_t{3});
    REQUIRE(db->Put(rocksdb::WriteOptions(), key, "payload").ok());
  }
  CHECK(contains(open_error<rocksdb_store>(path), "not written by keyschema"));
  {
    rocksdb_store s(ks::adopt, path);
    CHECK(s.get<message_metadata>({"q", 3}) == ks::bytes("payload"));
  }
  rocksdb_store again(path);  // an ordinary open now
  CHECK(again.get<message_metadata>({"q", 3}) == ks::bytes("payload"));
}

TEST_CASE("rocksdb_backend: open errors", "[rocksdb]") {
  ks::testing::temp_dir dir("rocksdb");
  SECTION("no database and create_if_missing = false") {
    rocksdb_options o;
    o.create_if_missing = false;
    const auto e = thrown<ks::backend_error>([&] { rocksdb_backend b(dir.path() / "none", o); });
    REQUIRE(e);
    CHECK(e->native_call() == "rocksdb::DB::Open");
    CHECK(e->native_code() == static_cast<int>(rocksdb::Status::kInvalidArgument));
  }
  SECTION("error_if_exists") {
    { rocksdb_backend b(dir.path() / "db"); }
    rocksdb_options o;
    o.error_if_exists = true;
    const auto e = thrown<ks::backend_error>([&] { rocksdb_backend b(dir.path() / "db", o); });
    REQUIRE(e);
    CHECK(e->native_call() == "rocksdb::DB::Open");
    CHECK(contains(e->what(), "exists"));
  }
  SECTION("a path below a regular file") {
    std::ofstream(dir.path() / "file") << "x";
    const auto e = thrown<ks::backend_error>([&] { rocksdb_backend b(dir.path() / "file" / "db"); });
    REQUIRE(e);
    CHECK(e->native_call() == "std::filesystem::create_directories");
  }
}

TEST_CASE("rocksdb_backend: moving keeps snapshots and cursors working; native access", "[rocksdb]") {
  ks::testing::temp_dir dir("rocksdb");
  std::optional<rocksdb_backend> b;
  {
    rocksdb_backend a(dir.path() / "db");
    put(a, "k1", "v1", {});
    put(a, "k2", "v2", {});
    auto snap = a.snapshot();
    auto c = a.cursor({"k", ""}, &snap);
    b.emplace(std::move(a));
    put(*b, "k3", "v3", {});
    auto c2 = std::move(c);
    REQUIRE(c2.valid());
    CHECK(c2.key() == "k1");
    c2.next();
    CHECK(c2.key() == "k2");
    c2.next();
    CHECK_FALSE(c2.valid());  // k3 came after the snapshot
  }  // the cursors and the snapshot go before the backend
  std::string v;
  CHECK(b->native().Get(rocksdb::ReadOptions(), "k3", &v).ok());
  CHECK(v == "v3");
  CHECK(b->property("rocksdb.no-such-property") == std::nullopt);
  b->compact_range({});
  CHECK(b->approximate_size({}) > 0);
  CHECK(b->path() == dir / "db");
}

namespace {

std::string file_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A logger of the user's: counts the lines RocksDB gives it.
class counting_logger final : public ::rocksdb::Logger {
 public:
  using ::rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override { lines.fetch_add(1); }
  std::atomic<int> lines{0};
};

}  // namespace

TEST_CASE("rocksdb_backend: RocksDB's LOG is written by rocksdb_info_log; the previous run's is kept as LOG.old",
          "[rocksdb][info_log]") {
  keyschema::testing::temp_dir dir("rocksdb");
  const fs::path path = dir.path() / "db";
  {
    rocksdb_backend db(path);
    write_batch wb;
    wb.put("k", "v");
    db.write(wb, {});
  }
  const std::string first = file_text(path / "LOG");
  CHECK(contains(first, "RocksDB version"));  // RocksDB's own first lines, through our logger
  CHECK_FALSE(fs::exists(path / "LOG.old"));
  { rocksdb_backend db(path); }
  CHECK(file_text(path / "LOG.old") == first);
  CHECK(contains(file_text(path / "LOG"), "RocksDB version"));
}

TEST_CASE("rocksdb_backend: rocksdb_options::info_log takes a logger of the user's", "[rocksdb][info_log]") {
  keyschema::testing::temp_dir dir("rocksdb");
  const fs::path path = dir.path() / "db";
  const auto logger = std::make_shared<counting_logger>();
  {
    rocksdb_options o;
    o.info_log = logger;
    rocksdb_backend db(path, o);
  }
  CHECK(logger->lines.load() > 0);
  CHECK_FALSE(fs::exists(path / "LOG"));  // no file logger beside it
}

TEST_CASE("rocksdb_info_log: lines are RocksDB's format; a line it cannot write is dropped and counted, not fatal",
          "[rocksdb][info_log]") {
  keyschema::testing::temp_dir dir("rocksdb");
  SECTION("a file that cannot be opened: every line is dropped") {
    ks::rocksdb_info_log log((dir.path() / "missing" / "LOG").string());
    CHECK(log.last_error() == ENOENT);
    ::rocksdb::Log(&log, "line %d", 1);
    ::rocksdb::Log(&log, "line %d", 2);
    CHECK(log.dropped_lines() == 2);
    CHECK(log.GetLogFileSize() == 0);
  }
  SECTION("lines short and long (past the stack buffer), each ending in one newline") {
    const fs::path file = dir.path() / "LOG";
    {
      ks::rocksdb_info_log log(file.string());
      ::rocksdb::Log(&log, "short %s", "line");
      ::rocksdb::Log(&log, "%s", std::string(2000, 'x').c_str());
      ::rocksdb::Log(&log, "ends in a newline\n");
      ::rocksdb::Log(::rocksdb::InfoLogLevel::DEBUG_LEVEL, &log, "below the level");
      CHECK(log.dropped_lines() == 0);
      CHECK(log.last_error() == 0);
      CHECK(log.GetLogFileSize() == fs::file_size(file));
      CHECK(log.Close().ok());
      ::rocksdb::Log(&log, "after close");
      CHECK(log.dropped_lines() == 1);
    }
    const std::string text = file_text(file);
    std::vector<std::string> lines;
    for (std::size_t b = 0, e; (e = text.find('\n', b)) != std::string::npos; b = e + 1) lines.push_back(text.substr(b, e - b));
    REQUIRE(lines.size() == 3);
    CHECK(text.back() == '\n');
    CHECK(lines[0].size() > 27);
    CHECK(lines[0][4] == '/');  // "YYYY/MM/DD-HH:MM:SS.uuuuuu <thread> short line"
    CHECK(lines[0].substr(lines[0].size() - 11) == " short line");
    CHECK(lines[1].substr(lines[1].size() - 2001) == " " + std::string(2000, 'x'));
    CHECK(lines[2].substr(lines[2].size() - 18) == " ends in a newline");
  }
}

}  // namespace rocksdb_backend_test
