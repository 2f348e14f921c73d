// tests/unit/rocksdb_placement_test.cpp: placed keyspaces (keyschema::placed) on RocksDB land in
// column families, tuned per placement (rocksdb_options::placement_options).
//
// Checked with RocksDB's own tool, ldb (rocksdb-tools): `ldb --column_family=<name> scan --hex`
// lists each family's entries, so a backend that kept every key in the default family fails; the
// OPTIONS file RocksDB writes names each family's options (blob files, prefix extractor,
// compaction style). Also: blob files appear on disk for the blob placement and its values read
// back; scans of a family with a prefix bloom filter see exactly the keys of a total-order scan,
// over several table files, both ways; options for a placement the schema does not place are a
// usage_error naming it, creating nothing; a store whose schema places nothing or places
// otherwise is refused while a raw backend reads every family; ks::migrate moves a keyspace from
// one family to another; and a process killed while committing batches that span three families
// leaves each batch whole or absent. Needs /usr/bin/ldb for the ldb checks (skipped without it,
// saying KEYSCHEMA-SKIP).
#include <keyschema/keyschema.hpp>
#include <keyschema/migrate.hpp>
#include <keyschema/rocksdb.hpp>

#include <support/hex.hpp>
#include <support/placement_crash.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <range/v3/range/operations.hpp>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace rocksdb_placement_test {

namespace {
namespace ks = keyschema;
using ks::testing::temp_dir;

using meta = ks::keyspace<"meta", std::string, ks::lit<"META">, ks::field<"id", std::uint64_t>>;
using body_flat = ks::keyspace<"body", ks::bytes, ks::lit<"BODY">, ks::field<"id", std::uint64_t>>;
using entry_flat =
    ks::keyspace<"entry", std::string, ks::lit<"ENTRY">, ks::field<"queue", std::string>, ks::field<"id", std::uint64_t>>;
using body = ks::placed<"content", body_flat>;
using entry = ks::placed<"queues", entry_flat>;
using placed_schema = ks::schema<meta, body, entry>;
using flat_schema = ks::schema<meta, body_flat, entry_flat>;
// body and entry in one family: placed otherwise than placed_schema.
using body_in_queues = ks::placed<"queues", body_flat>;
using other_schema = ks::schema<meta, body_in_queues, entry>;
using store_type = ks::store<placed_schema, ks::rocksdb_backend>;

// "\x02ENTRY\0" (the literal) and "\x02" + the queue's first byte: one prefix per queue of tests
// whose queue names start with distinct bytes.
constexpr std::size_t queue_prefix = 9;

ks::rocksdb_options tuned() {
  ks::rocksdb_options o;
  o.placement_options["content"] = {.blob_files = true, .min_blob_size = 1024};
  o.placement_options["queues"] = {.prefix_bloom_length = queue_prefix, .universal_compaction = true};
  return o;
}

bool have_ldb() {
  if (std::filesystem::exists("/usr/bin/ldb")) return true;
  std::puts("KEYSCHEMA-SKIP: /usr/bin/ldb is missing (apt-get install rocksdb-tools): the checks with RocksDB's "
            "own tool are skipped");
  return false;
}

std::string hex(std::string_view bytes) { return "0x" + keyschema::testing::hex_digits(bytes); }

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// ldb's output for `args` on the database in db (its exit status must be 0).
std::string ldb(const std::filesystem::path& db, const std::string& args) {
  const std::filesystem::path out = db.parent_path() / "ldb.out";
  const std::string cmd = "/usr/bin/ldb --db='" + db.string() + "' " + args + " > '" + out.string() + "' 2>&1";
  const int raw = std::system(cmd.c_str());
  const std::string text = read_all(out);
  INFO("ldb " << args << " said: " << text);
  REQUIRE((raw != -1 && WIFEXITED(raw) && WEXITSTATUS(raw) == 0));
  return text;
}

// The "0x<key> : 0x<value>" lines of `ldb --column_family=<family> scan --hex`.
std::vector<std::string> family_scan(const std::filesystem::path& db, const std::string& family) {
  std::istringstream in(ldb(db, "--column_family=" + family + " scan --hex"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("0x")) lines.push_back(line);
  return lines;
}

// The key of a "0x<key> : 0x<value>" line.
std::string key_of(const std::string& line) { return line.substr(0, line.find(' ')); }

// The column families RocksDB lists for the database in db.
std::set<std::string> families(const std::filesystem::path& db) {
  std::vector<std::string> names;
  const rocksdb::Status st = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), db.string(), &names);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return {names.begin(), names.end()};
}

