// tests/conformance/cases/persistence.cpp: conformance cases:
// foreign and undecodable keys, the schema record, reopening a database.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

namespace keyschema::conformance {

TEST_CASE("foreign keys are skipped; undecodable keys and values raise decode_error", "[conformance][decode]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_metadata>({"q", 1}, bin("m1"));
  db.put<message_metadata>({"q", 3}, bin("m3"));
  db.put<message_count>({"good"}, 1);

  // Byte-level keys written around the typed layer (as a native tool might), built from the
  // typed encodings of real keys.
  auto typed = db.batch();
  typed.put<message_count>({"bad"}, 0);
  typed.put<message_metadata>({"q", 2}, bin(""));
  const std::string count_key(typed.operations()[0].key);
  const std::string meta_key(typed.operations()[1].key);
  // ("DESTINATION", "q", "MESSAGE_METADATA", "2"): the layout of message_metadata up to its last
  // field, which is a string here: a key of no keyspace, that scans must step over.
  const std::string foreign = meta_key.substr(0, meta_key.size() - 2) + std::string("\x02" "2\x00", 3);
  ks::write_batch raw;
  raw.put(count_key, "\x99 not a packed i64");
  raw.put(foreign, "foreign");
  db.write(raw);

  CHECK(collect(db.scan<message_metadata>()) ==
        std::vector<std::string>{show_entry<message_metadata>({"q", 1}, bin("m1")),
                                 show_entry<message_metadata>({"q", 3}, bin("m3"))});
  CHECK(count(db.scan<message_metadata>().reverse()) == 2);
  CHECK(count(db.scan<message_metadata>("q")) == 2);

  CHECK(db.contains<message_count>({"bad"}));
  try {
    (void)db.get<message_count>({"bad"});
    FAIL("an undecodable value was returned");
  } catch (const ks::decode_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("message_count") && Catch::Contains("bad"));
  }
  CHECK_THROWS_AS(count(db.scan<message_count>()), ks::decode_error);
  CHECK(db.get<message_count>({"good"}) == std::optional<std::int64_t>(1));
  CHECK(count(db.scan<message_count>("good")) == 1);  // the bad key is outside this scan

