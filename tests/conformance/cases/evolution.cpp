// tests/conformance/cases/evolution.cpp: conformance cases: schema evolution (the schema record
// compared keyspace by keyspace on open) and ks::migrate (keyschema/migrate.hpp).
//
// Every case closes and reopens one database under several schemas. On the memory backend the
// database is kept across "reopens" by moving the memory_backend out of the closed store and into
// the next one, so these cases run there too.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

#include <keyschema/migrate.hpp>
#include <keyschema/prepared.hpp>

#include <stdexcept>

namespace keyschema::conformance::evolution {

// --- schemas ---------------------------------------------------------------------------------

// The first version of the broker: two of its keyspaces.
using v1 = ks::schema<message_metadata, message_count>;
// message_count renamed, same segments and value codec.
using destination_count =
    ks::keyspace<"destination_count", std::int64_t, ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
using v1_renamed = ks::schema<message_metadata, destination_count>;
// message_metadata with decimal-string message ids, as the seed's dotted keys had them.
using metadata_text_ids =
    ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                 ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::string>>;
using v0 = ks::schema<metadata_text_ids, message_count, recent>;
// What v0 migrates to: u64 ids, u64 counts, recent dropped, expiry added.
using v2 = ks::schema<message_metadata, message_count_v2, expiry>;

// The record today's format writes for v1, spelled out: databases written before per-keyspace
// comparison hold exactly these bytes and must keep opening.
inline const std::string v1_record_text =
    "fcc070ed18a6d1b9\n"
    "keyschema-layout/1;message_metadata=raw{lit:DESTINATION,field:destination:string,lit:MESSAGE_METADATA,"
    "field:message_id:u64};message_count=packed<i64>{lit:MESSAGE_COUNT,field:destination:string};";

// --- one database reopened under several schemas -----------------------------------------------

// A template so that the memory-only branches are discarded on the other backends.
template <class backend_type>
class basic_database {
 public:
  template <class S>
  using store_ptr = std::unique_ptr<ks::store<S, backend_type>>;

  template <class S>
  store_ptr<S> open() {
    if constexpr (std::is_same_v<backend_type, ks::memory_backend>) {
      return std::make_unique<ks::store<S, backend_type>>(take_memory());
    } else {
      return backend_factory::template open<S>(dir_.path());
    }
  }
  template <class S>
  void close(std::unique_ptr<ks::store<S, backend_type>>& db) {
    if constexpr (std::is_same_v<backend_type, ks::memory_backend>) memory_.emplace(std::move(db->unsafe_backend()));
    db.reset();
  }
  // The bare backend, for writes around the store (hand-written records, foreign keys) and for
  // ks::migrate. REQUIRES: no store of this database is open; give it back with put_backend.
  std::unique_ptr<backend_type> backend() {
    if constexpr (std::is_same_v<backend_type, ks::memory_backend>) {
      return std::make_unique<backend_type>(take_memory());
    } else {
      return backend_factory::open_backend(dir_.path());
    }
  }
  void put_backend(std::unique_ptr<backend_type>& b) {
    if constexpr (std::is_same_v<backend_type, ks::memory_backend>) memory_.emplace(std::move(*b));
    b.reset();
  }
  // Calls f(backend_type&) with the bare backend and gives it back, also when f throws; returns
  // what f returns. REQUIRES: as backend().
  template <class F>
  decltype(auto) with_backend(F&& f) {
    auto b = backend();
    struct give_back {
      basic_database& d;
      std::unique_ptr<backend_type>& b;
      ~give_back() { d.put_backend(b); }
    } guard{*this, b};
    return std::forward<F>(f)(*b);
  }
  template <class S>
  std::string open_error() {
    try {
      store_ptr<S> db = open<S>();
      close(db);
    } catch (const ks::schema_error& e) {
      if constexpr (std::is_same_v<backend_type, ks::memory_backend>) {
        // The refused store took the backend with it; nothing was changed in a refused open, so
        // the test re-creates it from the copy kept before.
        memory_.emplace(std::move(*saved_));
      }
      return e.what();
    }
    return "<opened>";
  }

  std::string record() {
    auto b = backend();
    std::string rec;
    if (!b->get(ks::schema_key, rec, nullptr)) rec = "<none>";
    put_backend(b);
    return rec;
  }