// The section of the newest OPTIONS file RocksDB wrote for column family `family`.
std::string options_section(const std::filesystem::path& db, const std::string& family) {
  std::filesystem::path newest;
  for (const auto& e : std::filesystem::directory_iterator(db)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("OPTIONS-") && (newest.empty() || name > newest.filename().string())) newest = e.path();
  }
  REQUIRE_FALSE(newest.empty());
  const std::string text = read_all(newest);
  const std::size_t at = text.find("[CFOptions \"" + family + "\"]");
  REQUIRE(at != std::string::npos);
  const std::size_t end = text.find("\n[CFOptions ", at + 1);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::size_t blob_files(const std::filesystem::path& db) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(db)) n += e.path().extension() == ".blob" ? 1 : 0;
  return n;
}

// n metadata, bodies of body_bytes bytes and queue entries.
void fill(store_type& db, std::uint64_t n, std::size_t body_bytes) {
  auto b = db.batch();
  for (std::uint64_t id = 0; id < n; ++id) {
    b.put<meta>({id}, "m" + std::to_string(id));
    b.put<body>({id}, ks::bytes(std::string(body_bytes, 'b')));
    b.put<entry>({"q", id}, "e" + std::to_string(id));
  }
  b.commit();
}

}  // namespace

TEST_CASE("rocksdb placement: keys land in their column families (ldb); a raw backend reads them all",
          "[rocksdb][placement]") {
  if (!have_ldb()) return;
  temp_dir dir("rocksdb-placement");
  const auto path = dir.path() / "db";
  std::vector<std::string> everything;  // "0x<key> : 0x<value>" of every key, through a raw backend
  {
    store_type db(path);
    auto b = db.batch();
    for (std::uint64_t id = 0; id < 7; ++id) b.put<meta>({id}, "m");
    for (std::uint64_t id = 0; id < 5; ++id) b.put<body>({id}, ks::bytes(std::string(3000, 'b')));
    for (std::uint64_t id = 0; id < 3; ++id) b.put<entry>({"q", id}, "e");
    b.commit();
  }
  {
    ks::rocksdb_backend raw(path);
    std::string last;
    for (auto c = raw.cursor(ks::key_range{}, nullptr); c.valid(); c.next()) {
      CHECK(std::string(c.key()) > last);
      last = c.key();
      everything.push_back(hex(c.key()) + " : " + hex(c.value()));
    }
  }
  CHECK(everything.size() == 7 + 5 + 3 + 1);
  CHECK(families(path) == std::set<std::string>{"default", "content", "queues"});
  const std::vector<std::string> in_default = family_scan(path, "default");
  const std::vector<std::string> in_content = family_scan(path, "content");
  const std::vector<std::string> in_queues = family_scan(path, "queues");
  CHECK(in_default.size() == 7 + 1);  // the metadata and the schema record
  CHECK(in_content.size() == 5);
  CHECK(in_queues.size() == 3);
  const std::string body_prefix = hex(ks::detail::placement_prefix<body>());
  const std::string entry_prefix = hex(ks::detail::placement_prefix<entry>());
  for (const std::string& l : in_content) {
    CHECK(l.starts_with(body_prefix));
    CHECK(l.ends_with(hex(std::string(3000, 'b')).substr(2)));
  }
  for (const std::string& l : in_queues) CHECK(l.starts_with(entry_prefix));
  for (const std::string& l : in_default) CHECK_FALSE((l.starts_with(body_prefix) || l.starts_with(entry_prefix)));
  // The families together hold exactly what the raw backend's merged cursor read.
  std::vector<std::string> all = in_default;
  all.insert(all.end(), in_content.begin(), in_content.end());
  all.insert(all.end(), in_queues.begin(), in_queues.end());
  std::sort(all.begin(), all.end(), [](const std::string& a, const std::string& b) { return key_of(a) < key_of(b); });
  CHECK(all == everything);
}

