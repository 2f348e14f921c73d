// tests/conformance/cases/chunked.cpp: conformance cases: chunked values (keyschema/chunked.hpp):
// put, read (whole and streamed), overwrite without orphan chunks, erase and copy as a unit, in
// transactions and on the store; missing, extra and resized chunks and damaged headers; limits;
// chunked values (and adds) in prepared transactions rewritten by another writer before commit.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp). Runs on its own schema, in its own database.
#include <conformance/conformance.hpp>

#include <keyschema/chunked.hpp>
#include <keyschema/prepared.hpp>

namespace keyschema::conformance {
namespace chunked_cases {

using content = ks::keyspace<"chunked_content", ks::bytes, ks::lit<"CONTENT">, ks::field<"message_id", std::uint64_t>,
                             ks::field<"chunk", std::uint32_t>>;
using dtx_content = ks::keyspace<"chunked_dtx_content", ks::bytes, ks::lit<"DTX_CONTENT">, ks::field<"xid", ks::bytes>,
                                 ks::field<"message_id", std::uint64_t>, ks::field<"chunk", std::uint16_t>>;
using chunk_schema = ks::schema<content, dtx_content>;
static_assert(ks::valid_schema<chunk_schema>);

// A database of chunk_schema in a fresh directory.
struct chunk_db {
  testing::temp_dir dir{"chunked"};  // declared first: outlives the store
  std::unique_ptr<ks::store<chunk_schema, backend_factory::backend>> db =
      backend_factory::open<chunk_schema>(dir.path());
  void reopen() {
    db.reset();
    db = backend_factory::open<chunk_schema>(dir.path());
  }
};

// n bytes in which NUL and 0xFF occur.
inline std::string payload(std::size_t n, unsigned salt = 0) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 37 + salt) & 0xff);
  return s;
}

template <class Source>
std::optional<std::string> read_value(const Source& src, std::uint64_t id) {
  std::optional<ks::bytes> v = ks::read_chunked<content>(src, {id});
  if (!v) return std::nullopt;
  return std::move(*v).str();
}

template <class Source>
std::size_t keys_of(const Source& src, std::uint64_t id) {
  return count(src.template scan<content>(id));
}

// The decode_error message of reading id, or "" when the read succeeds.
template <class Source>
std::string read_error(const Source& src, std::uint64_t id) {
  try {
    (void)ks::read_chunked<content>(src, {id});
  } catch (const ks::decode_error& e) {
    return e.what();
  }
  return "";
}


TEST_CASE("chunked values round-trip through one atomic write and one prefix scan", "[conformance][chunked]") {
  chunk_db c;
  auto& db = *c.db;
  ks::put_chunked<content>(db, {41}, "before", 8);
  ks::put_chunked<content>(db, {43}, "after", 8);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
                              std::size_t{64}, std::size_t{1000}}) {
    INFO("size " << n);
    const std::string data = payload(n, static_cast<unsigned>(n));
    CHECK(ks::put_chunked<content>(db, {42}, data, 8) == (n + 7) / 8);
    CHECK(read_value(db, 42) == data);
    CHECK(keys_of(db, 42) == (n + 7) / 8 + 1);  // the header and the data chunks, no orphans
    std::vector<std::size_t> pieces;
    CHECK(ks::read_chunked<content>(db.snapshot(), {42}, [&](std::string_view p) { pieces.push_back(p.size()); }));
    CHECK(pieces.size() == (n + 7) / 8);
    if (!pieces.empty()) CHECK(pieces.back() == (n % 8 == 0 ? 8 : n % 8));
  }
  CHECK(read_value(db, 41) == std::optional<std::string>("before"));
  CHECK(read_value(db, 43) == std::optional<std::string>("after"));
  CHECK(read_value(db, 44) == std::nullopt);
  CHECK_FALSE(ks::read_chunked<content>(db, {44}, [](std::string_view) { FAIL("a piece of a missing value"); }));

  // A shorter value after a longer one leaves no orphan chunks; a longer one after it reads whole.
  ks::put_chunked<content>(db, {42}, payload(100), 8);
  ks::put_chunked<content>(db, {42}, "tiny", 8);
  CHECK(keys_of(db, 42) == 2);
  CHECK(read_value(db, 42) == std::optional<std::string>("tiny"));
  ks::put_chunked<content>(db, {42}, payload(30), 4);
  CHECK(keys_of(db, 42) == 9);
  CHECK(read_value(db, 42) == payload(30));

  CHECK(ks::erase_chunked<content>(db, {42}));
  CHECK(keys_of(db, 42) == 0);
  CHECK(read_value(db, 42) == std::nullopt);
  CHECK_FALSE(ks::erase_chunked<content>(db, {42}));
  CHECK(read_value(db, 41) == std::optional<std::string>("before"));
  CHECK(read_value(db, 43) == std::optional<std::string>("after"));
}

