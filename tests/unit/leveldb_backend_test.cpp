// tests/unit/leveldb_backend_test.cpp: byte-level tests of keyschema::leveldb_backend.
//
// Sync, persistence, limits, interchange with plain LevelDB and every documented error. The
// byte-level contract (point operations, batches, byte order, bounded cursors, snapshots, a
// randomized comparison with memory_backend) is checked by tests/conformance/backend_contract.hpp
// in conformance_leveldb.
// Concurrent readers with a writer: leveldb_backend_concurrency_test.cpp.
#include <catch2/catch.hpp>

#include <keyschema/backend.hpp>
#include <keyschema/error.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/write_batch.hpp>

#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>

#include <support/direct_batch_checks.hpp>
#include <support/temp_dir.hpp>
#include <support/thrown.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace leveldb_backend_test {

using namespace std::string_literals;
using keyschema::key_range;
using keyschema::leveldb_backend;
using keyschema::leveldb_options;
using keyschema::write_batch;
using keyschema::write_options;

static_assert(keyschema::backend<leveldb_backend>);
static_assert(!std::is_copy_constructible_v<leveldb_backend>);
static_assert(std::is_nothrow_move_constructible_v<leveldb_backend>);
static_assert(std::is_nothrow_move_constructible_v<leveldb_backend::cursor_type>);

namespace {

using entries = std::vector<std::pair<std::string, std::string>>;

template <class Backend>
entries scan(const Backend& b, const key_range& r, const typename Backend::snapshot_type* snap = nullptr) {
  entries out;
  for (auto c = b.cursor(r, snap); c.valid(); c.next()) out.emplace_back(std::string(c.key()), std::string(c.value()));
  return out;
}

template <class Backend>
std::optional<std::string> get(const Backend& b, std::string_view key,
                               const typename Backend::snapshot_type* snap = nullptr) {
  std::string v;
  if (!b.get(key, v, snap)) return std::nullopt;
  return v;
}

template <class Backend>
void put(Backend& b, std::string_view key, std::string_view value, bool sync = false) {
  write_batch wb;
  wb.put(key, value);
  b.write(wb, write_options{sync});
}

template <class Backend>
void erase(Backend& b, std::string_view key) {
  write_batch wb;
  wb.erase(key);
  b.write(wb, {});
}

using keyschema::testing::contains;
using keyschema::testing::thrown;

// Small options so that a test touches table files, not only the memtable.
leveldb_options small_options() {
  leveldb_options o;
  o.write_buffer_bytes = 64 << 10;
  o.cache_bytes = 256 << 10;
  return o;
}

// An Env that makes appends to or syncs of the write-ahead log fail on demand, and counts syncs.
class faulty_env : public leveldb::EnvWrapper {
 public:
  faulty_env() : leveldb::EnvWrapper(leveldb::Env::Default()) {}

  std::atomic<bool> fail_append{false};
  std::atomic<bool> fail_sync{false};
  std::atomic<int> log_syncs{0};

  leveldb::Status NewWritableFile(const std::string& name, leveldb::WritableFile** result) override {
    leveldb::WritableFile* base = nullptr;
    leveldb::Status s = target()->NewWritableFile(name, &base);
    if (s.ok() && name.size() >= 4 && name.compare(name.size() - 4, 4, ".log") == 0) {
      *result = new log_file(base, this);
    } else {
      *result = base;
    }
    return s;
  }

 private:
  class log_file : public leveldb::WritableFile {
   public:
    log_file(leveldb::WritableFile* base, faulty_env* env) : base_(base), env_(env) {}
    leveldb::Status Append(const leveldb::Slice& data) override {
      if (env_->fail_append) return leveldb::Status::IOError("injected append failure");
      return base_->Append(data);
    }
    leveldb::Status Close() override { return base_->Close(); }
    leveldb::Status Flush() override { return base_->Flush(); }
    leveldb::Status Sync() override {
      if (env_->fail_sync) return leveldb::Status::IOError("injected sync failure");
      ++env_->log_syncs;
      return base_->Sync();
    }

   private:
    std::unique_ptr<leveldb::WritableFile> base_;
    faulty_env* env_;
  };
};

// A database in a scratch directory whose log goes through a faulty_env.
struct faulty_db {
  static leveldb_options with_env(faulty_env& e) {
    leveldb_options o;
    o.env = &e;
    return o;
  }
  keyschema::testing::temp_dir dir{"leveldb"};
  faulty_env env;
  leveldb_backend db{(std::filesystem::create_directories(dir.path() / "db"), dir.path() / "db"), with_env(env)};
};

}  // namespace