 private:
  ks::memory_backend take_memory() {
    if (!memory_) return ks::memory_backend();
    // Keep a copy of the content, for open_error: a refused store destroys its backend.
    saved_.emplace();
    ks::write_batch all;
    for (auto c = memory_->cursor(ks::key_range{}, nullptr); c.valid(); c.next()) all.put(c.key(), c.value());
    if (!all.empty()) saved_->write(all, {});
    ks::memory_backend out = std::move(*memory_);
    memory_.reset();
    return out;
  }

  testing::temp_dir dir_{"conformance-evolution"};
  std::optional<ks::memory_backend> memory_;
  std::optional<ks::memory_backend> saved_;
};

using backend_type = backend_factory::backend;
using database = basic_database<backend_type>;

// The encoded key of a typed key of KS.
template <class KS>
std::string key_bytes(const typename KS::key_type& k) {
  std::string out;
  ks::detail::key_codec<KS>::encode(out, k);
  return out;
}

// One line, short: at most 400 characters besides the database's path.
bool one_short_line(const std::string& s) {
  const std::size_t path = s.find("conformance-evolution") != std::string::npos ? 80 : 0;
  return s.find('\n') == std::string::npos && s.size() < 400 + path;
}

// --- the schema record, keyspace by keyspace ---------------------------------------------------

TEST_CASE("evolution: adding a keyspace opens the database and records the new layout", "[conformance][evolution]") {
  database d;
  {
    auto db = d.open<v1>();
    db->put<message_metadata>({"q", 10}, bin("m10"));
    db->put<message_count>({"q"}, 1);
    d.close(db);
  }
  CHECK(d.record() == ks::layout<v1>::record());
  {
    auto db = d.open<broker>();
    CHECK(db->get<message_metadata>({"q", 10}) == std::optional<ks::bytes>(bin("m10")));
    db->put<expiry>({5, 10}, {});
    d.close(db);
  }
  CHECK(d.record() == ks::layout<broker>::record());
  {
    auto db = d.open<broker>();  // an ordinary open now
    CHECK(count(db->scan<expiry>()) == 1);
    d.close(db);
  }
  // The older program is refused now: the database holds keyspaces it does not declare.
  const std::string e = d.open_error<v1>();
  CHECK_THAT(e, Catch::Contains("'message_expiration'") && Catch::Contains("'expiry'") &&
                    Catch::Contains("does not declare") && Catch::Contains("ks::migrate"));
  CHECK_THAT(e, !Catch::Contains("'message_metadata'"));
  CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("evolution: a changed keyspace is one short line naming it and the difference", "[conformance][evolution]") {
  database d;
  {
    auto db = d.open<broker>();
    db->put<message_count>({"q"}, 4);
    d.close(db);
  }
  const std::string e = d.open_error<broker_v2>();
  INFO(e);
  CHECK_THAT(e, Catch::Contains("keyspace 'message_count': value codec packed<i64> stored, packed<u64> in this program"));
  CHECK_THAT(e, Catch::Contains("ks::migrate") && Catch::Contains("the schema that wrote it"));
  CHECK(one_short_line(e));
  CHECK(d.record() == ks::layout<broker>::record());  // the refused open changed nothing

  // A changed field type names the segment.
  database t;
  {
    auto db = t.open<v0>();
    db->put<metadata_text_ids>({"q", "10"}, bin("m"));
    t.close(db);
  }
  const std::string f = t.open_error<v1>();
  INFO(f);
  CHECK_THAT(f, Catch::Contains("keyspace 'message_metadata': segment 4: field message_id:string stored, field "
                                "message_id:u64 in this program"));
  CHECK(one_short_line(f));
}

TEST_CASE("evolution: keyspaces stored but not declared are refused", "[conformance][evolution]") {
  database d;
  {
    auto db = d.open<broker>();
    d.close(db);
  }
  const std::string e = d.open_error<v1>();
  INFO(e);
  CHECK_THAT(e, Catch::Contains("'message_content'") && Catch::Contains("'dtx_entry'") &&
                    Catch::Contains("does not declare"));
  CHECK(one_short_line(e));
  CHECK(d.record() == ks::layout<broker>::record());
}

TEST_CASE("evolution: an added keyspace that already holds keys is refused", "[conformance][evolution]") {
  database d;
  {
    auto db = d.open<v1>();
    ks::write_batch raw;  // keys of expiry's layout, written around v1 (keys of no keyspace there)
    for (std::uint64_t id : {1u, 2u, 3u}) raw.put(key_bytes<expiry>({7, id}), "");
    db->write(raw);
    d.close(db);
  }
  const std::string e = d.open_error<broker>();
  INFO(e);
  CHECK_THAT(e, Catch::Contains("keyspace 'expiry' is new in this program") && Catch::Contains("already has 3 keys"));
  CHECK(one_short_line(e));
  CHECK(d.record() == ks::layout<v1>::record());  // not adopted
}

TEST_CASE("evolution: a renamed keyspace is refused as an added keyspace with keys", "[conformance][evolution]") {
  database d;
  {
    auto db = d.open<v1>();
    db->put<message_count>({"q"}, 2);
    db->put<message_count>({"r"}, 3);
    d.close(db);
  }
  const std::string e = d.open_error<v1_renamed>();
  INFO(e);
  CHECK_THAT(e, Catch::Contains("keyspace 'destination_count' is new") && Catch::Contains("already has 2 keys") &&
                    Catch::Contains("'message_count' has its layout: renamed?"));
  CHECK(one_short_line(e));
  auto db = d.open<v1>();
  CHECK(db->get<message_count>({"r"}) == std::optional<std::int64_t>(3));
  d.close(db);
}

// An index of message_metadata by message id, in its first derivation and with its version bumped.
struct by_id {
  std::optional<std::tuple<std::uint64_t, std::string>> operator()(const message_metadata::key_type& k,
                                                                  const ks::bytes&) const {
    return std::tuple(std::get<1>(k), std::get<0>(k));
  }
};
template <std::size_t Version>
using by_id_index = ks::keyspace<"by_id", ks::index_of<message_metadata, by_id, Version>, ks::lit<"BY_ID">,
                                 ks::field<"message_id", std::uint64_t>, ks::field<"destination", std::string>>;
using v1_by_id = ks::schema<message_metadata, by_id_index<1>>;
using v1_by_id_bumped = ks::schema<message_metadata, by_id_index<2>>;
// Version 1, the default, leaves the layout as it was before versions existed.
using by_id_unversioned = ks::keyspace<"by_id", ks::index_of<message_metadata, by_id>, ks::lit<"BY_ID">,
                                       ks::field<"message_id", std::uint64_t>, ks::field<"destination", std::string>>;
static_assert(std::is_same_v<by_id_unversioned, by_id_index<1>>);

TEST_CASE("evolution: bumping an index's version refuses a database its old derivation wrote", "[conformance][evolution][index]") {
  CHECK_THAT(ks::layout<v1_by_id>::record(), Catch::Contains(":index_of<message_metadata>{"));
  CHECK_THAT(ks::layout<v1_by_id_bumped>::record(), Catch::Contains(":index_of<message_metadata,v2>{"));
  database d;
  {
    auto db = d.open<v1_by_id>();
    db->put<message_metadata>({"q", 7}, bin("m"));
    CHECK(count(db->scan<by_id_index<1>>()) == 1);
    d.close(db);
  }
  const std::string e = d.open_error<v1_by_id_bumped>();
  INFO(e);
  CHECK_THAT(e, Catch::Contains("keyspace 'by_id'") && Catch::Contains("index_of<message_metadata,v2>"));
  CHECK(one_short_line(e));
  CHECK(d.record() == ks::layout<v1_by_id>::record());  // the refused open changed nothing
  auto db = d.open<v1_by_id>();  // the version that wrote it still opens it
  CHECK(count(db->scan<by_id_index<1>>()) == 1);
  d.close(db);
}

TEST_CASE("evolution: a count added to records that exist is refused", "[conformance][evolution]") {
  using metadata_count = ks::keyspace<"metadata_count", ks::count_of<message_metadata, 1>, ks::lit<"METADATA_COUNT">,
                                      ks::field<"destination", std::string>>;
  using v1_counted = ks::schema<message_metadata, message_count, metadata_count>;
  database d;
  {
    auto db = d.open<v1>();
    db->put<message_count>({"q"}, 1);  // no metadata yet: the count may be added
    d.close(db);
  }
  {
    auto db = d.open<v1_counted>();
    db->put<message_metadata>({"q", 1}, bin("m"));
    CHECK(db->get<metadata_count>({"q"}) == std::optional<std::int64_t>(1));
    d.close(db);
  }
  database e;
  {
    auto db = e.open<v1>();
    db->put<message_metadata>({"q", 1}, bin("m"));
    db->put<message_metadata>({"q", 2}, bin("m"));
    e.close(db);
  }
  const std::string err = e.open_error<v1_counted>();
  INFO(err);
  CHECK_THAT(err, Catch::Contains("keyspace 'metadata_count' is a declared count (count_of<message_metadata,1>)") &&
                      Catch::Contains("'message_metadata' it derives from already holds 2 records"));
  CHECK(one_short_line(err));
  CHECK(e.record() == ks::layout<v1>::record());
}

TEST_CASE("evolution: a record in the format written before per-keyspace checks still opens", "[conformance][evolution]") {
  REQUIRE(ks::layout<v1>::record() == v1_record_text);  // the format did not change
  database d;
  {
    auto b = d.backend();
    ks::write_batch w;
    w.put(ks::schema_key, v1_record_text);
    std::string five;
    ks::value_traits<std::int64_t>::encode(five, 5);
    w.put(key_bytes<message_count>({"q"}), five);
    b->write(w, {});
    d.put_backend(b);
  }
  {
    auto db = d.open<v1>();
    CHECK(db->get<message_count>({"q"}) == std::optional<std::int64_t>(5));
    d.close(db);
  }
  {
    auto db = d.open<broker>();  // and a program that added keyspaces opens it too
    CHECK(db->get<message_count>({"q"}) == std::optional<std::int64_t>(5));
    d.close(db);
  }
  CHECK(d.record() == ks::layout<broker>::record());
}

// --- ks::migrate --------------------------------------------------------------------------------

// v0's data: per destination, `per` messages with decimal-string ids (whose text order is not
// their numeric order), the count, and a few entries of recent.
void fill_v0(database& d, const std::vector<std::string>& dests, std::uint64_t per) {
  auto db = d.open<v0>();
  {
    auto b = db->batch();
    for (const std::string& dest : dests) {
      for (std::uint64_t id = 1; id <= per; ++id)
        b.put<metadata_text_ids>({dest, std::to_string(id * 7)}, ks::bytes(dest + std::to_string(id)));
      b.put<message_count>({dest}, static_cast<std::int64_t>(per));
      b.put<recent>({dest, 1}, bin("r"));
    }
    b.commit();
  }
  d.close(db);
}

// The v2 content fill_v0's data migrates to, as strings.
std::vector<std::string> expected_v2_metadata(const std::vector<std::string>& dests, std::uint64_t per) {
  model<message_metadata> m;
  for (const std::string& dest : dests)
    for (std::uint64_t id = 1; id <= per; ++id) m.put({dest, id * 7}, ks::bytes(dest + std::to_string(id)));
  return m.all();
}

// Number of keys of keyspace KS in the database, read with the bare backend.
template <class KS>
std::size_t raw_count(database& d) {
  auto b = d.backend();
  std::size_t n = 0;
  for (auto c = b->cursor(ks::key_range{}, nullptr); c.valid(); c.next()) n += ks::detail::key_codec<KS>::matches(c.key()) ? 1 : 0;
  d.put_backend(b);
  return n;
}

bool has_migration_record(database& d) {
  auto b = d.backend();
  std::string v;
  const bool has = b->get(ks::migration_key, v, nullptr);
  d.put_backend(b);
  return has;
}

// The steps from v0 to v2; `calls` counts transform calls, `fail_at` makes call number fail_at
// throw (a crash in the middle of a batch).
struct v0_to_v2 {
  std::size_t* calls;
  std::size_t fail_at = 0;

  ks::migrate_result run(database& d, std::size_t batch_entries) const {
    std::size_t* n = calls;
    const std::size_t fail = fail_at;
    return d.with_backend([&](backend_type& b) {
      return ks::migrate<v0, v2>(
          b, ks::migrate_options{.batch_entries = batch_entries},
          ks::transform<metadata_text_ids>([n, fail](const ks::entry<metadata_text_ids>& e, ks::migration_writer<v2>& out) {
            if (++*n == fail) throw std::runtime_error("simulated crash");
            out.put<message_metadata>({e.get<"destination">(), std::stoull(e.get<"message_id">())}, e.value);
          }),
          ks::transform<message_count>([](const ks::entry<message_count>& e, ks::migration_writer<v2>& out) {
            out.put<message_count_v2>({e.get<"destination">()}, static_cast<std::uint64_t>(e.value));
          }),
          ks::drop<recent>);
    });
  }
};

TEST_CASE("evolution: ks::migrate rewrites decimal-string ids and a value codec in bounded batches", "[conformance][evolution][migrate]") {
  const std::vector<std::string> dests{"q", "r"};
  database d;
  fill_v0(d, dests, 25);
  CHECK_THAT(d.open_error<v2>(), Catch::Contains("keyspace 'message_metadata': segment 4"));

  std::size_t calls = 0;
  const ks::migrate_result r = v0_to_v2{&calls}.run(d, 7);
  CHECK(calls == 50);
  CHECK(r.entries == 50 + 2 + 2);           // metadata, counts, recent
  CHECK(r.batches == 8 + 1 + 1);            // ceil(50 / 7) batches of metadata, one of counts, one of recent
  CHECK_FALSE(r.resumed);
  CHECK_FALSE(r.already_done);
  CHECK(d.record() == ks::layout<v2>::record());
  CHECK_FALSE(has_migration_record(d));
  CHECK(raw_count<metadata_text_ids>(d) == 0);
  CHECK(raw_count<recent>(d) == 0);
  {
    auto db = d.open<v2>();
    CHECK(collect(db->scan<message_metadata>()) == expected_v2_metadata(dests, 25));
    CHECK(db->get<message_count_v2>({"q"}) == std::optional<std::uint64_t>(25));
    CHECK(db->get<message_count_v2>({"r"}) == std::optional<std::uint64_t>(25));
    // numeric order now: 7, 14, ..., where the text ids sorted "105" < "14"
    CHECK(std::get<1>(db->scan<message_metadata>("q").limit(2).begin()->key) == 7);
    d.close(db);
  }
  // Running it again does nothing; the old schema is refused now.
  std::size_t again = 0;
  CHECK(v0_to_v2{&again}.run(d, 7).already_done);
  CHECK(again == 0);
  CHECK_THAT(d.open_error<v0>(), Catch::Contains("another schema layout"));
}

TEST_CASE("evolution: ks::migrate interrupted mid-batch resumes without losing or repeating entries", "[conformance][evolution][migrate]") {
  const std::vector<std::string> dests{"q", "r", "s"};
  database d;
  fill_v0(d, dests, 20);
  std::size_t calls = 0;
  // Batches of 8: two are committed (16 entries), the 19th call throws inside the third.
  const v0_to_v2 crashing{&calls, 19};
  CHECK_THROWS_WITH(crashing.run(d, 8), "simulated crash");
  CHECK(has_migration_record(d));
  CHECK(d.record() == ks::layout<v0>::record());  // the new record only when done
  CHECK(raw_count<metadata_text_ids>(d) == 60 - 16);
  CHECK(raw_count<message_metadata>(d) == 16);
  // Neither schema opens a half-migrated database.
  const std::string e = d.open_error<v2>();
  INFO(e);
  CHECK_THAT(e, Catch::Contains("unfinished ks::migrate") && Catch::Contains("'message_metadata'") &&
                    Catch::Contains("16 entries rewritten"));
  CHECK(one_short_line(e));
  CHECK_THAT(d.open_error<v0>(), Catch::Contains("unfinished ks::migrate"));
  // Another migration cannot take it over.
  {
    auto b = d.backend();
    try {
      ks::migrate<v0, broker>(*b, ks::transform<metadata_text_ids>([](const ks::entry<metadata_text_ids>&, ks::migration_writer<broker>&) {}),
                              ks::drop<recent>);
      FAIL("a migration between other schemas resumed this one");
    } catch (const ks::schema_error& x) {
      CHECK_THAT(x.what(), Catch::Contains("between other schemas"));
    }
    d.put_backend(b);
  }

  calls = 0;
  const ks::migrate_result r = v0_to_v2{&calls}.run(d, 8);
  CHECK(r.resumed);
  CHECK(calls == 60 - 16);
  CHECK(r.entries == 60 - 16 + 3 + 3);
  CHECK_FALSE(has_migration_record(d));
  CHECK(raw_count<metadata_text_ids>(d) == 0);
  CHECK(raw_count<message_metadata>(d) == 60);
  auto db = d.open<v2>();
  CHECK(collect(db->scan<message_metadata>()) == expected_v2_metadata(dests, 20));
  CHECK(db->get<message_count_v2>({"s"}) == std::optional<std::uint64_t>(20));
  d.close(db);
}

TEST_CASE("evolution: a migration step may not write keys that would be read again as old entries", "[conformance][evolution][migrate]") {
  database d;
  {
    auto db = d.open<v1>();
    db->put<message_count>({"a"}, 1);
    db->put<message_count>({"b"}, 2);
    d.close(db);
  }
  using v1_u64 = ks::schema<message_metadata, message_count_v2>;
  auto b = d.backend();
  try {
    // "a" -> "a2": after "a", a key of message_count still to be read.
    ks::migrate<v1, v1_u64>(*b, ks::transform<message_count>([](const ks::entry<message_count>& e, ks::migration_writer<v1_u64>& out) {
      out.put<message_count_v2>({e.get<"destination">() + "2"}, static_cast<std::uint64_t>(e.value));
    }));
    FAIL("an ambiguous rewrite was accepted");
  } catch (const ks::schema_error& x) {
    CHECK_THAT(x.what(), Catch::Contains("'message_count'") && Catch::Contains("read again as an old entry"));
  }
  d.put_backend(b);
  CHECK(raw_count<message_count>(d) == 2);  // nothing of that batch was written
}

// --- ks::migrate into a schema with a declared count and an index ------------------------------

using migrated_count = ks::keyspace<"migrated_count", ks::count_of<message_metadata, 1>, ks::lit<"MIGRATED_COUNT">,
                                    ks::field<"destination", std::string>>;
using v1_by_id_counted = ks::schema<message_metadata, by_id_index<1>, migrated_count>;

// Migrates v1_by_id to v1_by_id_counted: ids lose 100, id 103 is dropped; call number fail_at throws.
ks::migrate_result renumber(database& d, std::size_t fail_at) {
  std::size_t calls = 0;
  return d.with_backend([&](backend_type& b) {
    return ks::migrate<v1_by_id, v1_by_id_counted>(
        b, ks::migrate_options{.batch_entries = 2},
        ks::transform<message_metadata>([&](const ks::entry<message_metadata>& e,
                                            ks::migration_writer<v1_by_id_counted>& out) {
          if (++calls == fail_at) throw std::runtime_error("simulated crash");
          if (e.get<"message_id">() != 103) out.put<message_metadata>({e.get<"destination">(), e.get<"message_id">() - 100}, e.value);
        }));
  });
}

TEST_CASE("evolution: ks::migrate derives the new schema's counts and indexes from the migrated records",
          "[conformance][evolution][migrate][index][count]") {
  for (const std::size_t fail_at : {std::size_t{0}, std::size_t{3}}) {
    INFO("fail_at " << fail_at);
    database d;
    {
      auto db = d.open<v1_by_id>();
      for (const std::uint64_t id : {101, 102, 103}) db->put<message_metadata>({"q", id}, bin("m"));
      db->put<message_metadata>({"r", 105}, bin("m"));
      CHECK(count(db->scan<by_id_index<1>>()) == 4);
      d.close(db);
    }
    ks::migrate_result r;
    if (fail_at != 0) {
      CHECK_THROWS_WITH(renumber(d, fail_at), "simulated crash");
      CHECK(has_migration_record(d));
      r = renumber(d, 0);  // the rerun resumes, and derives from every record
      CHECK(r.resumed);
    } else {
      r = renumber(d, 0);
      CHECK(r.entries == 4);
      // 2 of records, 2 erasing the old index (4 entries), 2 deriving it and 2 the count (3 records).
      CHECK(r.batches == 8);
    }
    CHECK_FALSE(has_migration_record(d));
    CHECK(d.record() == ks::layout<v1_by_id_counted>::record());
    auto db = d.open<v1_by_id_counted>();
    std::vector<std::string> ids;
    for (const auto& e : db->scan<by_id_index<1>>())
      ids.push_back(e.get<"destination">() + std::to_string(e.get<"message_id">()));
    CHECK(ids == std::vector<std::string>{"q1", "q2", "r5"});  // no entry of the old ids
    CHECK(db->get<migrated_count>({"q"}) == std::optional<std::int64_t>(2));
    CHECK(db->get<migrated_count>({"r"}) == std::optional<std::int64_t>(1));
    CHECK(count(db->scan<migrated_count>()) == 2);
    db->erase<message_metadata>({"q", 1});  // and the store maintains them from here
    CHECK(db->get<migrated_count>({"q"}) == std::optional<std::int64_t>(1));
    CHECK(count(db->scan<by_id_index<1>>()) == 2);
    d.close(db);
  }
}

// --- prepared transactions across schemas (issue 30, case 2) --------------------------------------

TEST_CASE("evolution: ks::migrate refuses while prepared transactions exist; nothing is migrated",
          "[conformance][evolution][migrate][prepared]") {
  database d;
  fill_v0(d, {"q"}, 3);
  {
    auto db = d.open<v0>();
    for (const char* xid : {"xa-1", "xa-2"}) {
      auto tx = db->transaction();
      tx.put<metadata_text_ids>({"q", std::string("100") + xid}, bin(xid));
      tx.add<message_count>({"q"}, 1);
      ks::prepare(tx, xid);
    }
    d.close(db);
  }
  std::size_t calls = 0;
  try {
    (void)v0_to_v2{&calls}.run(d, 7);
    FAIL("ks::migrate ran over prepared transactions");
  } catch (const ks::schema_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("2 prepared transactions") && Catch::Contains("b\"xa-1\"") &&
                             Catch::Contains("b\"xa-2\"") && Catch::Contains("commit or roll them back") &&
                             Catch::Contains("Nothing was migrated"));
  }
  CHECK(calls == 0);
  CHECK(d.record() == ks::layout<v0>::record());
  CHECK_FALSE(has_migration_record(d));
  {
    auto db = d.open<v0>();  // still v0's: the branches can be decided
    CHECK(ks::prepared(*db) == std::vector<std::string>{"xa-1", "xa-2"});
    CHECK(ks::commit_prepared(*db, "xa-1"));
    CHECK(ks::rollback_prepared(*db, "xa-2"));
    d.close(db);
  }
  const ks::migrate_result r = v0_to_v2{&calls}.run(d, 7);
  CHECK_FALSE(r.already_done);
  CHECK(calls == 4);
  {
    auto db = d.open<v2>();
    CHECK(db->get<message_metadata>({"q", 100})->str() == "xa-1");  // "100xa-1" does not parse past 100
    CHECK(db->get<message_count_v2>({"q"}) == std::optional<std::uint64_t>(4));
    d.close(db);
  }
}

TEST_CASE("evolution: commit_prepared refuses a branch prepared under another layout of its keyspaces",
          "[conformance][evolution][prepared]") {
  // Schemas changed around the migration check (the schema record rewritten by hand, or by a
  // version that migrated over prepared branches): a branch of text ids under u64 ids, and a
  // counter whose value codec changed under unchanged keys.
  database d;
  {
    auto db = d.open<v0>();
    {
      auto tx = db->transaction();
      tx.put<metadata_text_ids>({"q", "14"}, bin("text id"));
      ks::prepare(tx, "text-ids");
    }
    {
      auto tx = db->transaction();
      tx.put<message_count>({"q"}, 5);
      ks::prepare(tx, "i64-count");
    }
    d.close(db);
  }
  d.with_backend([](backend_type& b) {
    ks::write_batch w;
    w.put(ks::schema_key, ks::layout<v2>::record());
    b.write(w, {});
  });
  auto db = d.open<v2>();
  try {
    (void)ks::commit_prepared(*db, "text-ids");
    FAIL("a branch of keys that do not decode under this schema committed");
  } catch (const ks::schema_error& e) {  // text ids: no keyspace of v2 has such keys
    CHECK_THAT(e.what(), Catch::Contains("b\"text-ids\"") && Catch::Contains("\"MESSAGE_METADATA\", \"14\"") &&
                             Catch::Contains("no key of a keyspace") &&
                             Catch::Contains("rollback_prepared"));
  }
  try {
    (void)ks::commit_prepared(*db, "i64-count");
    FAIL("a branch prepared under another value codec committed");
  } catch (const ks::schema_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("b\"i64-count\"") && Catch::Contains("'message_count'") &&
                             Catch::Contains("another layout"));
  }
  CHECK(count(db->scan<message_metadata>()) == 0);
  CHECK(db->get<message_count_v2>({"q"}) == std::nullopt);
  CHECK(ks::prepared(*db) == std::vector<std::string>{"i64-count", "text-ids"});
  CHECK(ks::rollback_prepared(*db, "text-ids"));
  CHECK(ks::rollback_prepared(*db, "i64-count"));
  CHECK(ks::prepared(*db).empty());
  d.close(db);
}

}  // namespace keyschema::conformance::evolution
