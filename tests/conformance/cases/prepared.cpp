// tests/conformance/cases/prepared.cpp: conformance cases: prepared transactions (two-phase
// commit, keyschema/prepared.hpp): prepare, commit_prepared, rollback_prepared, prepared();
// isolation while prepared, validation at commit (what the branch read or wrote changed since
// prepare), records of older formats, keys the schema cannot decode, duplicate and unknown xids,
// limits, damaged records, reopening, and a process killed between prepare and commit. Chunked
// values in prepared branches: cases/chunked.cpp; migrations: cases/evolution.cpp.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp).
#include <conformance/conformance.hpp>
#include <support/child_process.hpp>

#include <keyschema/prepared.hpp>

#include <csignal>
#include <unistd.h>

namespace keyschema::conformance {
namespace prepared_cases {

// The raw record of xid, read around the typed layer.
template <class Store>
std::string raw_record(const Store& db, std::string_view xid) {
  std::string v;
  REQUIRE(db.backend().get(ks::detail::prepared_key(xid), v, nullptr));
  return v;
}

template <class Store>
void write_raw_record(Store& db, std::string_view xid, std::string_view record) {
  ks::write_batch b;
  b.put(ks::detail::prepared_key(xid), record);
  db.unsafe_backend().write(b, ks::write_options{});  // store::write refuses reserved keys
}

// A record holding one put whose key length points past the end, with a valid checksum.
inline std::string record_with_overlong_key() {
  std::string r("KSP1");
  ks::detail::put_le(r, 1, 4);
  r.push_back('\0');
  ks::detail::put_le(r, 1000, 4);
  r += "short";
  ks::detail::put_le(r, ks::detail::prepared_checksum(r), 8);
  return r;
}

// The conflict_error message of commit_prepared(xid), or "<committed>" / "<no record>".
template <class Store>
std::string commit_conflict(Store& db, std::string_view xid) {
  try {
    return ks::commit_prepared(db, xid) ? "<committed>" : "<no record>";
  } catch (const ks::conflict_error& e) {
    return e.what();
  }
}

}  // namespace prepared_cases

TEST_CASE("prepare records writes without applying them; commit_prepared applies them atomically",
          "[conformance][prepared]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_metadata>({"q", 2}, bin("old-2"));
  db.put<message_count>({"q"}, 1);

  auto tx = db.transaction();
  tx.put<message_metadata>({"q", 1}, bin("new-1"));
  tx.erase<message_metadata>({"q", 2});
  tx.put<message_count>({"q"}, tx.get<message_count>({"q"}).value_or(0) + 1);
  ks::prepare(tx, "xid-1");
  CHECK_FALSE(tx.is_open());

  // Nothing of the prepared writes is visible, and the writer lock is free.
  CHECK(lookup<message_metadata>(db, {"q", 1}) == "<missing>");
  CHECK(lookup<message_metadata>(db, {"q", 2}) == show(bin("old-2")));
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  CHECK(count(db.scan<message_metadata>()) == 1);
  CHECK(ks::prepared(db) == std::vector<std::string>{"xid-1"});
  db.put<message_metadata>({"other", 5}, bin("unrelated"));
  {
    auto reader = db.transaction();  // a later transaction does not see them either
    CHECK_FALSE(reader.contains<message_metadata>({"q", 1}));
  }

  CHECK(ks::commit_prepared(db, "xid-1"));
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("new-1")));
  CHECK(lookup<message_metadata>(db, {"q", 2}) == "<missing>");
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(2));
  CHECK(lookup<message_metadata>(db, {"other", 5}) == show(bin("unrelated")));
  CHECK(ks::prepared(db).empty());

  // The xid is gone: unknown xids are not errors.
  CHECK_FALSE(ks::commit_prepared(db, "xid-1"));
  CHECK_FALSE(ks::rollback_prepared(db, "xid-1"));
  CHECK_FALSE(ks::commit_prepared(db, "never-prepared"));
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(2));
}