TEST_CASE("rocksdb placement: the blob placement writes blob files; each family gets its own options",
          "[rocksdb][placement]") {
  temp_dir dir("rocksdb-placement-blob");
  const auto path = dir.path() / "db";
  const std::string big(20000, 'x');
  {
    store_type db(path, tuned());
    for (std::uint64_t id = 0; id < 8; ++id) db.put<body>({id}, ks::bytes(big + std::to_string(id)));
    db.put<body>({100}, ks::bytes("small"));  // under min_blob_size: stays in the table file
    db.put<meta>({1}, big);                   // the default family has no blob files
    db.unsafe_backend().compact_range({});    // flushes the memtables
  }
  CHECK(blob_files(path) > 0);
  // RocksDB's own record of each family's options.
  const std::string content = options_section(path, "content");
  CHECK_THAT(content, Catch::Contains("enable_blob_files=true") && Catch::Contains("min_blob_size=1024") &&
                          Catch::Contains("enable_blob_garbage_collection=true"));
  const std::string queues = options_section(path, "queues");
  CHECK_THAT(queues, Catch::Contains("prefix_extractor=rocksdb.FixedPrefix.9") &&
                         Catch::Contains("compaction_style=kCompactionStyleUniversal") &&
                         Catch::Contains("enable_blob_files=false"));
  const std::string dflt = options_section(path, "default");
  CHECK_THAT(dflt, Catch::Contains("enable_blob_files=false") && Catch::Contains("compaction_style=kCompactionStyleLevel"));

  // Read back after reopening (also without the options: blob files stay readable).
  for (const ks::rocksdb_options& o : {tuned(), ks::rocksdb_options{}}) {
    store_type db(path, o);
    for (std::uint64_t id = 0; id < 8; ++id) CHECK(db.get<body>({id}) == std::optional(ks::bytes(big + std::to_string(id))));
    CHECK(db.get<body>({100}) == std::optional(ks::bytes("small")));
    CHECK(db.get<meta>({1}) == std::optional(big));
    CHECK(ranges::distance(db.scan<body>()) == 9);
  }

  // Without the option no blob file is written.
  temp_dir plain("rocksdb-placement-noblob");
  {
    store_type db(plain.path() / "db");
    for (std::uint64_t id = 0; id < 8; ++id) db.put<body>({id}, ks::bytes(big));
    db.unsafe_backend().compact_range({});
  }
  CHECK(blob_files(plain.path() / "db") == 0);
}

TEST_CASE("rocksdb placement: scans of a family with a prefix bloom filter see what a total-order scan sees",
          "[rocksdb][placement]") {
  temp_dir dir("rocksdb-placement-prefix");
  store_type db(dir.path() / "db", tuned());
  ks::rocksdb_backend& b = db.unsafe_backend();
  rocksdb::ColumnFamilyHandle* queues = b.native_family("queues");
  REQUIRE(queues != nullptr);
  CHECK(b.native_family("content") != nullptr);
  REQUIRE(b.native_family("default") != nullptr);
  CHECK(b.native_family("default") == b.native_family(""));
  CHECK(b.native_family("default")->GetID() == b.native().DefaultColumnFamily()->GetID());
  CHECK(b.native_family("nowhere") == nullptr);
  // Queues "a...", "b...", "c..." (one prefix each, and "ab" sharing a's), written in rounds,
  // each round flushed to a table file of its own; "b" only in the first round.
  const std::vector<std::string> names = {"a", "ab", "b", "c"};
  for (int round = 0; round < 4; ++round) {
    auto batch = db.batch();
    for (const std::string& q : names) {
      if (q == "b" && round > 0) continue;
      for (std::uint64_t i = 0; i < 5; ++i) batch.put<entry>({q, round * 10 + i}, q);
    }
    batch.commit();
    REQUIRE(b.native().Flush(rocksdb::FlushOptions(), queues).ok());
  }
  for (const std::string& q : names) {
    const std::ptrdiff_t want = q == "b" ? 5 : 20;
    std::vector<std::uint64_t> up, down;
    for (const auto& e : db.scan<entry>(q)) {
      CHECK(std::get<0>(e.key) == q);
      up.push_back(std::get<1>(e.key));
    }
    for (const auto& e : db.scan<entry>(q).reverse()) down.push_back(std::get<1>(e.key));
    CHECK(static_cast<std::ptrdiff_t>(up.size()) == want);
    CHECK(std::is_sorted(up.begin(), up.end()));
    std::reverse(down.begin(), down.end());
    CHECK(up == down);
    CHECK(db.get<entry>({q, 0}) == std::optional(q));
    CHECK_FALSE(db.get<entry>({q, 99}).has_value());
  }
  CHECK(ranges::distance(db.scan<entry>()) == 65);
  CHECK(ranges::distance(db.scan<entry>().reverse()) == 65);
  CHECK(ranges::distance(db.scan<entry>("d")) == 0);
}

