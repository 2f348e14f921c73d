// tests/conformance/cases/placement.cpp: a schema with three placements (keyschema::placed): the
// metadata in the default one, message bodies in "content", queue entries, an index and a count
// in "queues". Every operation works across them unchanged on every backend (a backend without
// placements keeps one key space): point reads and writes, scans in both directions, erase and
// erase_prefix, batches and transactions spanning placements (all or nothing), snapshots, counts,
// indexes, prepared transactions, a full-range cursor merging the placements in key order both
// ways, and ks::migrate moving keyspaces into placements (implicit steps) and out of them
// (explicit ones); a store whose schema places a keyspace elsewhere than the database does is
// refused. Where the factory can read a placement's keys from the engine (placement_keys), each
// placement is checked to hold its keyspaces' keys and no others; a backend_with_placements routed
// by no placed keyspace reads the default placement alone.
#include <conformance/conformance.hpp>

#include <keyschema/migrate.hpp>
#include <keyschema/prepared.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace keyschema::conformance::placement {

// A message's metadata: (priority, text), in the default placement.
using message = ks::keyspace<"pl_message", std::tuple<std::int64_t, std::string>, ks::lit<"PL_MESSAGE">,
                             ks::field<"queue", std::string>, ks::field<"id", std::uint64_t>>;
using body_flat = ks::keyspace<"pl_body", ks::bytes, ks::lit<"PL_BODY">, ks::field<"id", std::uint64_t>,
                               ks::field<"chunk", std::uint32_t>>;
using queue_flat = ks::keyspace<"pl_queue", std::string, ks::lit<"PL_QUEUE">, ks::field<"queue", std::string>,
                                ks::field<"id", std::uint64_t>>;
struct by_priority {
  std::optional<std::tuple<std::int64_t, std::string, std::uint64_t>> operator()(const message::key_type& k,
                                                                                 const message::value_type& v) const {
    return std::tuple(std::get<0>(v), std::get<0>(k), std::get<1>(k));
  }
};
using priority_flat = ks::keyspace<"pl_priority", ks::index_of<message, by_priority>, ks::lit<"PL_PRIORITY">,
                                   ks::field<"priority", std::int64_t>, ks::field<"queue", std::string>,
                                   ks::field<"id", std::uint64_t>>;
using count_flat =
    ks::keyspace<"pl_count", ks::count_of<message, 1>, ks::lit<"PL_COUNT">, ks::field<"queue", std::string>>;

using body = ks::placed<"content", body_flat>;
using queue_entry = ks::placed<"queues", queue_flat>;
using priority_index = ks::placed<"queues", priority_flat>;
using queue_count = ks::placed<"queues", count_flat>;

using placed_schema = ks::schema<message, body, queue_entry, priority_index, queue_count>;
using flat_schema = ks::schema<message, body_flat, queue_flat, priority_flat, count_flat>;

static_assert(ks::valid_schema<placed_schema> && ks::valid_schema<flat_schema>);
static_assert(ks::layout<placed_schema>::fingerprint != ks::layout<flat_schema>::fingerprint,
              "the placement is part of the fingerprint");
static_assert(ks::keyspace_fingerprint<body> != ks::keyspace_fingerprint<body_flat>);

using backend_type = backend_factory::backend;
template <class S>
using store_ptr = std::unique_ptr<ks::store<S, backend_type>>;

// One database opened with either schema in turn (the memory backend is carried from one store
// to the next), and its bare backend for ks::migrate.
class database {
 public:
  template <class S>
  store_ptr<S> open() {
    if constexpr (std::is_same_v<backend_type, ks::memory_backend>)
      return std::make_unique<ks::store<S, backend_type>>(take_memory());
    else
      return backend_factory::template open<S>(dir_.path());
  }
  template <class S>
  void close(store_ptr<S>& db) {
    if constexpr (std::is_same_v<backend_type, ks::memory_backend>) memory_.emplace(std::move(db->unsafe_backend()));
    db.reset();
  }
  template <class F>
  decltype(auto) with_backend(F&& f) {
    std::unique_ptr<backend_type> b;
    if constexpr (std::is_same_v<backend_type, ks::memory_backend>)
      b = std::make_unique<backend_type>(take_memory());
    else
      b = backend_factory::open_backend(dir_.path());
    struct give_back {
      database& d;
      std::unique_ptr<backend_type>& b;
      ~give_back() {
        if constexpr (std::is_same_v<backend_type, ks::memory_backend>) d.memory_.emplace(std::move(*b));
      }
    } g{*this, b};
    return f(*b);
  }