TEST_CASE("chunked values in a transaction: read-your-writes, copy and erase as a unit", "[conformance][chunked]") {
  chunk_db c;
  auto& db = *c.db;
  const std::string data = payload(50, 3);
  ks::put_chunked<content>(db, {7}, payload(200), 16);  // the previous, longer value
  const ks::bytes xid(std::string("xid\0\xff", 5));
  {
    auto tx = db.transaction();
    CHECK(ks::put_chunked<content>(tx, {7}, data, 16) == 4);
    CHECK(read_value(tx, 7) == data);  // its own writes
    CHECK(ks::copy_chunked<content, dtx_content>(tx, {7}, {xid, 7}));
    CHECK_FALSE(ks::copy_chunked<content, dtx_content>(tx, {8}, {xid, 8}));  // no source: nothing written
    CHECK(read_value(db, 7) == payload(200));                                      // nothing visible before commit
    tx.commit();
  }
  CHECK(read_value(db, 7) == data);
  CHECK(keys_of(db, 7) == 5);
  CHECK(ks::read_chunked<dtx_content>(db, {xid, 7}) == ks::bytes(data));
  CHECK(count(db.scan<dtx_content>(xid, std::uint64_t{7})) == 5);  // same chunking
  CHECK(count(db.scan<dtx_content>(xid, std::uint64_t{8})) == 0);

  {
    auto tx = db.transaction();
    CHECK(ks::erase_chunked<content>(tx, {7}));
    CHECK(read_value(tx, 7) == std::nullopt);
    // Copying over an existing, longer copy replaces it whole.
    ks::put_chunked<content>(tx, {9}, "x", 16);
    CHECK(ks::copy_chunked<content, dtx_content>(tx, {9}, {xid, 7}));
    tx.rollback();
  }
  CHECK(read_value(db, 7) == data);  // rolled back
  CHECK(ks::copy_chunked<content, dtx_content>(db, {7}, {xid, 70}));
  ks::put_chunked<content>(db, {9}, "", 16);
  CHECK(ks::copy_chunked<content, dtx_content>(db, {9}, {xid, 70}));  // an empty value over a longer one
  CHECK(ks::read_chunked<dtx_content>(db, {xid, 70}) == ks::bytes(std::string()));
  CHECK(count(db.scan<dtx_content>(xid, std::uint64_t{70})) == 1);
  CHECK(ks::erase_chunked<content>(db, {7}));
  CHECK(ks::read_chunked<dtx_content>(db, {xid, 7}) == ks::bytes(data));  // the copy is independent
}

TEST_CASE("missing, extra and resized chunks and damaged headers are decode_errors, never a short value",
          "[conformance][chunked][damage]") {
  chunk_db c;
  auto& db = *c.db;
  const std::string data = payload(40, 9);  // chunks 1..5 of 8 bytes
  const auto fresh = [&] { ks::put_chunked<content>(db, {5}, data, 8); };
  const auto expect = [&](const char* what) {
    const std::string msg = read_error(db, 5);
    CHECK_THAT(msg, Catch::Contains("chunked_content") && Catch::Contains("(\"CONTENT\", 5)") && Catch::Contains(what));
  };

  fresh();
  db.erase<content>({5, 3});
  expect("chunk 3 of 5 is missing");
  fresh();
  db.erase<content>({5, 5});  // the last chunk: the value would read as 32 bytes
  expect("chunk 5 of 5 is missing");
  fresh();
  db.put<content>({5, 6}, ks::bytes("stray"));
  expect("chunk 6 is extra");
  fresh();
  db.put<content>({5, 2}, ks::bytes("short"));
  expect("chunk 2 holds 5 bytes, the header implies 8");
  fresh();
  db.erase<content>({5, 0});
  expect("the header (chunk 0) is missing, the first chunk is 1");
  fresh();
  db.put<content>({5, 0}, ks::bytes("not a header"));
  expect("chunk 0 is not a consistent chunked-value header");

  // A streamed read has delivered the correct pieces before the fault.
  fresh();
  db.erase<content>({5, 4});
  std::string got;
  CHECK_THROWS_AS(ks::read_chunked<content>(db, {5}, [&](std::string_view p) { got.append(p); }), ks::decode_error);
  CHECK(got == data.substr(0, 24));

  // A write repairs the value: everything under the prefix is replaced.
  db.put<content>({5, 77}, ks::bytes("stray"));
  fresh();
  CHECK(read_value(db, 5) == data);
  CHECK(keys_of(db, 5) == 6);
}