TEST_CASE("rollback_prepared drops the writes; binary xids stay distinct and sorted", "[conformance][prepared]") {
  test_fixture fx;
  auto& db = fx.db();
  const std::vector<std::string> xids = {"", std::string("a"), std::string("a\0", 2), std::string("a\0b", 3),
                                         std::string("a\xff", 2), "b"};
  for (std::size_t i = 0; i < xids.size(); ++i) {
    auto tx = db.transaction();
    tx.put<dtx_entry>({ks::bytes(xids[i]), static_cast<std::uint32_t>(i)}, ks::bytes(xids[i]));
    ks::prepare(tx, xids[i]);
  }
  CHECK(ks::prepared(db) == xids);  // byte order of the xids
  CHECK(count(db.scan<dtx_entry>()) == 0);

  CHECK(ks::rollback_prepared(db, std::string("a\0", 2)));
  CHECK(ks::commit_prepared(db, std::string("a\0b", 3)));
  CHECK(ks::prepared(db) == std::vector<std::string>{"", "a", std::string("a\xff", 2), "b"});
  CHECK(collect(db.scan<dtx_entry>()) ==
        std::vector<std::string>{show_entry<dtx_entry>({ks::bytes(std::string("a\0b", 3)), 3},
                                                       ks::bytes(std::string("a\0b", 3)))});
  for (const std::string& x : ks::prepared(db)) CHECK(ks::rollback_prepared(db, x));
  CHECK(ks::prepared(db).empty());
  CHECK(count(db.scan<dtx_entry>()) == 1);
  // The record keys are outside every keyspace: typed scans never saw them.
}

TEST_CASE("prepare of a live xid is an error naming it; the transaction stays open", "[conformance][prepared]") {
  test_fixture fx;
  auto& db = fx.db();
  {
    auto tx = db.transaction();
    tx.put<message_count>({"a"}, 1);
    ks::prepare(tx, "dup");
  }
  auto tx = db.transaction();
  tx.put<message_count>({"b"}, 2);
  try {
    ks::prepare(tx, "dup");
    FAIL("a second prepare of a live xid succeeded");
  } catch (const ks::error& e) {
    CHECK_THAT(e.what(), Catch::Contains("b\"dup\"") && Catch::Contains("already prepared"));
  }
  REQUIRE(tx.is_open());
  CHECK(tx.get<message_count>({"b"}) == std::optional<std::int64_t>(2));  // its writes are intact
  tx.commit();
  CHECK(db.get<message_count>({"b"}) == std::optional<std::int64_t>(2));
  CHECK(db.get<message_count>({"a"}) == std::nullopt);
  CHECK_THROWS_AS(ks::prepare(tx, "closed"), ks::error);  // an ended transaction
  CHECK(ks::commit_prepared(db, "dup"));
  CHECK(db.get<message_count>({"a"}) == std::optional<std::int64_t>(1));
}

TEST_CASE("commit_prepared refuses a branch whose id was taken again since prepare (issue 30, case 1)",
          "[conformance][prepared][validation]") {
  // The branch takes an id with an add and reads it, stores message <id>, prepares; a publisher
  // takes the same id and commits message <id>. Applied blind, the branch's put would replace
  // the published message.
  test_fixture fx;
  auto& db = fx.db();
  {
    auto tx = db.transaction();
    tx.add<message_count>({"last_id"}, 1);
    const std::int64_t id = tx.get<message_count>({"last_id"}).value();
    CHECK(id == 1);
    tx.put<message_metadata>({"q", static_cast<std::uint64_t>(id)}, bin("branch"));
    ks::prepare(tx, "branch");
  }
  {
    auto tx = db.transaction();  // the publisher
    tx.add<message_count>({"last_id"}, 1);
    const std::int64_t id = tx.get<message_count>({"last_id"}).value();
    CHECK(id == 1);
    tx.put<message_metadata>({"q", static_cast<std::uint64_t>(id)}, bin("published"));
    tx.commit();
  }
  const std::string refused = prepared_cases::commit_conflict(db, "branch");
  // The first changed key in key order: the message ("DESTINATION" sorts before "MESSAGE_COUNT").
  CHECK_THAT(refused, Catch::Contains("commit_prepared") && Catch::Contains("b\"branch\"") &&
                          Catch::Contains("'message_metadata'") && Catch::Contains("\"q\"") &&
                          Catch::Contains("changed since prepare") && Catch::Contains("rollback_prepared"));
  // Nothing applied, the record kept for the coordinator.
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("published")));
  CHECK(db.get<message_count>({"last_id"}) == std::optional<std::int64_t>(1));
  CHECK(ks::prepared(db) == std::vector<std::string>{"branch"});
  CHECK(prepared_cases::commit_conflict(db, "branch") == refused);  // refused again, the same way
  CHECK(ks::rollback_prepared(db, "branch"));
  CHECK(ks::prepared(db).empty());
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("published")));
  CHECK(db.get<message_count>({"last_id"}) == std::optional<std::int64_t>(1));
}