 private:
  // The memory backend carried between stores (a template: instantiated for memory_backend only).
  template <class B = backend_type>
  B take_memory() {
    if (!memory_) return B();
    B b = std::move(*memory_);
    memory_.reset();
    return b;
  }
  ks::testing::temp_dir dir_{"conformance-placement"};
  std::optional<backend_type> memory_;
};

// Messages of queues "a" and "b" (ids 1..n each), a body of two chunks each, a queue entry each.
template <class Body, class Queue, class Store>
void fill(Store& db, std::uint64_t n) {
  auto b = db.batch();
  for (const std::string q : {"a", "b"}) {
    for (std::uint64_t id = 1; id <= n; ++id) {
      const std::uint64_t mid = (q == "a" ? 0 : 1000) + id;
      b.template put<message>({q, id}, std::tuple<std::int64_t, std::string>(static_cast<std::int64_t>(id % 3),
                                                                               "m" + std::to_string(mid)));
      b.template put<Body>({mid, 0}, ks::bytes("body-" + std::to_string(mid)));
      b.template put<Body>({mid, 1}, ks::bytes("tail-" + std::to_string(mid)));
      b.template put<Queue>({q, id}, "entry-" + std::to_string(mid));
    }
  }
  b.commit();
}

// Every key of the database, through the backend's full-range cursor, in the given direction.
template <class Backend>
std::vector<std::string> all_keys(const Backend& b, bool reverse) {
  std::vector<std::string> out;
  for (auto c = b.cursor(ks::key_range{{}, {}, reverse}, nullptr); c.valid(); c.next()) out.emplace_back(c.key());
  return out;
}

// On a backend whose factory reads a placement's keys from the engine itself (placement_keys:
// RocksDB's column families), each placement holds the keys of its keyspaces and no others: `n`
// keys of placed_schema's body ("content"), `q` of its queue entries, index and counts ("queues"),
// `d` in the default placement. Other backends: nothing to check here.
// F is backend_factory, a template parameter so that the check stays a substitution (a factory
// without placement_keys is no error).
template <class F, class Backend>
concept reads_placements = requires(Backend& b) { F::placement_keys(b, std::string_view()); };

template <class Backend, class F = backend_factory>
void check_engine_placements(Backend& b, std::size_t n, std::size_t q, std::size_t d) {
  if constexpr (reads_placements<F, Backend>) {
    const std::string body_prefix = ks::detail::placement_prefix<body>();
    const std::vector<std::string> queue_prefixes = {ks::detail::placement_prefix<queue_entry>(),
                                                     ks::detail::placement_prefix<priority_index>(),
                                                     ks::detail::placement_prefix<queue_count>()};
    const auto queued = [&](const std::string& k) {
      return std::any_of(queue_prefixes.begin(), queue_prefixes.end(),
                         [&](const std::string& p) { return k.starts_with(p); });
    };
    const auto content = F::placement_keys(b, "content");
    const auto queues = F::placement_keys(b, "queues");
    const auto rest = F::placement_keys(b, "");
    REQUIRE((content && queues && rest));
    CHECK(content->size() == n);
    CHECK(queues->size() == q);
    CHECK(rest->size() == d);
    for (const std::string& k : *content) CHECK(k.starts_with(body_prefix));
    for (const std::string& k : *queues) CHECK(queued(k));
    for (const std::string& k : *rest) CHECK_FALSE((k.starts_with(body_prefix) || queued(k)));
  }
}

// After moving every keyspace back to the default placement: "content" and "queues" hold nothing.
template <class Backend, class F = backend_factory>
void check_engine_placements_empty(Backend& b) {
  if constexpr (reads_placements<F, Backend>) {
    CHECK(F::placement_keys(b, "content") == std::optional(std::vector<std::string>{}));
    CHECK(F::placement_keys(b, "queues") == std::optional(std::vector<std::string>{}));
  }
}