TEST_CASE("leveldb_backend: an empty batch", "[leveldb]") {
  faulty_db f;
  faulty_env& env = f.env;
  leveldb_backend& db = f.db;
  put(db, "k", "v");
  const int syncs = env.log_syncs;

  db.write(write_batch{}, write_options{false});
  CHECK(env.log_syncs == syncs);  // nothing to do
  db.write(write_batch{}, write_options{true});
  CHECK(env.log_syncs == syncs + 1);  // forces the earlier unsynced write to disk
  CHECK(scan(db, {}) == entries{{"k", "v"}});
}

TEST_CASE("leveldb_backend: write_options::sync maps to an fsync of the log", "[leveldb]") {
  faulty_db f;
  faulty_env& env = f.env;
  leveldb_backend& db = f.db;
  const int before = env.log_syncs;
  put(db, "a", "1", false);
  CHECK(env.log_syncs == before);
  put(db, "b", "2", true);
  CHECK(env.log_syncs == before + 1);
}

TEST_CASE("leveldb_backend: data persists across reopen", "[leveldb]") {
  keyschema::testing::temp_dir dir("leveldb");
  const auto path = dir.path() / "nested" / "db";  // missing parents are created
  {
    leveldb_backend db(path);
    write_batch wb;
    for (int i = 0; i < 500; ++i) wb.put("k" + std::to_string(i), std::to_string(i * i));
    db.write(wb, write_options{true});
    put(db, "unsynced", "still there after a clean close", false);
    erase(db, "k7");
    db.compact_range({"k1", "k2"});
    put(db, "k10", "after compaction");
  }
  leveldb_backend db(path);
  CHECK(get(db, "k3") == "9");
  CHECK(get(db, "k499") == std::to_string(499 * 499));
  CHECK(get(db, "unsynced") == "still there after a clean close");
  CHECK_FALSE(get(db, "k7"));
  CHECK(get(db, "k10") == "after compaction");
  CHECK(scan(db, {}).size() == 500);  // 500 - k7 + unsynced
}

TEST_CASE("leveldb_backend: databases are interchangeable with plain LevelDB", "[leveldb]") {
  // The backend's syncing Env and checks change when data is synced and what is refused, never
  // the files: plain LevelDB (default Env, its own defaults) reads what the backend wrote and the
  // other way round, logs and tables alike.
  keyschema::testing::temp_dir dir("leveldb");
  const std::string path = (dir.path() / "db").string();
  const auto plain_open = [&](bool paranoid) {
    leveldb::Options o;
    o.create_if_missing = true;
    o.paranoid_checks = paranoid;
    leveldb::DB* raw = nullptr;
    const leveldb::Status st = leveldb::DB::Open(o, path, &raw);
    INFO(st.ToString());
    REQUIRE(st.ok());
    return std::unique_ptr<leveldb::DB>(raw);
  };
  {
    auto plain = plain_open(false);
    for (int i = 0; i < 3000; ++i) REQUIRE(plain->Put(leveldb::WriteOptions(), "p" + std::to_string(i), std::string(100, 'p')).ok());
    plain->CompactRange(nullptr, nullptr);
    REQUIRE(plain->Put(leveldb::WriteOptions(), "plain-log", "in the log").ok());
  }
  {
    leveldb_backend db(path);
    CHECK(scan(db, {"p", "q"}).size() == 3001);
    CHECK(get(db, "plain-log") == "in the log");
    write_batch wb;
    for (int i = 0; i < 3000; ++i) wb.put("b" + std::to_string(i), std::string(100, 'b'));
    db.write(wb, write_options{.sync = true});
    db.compact_range({});
    put(db, "backend-log", "in the log", true);
  }
  auto plain = plain_open(true);
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  std::string v;
  CHECK(plain->Get(ro, "backend-log", &v).ok());
  CHECK(v == "in the log");
  std::unique_ptr<leveldb::Iterator> it(plain->NewIterator(ro));
  int count = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++count;
  CHECK(it->status().ok());
  CHECK(count == 6002);
}

TEST_CASE("leveldb_backend: moving the backend keeps snapshots and cursors working", "[leveldb]") {
  keyschema::testing::temp_dir dir("leveldb");
  auto first = std::make_unique<leveldb_backend>(dir.path() / "db");
  put(*first, "a", "1");
  put(*first, "b", "2");
  std::optional<leveldb_backend> moved;  // declared first: outlives the snapshot and cursors
  const auto snap = first->snapshot();
  auto c = first->cursor({}, nullptr);
  moved.emplace(std::move(*first));
  first.reset();  // the moved-from shell goes away; the database stays open in `moved`
  put(*moved, "a", "changed");
  CHECK(get(*moved, "a", &snap) == "1");
  CHECK(get(*moved, "a") == "changed");
  REQUIRE(c.valid());
  CHECK(c.key() == "a");
  c.next();
  REQUIRE(c.valid());
  CHECK(c.value() == "2");
  c.next();
  CHECK_FALSE(c.valid());
  auto c2 = std::move(c);
  CHECK_FALSE(c2.valid());
}