TEST_CASE("commit_prepared refuses a branch when a key it wrote, erased or only read changed since prepare",
          "[conformance][prepared][validation]") {
  struct variant {
    const char* name;
    void (*interfere)(test_fixture::store_type&);  // another writer, between prepare and commit
  };
  const std::vector<variant> variants = {
      {"a key it put, overwritten", [](auto& db) { db.template put<message_metadata>({"w", 1}, bin("other")); }},
      {"a key it put, created first", [](auto& db) { db.template put<message_metadata>({"w", 2}, bin("other")); }},
      {"a key it erased, re-created", [](auto& db) { db.template put<message_metadata>({"w", 3}, bin("again")); }},
      {"a missing key it erased, created", [](auto& db) { db.template put<message_metadata>({"w", 4}, bin("new")); }},
      {"a key it erased, erased first", [](auto& db) { db.template erase<message_metadata>({"w", 5}); }},
      {"a key it read (get), changed", [](auto& db) { db.template put<message_metadata>({"r", 1}, bin("changed")); }},
      {"a key it read (get), erased", [](auto& db) { db.template erase<message_metadata>({"r", 1}); }},
      {"a missing key it read (get), created", [](auto& db) { db.template put<message_metadata>({"r", 2}, bin("new")); }},
      {"a key it read (contains), erased", [](auto& db) { db.template erase<message_metadata>({"r", 3}); }},
      {"a missing key it read (contains), created", [](auto& db) { db.template put<message_metadata>({"r", 4}, bin("n")); }},
      {"a counter it added to, added to", [](auto& db) { db.template add<message_count>({"c"}, 1); }},
      {"a counter it read (get_into), set", [](auto& db) { db.template put<message_count>({"g"}, 8); }},
      {"a scanned key, changed", [](auto& db) { db.template put<message_expiration>({"s", 1}, 99); }},
      {"a scanned range, a key added", [](auto& db) { db.template put<message_expiration>({"s", 2}, 99); }},
      {"a scanned range, a key erased", [](auto& db) { db.template erase<message_expiration>({"s", 3}); }},
  };
  for (const variant& v : variants) {
    INFO(v.name);
    test_fixture fx;
    auto& db = fx.db();
    db.put<message_metadata>({"w", 1}, bin("before"));
    db.put<message_metadata>({"w", 3}, bin("before"));
    db.put<message_metadata>({"w", 5}, bin("before"));
    db.put<message_metadata>({"r", 1}, bin("read"));
    db.put<message_metadata>({"r", 3}, bin("read"));
    db.put<message_count>({"c"}, 10);
    db.put<message_count>({"g"}, 7);
    db.put<message_expiration>({"s", 1}, 1);
    db.put<message_expiration>({"s", 3}, 3);
    db.put<message_expiration>({"s", 9}, 9);
    {
      auto tx = db.transaction();
      tx.put<message_metadata>({"w", 1}, bin("branch"));
      tx.put<message_metadata>({"w", 2}, bin("branch"));
      tx.erase<message_metadata>({"w", 3});
      tx.erase<message_metadata>({"w", 4});
      tx.erase<message_metadata>({"w", 5});
      CHECK(tx.get<message_metadata>({"r", 1}).has_value());
      CHECK_FALSE(tx.get<message_metadata>({"r", 2}).has_value());
      CHECK(tx.contains<message_metadata>({"r", 3}));
      CHECK_FALSE(tx.contains<message_metadata>({"r", 4}));
      tx.add<message_count>({"c"}, 5);
      std::int64_t g = 0;
      CHECK(tx.get_into<message_count>({"g"}, g));
      CHECK(collect(tx.scan<message_expiration>("s").limit(2)).size() == 2);  // visits 1 and 3 only
      tx.put<dtx_entry>({ks::bytes("x"), 1u}, bin("branch"));
      ks::prepare(tx, "x");
    }
    v.interfere(db);
    const std::string refused = prepared_cases::commit_conflict(db, "x");
    CHECK_THAT(refused, Catch::Contains("b\"x\"") && Catch::Contains("changed since prepare"));
    CHECK(count(db.scan<dtx_entry>()) == 0);  // nothing applied
    CHECK(lookup<message_metadata>(db, {"w", 2}) != show(bin("branch")));
    CHECK(ks::prepared(db) == std::vector<std::string>{"x"});
    CHECK(ks::rollback_prepared(db, "x"));
    CHECK(ks::prepared(db).empty());
  }
}