// The keys each keyspace holds, through the store's scans.
template <class Body, class Queue, class Store>
std::vector<std::string> contents(const Store& db) {
  std::vector<std::string> out;
  for (const std::string& e : collect(db.template scan<message>())) out.push_back("message " + e);
  for (const std::string& e : collect(db.template scan<Body>())) out.push_back("body " + e);
  for (const std::string& e : collect(db.template scan<Queue>())) out.push_back("queue " + e);
  return out;
}

}  // namespace keyschema::conformance::placement

namespace keyschema::conformance {
using namespace placement;

TEST_CASE("placement: point reads, writes, scans both ways and erases across three placements",
          "[conformance][placement]") {
  database d;
  auto db = d.open<placed_schema>();
  fill<body, queue_entry>(*db, 12);

  CHECK(db->get<message>({"a", 3}) == std::optional(std::tuple<std::int64_t, std::string>(0, "m3")));
  CHECK(db->get<body>({1005, 1}) == std::optional(ks::bytes("tail-1005")));
  CHECK(db->get<queue_entry>({"b", 12}) == std::optional(std::string("entry-1012")));
  CHECK_FALSE(db->get<body>({13, 0}).has_value());

  CHECK(count(db->scan<message>()) == 24);
  CHECK(count(db->scan<body>()) == 48);
  CHECK(count(db->scan<queue_entry>("a")) == 12);
  std::vector<std::string> fwd = collect(db->scan<queue_entry>("b"));
  std::vector<std::string> rev = collect(db->scan<queue_entry>("b").reverse());
  std::reverse(rev.begin(), rev.end());
  CHECK(fwd == rev);
  CHECK(fwd.front() == show_entry<queue_entry>({"b", 1}, std::string("entry-1001")));
  CHECK(collect(db->scan<body>(std::uint64_t{7}).reverse()) ==
        std::vector<std::string>{show_entry<body>({7, 1}, ks::bytes("tail-7")),
                                 show_entry<body>({7, 0}, ks::bytes("body-7"))});

  // The full-range cursor merges the placements in key order, both ways, and shows each key once.
  const std::vector<std::string> up = all_keys(db->backend(), false);
  std::vector<std::string> down = all_keys(db->backend(), true);
  CHECK(std::is_sorted(up.begin(), up.end()));
  CHECK(std::adjacent_find(up.begin(), up.end()) == up.end());
  std::reverse(down.begin(), down.end());
  CHECK(up == down);
  // 24 messages, 48 body chunks, 24 queue entries, 24 index entries, 2 counts, the schema record.
  CHECK(up.size() == 24 + 48 + 24 + 24 + 2 + 1);
  check_engine_placements(db->unsafe_backend(), 48, 24 + 24 + 2, 24 + 1);

  db->erase<body>({1005, 0});
  db->erase<queue_entry>({"a", 1});
  CHECK_FALSE(db->get<body>({1005, 0}).has_value());
  CHECK_FALSE(db->get<queue_entry>({"a", 1}).has_value());
  CHECK(db->erase_prefix<body>(std::uint64_t{3}) == 2);
  CHECK(db->erase_prefix<queue_entry>("b") == 12);
  CHECK(count(db->scan<body>()) == 45);
  CHECK(count(db->scan<queue_entry>()) == 11);
  CHECK(count(db->scan<message>()) == 24);
  CHECK(all_keys(db->backend(), false).size() == 24 + 45 + 11 + 24 + 2 + 1);
  check_engine_placements(db->unsafe_backend(), 45, 11 + 24 + 2, 24 + 1);
}

TEST_CASE("placement: batches and transactions spanning placements apply all or nothing; snapshots see one state",
          "[conformance][placement]") {
  database d;
  auto db = d.open<placed_schema>();
  fill<body, queue_entry>(*db, 3);
  const auto before = contents<body, queue_entry>(*db);
  const auto snap = db->snapshot();

  // A transaction writing in every placement that throws before its commit writes nothing.
  try {
    auto tx = db->transaction();
    tx.put<message>({"c", 1}, std::tuple<std::int64_t, std::string>(5, "m"));
    tx.put<body>({77, 0}, ks::bytes("b"));
    tx.put<queue_entry>({"c", 1}, "e");
    tx.erase<body>({1, 0});
    CHECK(tx.get<body>({77, 0}) == std::optional(ks::bytes("b")));  // its own writes, in every placement
    CHECK(count(tx.scan<queue_entry>("c")) == 1);
    throw std::runtime_error("abandon");
  } catch (const std::runtime_error&) {
  }
  CHECK(contents<body, queue_entry>(*db) == before);

  {
    auto tx = db->transaction();
    tx.put<message>({"c", 1}, std::tuple<std::int64_t, std::string>(5, "m"));
    tx.put<body>({77, 0}, ks::bytes("b"));
    tx.put<queue_entry>({"c", 1}, "e");
    tx.erase<body>({1, 0});
    tx.commit();
  }
  CHECK(db->get<body>({77, 0}) == std::optional(ks::bytes("b")));
  CHECK(db->get<queue_entry>({"c", 1}) == std::optional(std::string("e")));
  CHECK_FALSE(db->get<body>({1, 0}).has_value());
  CHECK(db->get<queue_count>({"c"}) == std::optional<std::int64_t>(1));

  // The snapshot taken before still sees every placement as it was.
  CHECK(contents<body, queue_entry>(snap) == before);
  CHECK(snap.get<body>({1, 0}) == std::optional(ks::bytes("body-1")));
  CHECK_FALSE(snap.get<queue_entry>({"c", 1}).has_value());
  CHECK(all_keys(db->backend(), false).size() == 6 + 12 + 6 + 6 + 2 + 1 + 3 - 1 + 1 + 1);
}

TEST_CASE("placement: counts and indexes kept in a placement follow their records", "[conformance][placement]") {
  database d;
  auto db = d.open<placed_schema>();
  fill<body, queue_entry>(*db, 6);
  CHECK(db->get<queue_count>({"a"}) == std::optional<std::int64_t>(6));
  db->erase<message>({"a", 1});
  db->put<message>({"a", 2}, std::tuple<std::int64_t, std::string>(9, "moved"));
  CHECK(db->get<queue_count>({"a"}) == std::optional<std::int64_t>(5));
  // Index entries (priority, queue, id): id % 3 for each message, 9 for ("a", 2).
  CHECK(count(db->scan<priority_index>(std::int64_t{0})) == 4);  // ids 3, 6 of a and b
  CHECK(count(db->scan<priority_index>(std::int64_t{9})) == 1);
  CHECK(count(db->scan<priority_index>(std::int64_t{2})) == 3);  // ids 2, 5 of b, 5 of a (a's 2 moved)
  std::vector<priority_index::key_type> rev;
  for (const auto& e : db->scan<priority_index>().reverse()) rev.push_back(e.key);
  CHECK(rev.size() == 11);
  CHECK(std::is_sorted(rev.rbegin(), rev.rend()));
  CHECK(rev.front() == priority_index::key_type(9, "a", 2));
}

TEST_CASE("placement: a prepared transaction over several placements commits atomically",
          "[conformance][placement]") {
  database d;
  auto db = d.open<placed_schema>();
  fill<body, queue_entry>(*db, 2);
  auto tx = db->transaction();
  tx.put<body>({50, 0}, ks::bytes("p"));
  tx.put<queue_entry>({"p", 1}, "pe");
  tx.erase<message>({"a", 1});
  ks::prepare(tx, "xid-p");
  CHECK_FALSE(db->get<body>({50, 0}).has_value());
  CHECK(db->get<message>({"a", 1}).has_value());
  CHECK(ks::commit_prepared(*db, "xid-p"));
  CHECK(db->get<body>({50, 0}) == std::optional(ks::bytes("p")));
  CHECK(db->get<queue_entry>({"p", 1}) == std::optional(std::string("pe")));
  CHECK_FALSE(db->get<message>({"a", 1}).has_value());
  CHECK(db->get<queue_count>({"a"}) == std::optional<std::int64_t>(1));
}

TEST_CASE("placement: a database placed otherwise is refused; ks::migrate moves keyspaces between placements",
          "[conformance][placement]") {
  // The program now places keyspaces that a database holds in the default placement: refused,
  // never read from an empty placement.
  {
    database other;
    auto db = other.open<flat_schema>();
    fill<body_flat, queue_flat>(*db, 2);
    other.close(db);
    try {
      auto placed = other.open<placed_schema>();
      FAIL("a database placed otherwise was opened");
    } catch (const ks::schema_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("'pl_body'") &&
                               Catch::Contains("the default placement stored, placement 'content' in this program"));
    }
  }