TEST_CASE("rocksdb placement: options for a placement the schema does not place are a usage_error",
          "[rocksdb][placement]") {
  temp_dir dir("rocksdb-placement-usage");
  const auto path = dir.path() / "db";
  ks::rocksdb_options o = tuned();
  o.placement_options["contents"] = {.blob_files = true};
  try {
    store_type db(path, o);
    FAIL("options for placement 'contents' were accepted");
  } catch (const ks::usage_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("placement 'contents'") && Catch::Contains("placement_options"));
  }
  // Nothing was created: the database has its default family alone.
  CHECK(families(path) == std::set<std::string>{"default"});
  // A schema that places nothing refuses options for any placement.
  try {
    ks::store<flat_schema, ks::rocksdb_backend> db(path, tuned());
    FAIL("placement options were accepted for a schema that places nothing");
  } catch (const ks::usage_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("placement 'content'"));
  }
  store_type db(path, tuned());
  db.put<body>({1}, ks::bytes("b"));
  CHECK(db.get<body>({1}) == std::optional(ks::bytes("b")));
}

TEST_CASE("rocksdb placement: a schema placing nothing or otherwise is refused; a raw backend opens every family",
          "[rocksdb][placement]") {
  temp_dir dir("rocksdb-placement-refuse");
  const auto path = dir.path() / "db";
  {
    store_type db(path, tuned());
    fill(db, 4, 100);
  }
  REQUIRE(families(path) == std::set<std::string>{"default", "content", "queues"});
  try {
    ks::store<flat_schema, ks::rocksdb_backend> db(path);
    FAIL("a schema placing nothing opened a database with placements");
  } catch (const ks::schema_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("'body'") && Catch::Contains("placement 'content' stored"));
  }
  try {
    ks::store<other_schema, ks::rocksdb_backend> db(path);
    FAIL("a schema placing otherwise opened the database");
  } catch (const ks::schema_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("'body'") && Catch::Contains("placement 'queues' in this program"));
  }
  // A raw backend (keyschema-dump's view) opens every family and reads them merged, both ways.
  ks::rocksdb_backend raw(path);
  std::vector<std::string> up, down;
  for (auto c = raw.cursor(ks::key_range{}, nullptr); c.valid(); c.next()) up.emplace_back(c.key());
  for (auto c = raw.cursor(ks::key_range{{}, {}, true}, nullptr); c.valid(); c.next()) down.emplace_back(c.key());
  CHECK(up.size() == 4 * 3 + 1);
  CHECK(std::is_sorted(up.begin(), up.end()));
  std::reverse(down.begin(), down.end());
  CHECK(up == down);
}

TEST_CASE("rocksdb placement: ks::migrate moves a keyspace from one column family to another",
          "[rocksdb][placement]") {
  temp_dir dir("rocksdb-placement-migrate");
  const auto path = dir.path() / "db";
  {
    store_type db(path);
    fill(db, 30, 500);
  }
  {
    ks::rocksdb_backend b(path);
    ks::migrate<placed_schema, other_schema>(b, ks::migrate_options{.batch_entries = 7});
  }
  {
    ks::store<other_schema, ks::rocksdb_backend> db(path);
    CHECK(ranges::distance(db.scan<body_in_queues>()) == 30);
    CHECK(db.get<body_in_queues>({29}) == std::optional(ks::bytes(std::string(500, 'b'))));
    CHECK(ranges::distance(db.scan<entry>()) == 30);
  }
  if (!have_ldb()) return;
  // The bodies moved: "content" is empty, "queues" holds them and the entries.
  CHECK(family_scan(path, "content").empty());
  const std::vector<std::string> queues = family_scan(path, "queues");
  CHECK(queues.size() == 60);
  const std::string body_prefix = hex(ks::detail::placement_prefix<body>());
  CHECK(std::count_if(queues.begin(), queues.end(), [&](const std::string& l) { return l.starts_with(body_prefix); }) ==
        30);
}

TEST_CASE("rocksdb placement: a process killed while committing batches across three families leaves each whole",
          "[rocksdb][placement][crash]") {
  temp_dir dir("rocksdb-placement-crash");
  const auto path = dir.path() / "db";
  { store_type db(path, tuned()); }
  const auto entry_key = [](std::uint64_t id) { return std::tuple(std::string("q"), id); };
  CHECK(ks::testing::commit_batches_until_killed<meta, body, entry>([&] { return store_type(path, tuned()); },
                                                                     entry_key, std::chrono::milliseconds(500)));
  std::uint64_t metas = 0;
  {
    const store_type db(path, tuned());
    metas = ks::testing::check_whole_batches<meta, body, entry>(db, entry_key);
  }
  if (!have_ldb()) return;
  CHECK(family_scan(path, "content").size() == metas);
  CHECK(family_scan(path, "queues").size() == metas);
}

}  // namespace rocksdb_placement_test