TEST_CASE("commit_prepared commits a branch when nothing it read or wrote changed, whatever else did",
          "[conformance][prepared][validation]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_metadata>({"q", 1}, bin("before"));
  db.put<message_metadata>({"q", 2}, bin("before"));
  db.put<message_count>({"c"}, 10);
  for (std::uint64_t i = 1; i <= 6; ++i) db.put<message_expiration>({"s", i}, static_cast<std::int64_t>(i));
  {
    auto tx = db.transaction();
    tx.put<message_metadata>({"q", 1}, bin("prepared"));
    tx.erase<message_metadata>({"q", 2});
    CHECK(tx.get<message_metadata>({"q", 2}) == std::nullopt);  // its own erase
    tx.add<message_count>({"c"}, 5);
    CHECK(collect(tx.scan<message_expiration>("s").limit(2)).size() == 2);          // 1, 2
    CHECK(collect(tx.scan<message_expiration>("s").reverse().limit(1)).size() == 1);  // 6
    ks::prepare(tx, "branch");
  }
  // Other writers, on keys the branch neither read nor wrote, and in the parts of the scanned
  // range its scans did not reach.
  db.put<message_metadata>({"q", 3}, bin("concurrent"));
  db.put<message_metadata>({"other", 1}, bin("concurrent"));
  db.put<message_count>({"d"}, 1);
  db.put<message_expiration>({"s", 4}, 40);
  db.erase<message_expiration>({"s", 3});
  REQUIRE(ks::commit_prepared(db, "branch"));
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("prepared")));
  CHECK(lookup<message_metadata>(db, {"q", 2}) == "<missing>");
  CHECK(lookup<message_metadata>(db, {"q", 3}) == show(bin("concurrent")));
  CHECK(db.get<message_count>({"c"}) == std::optional<std::int64_t>(15));
  CHECK(db.get<message_expiration>({"s", 4}) == std::optional<std::int64_t>(40));
  CHECK(ks::prepared(db).empty());
}