TEST_CASE("chunked writes check the chunk size, the chunk field's range and the backend's limits",
          "[conformance][chunked][limits]") {
  chunk_db c;
  auto& db = *c.db;
  CHECK_THROWS_AS(ks::put_chunked<content>(db, {1}, "abc", 0), ks::error);
  // 70000 one-byte chunks do not fit a std::uint16_t chunk field.
  try {
    ks::copy_chunked<content, dtx_content>(db, {1}, {ks::bytes("x"), 1});  // nothing to copy yet
    ks::put_chunked<dtx_content>(db, {ks::bytes("x"), 1}, payload(70000), 1);
    FAIL("70000 chunks were numbered by a std::uint16_t field");
  } catch (const ks::limit_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("chunked_dtx_content") && Catch::Contains("70000 chunks"));
  }
  CHECK(count(db.scan<dtx_content>()) == 0);
  const ks::backend_limits l = db.backend().limits();
  if (std::min(l.max_value_bytes, l.max_entry_bytes) < (std::size_t{64} << 20)) {  // LevelDB: 8 MiB entries
    const std::size_t too_big = std::min(l.max_value_bytes, l.max_entry_bytes) + 1;
    ks::put_chunked<content>(db, {2}, "old", 8);
    auto tx = db.transaction();
    CHECK_THROWS_AS(ks::put_chunked<content>(tx, {2}, payload(too_big), too_big), ks::limit_error);
    CHECK(tx.size() == 0);  // nothing added: the old value is not even erased
    CHECK(read_value(tx, 2) == std::optional<std::string>("old"));
    // The same data in chunks that fit is fine.
    CHECK(ks::put_chunked<content>(tx, {2}, payload(too_big), too_big / 2 + 1) == 2);
    tx.commit();
    CHECK(read_value(db, 2) == payload(too_big));
  } else {
    WARN(backend_factory::name << " backend has no value limit below 64 MiB: chunk-size limit case skipped");
  }
}

TEST_CASE("chunked values survive reopening the database", "[conformance][chunked][persistence]") {
  if (!backend_factory::persistent) {
    WARN(backend_factory::name << " backend keeps nothing on disk: reopen case skipped");
    SUCCEED();
    return;
  }
  chunk_db c;
  const std::string data = payload(1 << 16, 1);
  ks::put_chunked<content>(*c.db, {3}, data, 4096);
  c.reopen();
  CHECK(read_value(*c.db, 3) == data);
  CHECK(keys_of(*c.db, 3) == 17);
}

// A chunked keyspace and a counter, for prepared branches that take an id and store a value.
using xa_counter = ks::keyspace<"chunked_xa_counter", std::int64_t, ks::lit<"COUNTER">, ks::field<"name", std::string>>;
using xa_schema = ks::schema<content, xa_counter>;

struct xa_db {
  testing::temp_dir dir{"chunked-xa"};
  std::unique_ptr<ks::store<xa_schema, backend_factory::backend>> db = backend_factory::open<xa_schema>(dir.path());
};

