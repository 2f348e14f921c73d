// tests/unit/sqlite_placement_test.cpp: placed keyspaces (keyschema::placed) on SQLite land in a
// table per placement, kv_<placement>. Checked with the sqlite3 command-line shell (the tables a
// database holds, the keys each holds), so a backend that kept everything in kv would fail it; a
// raw backend (as keyschema-dump opens it) still reads every table, merged in key order; a process
// killed while committing batches that span three tables leaves each batch whole or absent; a
// database placed otherwise is refused by the schema record and loses nothing; ks::migrate moves
// a keyspace from kv into a table and from one table into another; a keyspace being moved is read
// and erased in both tables and written to the new one; kv_ objects that are no placement tables,
// and placement names outside [a-z0-9_-], are refused; the statements of each table are prepared
// once. Without the sqlite3 shell the shell checks print "KEYSCHEMA-SKIP: ..." and are skipped.
#include <keyschema/keyschema.hpp>
#include <keyschema/migrate.hpp>
#include <keyschema/sqlite.hpp>

#include <support/hex.hpp>
#include <support/placement_crash.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <range/v3/range/operations.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <tuple>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace sqlite_placement_test {

namespace {
namespace ks = keyschema;
using ks::testing::temp_dir;

using meta = ks::keyspace<"meta", std::string, ks::lit<"META">, ks::field<"id", std::uint64_t>>;
using body_flat = ks::keyspace<"body", ks::bytes, ks::lit<"BODY">, ks::field<"id", std::uint64_t>>;
using entry_flat = ks::keyspace<"entry", std::string, ks::lit<"ENTRY">, ks::field<"id", std::uint64_t>>;
using body = ks::placed<"content", body_flat>;
using body_archived = ks::placed<"archive", body_flat>;
using entry = ks::placed<"my-queues", entry_flat>;  // '-': the table name must be quoted
using placed_schema = ks::schema<meta, body, entry>;
using archived_schema = ks::schema<meta, body_archived, entry>;
using flat_schema = ks::schema<meta, body_flat, entry_flat>;
using store_type = ks::store<placed_schema, ks::sqlite_backend>;

bool have_shell() {
  if (std::system("sqlite3 -version > /dev/null 2>&1") == 0) return true;
  std::printf("KEYSCHEMA-SKIP: the sqlite3 shell is not installed (apt-get install sqlite3)\n");
  WARN("sqlite3 shell missing: not checked");
  return false;
}

// The output lines of the sqlite3 shell running sql on the database in dir (read-only).
std::vector<std::string> shell(const std::filesystem::path& dir, const std::string& sql) {
  std::string quoted;  // sql inside the shell's single quotes
  for (const char c : sql) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  const std::string cmd = "sqlite3 -readonly '" + (dir / ks::sqlite_file_name).string() + "' '" + quoted + "' 2>&1";
  INFO(cmd);
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::vector<std::string> lines;
  std::string line;
  for (int c; (c = std::fgetc(p)) != EOF;) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += static_cast<char>(c);
    }
  }
  if (!line.empty()) lines.push_back(line);
  CHECK(::pclose(p) == 0);
  return lines;
}

// The tables of the database in dir, by name.
std::vector<std::string> tables(const std::filesystem::path& dir) {
  return shell(dir, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name");
}

// The keys of table (a quoted name) as hex, in key order.
std::vector<std::string> hex_keys(const std::filesystem::path& dir, const std::string& table) {
  return shell(dir, "SELECT hex(k) FROM " + table + " ORDER BY k");
}

// The hex of the encoding of a literal ("\x02" WORD "\0"), which starts each key of its keyspace.
std::string hex_lit(std::string_view word) { return "02" + ks::testing::hex_digits(word) + "00"; }

// How many of keys start with prefix.
std::size_t starting_with(const std::vector<std::string>& keys, const std::string& prefix) {
  return static_cast<std::size_t>(
      std::count_if(keys.begin(), keys.end(), [&](const std::string& k) { return k.starts_with(prefix); }));
}

// Every key of the raw backend b, through its full-range cursor.
std::vector<std::string> all_keys(const ks::sqlite_backend& b, bool reverse) {
  std::vector<std::string> out;
  for (auto c = b.cursor(ks::key_range{{}, {}, reverse}, nullptr); c.valid(); c.next()) out.emplace_back(c.key());
  return out;
}

template <class Body, class Entry, class Store>
void fill(Store& db, std::uint64_t metas, std::uint64_t bodies, std::uint64_t entries) {
  auto b = db.batch();
  for (std::uint64_t id = 0; id < metas; ++id) b.template put<meta>({id}, "m");
  for (std::uint64_t id = 0; id < bodies; ++id) b.template put<Body>({id}, ks::bytes("body-" + std::to_string(id)));
  for (std::uint64_t id = 0; id < entries; ++id) b.template put<Entry>({id}, "e");
  b.commit();
}

}  // namespace