TEST_CASE("an add in a prepared transaction is recorded as its delta; a record of the older formats commits blind",
          "[conformance][prepared][counters]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_count>({"c"}, 10);
  db.put<message_count>({"p"}, 7);
  {
    auto tx = db.transaction();
    tx.add<message_count>({"c"}, 2);
    tx.add<message_count>({"c"}, 3);  // one delta: +5
    CHECK(tx.get<message_count>({"c"}) == std::optional<std::int64_t>(15));  // it reads its own adds
    tx.put<message_count>({"p"}, 1);
    tx.add<message_count>({"p"}, 2);  // after its own put: the value 3
    tx.add<message_count>({"n"}, 4);  // a missing key: +4
    ks::prepare(tx, "adds");
  }
  REQUIRE(ks::commit_prepared(db, "adds"));
  CHECK(db.get<message_count>({"c"}) == std::optional<std::int64_t>(15));
  CHECK(db.get<message_count>({"p"}) == std::optional<std::int64_t>(3));
  CHECK(db.get<message_count>({"n"}) == std::optional<std::int64_t>(4));

  // Another writer changed the counter: refused (the add read it).
  {
    auto tx = db.transaction();
    tx.add<message_count>({"c"}, 5);
    ks::prepare(tx, "raced");
  }
  db.put<message_count>({"c"}, 100);
  CHECK_THAT(prepared_cases::commit_conflict(db, "raced"), Catch::Contains("'message_count'"));
  CHECK(db.get<message_count>({"c"}) == std::optional<std::int64_t>(100));
  CHECK(ks::rollback_prepared(db, "raced"));

  // Records of the formats before validation (KSP2 with adds, KSP1 without) are applied as those
  // versions did: blind, the add's delta to the value current at commit.
  std::string c_key, q_key;
  ks::detail::key_codec<message_count>::encode(c_key, message_count::key_type("c"));
  ks::detail::key_codec<message_metadata>::encode(q_key, message_metadata::key_type("q", 1));
  ks::write_batch put_q;
  put_q.put(q_key, "old format");
  prepared_cases::write_raw_record(db, "ksp2", ks::detail::encode_prepared(put_q, {ks::detail::prepared_add{c_key, 5}}));
  prepared_cases::write_raw_record(db, "ksp1", ks::detail::encode_prepared(put_q));
  CHECK(prepared_cases::raw_record(db, "ksp2").substr(0, 4) == "KSP2");
  CHECK(prepared_cases::raw_record(db, "ksp1").substr(0, 4) == "KSP1");
  db.put<message_metadata>({"q", 1}, bin("concurrent"));
  REQUIRE(ks::commit_prepared(db, "ksp2"));
  CHECK(db.get<message_count>({"c"}) == std::optional<std::int64_t>(105));
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("old format")));
  db.put<message_metadata>({"q", 1}, bin("concurrent"));
  REQUIRE(ks::commit_prepared(db, "ksp1"));
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("old format")));

  // An add of an old record that no longer fits at commit: overflow_error, nothing applied, the
  // record stays.
  prepared_cases::write_raw_record(db, "over", ks::detail::encode_prepared(put_q, {ks::detail::prepared_add{c_key, 1}}));
  db.put<message_metadata>({"q", 1}, bin("before"));
  db.put<message_count>({"c"}, std::numeric_limits<std::int64_t>::max());
  CHECK_THROWS_AS(ks::commit_prepared(db, "over"), ks::overflow_error);
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("before")));
  CHECK(ks::prepared(db) == std::vector<std::string>{"over"});
  CHECK(ks::rollback_prepared(db, "over"));
}