TEST_CASE("a prepared branch's chunked rewrite or erase is refused when another writer rewrote the value first (issue 30, case 1)",
          "[conformance][chunked][prepared]") {
  for (const bool erase : {false, true}) {
    INFO((erase ? "the branch erases the value" : "the branch rewrites the value"));
    xa_db x;
    auto& db = *x.db;
    const std::string three = payload(30, 1), four = payload(40, 2), mine = payload(25, 3);
    REQUIRE(ks::put_chunked<content>(db, {7}, three, 10) == 3);
    {
      auto tx = db.transaction();
      if (erase) {
        CHECK(ks::erase_chunked<content>(tx, {7}));
      } else {
        CHECK(ks::put_chunked<content>(tx, {7}, mine, 10) == 3);
      }
      ks::prepare(tx, "branch");
    }
    REQUIRE(ks::put_chunked<content>(db, {7}, four, 10) == 4);  // another writer: 4 chunks
    try {
      (void)ks::commit_prepared(db, "branch");
      FAIL("a branch whose chunked value was rewritten since prepare committed");
    } catch (const ks::conflict_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("b\"branch\"") && Catch::Contains("'chunked_content'") &&
                               Catch::Contains("changed since prepare"));
    }
    // The value is the other writer's, whole and readable ("chunk 4 is extra" before).
    CHECK(read_error(db, 7).empty());
    CHECK(read_value(db, 7) == four);
    CHECK(ks::prepared(db) == std::vector<std::string>{"branch"});
    CHECK(ks::rollback_prepared(db, "branch"));
    CHECK(read_value(db, 7) == four);
  }
}

TEST_CASE("a prepared branch's chunked rewrite or erase commits a readable value when nothing interfered",
          "[conformance][chunked][prepared]") {
  xa_db x;
  auto& db = *x.db;
  REQUIRE(ks::put_chunked<content>(db, {1}, payload(50, 1), 10) == 5);
  REQUIRE(ks::put_chunked<content>(db, {2}, payload(30, 2), 10) == 3);
  {
    auto tx = db.transaction();
    CHECK(ks::put_chunked<content>(tx, {1}, payload(15, 4), 10) == 2);  // shorter: chunks 3..5 go
    CHECK(ks::erase_chunked<content>(tx, {2}));
    CHECK(ks::put_chunked<content>(tx, {3}, payload(21, 5), 10) == 3);  // new
    ks::prepare(tx, "branch");
  }
  REQUIRE(ks::put_chunked<content>(db, {4}, payload(12, 6), 10) == 2);  // another value: no interference
  REQUIRE(ks::commit_prepared(db, "branch"));
  CHECK(read_value(db, 1) == payload(15, 4));
  CHECK(keys_of(db, 1) == 3);
  CHECK(read_value(db, 2) == std::nullopt);
  CHECK(keys_of(db, 2) == 0);
  CHECK(read_value(db, 3) == payload(21, 5));
  CHECK(read_value(db, 4) == payload(12, 6));
}

TEST_CASE("prepared x chunked x add: a branch that takes an id and stores its content, raced by a publisher",
          "[conformance][chunked][prepared][counters]") {
  xa_db x;
  auto& db = *x.db;
  // Takes the next id with an add and stores a chunked value under it, in tx.
  const auto publish = [](auto& tx, const std::string& data) {
    tx.template add<xa_counter>({"id"}, 1);
    const auto id = static_cast<std::uint64_t>(tx.template get<xa_counter>({"id"}).value());
    ks::put_chunked<content>(tx, {id}, data, 8);
    return id;
  };
  {
    auto tx = db.transaction();
    CHECK(publish(tx, payload(20, 1)) == 1);
    ks::prepare(tx, "branch-1");
  }
  {
    auto tx = db.transaction();  // the publisher takes id 1 too
    CHECK(publish(tx, payload(33, 2)) == 1);
    tx.commit();
  }
  CHECK_THROWS_AS(ks::commit_prepared(db, "branch-1"), ks::conflict_error);
  CHECK(read_value(db, 1) == payload(33, 2));
  CHECK(db.get<xa_counter>({"id"}) == std::optional<std::int64_t>(1));
  CHECK(ks::rollback_prepared(db, "branch-1"));
  // Prepared again over the current state, nobody interfering: commits, the next id.
  {
    auto tx = db.transaction();
    CHECK(publish(tx, payload(20, 1)) == 2);
    ks::prepare(tx, "branch-2");
  }
  REQUIRE(ks::commit_prepared(db, "branch-2"));
  CHECK(read_value(db, 1) == payload(33, 2));
  CHECK(read_value(db, 2) == payload(20, 1));
  CHECK(db.get<xa_counter>({"id"}) == std::optional<std::int64_t>(2));
}

}  // namespace chunked_cases
}  // namespace keyschema::conformance