TEST_CASE("leveldb_backend: limits", "[leveldb]") {
  keyschema::testing::temp_dir dir("leveldb");

  SECTION("the default and the ceiling") {
    leveldb_backend db(dir.path() / "db");
    CHECK(db.limits().max_entry_bytes == keyschema::leveldb_max_entry_bytes);
    CHECK(db.limits().max_key_bytes == keyschema::leveldb_max_entry_bytes);
    CHECK(db.limits().max_value_bytes == keyschema::backend_limits::unlimited);
    CHECK(db.limits().max_ops_per_write == std::size_t{0xFFFFFFFF});
    CHECK(db.limits().max_bytes_per_write == keyschema::backend_limits::unlimited);
    CHECK(keyschema::leveldb_max_entry_bytes < (std::size_t{1} << 32) - 8);
    leveldb_options o;
    o.max_entry_bytes = std::numeric_limits<std::size_t>::max();
    leveldb_backend db2(dir.path() / "db2", o);
    CHECK(db2.limits().max_entry_bytes == keyschema::leveldb_max_entry_bytes);
  }
  SECTION("key plus value above max_entry_bytes: limit_error, nothing written") {
    leveldb_options o;
    o.max_entry_bytes = 16;
    leveldb_backend db(dir.path() / "db", o);
    CHECK(db.limits().max_entry_bytes == 16);
    CHECK(db.limits().max_key_bytes == 16);

    write_batch ok;
    ok.put(std::string(10, 'k'), std::string(6, 'v'));  // exactly 16
    ok.put(std::string(16, 'K'), "");
    db.write(ok, {});
    CHECK(get(db, std::string(10, 'k')) == std::string(6, 'v'));

    const auto attempt = [&](auto&& fill) {
      write_batch wb;
      wb.put("first", "would be written");
      wb.erase(std::string(10, 'k'));
      fill(wb);
      const auto e = thrown<keyschema::limit_error>([&] { db.write(wb, {}); });
      REQUIRE(e);
      CHECK(contains(e->what(), "16"));
      CHECK_FALSE(get(db, "first"));
      CHECK(get(db, std::string(10, 'k')) == std::string(6, 'v'));
    };
    attempt([](write_batch& wb) { wb.put(std::string(10, 'k'), std::string(7, 'v')); });
    attempt([](write_batch& wb) { wb.put(std::string(17, 'k'), ""); });
    attempt([](write_batch& wb) { wb.erase(std::string(17, 'k')); });
  }
}

TEST_CASE("leveldb_backend: open errors", "[leveldb]") {
  keyschema::testing::temp_dir dir("leveldb");

  SECTION("a path that cannot be created") {
    std::ofstream(dir.path() / "file") << "not a directory";
    const auto path = dir.path() / "file" / "db";
    const auto e = thrown<keyschema::backend_error>([&] { leveldb_backend db(path); });
    REQUIRE(e);
    CHECK(e->native_call() == "std::filesystem::create_directories");
    CHECK(e->native_code() != 0);
    CHECK(contains(e->what(), path.string()));
  }
  SECTION("no database and create_if_missing = false") {
    leveldb_options o;
    o.create_if_missing = false;
    const auto path = dir.path() / "absent";
    const auto e = thrown<keyschema::backend_error>([&] { leveldb_backend db(path, o); });
    REQUIRE(e);
    CHECK(e->native_call() == "leveldb::DB::Open");
    CHECK(e->native_code() == keyschema::leveldb_detail::leveldb_invalid_argument);
    CHECK(contains(e->what(), path.string()));
    CHECK_FALSE(std::filesystem::exists(path / "CURRENT"));  // no database was created

    const auto deeper = dir.path() / "absent-parent" / "db";
    const auto e2 = thrown<keyschema::backend_error>([&] { leveldb_backend db(deeper, o); });
    REQUIRE(e2);
    CHECK(e2->native_call() == "leveldb::DB::Open");
    CHECK(e2->native_code() == keyschema::leveldb_detail::leveldb_not_found);
    CHECK_FALSE(std::filesystem::exists(dir.path() / "absent-parent"));
  }
  SECTION("a database exists and error_if_exists = true") {
    { leveldb_backend db(dir.path() / "db"); }
    leveldb_options o;
    o.error_if_exists = true;
    const auto e = thrown<keyschema::backend_error>([&] { leveldb_backend db(dir.path() / "db", o); });
    REQUIRE(e);
    CHECK(e->native_call() == "leveldb::DB::Open");
    CHECK(e->native_code() == keyschema::leveldb_detail::leveldb_invalid_argument);
  }
  SECTION("a damaged CURRENT file") {
    { leveldb_backend db(dir.path() / "db"); }
    std::ofstream(dir.path() / "db" / "CURRENT", std::ios::trunc) << "garbage";
    const auto e = thrown<keyschema::backend_error>([&] { leveldb_backend db(dir.path() / "db"); });
    REQUIRE(e);
    CHECK(e->native_call() == "leveldb::DB::Open");
    CHECK(e->native_code() == keyschema::leveldb_detail::leveldb_corruption);
    CHECK(contains(e->what(), "Corruption"));
  }
}