TEST_CASE("commit_prepared refuses a record whose keys this schema cannot decode; it can be rolled back (issue 30, case 2)",
          "[conformance][prepared][schema]") {
  test_fixture fx;
  auto& db = fx.db();
  // A key of no keyspace of the schema; one of message_metadata's shape but with a text id (as a
  // schema with string ids wrote it: no keyspace of this schema has such keys); one that starts
  // as a message_metadata key but has an element more (it does not decode as one).
  const std::string foreign = ks::tuple::pack(std::string("NOT_A_KEYSPACE"), std::uint64_t{1});
  const std::string text_id = ks::tuple::pack(std::string("DESTINATION"), std::string("q"),
                                              std::string("MESSAGE_METADATA"), std::string("14"));
  const std::string longer = ks::tuple::pack(std::string("DESTINATION"), std::string("q"),
                                             std::string("MESSAGE_METADATA"), std::uint64_t{14}, std::string("x"));
  for (const bool erase : {false, true}) {
    INFO((erase ? "erase" : "put"));
    const auto record = [&](const std::string& key) {
      ks::write_batch b;
      if (erase) {
        b.erase(key);
      } else {
        b.put(key, "v");
      }
      return ks::detail::encode_prepared(b);
    };
    prepared_cases::write_raw_record(db, "foreign", record(foreign));
    prepared_cases::write_raw_record(db, "text-id", record(text_id));
    prepared_cases::write_raw_record(db, "longer", record(longer));
    for (const auto& [xid, shown] : {std::pair<std::string, std::string>{"foreign", "NOT_A_KEYSPACE"},
                                     std::pair<std::string, std::string>{"text-id", "\"14\""}}) {
      try {
        (void)ks::commit_prepared(db, xid);
        FAIL("a record writing a key of no keyspace was committed");
      } catch (const ks::schema_error& e) {
        CHECK_THAT(e.what(), Catch::Contains("b\"" + xid + "\"") && Catch::Contains(shown) &&
                                 Catch::Contains("no key of a keyspace of this schema") &&
                                 Catch::Contains("rollback_prepared"));
      }
    }
    try {
      (void)ks::commit_prepared(db, "longer");
      FAIL("a record writing a key that does not decode was committed");
    } catch (const ks::decode_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("b\"longer\"") && Catch::Contains("'message_metadata'") &&
                               Catch::Contains("rollback_prepared"));
    }
    CHECK(ks::prepared(db) == std::vector<std::string>{"foreign", "longer", "text-id"});
    CHECK(ks::rollback_prepared(db, "foreign"));
    CHECK(ks::rollback_prepared(db, "text-id"));
    CHECK(ks::rollback_prepared(db, "longer"));
  }
  // Nothing of them reached the database.
  for (auto c = db.backend().cursor(ks::key_range{}, nullptr); c.valid(); c.next()) {
    CHECK(c.key() != foreign);
    CHECK(c.key() != text_id);
    CHECK(c.key() != longer);
  }
}

TEST_CASE("prepare beyond the backend's limits is a limit_error naming the xid", "[conformance][prepared][limits]") {
  test_fixture fx;
  auto& db = fx.db();
  const ks::backend_limits l = db.backend().limits();
  bool tried = false;
  if (is_finite_key_limit(l.max_key_bytes)) {  // LMDB: the record key holds the xid
    tried = true;
    const std::string xid(l.max_key_bytes, 'x');
    auto tx = db.transaction();
    tx.put<message_count>({"k"}, 1);
    try {
      ks::prepare(tx, xid);
      FAIL("a record key longer than max_key_bytes was accepted");
    } catch (const ks::limit_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("xid b\"xxx") && Catch::Contains("max_key_bytes"));
    }
    CHECK(tx.is_open());
    tx.rollback();
  }
  if (entry_limit_counts_value(db)) {  // LevelDB, SQLite: the record holds every value
    tried = true;
    auto tx = db.transaction();
    const std::size_t n = 3;  // each value fits one entry, the three do not fit one record
    const ks::bytes half(std::string(l.max_entry_bytes / 2, 'v'));
    for (std::size_t i = 0; i < n; ++i) tx.put<message_content>({i, 0u}, half);
    try {
      ks::prepare(tx, "big");
      FAIL("a record longer than max_entry_bytes was accepted");
    } catch (const ks::limit_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("xid b\"big\"") &&
                               (Catch::Contains("max_entry_bytes") || Catch::Contains("max_value_bytes")));
    }
    CHECK(tx.is_open());
    CHECK(tx.size() == n);
    tx.rollback();
  }
  if (!tried) {
    WARN(backend_factory::name << " backend has no finite key or entry limit: limit case skipped");
  }
  CHECK(ks::prepared(db).empty());
}