  database d;
  std::vector<std::string> want;
  {
    auto db = d.open<flat_schema>();
    fill<body_flat, queue_flat>(*db, 5);
    want = contents<body_flat, queue_flat>(*db);
    d.close(db);
  }
  // No step: keyspaces that differ in placement only are moved by implicit steps (records copied,
  // the count and index dropped and derived again).
  d.with_backend([&](backend_type& b) {
    return ks::migrate<flat_schema, placed_schema>(b, ks::migrate_options{.batch_entries = 4});
  });
  {
    auto db = d.open<placed_schema>();
    CHECK(contents<body, queue_entry>(*db) == want);
    CHECK(db->get<queue_count>({"b"}) == std::optional<std::int64_t>(5));
    CHECK(count(db->scan<priority_index>()) == 10);
    CHECK(all_keys(db->backend(), false).size() == 10 + 20 + 10 + 10 + 2 + 1);
    check_engine_placements(db->unsafe_backend(), 20, 10 + 10 + 2, 10 + 1);  // moved out of the default one
    db->put<body>({999, 0}, ks::bytes("new"));
    d.close(db);
  }
  want.push_back("body " + show_entry<body>({999, 0}, ks::bytes("new")));
  std::sort(want.begin(), want.end());

  // And back to one key space, with explicit steps.
  d.with_backend([&](backend_type& b) {
    return ks::migrate<placed_schema, flat_schema>(
        b, ks::transform<body>([](const ks::entry<body>& e, ks::migration_writer<flat_schema>& out) { out.put<body_flat>(e.key, e.value); }),
        ks::transform<queue_entry>(
            [](const ks::entry<queue_entry>& e, ks::migration_writer<flat_schema>& out) { out.put<queue_flat>(e.key, e.value); }),
        ks::drop<priority_index>, ks::drop<queue_count>);
  });
  auto db = d.open<flat_schema>();
  std::vector<std::string> got = contents<body_flat, queue_flat>(*db);
  std::sort(got.begin(), got.end());
  CHECK(got == want);
  CHECK(db->get<body_flat>({999, 0}) == std::optional(ks::bytes("new")));
  CHECK(all_keys(db->backend(), false).size() == 10 + 21 + 10 + 10 + 2 + 1);
  check_engine_placements_empty(db->unsafe_backend());  // moved back: the placements stay, empty
}