TEST_CASE("sqlite: placed keyspaces land in their own tables, as the sqlite3 shell lists them; a raw backend reads them all",
          "[sqlite][placement][shell]") {
  temp_dir dir("sqlite-placement");
  const auto path = dir.path() / "db";
  {
    store_type db(path);
    fill<body, entry>(db, 7, 4, 3);
    // A store transaction (the backend's begin_write) routes its writes too.
    auto tx = db.transaction();
    tx.put<body>({4}, ks::bytes("from a transaction"));
    CHECK(tx.get<body>({4}) == std::optional(ks::bytes("from a transaction")));
    tx.commit();
  }  // closed: the log is checkpointed and the shell reads a quiet file
  if (have_shell()) {
    CHECK(tables(path) == std::vector<std::string>{"kv", "kv_content", "kv_my-queues"});
    const auto kv = hex_keys(path, "kv");
    const auto content = hex_keys(path, "kv_content");
    const auto queues = hex_keys(path, "\"kv_my-queues\"");
    // kv: the 7 metadata records and the schema record (0xFF...), nothing placed.
    CHECK(kv.size() == 7 + 1);
    CHECK(starting_with(kv, hex_lit("META")) == 7);
    CHECK(starting_with(kv, "FF") == 1);
    CHECK(content.size() == 5);
    CHECK(starting_with(content, hex_lit("BODY")) == 5);
    CHECK(shell(path, "SELECT count(*) FROM kv_content WHERE CAST(v AS TEXT) = 'from a transaction'") ==
          std::vector<std::string>{"1"});
    CHECK(queues.size() == 3);
    CHECK(starting_with(queues, hex_lit("ENTRY")) == 3);
    // Each table has kv's shape.
    CHECK(shell(path, "SELECT sql FROM sqlite_schema WHERE name = 'kv_content'") ==
          std::vector<std::string>{
              "CREATE TABLE \"kv_content\" (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID"});
  }

  // A raw backend (keyschema-dump's view) finds the tables and reads all of them, merged in key
  // order both ways, each key once.
  ks::sqlite_backend raw(path);
  CHECK(raw.placements() == std::vector<std::string>{"", "content", "my-queues"});
  const std::vector<std::string> up = all_keys(raw, false);
  std::vector<std::string> down = all_keys(raw, true);
  CHECK(up.size() == 7 + 5 + 3 + 1);
  CHECK(std::is_sorted(up.begin(), up.end()));
  CHECK(std::adjacent_find(up.begin(), up.end()) == up.end());
  std::reverse(down.begin(), down.end());
  CHECK(up == down);
}

TEST_CASE("sqlite: a process killed while committing batches across three tables leaves each whole or absent",
          "[sqlite][placement][crash]") {
  temp_dir dir("sqlite-placement-crash");
  const auto path = dir.path() / "db";
  { store_type db(path); }
  const auto entry_key = [](std::uint64_t id) { return std::tuple(id); };
  CHECK(ks::testing::commit_batches_until_killed<meta, body, entry>([&] { return store_type(path); }, entry_key,
                                                                     std::chrono::milliseconds(300)));
  std::uint64_t metas = 0;
  {
    const store_type db(path);
    metas = ks::testing::check_whole_batches<meta, body, entry>(db, entry_key);
  }
  // Each batch wrote one row into each of the three tables.
  if (have_shell()) {
    const std::string n = std::to_string(metas);
    CHECK(shell(path, "SELECT count(*) FROM kv_content") == std::vector<std::string>{n});
    CHECK(shell(path, "SELECT count(*) FROM \"kv_my-queues\"") == std::vector<std::string>{n});
    CHECK(shell(path, "SELECT count(*) FROM kv") == std::vector<std::string>{std::to_string(metas + 1)});
  }
}