TEST_CASE("a damaged prepared record is a decode_error naming the xid; it can be rolled back",
          "[conformance][prepared][damage]") {
  test_fixture fx;
  auto& db = fx.db();
  {
    auto tx = db.transaction();
    tx.put<message_metadata>({"q", 1}, bin("payload"));
    tx.erase<message_metadata>({"q", 9});
    ks::prepare(tx, "flip");
  }
  std::string record = prepared_cases::raw_record(db, "flip");
  const std::vector<std::pair<std::string, std::string>> damages = {
      {"flip", [&] {
         std::string r = record;
         r[r.size() / 2] = static_cast<char>(r[r.size() / 2] ^ 0x20);
         return r;
       }()},
      {"cut", record.substr(0, record.size() - 3)},
      {"tiny", "KS"},
      {"empty", ""},
      {"overlong", prepared_cases::record_with_overlong_key()},
  };
  for (const auto& [xid, bad] : damages) {
    INFO("damage " << xid);
    prepared_cases::write_raw_record(db, xid, bad);
    try {
      (void)ks::commit_prepared(db, xid);
      FAIL("a damaged record was applied");
    } catch (const ks::decode_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("b\"" + xid + "\"") && Catch::Contains("damaged"));
    }
    CHECK(lookup<message_metadata>(db, {"q", 1}) == "<missing>");  // nothing applied
  }
  CHECK(ks::prepared(db) == std::vector<std::string>{"cut", "empty", "flip", "overlong", "tiny"});
  for (const auto& [xid, bad] : damages) CHECK(ks::rollback_prepared(db, xid));
  CHECK(ks::prepared(db).empty());
  CHECK(count(db.scan<message_metadata>()) == 0);
}

TEST_CASE("prepared transactions survive reopening the database", "[conformance][prepared][persistence]") {
  if (!backend_factory::persistent) {
    WARN(backend_factory::name << " backend keeps nothing on disk: prepared-after-reopen case skipped");
    SUCCEED();
    return;
  }
  test_fixture fx;
  for (const char* xid : {"keep", "drop"}) {
    auto tx = fx.db().transaction();
    tx.put<message_metadata>({xid, 1}, bin(xid));
    ks::prepare(tx, xid);
  }
  fx.reopen();  // the store's open check accepts the reserved record keys
  auto& db = fx.db();
  CHECK(ks::prepared(db) == std::vector<std::string>{"drop", "keep"});
  CHECK(count(db.scan<message_metadata>()) == 0);
  CHECK(ks::commit_prepared(db, "keep"));
  CHECK(ks::rollback_prepared(db, "drop"));
  fx.reopen();
  CHECK(ks::prepared(fx.db()).empty());
  CHECK(collect(fx.db().scan<message_metadata>()) ==
        std::vector<std::string>{show_entry<message_metadata>({"keep", 1}, bin("keep"))});
}

TEST_CASE("a process killed between prepare and commit leaves exactly its prepared branches",
          "[conformance][prepared][crash]") {
  if (!backend_factory::persistent) {
    WARN(backend_factory::name << " backend keeps nothing on disk: crash case skipped");
    SUCCEED();
    return;
  }
  test_fixture fx;
  fx.db().put<message_count>({"q"}, 10);
  fx.close();  // the child opens the database itself
  const ks::testing::outcome o = ks::testing::in_child([&] {
    auto db = backend_factory::open<broker>(fx.dir());
    for (const char* xid : {"branch-a", "branch-b"}) {
      auto tx = db->transaction();
      tx.put<message_metadata>({xid, 7}, bin(xid));
      tx.put<message_count>({"q"}, tx.get<message_count>({"q"}).value_or(0) - 1);
      ks::prepare(tx, xid);  // durable (sync) when it returns
    }
    auto open = db->transaction();  // neither prepared nor committed: must vanish
    open.put<message_metadata>({"lost", 1}, bin("lost"));
    ::kill(::getpid(), SIGKILL);
  });
  CHECK(o.signal == SIGKILL);
  INFO(o.err);
  fx.reopen();
  auto& db = fx.db();
  REQUIRE(ks::prepared(db) == std::vector<std::string>{"branch-a", "branch-b"});
  CHECK(count(db.scan<message_metadata>()) == 0);
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(10));
  CHECK(ks::commit_prepared(db, "branch-a"));
  CHECK(ks::rollback_prepared(db, "branch-b"));
  CHECK(ks::prepared(db).empty());
  CHECK(collect(db.scan<message_metadata>()) ==
        std::vector<std::string>{show_entry<message_metadata>({"branch-a", 7}, bin("branch-a"))});
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(9));
}

}  // namespace keyschema::conformance
