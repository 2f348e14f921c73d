// tests/unit/lmdb_placement_test.cpp: placed keyspaces (keyschema::placed) on LMDB land in named
// databases. Checked with LMDB's own tool (mdb_stat -s <name>: the entries of each named database),
// so a backend that kept everything in the main database would fail it; a raw backend (as
// keyschema-dump opens it) still reads every placement; a read-only open lacking a placement reads
// it as empty; more placements than lmdb_options::max_placements is a limit_error naming it; and a
// process killed while committing batches that span the three placements leaves each batch whole
// or absent. The routing itself (detail/backend/placement.hpp) is checked on nested and moving routes.
#include <keyschema/detail/backend/placement.hpp>
#include <keyschema/keyschema.hpp>
#include <keyschema/lmdb.hpp>

#include <support/placement_crash.hpp>
#include <support/lmdb_point_reads.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <range/v3/range/operations.hpp>

#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string_view>
#include <string>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <tuple>
#include <vector>

namespace lmdb_placement_test {

namespace {
namespace ks = keyschema;
using ks::testing::temp_dir;

using meta = ks::keyspace<"meta", std::string, ks::lit<"META">, ks::field<"id", std::uint64_t>>;
using body = ks::placed<"content", ks::keyspace<"body", ks::bytes, ks::lit<"BODY">, ks::field<"id", std::uint64_t>>>;
using entry = ks::placed<"queues", ks::keyspace<"entry", std::string, ks::lit<"ENTRY">, ks::field<"id", std::uint64_t>>>;
using placed_schema = ks::schema<meta, body, entry>;
using store_type = ks::store<placed_schema, ks::lmdb_backend>;

// The number of entries mdb_stat reports for the named database `name` ("" : the main one).
std::optional<long> entries(const std::filesystem::path& dir, const std::string& name) {
  std::string cmd = "mdb_stat";
  if (!name.empty()) cmd += " -s '\xff" "keyschema/placement/" + name + "'";
  cmd += " '" + dir.string() + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ::pclose(p);
  const std::size_t at = out.find("Entries: ");
  if (at == std::string::npos) {
    UNSCOPED_INFO("mdb_stat said: " << out);
    return std::nullopt;
  }
  return std::stol(out.substr(at + 9));
}

bool have_mdb_stat() { return std::system("command -v mdb_stat > /dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("placement routing: longest prefix, the placements a range reaches, a keyspace being moved",
          "[placement]") {
  using router = ks::detail::placement_router;
  router r;
  const std::string a = "\x02" "A" + std::string(1, '\0');                   // ("A", ...)
  const std::string ab = a + "\x02" "B" + std::string(1, '\0');             // ("A", "B", ...)
  const std::string c = "\x02" "C" + std::string(1, '\0');
  const std::string ff = "\xff\xff";
  // Before routes are set (a raw backend): every known placement is read.
  r.add("content");
  CHECK(r.reached(ks::key_range{a, c}) == std::vector<std::size_t>{0, 1});
  const ks::placement_route routes[] = {{a, "content", std::nullopt},
                                        {ab, "queues", std::nullopt},
                                        {c, "queues", std::string_view("content")},
                                        {ff, "edge", std::nullopt}};
  r.set_routes(routes);
  CHECK(r.names() == std::vector<std::string>{"", "content", "queues", "edge"});
  CHECK(r.route(a + "x").to == 1);
  CHECK(r.route(ab + "x").to == 2);                     // the longest prefix wins
  CHECK(r.route("\x02" "B").to == 0);                   // no route: the default placement
  CHECK(r.route("\xff" "keyschema/schema").to == 0);     // the store's records
  CHECK(r.route(c).to == 2);
  CHECK(r.route(c).also == 1);                          // moving: erases hit the old placement too
  CHECK(r.route(ff + "x").to == 3);                     // a prefix of 0xff bytes has no successor
  // A range inside ("A", ...) reaches content and, through the nested route, queues; not the default.
  CHECK(r.reached(ks::key_range{a, "\x02" "A" + std::string(1, '\1')}) == std::vector<std::size_t>{1, 2});
  // Inside ("A", "B", ...): queues alone.
  CHECK(r.reached(ks::key_range{ab, ab + "\xff"}) == std::vector<std::size_t>{2});
  // A range reaching past a prefix includes the default placement.
  CHECK(r.reached(ks::key_range{a, "\x02" "B"}) == std::vector<std::size_t>{0, 1, 2});
  // A moving keyspace is read in both placements.
  CHECK(r.reached(ks::key_range{c, c + "\xff"}) == std::vector<std::size_t>{1, 2});
  // The whole key space: everything, in both directions.
  CHECK(r.reached(ks::key_range{{}, {}, true}) == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(r.reached(ks::key_range{ff, {}}) == std::vector<std::size_t>{0, 3});
}

TEST_CASE("lmdb: placed keyspaces land in the named databases; a raw backend reads them all", "[lmdb][placement]") {
  if (!have_mdb_stat()) {
    WARN("mdb_stat (lmdb-utils) is not installed: the check with LMDB's own tool is skipped");
    return;
  }
  temp_dir dir("lmdb-placement");
  {
    store_type db(dir.path());
    auto b = db.batch();
    for (std::uint64_t id = 0; id < 7; ++id) b.put<meta>({id}, "m");
    for (std::uint64_t id = 0; id < 5; ++id) b.put<body>({id}, ks::bytes(std::string(3000, 'b')));
    for (std::uint64_t id = 0; id < 3; ++id) b.put<entry>({id}, "e");
    b.commit();
  }
  CHECK(entries(dir.path(), "content") == std::optional<long>(5));
  CHECK(entries(dir.path(), "queues") == std::optional<long>(3));
  // The main database: 7 metadata, the schema record, and the two named databases' entries.
  CHECK(entries(dir.path(), "") == std::optional<long>(7 + 1 + 2));

  // A raw backend (keyschema-dump's view) reads every placement, merged, without the named
  // databases' own entries.
  ks::lmdb_backend raw(dir.path());
  std::size_t n = 0;
  std::string last;
  for (auto c = raw.cursor(ks::key_range{}, nullptr); c.valid(); c.next(), ++n) {
    CHECK(std::string(c.key()) > last);
    CHECK_FALSE(c.key().starts_with("\xff" "keyschema/placement/"));
    last = c.key();
  }
  CHECK(n == 7 + 5 + 3 + 1);
}

TEST_CASE("lmdb: more placements than max_placements is a limit_error naming the placement", "[lmdb][placement]") {
  temp_dir dir("lmdb-placement-max");
  try {
    ks::store<placed_schema, ks::lmdb_backend> db(dir.path(), ks::lmdb_options{.max_placements = 1});
    FAIL("two placements were created in an environment opened for one");
  } catch (const ks::limit_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("placement 'queues'") && Catch::Contains("max_placements"));
  }
  // Nothing was created: the same environment opens with room for both.
  store_type db(dir.path());
  db.put<entry>({1}, "e");
  CHECK(db.get<entry>({1}) == std::optional<std::string>("e"));
}

TEST_CASE("lmdb: a read-only open reads the placements; one lacking them refuses the schema", "[lmdb][placement]") {
  temp_dir dir("lmdb-placement-ro");
  {
    store_type db(dir.path());
    db.put<body>({1}, ks::bytes("b"));
  }
  {
    store_type ro(dir.path(), ks::lmdb_options{.read_only = true});
    CHECK(ro.get<body>({1}) == std::optional(ks::bytes("b")));
  }
  // A database written without placements, opened read-only by a program that places: refused
  // (the record says where each keyspace is), and nothing is created in it.
  temp_dir flat_dir("lmdb-placement-ro-flat");
  using flat = ks::schema<meta, ks::keyspace<"body", ks::bytes, ks::lit<"BODY">, ks::field<"id", std::uint64_t>>,
                          ks::keyspace<"entry", std::string, ks::lit<"ENTRY">, ks::field<"id", std::uint64_t>>>;
  { ks::store<flat, ks::lmdb_backend> db(flat_dir.path()); }
  CHECK_THROWS_AS(store_type(flat_dir.path(), ks::lmdb_options{.read_only = true}), ks::schema_error);
}

TEST_CASE("lmdb: a process killed while committing batches across three placements leaves each whole or absent",
          "[lmdb][placement][crash]") {
  temp_dir dir("lmdb-placement-crash");
  { store_type db(dir.path()); }
  const auto entry_key = [](std::uint64_t id) { return std::tuple(id); };
  CHECK(ks::testing::commit_batches_until_killed<meta, body, entry>([&] { return store_type(dir.path()); }, entry_key,
                                                                     std::chrono::milliseconds(300)));
  const store_type db(dir.path());
  ks::testing::check_whole_batches<meta, body, entry>(db, entry_key);
}

// Point reads route their key by what the backend decided when its placements last changed
// (env_state::plain_max), not per read: a placement added after the first reads, and a keyspace
// moving to another placement, reroute the reads at once, with and without a snapshot; a miss
// leaves the caller's value alone.
TEST_CASE("lmdb: point reads follow placements added after the first reads and a keyspace moving",
          "[lmdb][placement]") {
  temp_dir dir("lmdb-placement-late");
  ks::lmdb_backend b(dir.path());
  const auto put = [&](const std::string& k, const std::string& v) {
    ks::write_batch w;
    w.put(k, v);
    b.write(w, {});
  };
  const auto in_main = [&](const std::string& k) { return ks::testing::in_main_database(b, k); };
  const auto read = [&](const std::string& k) { return ks::testing::checked_read(b, k); };
  put("M1", "m");
  CHECK(read("M1") == std::optional<std::string>("m"));  // nothing placed yet
  const ks::placement_route queues[] = {{"Q", "queues", std::nullopt}};
  b.place(queues);
  put("Q1", "q");
  CHECK_FALSE(in_main("Q1"));  // in the named database of "queues"
  CHECK(read("Q1") == std::optional<std::string>("q"));
  CHECK(read("M1") == std::optional<std::string>("m"));
  CHECK(read("Q2") == std::nullopt);
  // The keyspace moves to "archive" (ks::migrate's routes): its keys are read in both.
  const ks::placement_route moving[] = {{"Q", "archive", std::optional<std::string_view>("queues")}};
  b.place(moving);
  put("Q2", "a");
  CHECK_FALSE(in_main("Q2"));
  CHECK(read("Q1") == std::optional<std::string>("q"));
  CHECK(read("Q2") == std::optional<std::string>("a"));
  CHECK(read("M1") == std::optional<std::string>("m"));
  CHECK(read("Q3") == std::nullopt);
}

}  // namespace lmdb_placement_test
