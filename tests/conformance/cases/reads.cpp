// tests/conformance/cases/reads.cpp: conformance cases:
// the fast read paths (value views, keys-only scans, reused entries, limits, get_into) against
// owning scans and point reads, on the store, snapshots and transactions.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

namespace keyschema::conformance {

namespace {
// The entries of a value_views() scan, copied into owning entries.
template <class View>
std::vector<std::string> collect_views(const View& view) {
  using KS = typename View::entry_type::keyspace_type;
  std::vector<std::string> out;
  for (const auto& e : view) out.push_back(show_entry<KS>(e.key, typename KS::value_type(e.value)));
  return out;
}
// The keys of a scan, as strings.
template <class View>
std::vector<std::string> collect_keys(const View& view) {
  using KS = typename View::entry_type::keyspace_type;
  std::vector<std::string> out;
  for (const auto& e : view) out.push_back(show_entry<KS>(e.key, typename KS::value_type{}));
  return out;
}
}  // namespace

TEST_CASE("value views and keys-only scans yield what owning scans yield", "[conformance][reads]") {
  test_fixture fx;
  auto& db = fx.db();
  const std::vector<std::string> dests = tricky_destinations();
  std::mt19937_64 rng(8);
  {
    auto b = db.batch();
    for (const std::string& d : dests) {
      for (std::uint64_t id : id_pool()) b.put<message_metadata>({d, id}, random_value(rng));
      b.put<message_expiration>({d, 3}, 30);
      b.put<message_count>({d}, 1);
    }
    b.commit();
  }
  auto check_all = [&](const auto& src) {
    for (const std::string& d : dests) {
      INFO("destination " << show(d));
      const auto s = src.template scan<message_metadata>(d);
      const std::vector<std::string> owning = collect(s);
      REQUIRE(owning.size() == id_pool().size());
      CHECK(collect_views(s.value_views()) == owning);
      std::vector<std::string> keys = collect(s);
      for (std::string& k : keys) k = k.substr(0, k.rfind(" = "));
      std::vector<std::string> keys_only = collect_keys(s.keys_only());
      for (std::string& k : keys_only) k = k.substr(0, k.rfind(" = "));
      CHECK(keys_only == keys);
      // Bounds, reverse and limits mean the same in every mode.
      const auto bounded = s.from(10).to(1ull << 63).reverse().limit(5);
      CHECK(collect_views(bounded.value_views()) == collect(bounded));
      CHECK(count(bounded.keys_only()) == count(bounded));
    }
    CHECK(collect_views(src.template scan<message_metadata>().value_views()) ==
          collect(src.template scan<message_metadata>()));
    CHECK(count(src.template scan<message_metadata>().keys_only()) == dests.size() * id_pool().size());
    CHECK(count(src.template scan<message_expiration>().keys_only()) == dests.size());
  };
  check_all(db);
  check_all(db.snapshot());
  {
    auto tx = db.transaction();
    tx.put<message_metadata>({"new", 5}, bin("pending"));
    tx.erase<message_metadata>({dests[0], 0});
    // A transaction's scans see its own writes in every mode.
    CHECK(collect_views(tx.scan<message_metadata>("new").value_views()) ==
          std::vector<std::string>{show_entry<message_metadata>({"new", 5}, bin("pending"))});
    CHECK(count(tx.scan<message_metadata>(dests[0]).keys_only()) == id_pool().size() - 1);
    CHECK(collect_views(tx.scan<message_metadata>().value_views()) == collect(tx.scan<message_metadata>()));
    tx.rollback();
  }
}

TEST_CASE("limits: exactly n entries, first of a drained queue, every direction", "[conformance][reads][limit]") {
  test_fixture fx;
  auto& db = fx.db();
  {
    auto b = db.batch();
    for (std::uint64_t id = 0; id < 50; ++id) {
      b.put<message_metadata>({"drained", id}, bin("x"));
      b.put<message_metadata>({"next", id}, bin("y"));
    }
    b.commit();
  }
  {
    auto b = db.batch();
    for (std::uint64_t id = 0; id < 50; ++id) b.erase<message_metadata>({"drained", id});
    b.commit();
  }
  CHECK(count(db.scan<message_metadata>("drained").limit(1)) == 0);
  CHECK(count(db.scan<message_metadata>("drained").reverse().limit(1).keys_only()) == 0);
  const auto first = entries(db.scan<message_metadata>("next").limit(1));
  REQUIRE(first.size() == 1);
  CHECK(first[0].get<"message_id">() == 0u);
  const auto last = entries(db.scan<message_metadata>("next").reverse().limit(1));
  REQUIRE(last.size() == 1);
  CHECK(last[0].get<"message_id">() == 49u);
  for (std::size_t n : {0u, 1u, 7u, 50u, 51u}) {
    INFO("limit " << n);
    CHECK(count(db.scan<message_metadata>("next").limit(n)) == std::min<std::size_t>(n, 50));
    CHECK(count(db.scan<message_metadata>("next").limit(n).value_views()) == std::min<std::size_t>(n, 50));
    CHECK(count(db.scan<message_metadata>().reverse().limit(n).keys_only()) == std::min<std::size_t>(n, 50));
  }
}

TEST_CASE("reused entries: strings and bytes of changing length decode as point reads do", "[conformance][reads]") {
  test_fixture fx;
  auto& db = fx.db();
  const std::vector<std::string> dests = tricky_destinations();
  {
    auto b = db.batch();
    std::size_t i = 0;
    for (const std::string& d : dests) {
      ++i;
      b.put<message_count>({d}, static_cast<std::int64_t>(i));
      b.put<dtx_entry>({ks::bytes(d), static_cast<std::uint32_t>(i)}, ks::bytes(std::string(i % 3 ? 200 : 1, 'v') + d));
      b.put<message_destination>({i}, d);
    }
    b.commit();
  }
  std::size_t n = 0;
  for (const auto& e : db.scan<dtx_entry>()) {
    CHECK(lookup<dtx_entry>(db, e.key) == show(e.value));
    ++n;
  }
  CHECK(n == dests.size());
  n = 0;
  for (const auto& e : db.scan<message_count>().reverse()) {
    CHECK(db.get<message_count>(e.key) == e.value);
    ++n;
  }
  CHECK(n == dests.size());
  n = 0;
  for (const auto& e : db.scan<message_destination>()) {
    CHECK(db.get<message_destination>(e.key) == e.value);
    ++n;
  }
  CHECK(n == dests.size());
}

TEST_CASE("get_into reads into the caller's object on the store, snapshots and transactions", "[conformance][reads][get]") {
  test_fixture fx;
  auto& db = fx.db();
  db.put<message_metadata>({"q", 1}, bin(std::string("with\0nul", 8)));
  db.put<message_destination>({1}, "q");
  db.put<message_count>({"q"}, 42);
  ks::bytes v;
  CHECK(db.get_into<message_metadata>({"q", 1}, v));
  CHECK(v == bin(std::string("with\0nul", 8)));
  CHECK_FALSE(db.get_into<message_metadata>({"q", 2}, v));
  CHECK(v == bin(std::string("with\0nul", 8)));
  std::string s;
  CHECK(db.get_into<message_destination>({1}, s));
  CHECK(s == "q");
  std::int64_t c = 0;
  CHECK(db.get_into<message_count>({"q"}, c));
  CHECK(c == 42);
  auto snap = db.snapshot();
  db.put<message_destination>({1}, "changed");
  CHECK(snap.get_into<message_destination>({1}, s));
  CHECK(s == "q");
  CHECK(db.get_into<message_destination>({1}, s));
  CHECK(s == "changed");
  {
    auto tx = db.transaction();
    CHECK(tx.get_into<message_destination>({1}, s));
    CHECK(s == "changed");
    tx.put<message_destination>({1}, "mine");
    CHECK(tx.get_into<message_destination>({1}, s));
    CHECK(s == "mine");
    CHECK(tx.get<message_destination>({1}) == std::string("mine"));
    tx.commit();
  }
  CHECK(db.get<message_destination>({1}) == std::string("mine"));
}

}  // namespace keyschema::conformance
