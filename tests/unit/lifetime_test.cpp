// tests/unit/lifetime_test.cpp: destroying a store while something made from it is alive is a
// clear abort, not a dangling engine handle.
//
// Snapshots, batches, transactions and scan cursors refer to the store's engine (REQUIRES: the
// store outlives them). The store counts them and its destructor aborts with one line naming what
// is alive when the count is not zero (detail/store/live_handles.hpp). Each case runs in a forked
// child, on the memory backend, LevelDB and LMDB: the child must die of SIGABRT after printing the
// message, and the controls (everything ended before the store) must exit normally with the
// right data read.
#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>
#include <support/child_process.hpp>
#include <support/temp_dir.hpp>
#include <support/thrown.hpp>

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace lifetime_test {

namespace ks = keyschema;
using ks::testing::contains;
using ks::testing::in_child;
using ks::testing::outcome;
using ks::testing::temp_dir;

namespace {

using record = ks::keyspace<"record", std::string, ks::lit<"R">, ks::field<"n", std::uint32_t>>;
using schema = ks::schema<record>;

struct memory_kind {
  using store_type = ks::store<schema, ks::memory_backend>;
  static std::unique_ptr<store_type> open(const temp_dir&) { return std::make_unique<store_type>(); }
};
struct leveldb_kind {
  using store_type = ks::store<schema, ks::leveldb_backend>;
  static std::unique_ptr<store_type> open(const temp_dir& d) { return std::make_unique<store_type>((d.path() / "db").string()); }
};
struct lmdb_kind {
  using store_type = ks::store<schema, ks::lmdb_backend>;
  static std::unique_ptr<store_type> open(const temp_dir& d) { return std::make_unique<store_type>((d.path() / "db").string()); }
};

template <class Store>
void fill(Store& db) {
  auto b = db.batch();
  for (std::uint32_t i = 0; i < 10; ++i) b.template put<record>({i}, "v" + std::to_string(i));
  b.commit();
}

// Runs body(db) in a child on a fresh store; body may move what it makes out of its scope, the
// store is then destroyed. Returns how the child ended.
template <class Kind, class Body>
outcome destroy_store_after(Body body) {
  temp_dir dir("lifetime");
  return in_child([&] {
    auto db = Kind::open(dir);
    fill(*db);
    body(db);
  });
}

template <class Kind>
void aborts_naming(const outcome& o, const std::string& alive) {
  INFO("child stderr: " << o.err);
  CHECK(o.signal == SIGABRT);
  CHECK(contains(o.err, "destroyed while " + alive));
  CHECK(contains(o.err, "declare the store before everything made from it"));
}

}  // namespace

TEMPLATE_TEST_CASE("destroying a store while something made from it is alive aborts with a message", "[lifetime]",
                   memory_kind, leveldb_kind, lmdb_kind) {
  using store_type = typename TestType::store_type;

  SECTION("a snapshot") {
    const outcome o = destroy_store_after<TestType>([](std::unique_ptr<store_type>& db) {
      auto snap = std::make_unique<typename store_type::snapshot_type>(db->snapshot());
      db.reset();  // the snapshot is still alive
      std::fprintf(stderr, "not reached: %p\n", static_cast<void*>(snap.get()));
    });
    aborts_naming<TestType>(o, "1 snapshot made from it is alive");
  }
  SECTION("a batch") {
    const outcome o = destroy_store_after<TestType>([](std::unique_ptr<store_type>& db) {
      auto b = std::make_unique<typename store_type::batch_type>(db->batch());
      db.reset();
      std::fprintf(stderr, "not reached: %zu\n", b->size());
    });
    aborts_naming<TestType>(o, "1 batch made from it is alive");
  }
  SECTION("a transaction") {
    const outcome o = destroy_store_after<TestType>([](std::unique_ptr<store_type>& db) {
      auto tx = std::make_unique<typename store_type::transaction_type>(db->transaction());
      db.reset();
      std::fprintf(stderr, "not reached: %zu\n", tx->size());
    });
    aborts_naming<TestType>(o, "1 transaction made from it is alive");
  }
  SECTION("scan iterators, of the store and of a snapshot") {
    const outcome o = destroy_store_after<TestType>([](std::unique_ptr<store_type>& db) {
      auto view = db->template scan<record>();
      auto it = view.begin();
      auto snap = std::make_unique<typename store_type::snapshot_type>(db->snapshot());
      auto view2 = snap->template scan<record>();
      auto it2 = view2.begin();
      db.reset();
      std::fprintf(stderr, "not reached: %u %u\n", std::get<0>((*it).key), std::get<0>((*it2).key));
    });
    aborts_naming<TestType>(o, "1 snapshot and 2 scan cursors made from it are alive");
  }
}

TEMPLATE_TEST_CASE("what is made from a store may be ended in any order before the store", "[lifetime]", memory_kind,
                   leveldb_kind, lmdb_kind) {
  using store_type = typename TestType::store_type;
  const outcome o = destroy_store_after<TestType>([](std::unique_ptr<store_type>& db) {
    std::vector<std::uint32_t> seen;
    {
      auto snap = std::make_optional(db->snapshot());
      auto view = snap->template scan<record>();
      auto it = view.begin();
      auto copy = *snap;                // a copy counts on its own
      snap.reset();                     // a snapshot's scan may outlive the snapshot
      db->template put<record>({99}, "after the snapshot");
      for (; it != view.end(); ++it) seen.push_back(std::get<0>((*it).key));
      if (copy.template get<record>({99})) std::_Exit(11);
      auto b = db->batch();
      b.template put<record>({50}, "x");
      auto moved = std::move(b);        // a moved-from batch does not count
      moved.commit();
      auto tx = db->transaction();
      tx.template put<record>({51}, "y");
      tx.commit();
    }
    if (seen.size() != 10) std::_Exit(12);
    if (!db->template get<record>({51})) std::_Exit(13);
    db.reset();  // nothing alive: no abort
  });
  INFO("child stderr: " << o.err);
  CHECK(o.signal == 0);
  CHECK(o.exited);
  CHECK(o.code == 0);
}

}  // namespace lifetime_test