TEST_CASE("sqlite: a database placed otherwise is refused by its schema record, loses nothing, and a raw backend reads it",
          "[sqlite][placement]") {
  temp_dir dir("sqlite-placement-refused");
  const auto path = dir.path() / "db";
  {
    store_type db(path);
    fill<body, entry>(db, 4, 6, 2);
  }
  try {
    ks::store<archived_schema, ks::sqlite_backend> db(path);
    FAIL("a database whose bodies are in placement 'content' was opened by a schema placing them in 'archive'");
  } catch (const ks::schema_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("'body'") && Catch::Contains("placement 'content' stored") &&
                             Catch::Contains("placement 'archive' in this program"));
  }
  using flat_store = ks::store<flat_schema, ks::sqlite_backend>;
  CHECK_THROWS_AS(flat_store(path), ks::schema_error);

  // Nothing was lost: each table holds what it held, and the store placing as the database does
  // reads it all.
  if (have_shell()) {
    CHECK(shell(path, "SELECT count(*) FROM kv_content") == std::vector<std::string>{"6"});
    CHECK(shell(path, "SELECT count(*) FROM \"kv_my-queues\"") == std::vector<std::string>{"2"});
    CHECK(shell(path, "SELECT count(*) FROM kv") == std::vector<std::string>{"5"});
  }
  {
    ks::sqlite_backend raw(path);
    CHECK(all_keys(raw, false).size() == 4 + 6 + 2 + 1);
  }
  store_type db(path);
  CHECK(ranges::distance(db.scan<body>()) == 6);
  CHECK(db.get<body>({5}) == std::optional(ks::bytes("body-5")));
}

TEST_CASE("sqlite: ks::migrate moves a keyspace from kv into its table and from one table into another",
          "[sqlite][placement][migrate]") {
  temp_dir dir("sqlite-placement-migrate");
  const auto path = dir.path() / "db";
  {
    ks::store<flat_schema, ks::sqlite_backend> db(path);
    fill<body_flat, entry_flat>(db, 3, 9, 4);
  }
  {
    ks::sqlite_backend b(path);
    ks::migrate<flat_schema, placed_schema>(b, ks::migrate_options{.batch_entries = 4});
  }
  if (have_shell()) {
    const auto kv = hex_keys(path, "kv");
    CHECK(starting_with(kv, hex_lit("BODY")) == 0);
    CHECK(starting_with(kv, hex_lit("ENTRY")) == 0);
    CHECK(starting_with(kv, hex_lit("META")) == 3);
    CHECK(starting_with(hex_keys(path, "kv_content"), hex_lit("BODY")) == 9);
    CHECK(hex_keys(path, "kv_content").size() == 9);
    CHECK(hex_keys(path, "\"kv_my-queues\"").size() == 4);
  }
  {
    store_type db(path);
    CHECK(ranges::distance(db.scan<body>()) == 9);
    CHECK(db.get<body>({8}) == std::optional(ks::bytes("body-8")));
    CHECK(ranges::distance(db.scan<entry>()) == 4);
  }
  // From table kv_content into kv_archive.
  {
    ks::sqlite_backend b(path);
    ks::migrate<placed_schema, archived_schema>(b, ks::migrate_options{.batch_entries = 4});
  }
  if (have_shell()) {
    CHECK(hex_keys(path, "kv_content").empty());
    CHECK(hex_keys(path, "kv_archive").size() == 9);
    CHECK(starting_with(hex_keys(path, "kv_archive"), hex_lit("BODY")) == 9);
  }
  ks::store<archived_schema, ks::sqlite_backend> db(path);
  CHECK(ranges::distance(db.scan<body_archived>()) == 9);
  CHECK(db.get<body_archived>({0}) == std::optional(ks::bytes("body-0")));
  CHECK(ranges::distance(db.scan<entry>()) == 4);
}