TEST_CASE("placement: a backend with placements keeps each apart; a raw backend reads them all",
          "[conformance][placement]") {
  database d;
  {
    auto db = d.open<placed_schema>();
    fill<body, queue_entry>(*db, 4);
    d.close(db);
  }
  // 8 messages, 16 body chunks, 8 queue entries, 8 index entries, 2 counts, the schema record.
  constexpr std::size_t everything = 8 + 16 + 8 + 8 + 2 + 1;
  d.with_backend([&](auto& b) {
    // A raw backend (keyschema-dump's view) reads every placement the engine holds, merged.
    const std::vector<std::string> up = all_keys(b, false);
    CHECK(up.size() == everything);
    CHECK(std::is_sorted(up.begin(), up.end()));
    if constexpr (ks::backend_with_placements<std::remove_cvref_t<decltype(b)>>) {
      // Routed by no placed keyspace, a cursor reads the default placement alone: the messages
      // and the schema record. The other keys are really elsewhere in the engine.
      b.place(std::span<const ks::placement_route>());
      CHECK(all_keys(b, false).size() == 8 + 1);
      CHECK(all_keys(b, true).size() == 8 + 1);
      // Routed as the schema places them (as a store does), every key is found again.
      ks::detail::place_schema<placed_schema>(b);
      CHECK(all_keys(b, false) == up);
      std::string v;
      CHECK(b.get(up.front(), v, nullptr));
    }
  });
}

}  // namespace keyschema::conformance
