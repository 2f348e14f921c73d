// tests/conformance/cases/prepared.cpp: conformance cases: prepared transactions (two-phase
// commit, keyschema/prepared.hpp): prepare, commit_prepared, rollback_prepared, prepared();
// isolation while prepared, duplicate and unknown xids, limits, damaged records, reopening, and a
// process killed between prepare and commit.
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

TEST_CASE("commit_prepared applies the recorded writes as they are: the last writer wins",
          "[conformance][prepared]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_metadata>({"q", 1}, bin("before"));
  db.put<message_metadata>({"q", 2}, bin("before"));
  {
    auto tx = db.transaction();
    tx.put<message_metadata>({"q", 1}, bin("prepared"));
    tx.erase<message_metadata>({"q", 2});
    ks::prepare(tx, "branch");
  }
  // Writers go on while the branch is prepared, on the very keys it writes.
  db.put<message_metadata>({"q", 1}, bin("concurrent"));
  db.put<message_metadata>({"q", 2}, bin("concurrent"));
  db.put<message_metadata>({"q", 3}, bin("concurrent"));
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("concurrent")));
  REQUIRE(ks::commit_prepared(db, "branch"));
  CHECK(lookup<message_metadata>(db, {"q", 1}) == show(bin("prepared")));
  CHECK(lookup<message_metadata>(db, {"q", 2}) == "<missing>");
  CHECK(lookup<message_metadata>(db, {"q", 3}) == show(bin("concurrent")));
}

TEST_CASE("an add in a prepared transaction is applied as a delta to the value current at commit_prepared",
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
  CHECK(prepared_cases::raw_record(db, "adds").substr(0, 4) == "KSP2");  // the format with adds
  db.put<message_count>({"c"}, 100);  // other writers, before the commit
  db.put<message_count>({"p"}, 50);
  db.put<message_count>({"n"}, 1);
  REQUIRE(ks::commit_prepared(db, "adds"));
  CHECK(db.get<message_count>({"c"}) == std::optional<std::int64_t>(105));
  CHECK(db.get<message_count>({"p"}) == std::optional<std::int64_t>(3));
  CHECK(db.get<message_count>({"n"}) == std::optional<std::int64_t>(5));

  // A record without adds keeps the format versions before adds read.
  {
    auto tx = db.transaction();
    tx.put<message_count>({"c"}, 1);
    ks::prepare(tx, "plain");
  }
  CHECK(prepared_cases::raw_record(db, "plain").substr(0, 4) == "KSP1");
  CHECK(ks::rollback_prepared(db, "plain"));

  // An add that no longer fits at commit: overflow_error, nothing applied, the record stays.
  {
    auto tx = db.transaction();
    tx.add<message_count>({"c"}, 1);
    tx.put<message_metadata>({"q", 1}, bin("with the add"));
    ks::prepare(tx, "over");
  }
  db.put<message_count>({"c"}, std::numeric_limits<std::int64_t>::max());
  CHECK_THROWS_AS(ks::commit_prepared(db, "over"), ks::overflow_error);
  CHECK(lookup<message_metadata>(db, {"q", 1}) == "<missing>");
  CHECK(ks::prepared(db) == std::vector<std::string>{"over"});
  CHECK(ks::rollback_prepared(db, "over"));
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