TEST_CASE("sqlite: a keyspace being moved is read and erased in both tables and written to the new one",
          "[sqlite][placement]") {
  temp_dir dir("sqlite-placement-moving");
  const auto path = dir.path() / "db";
  const std::string p = "\x02" "K" + std::string(1, '\0');
  const std::string end = "\x02" "K" + std::string(1, '\1');
  {
    ks::sqlite_backend b(path);
    const ks::placement_route before[] = {{p, "old", std::nullopt}};
    b.place(before);
    ks::write_batch w;
    w.put(p + "1", "v1");
    w.put(p + "2", "v2");
    w.put("other", "o");
    b.write(w, {});

    const ks::placement_route moving[] = {{p, "new", std::string_view("old")}};
    b.place(moving);
    std::string v;
    CHECK(b.get(p + "1", v, nullptr));  // still in old
    CHECK(v == "v1");
    const auto snap = b.snapshot();
    CHECK(b.get(p + "2", v, &snap));
    ks::write_batch m;
    m.erase(p + "1");  // erased in both
    m.erase(p + "2");  // moved: erased in both, written to new
    m.put(p + "2", "v2b");
    m.put(p + "3", "v3");
    b.write(m, {});
    CHECK_FALSE(b.get(p + "1", v, nullptr));
    CHECK(b.get(p + "2", v, nullptr));
    CHECK(v == "v2b");
    // The snapshot taken before still reads the old state in both tables.
    CHECK(b.get(p + "1", v, &snap));
    CHECK(v == "v1");
    std::vector<std::string> seen;
    for (auto c = b.cursor(ks::key_range{p, end, true}, nullptr); c.valid(); c.next()) seen.emplace_back(c.key());
    CHECK(seen == std::vector<std::string>{p + "3", p + "2"});
    // A write transaction routes the same way.
    auto tx = b.begin_write();
    CHECK(tx.get(p + "3", v));
    std::size_t n = 0;
    for (auto c = tx.cursor(ks::key_range{p, end}); c.valid(); c.next()) ++n;
    CHECK(n == 2);
    ks::write_batch t;
    t.put(p + "4", "v4");
    tx.commit(t, {});
  }
  if (have_shell()) {
    CHECK(shell(path, "SELECT hex(k), hex(v) FROM kv_old") == std::vector<std::string>{});
    CHECK(shell(path, "SELECT v FROM kv_new ORDER BY k") == std::vector<std::string>{"v2b", "v3", "v4"});
    CHECK(shell(path, "SELECT v FROM kv") == std::vector<std::string>{"o"});
  }
}

TEST_CASE("sqlite: kv_ objects that are no placement tables, and placement names outside [a-z0-9_-], are refused",
          "[sqlite][placement]") {
  temp_dir dir("sqlite-placement-foreign");
  const auto path = dir.path() / "db";
  { ks::sqlite_backend b(path); }
  if (have_shell()) {
    const std::string file = (path / ks::sqlite_file_name).string();
    // A table in keyschema's kv_ names, of another shape.
    REQUIRE(std::system(("sqlite3 '" + file + "' 'CREATE TABLE kv_stats (n INTEGER)'").c_str()) == 0);
    try {
      ks::sqlite_backend b(path);
      FAIL("a database with a foreign table kv_stats was opened");
    } catch (const ks::schema_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("kv_stats") && Catch::Contains("CREATE TABLE kv_stats (n INTEGER)"));
    }
    // A name no placement has (letter case: SQLite's names are case-insensitive).
    REQUIRE(std::system(("sqlite3 '" + file + "' 'DROP TABLE kv_stats; CREATE TABLE \"KV_Stats\" (k BLOB PRIMARY KEY "
                         "NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID'")
                            .c_str()) == 0);
    CHECK_THROWS_WITH(ks::sqlite_backend(path), Catch::Contains("KV_Stats"));
    REQUIRE(std::system(("sqlite3 '" + file + "' 'DROP TABLE \"KV_Stats\"'").c_str()) == 0);
  }
  ks::sqlite_backend b(path);
  const ks::placement_route bad[] = {{"\x02" "A", "ok", std::nullopt}, {"\x02" "B", "Not ok", std::nullopt}};
  CHECK_THROWS_AS(b.place(bad), ks::usage_error);
  CHECK_THROWS_WITH(b.place(bad), Catch::Contains("'Not ok'"));
  CHECK(b.placements() == std::vector<std::string>{""});  // nothing created, not even "ok"
  if (have_shell()) CHECK(tables(path) == std::vector<std::string>{"kv"});
}

TEST_CASE("sqlite: the statements of each placement table are prepared once and reused", "[sqlite][placement]") {
  temp_dir dir("sqlite-placement-stmts");
  store_type db(dir.path() / "db");
  for (std::uint64_t id = 0; id < 20; ++id) {
    auto b = db.batch();
    b.put<meta>({id}, "m");
    b.put<body>({id}, ks::bytes("b"));
    b.put<body>({id + 100}, ks::bytes("b"));
    b.commit();
  }
  // The writer connection's statements: one INSERT per table, run once per put into it.
  sqlite3* w = db.unsafe_backend().native();
  int content_puts = -1;
  int inserts_into_content = 0;
  for (sqlite3_stmt* st = ::sqlite3_next_stmt(w, nullptr); st != nullptr; st = ::sqlite3_next_stmt(w, st)) {
    const std::string sql = ::sqlite3_sql(st);
    if (sql.starts_with("INSERT OR REPLACE INTO \"kv_content\"")) {
      ++inserts_into_content;
      content_puts = ::sqlite3_stmt_status(st, SQLITE_STMTSTATUS_RUN, 0);
    }
  }
  CHECK(inserts_into_content == 1);
  CHECK(content_puts == 40);
}

}  // namespace sqlite_placement_test