  // A key that starts like message_metadata but is cut inside the destination, and one cut
  // before the id: the store refuses to write them (key_error, nothing written); written around
  // it, every scan of the whole keyspace refuses them, and a raw erase through the store removes them.
  for (const std::string& cut : {meta_key.substr(0, meta_key.find('q') + 1), meta_key.substr(0, meta_key.size() - 2)}) {
    ks::write_batch truncated;
    truncated.put(cut, "cut");
    CHECK_THROWS_AS(db.write(truncated), ks::key_error);
    CHECK(count(db.scan<message_metadata>()) == 2);
    db.unsafe_backend().write(truncated, {});
    CHECK_THROWS_AS(count(db.scan<message_metadata>()), ks::decode_error);
    CHECK_THROWS_AS(count(db.scan<message_metadata>().keys_only()), ks::decode_error);
    ks::write_batch remove;
    remove.erase(cut);
    db.write(remove);
    CHECK(count(db.scan<message_metadata>()) == 2);
  }
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("the store records the schema fingerprint under the reserved key", "[conformance][schema]") {
  test_fixture fx;
  std::string record;
  REQUIRE(fx.db().backend().get(ks::schema_key, record, nullptr));
  CHECK(record == ks::layout<broker>::record());
  // The reserved key is invisible to typed scans of every keyspace.
  CHECK(count(fx.db().scan<message_metadata>()) == 0);
  CHECK(count(fx.db().scan<dtx_entry>().reverse()) == 0);
  CHECK(count(fx.db().scan<recent>().reverse()) == 0);
}

TEST_CASE("data survives closing and reopening the database", "[conformance][persistence]") {
  if (!backend_factory::persistent) {
    WARN(backend_factory::name << " backend keeps nothing on disk: reopen case skipped");
    SUCCEED();
    return;
  }
  test_fixture fx;
  {
    auto& db = fx.db();
    auto b = db.batch();
    for (const std::string& d : tricky_destinations()) {
      for (std::uint64_t id : {1u, 10u, 9u}) b.put<message_metadata>({d, id}, ks::bytes(d + std::to_string(id)));
      b.put<message_count>({d}, -3);
    }
    b.put<message_content>({5, 0}, large_value(5));
    b.put<expiry>({-7, 5}, {});
    b.put<recent>({"q", 5}, bin("r"));
    b.put<dtx_entry>({ks::bytes(std::string("\0\xff", 2)), 1}, bin(""));
    b.commit();
    db.erase<message_metadata>({"q", 9});
    db.put<message_destination>({5}, "q", ks::write_options{.sync = true});
  }
  auto snapshot_of = [&] {
    auto& db = fx.db();
    return std::vector<std::vector<std::string>>{
        collect(db.scan<message_metadata>()), collect(db.scan<message_count>()), collect(db.scan<expiry>()),
        collect(db.scan<recent>()),           collect(db.scan<dtx_entry>()),     collect(db.scan<message_destination>())};
  };
  const auto before = snapshot_of();
  REQUIRE(before[0].size() == 3 * tricky_destinations().size() - 1);

  fx.reopen();
  CHECK(snapshot_of() == before);
  CHECK(fx.db().get<message_content>({5, 0}) == std::optional<ks::bytes>(large_value(5)));
  CHECK_FALSE(fx.db().contains<message_metadata>({"q", 9}));

  // Write after reopening, through a transaction, and reopen again.
  {
    auto tx = fx.db().transaction();
    tx.put<message_count>({"q"}, tx.get<message_count>({"q"}).value_or(0) + 10);
    tx.erase<message_content>({5, 0});
    tx.commit();
  }
  fx.reopen();
  CHECK(fx.db().get<message_count>({"q"}) == std::optional<std::int64_t>(7));
  CHECK_FALSE(fx.db().contains<message_content>({5, 0}));
  CHECK(collect(fx.db().scan<message_metadata>()) == before[0]);
}

TEST_CASE("reopening with another schema throws schema_error", "[conformance][persistence][schema]") {
  if (!backend_factory::persistent) {
    WARN(backend_factory::name << " backend keeps nothing on disk: schema fingerprint reopen case skipped");
    SUCCEED();
    return;
  }
  test_fixture fx;
  fx.db().put<message_count>({"q"}, 4);
  fx.close();
  try {
    auto other = backend_factory::open<broker_v2>(fx.dir());
    FAIL("a database written with another schema layout was opened");
  } catch (const ks::schema_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("keyspace 'message_count': value codec packed<i64> stored, packed<u64> in this "
                                         "program"));
  }
  // The refused open neither damaged nor kept the database.
  fx.reopen();
  CHECK(fx.db().get<message_count>({"q"}) == std::optional<std::int64_t>(4));

  // And the other way round: a database created with broker_v2 refuses broker.
  testing::temp_dir other_dir("conformance-v2");
  {
    auto v2 = backend_factory::open<broker_v2>(other_dir.path());
    v2->put<message_count_v2>({"q"}, 4u);
  }
  CHECK_THROWS_AS(backend_factory::open<broker>(other_dir.path()), ks::schema_error);
  auto v2 = backend_factory::open<broker_v2>(other_dir.path());
  CHECK(v2->get<message_count_v2>({"q"}) == std::optional<std::uint64_t>(4));
}

// Whether the factory says its databases may be opened by several stores at once (shared_open).
template <class F>
constexpr bool persistence_factory_shares_open() {
  if constexpr (requires { F::shared_open; }) return F::shared_open;
  else return false;
}

TEST_CASE("a database is open in one store at a time", "[conformance][persistence]") {
  if (!backend_factory::persistent) {
    WARN(backend_factory::name << " backend has no database to share: exclusive-open case skipped");
    SUCCEED();
    return;
  }
  if (persistence_factory_shares_open<backend_factory>()) {  // etcd: a key prefix any client may open
    WARN(backend_factory::name << " databases are shared by design: exclusive-open case skipped");
    SUCCEED();
    return;
  }
  test_fixture fx;
  fx.db().put<message_count>({"q"}, 1);
  CHECK_THROWS_AS(backend_factory::open<broker>(fx.dir()), ks::locked_error);
  CHECK(fx.db().get<message_count>({"q"}) == std::optional<std::int64_t>(1));
  fx.close();
  auto again = backend_factory::open<broker>(fx.dir());
  CHECK(again->get<message_count>({"q"}) == std::optional<std::int64_t>(1));
}

}  // namespace keyschema::conformance
