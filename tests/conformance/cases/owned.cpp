// tests/conformance/cases/owned.cpp: conformance cases:
// owned keyspaces (owned_by, keyschema/owned.hpp): an owner's erase by every path erases its
// owned entries in the same write, a put without owner is refused, find_orphans, prepared
// transactions and ks::migrate meeting an ownership.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake). Its
// schema is its own (a store of it is another database than the broker fixture's).
#include <conformance/conformance.hpp>
#include <conformance/derived_fixture.hpp>
#include <support/thrown.hpp>

#include <keyschema/owned.hpp>

#include <chrono>

namespace keyschema::conformance::owned {

using expiring_messages::at_ms;
using expiring_messages::by_expiry;
using expiring_messages::expiry_index;
using expiring_messages::message;
using expiring_messages::ms_time;
// The message's content as chunked values, and its dead-letter flag: owned by the message.
using content = ks::keyspace<"content", ks::owned_by<message, ks::bytes>, ks::lit<"CONTENT">,
                             ks::field<"destination", std::string>, ks::field<"message_id", std::uint64_t>,
                             ks::field<"chunk", std::uint32_t>>;
using dead_letter = ks::keyspace<"dead_letter", ks::owned_by<message, std::string>, ks::lit<"DLQ">,
                                 ks::field<"dest", std::string>, ks::field<"id", std::uint64_t>>;
// Dead letters per destination: a count of an owned keyspace follows the cascade.
using dead_letter_count = ks::keyspace<"dead_letter_count", ks::count_of<dead_letter, 1>, ks::lit<"DLQ_COUNT">,
                                       ks::field<"dest", std::string>>;
// Keyed like content but owned by nothing: untouched by a message's erase.
using notes = ks::keyspace<"notes", std::string, ks::lit<"NOTES">, ks::field<"destination", std::string>,
                           ks::field<"message_id", std::uint64_t>>;
using owned_schema = ks::schema<message, expiry_index, content, dead_letter, dead_letter_count, notes>;

static_assert(std::is_same_v<content::value_type, ks::bytes>);
// The ownership is part of the layout: declaring or removing it is a schema change.
using content_plain = ks::keyspace<"content", ks::bytes, ks::lit<"CONTENT">, ks::field<"destination", std::string>,
                                   ks::field<"message_id", std::uint64_t>, ks::field<"chunk", std::uint32_t>>;
static_assert(ks::layout<ks::schema<message, content>>::fingerprint !=
              ks::layout<ks::schema<message, content_plain>>::fingerprint);

struct owned_fixture : schema_fixture<owned_schema> {
  owned_fixture() : schema_fixture("conformance-owned") {}
};

inline message::value_type msg(std::int64_t at = 0) { return {at, "m"}; }

// Everything the message (dest, id) owns, as "keyspace:n" counts, and its dead-letter count.
template <class Source>
std::string owned_of(const Source& src, const std::string& dest, std::uint64_t id) {
  std::size_t c = 0, d = 0;
  for (const auto& e : src.template scan<content>(dest, id)) (void)e, ++c;
  for (const auto& e : src.template scan<dead_letter>(dest, id)) (void)e, ++d;
  return "content:" + std::to_string(c) + " dlq:" + std::to_string(d);
}

// Message (dest, id) with a 3-chunk content value and a dead-letter flag.
template <class Store>
void put_full(Store& db, const std::string& dest, std::uint64_t id, std::int64_t at = 0) {
  db.template put<message>({dest, id}, msg(at));
  ks::put_chunked<content>(db, {dest, id}, std::string(20, 'x'), 8);  // header + 3 data chunks
  db.template put<dead_letter>({dest, id}, "failed");
}

template <class Source>
void check_no_orphans(const Source& src) {
  CHECK(ks::find_orphans<content>(src).empty());
  CHECK(ks::find_orphans<dead_letter>(src).empty());
}

// The dead-letter counts as stored, "dest=n".
template <class Source>
std::vector<std::string> dlq_counts(const Source& src) {
  std::vector<std::string> out;
  for (const auto& e : src.template scan<dead_letter_count>())
    out.push_back(e.template get<"dest">() + "=" + std::to_string(e.value));
  return out;
}

TEST_CASE("owned: erasing the owner by a single erase, a batch, a transaction or a raw write erases what it owns",
          "[conformance][owned]") {
  owned_fixture f;
  auto& db = f.db();
  for (std::uint64_t id = 1; id <= 5; ++id) put_full(db, "q", id);
  db.put<notes>({"q", 1}, "kept");
  CHECK(owned_of(db, "q", 1) == "content:4 dlq:1");
  CHECK(dlq_counts(db) == std::vector<std::string>{"q=5"});

  db.erase<message>({"q", 1});
  CHECK(owned_of(db, "q", 1) == "content:0 dlq:0");
  CHECK(owned_of(db, "q", 2) == "content:4 dlq:1");  // a neighbour keeps its own
  CHECK(db.get<notes>({"q", 1}) == std::optional<std::string>("kept"));  // not owned: untouched
  CHECK(dlq_counts(db) == std::vector<std::string>{"q=4"});  // the count follows the cascade

  {
    auto b = db.batch();
    b.erase<message>({"q", 2});
    b.commit();
  }
  CHECK(owned_of(db, "q", 2) == "content:0 dlq:0");

  {
    auto tx = db.transaction();
    tx.erase<message>({"q", 3});
    CHECK(owned_of(tx, "q", 3) == "content:0 dlq:0");  // the transaction reads its cascade
    CHECK(tx.operation_count() >= 1 + 4 + 1 + 1);      // message, 4 chunks, flag, its count
    tx.commit();
  }
  CHECK(owned_of(db, "q", 3) == "content:0 dlq:0");

  {
    ks::write_batch raw;
    std::string k;
    ks::detail::key_codec<message>::encode(k, message::key_type{"q", 4});
    raw.erase(k);
    db.write(raw);
  }
  CHECK(owned_of(db, "q", 4) == "content:0 dlq:0");
  CHECK(owned_of(db, "q", 5) == "content:4 dlq:1");
  CHECK(dlq_counts(db) == std::vector<std::string>{"q=1"});
  check_no_orphans(db);

  // An overwrite of the owner keeps what it owns; erasing an owned entry alone is allowed.
  db.put<message>({"q", 5}, msg(7));
  CHECK(owned_of(db, "q", 5) == "content:4 dlq:1");
  db.erase<dead_letter>({"q", 5});
  CHECK(owned_of(db, "q", 5) == "content:4 dlq:0");
}

TEST_CASE("owned: erase_prefix, erase_prefix_all, erase_range and sweep erase the owned entries of each record",
          "[conformance][owned]") {
  owned_fixture f;
  auto& db = f.db();
  for (std::uint64_t id = 1; id <= 30; ++id) put_full(db, "a", id);
  for (std::uint64_t id = 1; id <= 3; ++id) put_full(db, "b", id, 100);

  CHECK(db.erase_prefix<message>("a") == 30);
  for (std::uint64_t id = 1; id <= 30; ++id) CHECK(owned_of(db, "a", id) == "content:0 dlq:0");
  CHECK(owned_of(db, "b", 1) == "content:4 dlq:1");

  for (std::uint64_t id = 1; id <= 4; ++id) put_full(db, "c", id);
  CHECK(db.erase_range(db.scan<message>("c").limit(2)) == 2);
  CHECK(owned_of(db, "c", 1) == "content:0 dlq:0");
  CHECK(owned_of(db, "c", 3) == "content:4 dlq:1");
  CHECK(db.erase_prefix_all<message, notes>("c") == 2);
  CHECK(owned_of(db, "c", 3) == "content:0 dlq:0");
  CHECK(owned_of(db, "c", 4) == "content:0 dlq:0");

  {
    auto tx = db.transaction();
    for (std::uint64_t id = 1; id <= 3; ++id) put_full(tx, "d", id);
    CHECK(tx.erase_prefix<message>("d") == 3);
    CHECK(owned_of(tx, "d", 2) == "content:0 dlq:0");
    tx.commit();
  }
  CHECK(owned_of(db, "d", 2) == "content:0 dlq:0");

  // sweep erases the expired records of "b" (at 100) and what they own.
  const std::size_t swept = ks::sweep<expiry_index>(db, at_ms(1000), 2, [](const auto&, const auto&) {});
  CHECK(swept == 3);
  for (std::uint64_t id = 1; id <= 3; ++id) CHECK(owned_of(db, "b", id) == "content:0 dlq:0");
  CHECK(dlq_counts(db).empty());
  check_no_orphans(db);
}

TEST_CASE("owned: a put without its owner is refused, naming the keyspaces and the key; nothing is written",
          "[conformance][owned]") {
  owned_fixture f;
  auto& db = f.db();

  const auto e = testing::thrown<ks::usage_error>([&] { db.put<dead_letter>({"q", 9}, "x"); });
  REQUIRE(e);
  CHECK_THAT(e->what(), Catch::Contains("'dead_letter' is owned by 'message'") && Catch::Contains("\"q\"") &&
                            Catch::Contains("9") && Catch::Contains("put the record first") &&
                            Catch::Contains("Nothing was written"));
  CHECK(owned_of(db, "q", 9) == "content:0 dlq:0");
  CHECK(dlq_counts(db).empty());

  // Chunked values too: no chunk is written.
  CHECK(testing::thrown<ks::usage_error>([&] { ks::put_chunked<content>(db, {"q", 9}, std::string(20, 'x'), 8); }));
  CHECK(owned_of(db, "q", 9) == "content:0 dlq:0");

  // A batch: the owner put earlier in the same batch counts; one put later does not.
  {
    auto b = db.batch();
    b.put<message>({"q", 1}, msg());
    b.put<dead_letter>({"q", 1}, "x");
    b.commit();
  }
  CHECK(owned_of(db, "q", 1) == "content:0 dlq:1");
  {
    auto b = db.batch();
    b.put<dead_letter>({"q", 2}, "x");
    b.put<message>({"q", 2}, msg());
    CHECK(testing::thrown<ks::usage_error>([&] { b.commit(); }));
  }
  CHECK_FALSE(db.contains<message>({"q", 2}));  // nothing of the batch was written
  // A batch erasing the owner before putting an owned entry of it.
  {
    auto b = db.batch();
    b.erase<message>({"q", 1});
    b.put<dead_letter>({"q", 1}, "again");
    CHECK(testing::thrown<ks::usage_error>([&] { b.commit(); }));
  }
  CHECK(owned_of(db, "q", 1) == "content:0 dlq:1");

  // A transaction: the refused put is dropped, the transaction stays open with its other writes.
  {
    auto tx = db.transaction();
    tx.put<notes>({"q", 3}, "n");
    CHECK(testing::thrown<ks::usage_error>([&] { tx.put<dead_letter>({"q", 3}, "x"); }));
    CHECK(testing::thrown<ks::usage_error>([&] { ks::put_chunked<content>(tx, {"q", 3}, std::string(20, 'y'), 8); }));
    CHECK(owned_of(tx, "q", 3) == "content:0 dlq:0");
    tx.put<message>({"q", 3}, msg());
    tx.put<dead_letter>({"q", 3}, "x");
    ks::put_chunked<content>(tx, {"q", 3}, std::string(20, 'y'), 8);
    tx.commit();
  }
  CHECK(owned_of(db, "q", 3) == "content:4 dlq:1");
  CHECK(db.get<notes>({"q", 3}) == std::optional<std::string>("n"));
  CHECK(ks::read_chunked<content>(db, {"q", 3}) == std::optional<ks::bytes>(ks::bytes(std::string(20, 'y'))));
  check_no_orphans(db);
}

TEST_CASE("owned: a transaction's erase that fails half-way leaves the transaction as it was",
          "[conformance][owned]") {
  owned_fixture f;
  auto& db = f.db();
  put_full(db, "q", 1);
  auto tx = db.transaction();
  tx.put<notes>({"q", 1}, "n");
  // An owned entry of a message erased in the same transaction cannot be put again.
  tx.erase<message>({"q", 1});
  CHECK(testing::thrown<ks::usage_error>([&] { tx.put<dead_letter>({"q", 1}, "x"); }));
  CHECK(owned_of(tx, "q", 1) == "content:0 dlq:0");
  CHECK(tx.get<notes>({"q", 1}) == std::optional<std::string>("n"));
  tx.rollback();
  CHECK(owned_of(db, "q", 1) == "content:4 dlq:1");
}

TEST_CASE("owned: find_orphans reports entries whose owner is missing", "[conformance][owned]") {
  owned_fixture f;
  auto& db = f.db();
  put_full(db, "q", 1);
  CHECK(ks::find_orphans<content>(db).empty());
  // Damage written around the store's guards: an owner erased raw.
  {
    ks::write_batch raw;
    std::string k;
    ks::detail::key_codec<message>::encode(k, message::key_type{"q", 1});
    raw.erase(k);
    db.unsafe_backend().write(raw, {});
  }
  const auto orphans = ks::find_orphans<content>(db);
  REQUIRE(orphans.size() == 4);
  CHECK(orphans.front() == content::key_type{"q", 1, 0});
  CHECK(ks::find_orphans<content>(db, 2).size() == 2);
  CHECK(ks::find_orphans<dead_letter>(db) == std::vector<dead_letter::key_type>{{"q", 1}});
  auto snap = db.snapshot();
  CHECK(ks::find_orphans<dead_letter>(snap).size() == 1);
}

TEST_CASE("owned: a prepared erase of the owner erases what it owns at commit_prepared; conflicts still refuse",
          "[conformance][owned][prepared]") {
  owned_fixture f;
  auto& db = f.db();
  put_full(db, "q", 1);
  put_full(db, "q", 2);
  {
    auto tx = db.transaction();
    CHECK(tx.get<message>({"q", 1}));
    tx.erase<message>({"q", 1});
    ks::prepare(tx, "xid-1");
  }
  CHECK(owned_of(db, "q", 1) == "content:4 dlq:1");  // prepared, not applied
  CHECK(ks::commit_prepared(db, "xid-1"));
  CHECK_FALSE(db.contains<message>({"q", 1}));
  CHECK(owned_of(db, "q", 1) == "content:0 dlq:0");
  check_no_orphans(db);

  // A branch that read message 2 and erases it conflicts when the message changed meanwhile.
  {
    auto tx = db.transaction();
    CHECK(tx.get<message>({"q", 2}));
    tx.erase<message>({"q", 2});
    ks::prepare(tx, "xid-2");
  }
  db.put<message>({"q", 2}, msg(5));
  CHECK_THROWS_AS(ks::commit_prepared(db, "xid-2"), ks::conflict_error);
  CHECK(owned_of(db, "q", 2) == "content:4 dlq:1");  // nothing applied
  CHECK(ks::rollback_prepared(db, "xid-2"));

  // An owned entry put after prepare (its owner still there) goes with the owner at commit.
  {
    auto tx = db.transaction();
    tx.erase<message>({"q", 2});
    ks::prepare(tx, "xid-3");
  }
  db.erase<dead_letter>({"q", 2});
  db.put<dead_letter>({"q", 2}, "later");
  const std::string r = [&]() -> std::string {
    try {
      return ks::commit_prepared(db, "xid-3") ? "<committed>" : "<no record>";
    } catch (const ks::conflict_error&) {
      return "<conflict>";
    }
  }();
  if (r == "<committed>") {
    CHECK_FALSE(db.contains<message>({"q", 2}));
    CHECK(owned_of(db, "q", 2) == "content:0 dlq:0");
  } else {
    CHECK(r == "<conflict>");
    CHECK(ks::rollback_prepared(db, "xid-3"));
  }
  check_no_orphans(db);
}

// A memory backend whose writes hold at most 12 operations (etcd's limit is 128).
struct limited_backend : ks::memory_backend {
  ks::backend_limits limits() const noexcept {
    ks::backend_limits l;
    l.max_ops_per_write = 12;
    return l;
  }
};

TEST_CASE("owned: erase_prefix takes fewer records per write when their owned entries exceed the backend's limit",
          "[conformance][owned]") {
  ks::store<owned_schema, limited_backend> db;
  for (std::uint64_t id = 1; id <= 6; ++id) {
    auto tx = db.transaction();
    tx.put<message>({"q", id}, msg());
    tx.put<dead_letter>({"q", id}, "x");
    ks::put_chunked<content>(tx, {"q", id}, std::string(20, 'x'), 8);
    tx.commit();
  }
  {
    auto tx = db.transaction();
    tx.erase<message>({"q", 1});
    CHECK(tx.operation_count() == 7);  // the message, 4 chunks, the flag, the dead-letter count
    tx.rollback();
  }
  // 7 operations per message: a chunk sized by the declared cost (5 per message) does not fit.
  CHECK(db.erase_prefix<message>("q") == 6);
  for (std::uint64_t id = 1; id <= 6; ++id) CHECK(owned_of(db, "q", id) == "content:0 dlq:0");
  CHECK(dlq_counts(db).empty());
  check_no_orphans(db);
}

// --- ks::migrate meeting an ownership ---------------------------------------------------------

using before_schema = ks::schema<message, content_plain>;
using after_schema = ks::schema<message, content>;

// Writes with before_schema (fill), migrates to after_schema, and returns the migration's error
// ("" when it succeeded) and, after success, the content count of message ("q", 1) read with after_schema.
template <class Fill>
std::pair<std::string, std::string> migrate_to_owned(Fill&& fill) {
  schema_change<before_schema> change("conformance-owned-migrate");
  change.write(std::forward<Fill>(fill));
  std::string error;
  try {
    // The ownership changes content's layout: it is carried over by a step.
    ks::migrate<before_schema, after_schema>(
        change.backend(),
        ks::transform<content_plain>([](const ks::entry<content_plain>& e, ks::migration_writer<after_schema>& out) {
          out.put<content>(e.key, e.value);
        }));
  } catch (const ks::schema_error& e) {
    error = e.what();
  }
  if (!error.empty()) return {error, ""};
  const auto db = change.open<after_schema>();
  const std::string q = "q";
  const std::uint64_t one = 1;
  std::size_t n = 0;
  for (const auto& e : db->template scan<content>(q, one)) (void)e, ++n;
  db->template erase<message>({q, one});
  for (const auto& e : db->template scan<content>(q, one)) (void)e, --n;
  return {error, std::to_string(n)};
}

TEST_CASE("owned: ks::migrate to a schema declaring an ownership checks for orphans first",
          "[conformance][owned][migrate]") {
  // No orphans: migrated; the new schema's store then erases the content with its message.
  const auto ok = migrate_to_owned([](auto& db) {
    db.template put<message>({"q", 1}, msg());
    ks::put_chunked<content_plain>(db, {"q", 1}, std::string(20, 'x'), 8);
  });
  CHECK(ok.first.empty());
  CHECK(ok.second == "4");  // 4 entries before the erase, 0 after
  // An orphan: refused before anything is written, naming the keyspace and the entry.
  const auto bad = migrate_to_owned([](auto& db) {
    db.template put<message>({"q", 1}, msg());
    db.template put<content_plain>({"q", 2, 0}, ks::bytes("orphan"));
  });
  CHECK_THAT(bad.first, Catch::Contains("keyspace 'content' is owned by 'message'") && Catch::Contains("\"q\"") &&
                            Catch::Contains("has no owner") && Catch::Contains("Nothing was migrated"));
}

}  // namespace keyschema::conformance::owned