// A second open, in this process or another, is locked_error: tests/durability/cases/processes.cpp.
// Damaged files (log, table blocks, MANIFEST, CURRENT): tests/durability/ (damaged_files).

TEST_CASE("leveldb_backend: a failed log write applies nothing", "[leveldb]") {
  faulty_db f;
  faulty_env& env = f.env;
  leveldb_backend& db = f.db;
  put(db, "a", "1");

  SECTION("append fails") {
    env.fail_append = true;
    write_batch wb;
    wb.put("a", "2");
    wb.put("b", "2");
    const auto e = thrown<keyschema::backend_error>([&] { db.write(wb, {}); });
    REQUIRE(e);
    CHECK(e->native_call() == "leveldb::DB::Write");
    CHECK(e->native_code() == keyschema::leveldb_detail::leveldb_io_error);
    CHECK(contains(e->what(), "injected append failure"));
    CHECK(get(db, "a") == "1");
    CHECK_FALSE(get(db, "b"));
  }
  SECTION("sync fails, and LevelDB then refuses every write") {
    env.fail_sync = true;
    write_batch wb;
    wb.put("a", "2");
    const auto e = thrown<keyschema::backend_error>([&] { db.write(wb, write_options{true}); });
    REQUIRE(e);
    CHECK(e->native_call() == "leveldb::DB::Write");
    CHECK(contains(e->what(), "injected sync failure"));
    CHECK(get(db, "a") == "1");
    env.fail_sync = false;
    const auto again = thrown<keyschema::backend_error>([&] { put(db, "c", "3"); });
    REQUIRE(again);
    CHECK_FALSE(get(db, "c"));
  }
}

static_assert(keyschema::backend_with_direct_batch<leveldb_backend>);
static_assert(std::is_nothrow_move_constructible_v<keyschema::leveldb_direct_batch>);

// What keyschema::store_batch commits on LevelDB: the engine's batch, built directly.
TEST_CASE("leveldb_backend: leveldb_direct_batch's size, byte_size and append_to give back its operations in order",
          "[leveldb]") {
  keyschema::testing::check_direct_batch_gives_back<keyschema::leveldb_direct_batch>();
}

TEST_CASE("leveldb_backend: write_direct writes as write() does", "[leveldb]") {
  // Each scenario through write() on one database and write_direct() on another: the same state,
  // the same log syncs, the same errors.
  const bool direct = GENERATE(false, true);
  INFO((direct ? "write_direct" : "write"));
  faulty_db f;
  leveldb_backend& db = f.db;
  const auto write = [&](const write_batch& wb, write_options o) {
    if (!direct) return db.write(wb, o);
    keyschema::leveldb_direct_batch d = keyschema::testing::direct_of<keyschema::leveldb_direct_batch>(wb);
    db.write_direct(d, o);
    CHECK(d.size() == wb.size());  // left as it was
  };

  SECTION("later operations win; erases; sync") {
    write_batch wb;
    wb.put("a", "1");
    wb.put("b", "2");
    wb.erase("a");
    wb.put("b", "3");
    wb.put("c", std::string(5000, 'c'));
    const int syncs = f.env.log_syncs;
    write(wb, write_options{false});
    CHECK(f.env.log_syncs == syncs);
    CHECK(scan(db, {}) == entries{{"b", "3"}, {"c", std::string(5000, 'c')}});
    write_batch more;
    more.erase("b");
    write(more, write_options{true});
    CHECK(f.env.log_syncs == syncs + 1);
    CHECK(scan(db, {}) == entries{{"c", std::string(5000, 'c')}});
  }
  SECTION("an empty batch: nothing without sync, a log sync with it") {
    put(db, "k", "v");
    const int syncs = f.env.log_syncs;
    write(write_batch{}, write_options{false});
    CHECK(f.env.log_syncs == syncs);
    write(write_batch{}, write_options{true});
    CHECK(f.env.log_syncs == syncs + 1);
    CHECK(scan(db, {}) == entries{{"k", "v"}});
  }
  SECTION("an operation over max_entry_bytes: the same limit_error, nothing written") {
    keyschema::testing::temp_dir dir("leveldb");
    leveldb_options o;
    o.max_entry_bytes = 16;
    leveldb_backend small(dir.path() / "db", o);
    write_batch wb;
    wb.put("first", "fits");
    wb.put(std::string(10, 'k'), std::string(7, 'v'));  // 17: the first one over
    wb.put(std::string(20, 'k'), "");                   // 20: the largest
    const auto e = thrown<keyschema::limit_error>([&] {
      if (!direct) return small.write(wb, {});
      keyschema::leveldb_direct_batch d = keyschema::testing::direct_of<keyschema::leveldb_direct_batch>(wb);
      small.write_direct(d, {});
    });
    REQUIRE(e);
    CHECK(contains(e->what(), "an operation of 10 key bytes and 7 value bytes exceeds the limit of 16 bytes"));
    CHECK_FALSE(get(small, "first"));
  }
  SECTION("a failed log append: nothing applied, and every later write refused") {
    put(db, "a", "1");
    f.env.fail_append = true;
    write_batch wb;
    wb.put("a", "2");
    wb.put("b", "2");
    const auto e = thrown<keyschema::backend_error>([&] { write(wb, {}); });
    REQUIRE(e);
    CHECK(e->native_call() == "leveldb::DB::Write");
    CHECK(contains(e->what(), "writing 2 operations"));
    CHECK(contains(e->what(), "injected append failure"));
    f.env.fail_append = false;
    const auto again = thrown<keyschema::backend_error>([&] { write(wb, {}); });
    REQUIRE(again);
    CHECK(contains(again->what(), "refused"));
    CHECK(get(db, "a") == "1");
    CHECK_FALSE(get(db, "b"));
  }
}

TEST_CASE("leveldb_backend: compact_range, approximate_size and property", "[leveldb]") {
  keyschema::testing::temp_dir dir("leveldb");
  leveldb_options o = small_options();
  o.compression = false;
  leveldb_backend db(dir.path() / "db", o);
  std::mt19937 rng(11);
  for (int b = 0; b < 20; ++b) {
    write_batch wb;
    for (int i = 0; i < 100; ++i) {
      std::string v(1000, '\0');
      for (char& c : v) c = static_cast<char>(rng());
      wb.put("k" + std::to_string(10000 + b * 100 + i), v);
    }
    db.write(wb, {});
  }
  db.compact_range({});
  const std::uint64_t full = db.approximate_size({"k", "l"});
  CHECK(full >= 1'000'000);  // 2 MB of incompressible values were written
  CHECK(db.approximate_size({}) == full);
  const std::uint64_t part = db.approximate_size({"k10000", "k10500"});  // a quarter of the keys
  CHECK(part > 0);
  CHECK(part < full / 2);
  CHECK(db.approximate_size({"x", ""}) == 0);

  REQUIRE(db.property("leveldb.stats"));
  CHECK_FALSE(db.property("leveldb.no-such-property"));

  write_batch wb;
  for (auto c = db.cursor({"k", "l"}, nullptr); c.valid(); c.next()) wb.erase(c.key());
  db.write(wb, {});
  db.compact_range({"k", "l"});
  CHECK(db.approximate_size({"k", "l"}) < full / 10);  // tombstones and data are gone
  CHECK(scan(db, {}).empty());
  CHECK(db.approximate_size({}) == 0);
}

TEST_CASE("leveldb_backend: native access", "[leveldb]") {
  keyschema::testing::temp_dir dir("leveldb");
  const auto path = dir.path() / "db";
  leveldb_backend db(path);
  CHECK(db.path() == path.string());
  put(db, "k", "v");
  std::string v;
  REQUIRE(db.native().Get(leveldb::ReadOptions(), "k", &v).ok());
  CHECK(v == "v");
  const auto snap = db.snapshot();
  REQUIRE(snap.native() != nullptr);
  leveldb::ReadOptions ro;
  ro.snapshot = snap.native();
  put(db, "k", "w");
  REQUIRE(db.native().Get(ro, "k", &v).ok());
  CHECK(v == "v");
}

}  // namespace leveldb_backend_test
