// tests/unit/direct_batch_test.cpp: store_batch on a backend_with_direct_batch (backend.hpp),
// which encodes into the engine's own batch and commits it as it is (LevelDB: each key and value
// copied once, into the leveldb::WriteBatch).
//
// direct_backend is the memory backend with a direct batch of its own, counting which of write()
// and write_direct() each commit took, with a gate in both (tests/support/write_gate.hpp,
// as group_commit_test.cpp's gated_backend) so that writers queue behind a held commit deterministically. Checked: a batch
// that needs nothing resolved and commits alone is written directly; one with adds, or with
// writes of a keyspace a count or index derives from, and one merged into a group, are resolved
// and written as before, with the same results; operations() lists what the batch holds; a failed
// commit leaves the batch as it was; the store's limit check applies to direct batches too.
//
// Thread-safety: label concurrency (the ThreadSanitizer pass runs it).
#include <catch2/catch.hpp>
#include <keyschema/keyschema.hpp>

#include <support/write_gate.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace direct_batch_test {

namespace ks = keyschema;

// The engine batch of direct_backend: a write_batch of its own.
class test_direct_batch {
 public:
  void put(std::string_view k, std::string_view v) { b_.put(k, v); }
  void erase(std::string_view k) { b_.erase(k); }
  void clear() noexcept { b_.clear(); }
  std::size_t size() const noexcept { return b_.size(); }
  std::size_t byte_size() const noexcept { return b_.byte_size(); }
  void append_to(ks::write_batch& out) const { out.append(b_); }
  const ks::write_batch& ops() const noexcept { return b_; }

 private:
  ks::write_batch b_;
};

class direct_backend : public ks::memory_backend {
 public:
  using direct_batch_type = test_direct_batch;

  void write(const ks::write_batch& b, const ks::write_options& opts) {
    gate_.pass();
    ks::memory_backend::write(b, opts);
    writes_.fetch_add(1);
  }
  void write_direct(direct_batch_type& b, const ks::write_options& opts) {
    gate_.pass();
    if (fail_next_.exchange(false)) throw ks::backend_error("direct_backend: injected failure", "write_direct", 5);
    ks::memory_backend::write(b.ops(), opts);
    direct_writes_.fetch_add(1);
  }
  ks::backend_limits limits() const noexcept {
    ks::backend_limits l;
    l.max_ops_per_write = max_ops_;
    l.max_entry_bytes = max_entry_;
    return l;
  }

  void fail_next() { fail_next_.store(true); }
  void set_max_ops(std::size_t n) { max_ops_ = n; }
  void set_max_entry(std::size_t n) { max_entry_ = n; }
  void close_gate() { gate_.close(); }
  void open_gate() { gate_.open(); }
  void wait_entered(int n) { gate_.wait_entered(n); }
  int writes() const { return writes_.load(); }
  int direct_writes() const { return direct_writes_.load(); }

 private:
  ks::testing::write_gate gate_;
  std::atomic<int> writes_{0};
  std::atomic<int> direct_writes_{0};
  std::atomic<bool> fail_next_{false};
  std::size_t max_ops_ = ks::backend_limits{}.max_ops_per_write;
  std::size_t max_entry_ = ks::backend_limits{}.max_entry_bytes;
};

static_assert(ks::backend_with_direct_batch<direct_backend>);
static_assert(!ks::backend_with_direct_batch<ks::memory_backend>);

using message = ks::keyspace<"message", std::string, ks::lit<"MSG">, ks::field<"queue", std::string>,
                             ks::field<"id", std::uint64_t>>;
using message_count =
    ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"COUNT">, ks::field<"queue", std::string>>;
using note = ks::keyspace<"note", std::string, ks::lit<"NOTE">, ks::field<"id", std::uint64_t>>;
using sequence = ks::keyspace<"sequence", std::int64_t, ks::lit<"SEQ">>;
using blob = ks::keyspace<"blob", ks::bytes, ks::lit<"BLOB">, ks::field<"id", std::uint64_t>>;
using schema = ks::schema<message, message_count, note, sequence, blob>;
using store_type = ks::store<schema, direct_backend>;

const direct_backend& backend_of(const store_type& db) { return db.backend(); }

TEST_CASE("direct batch: a batch with nothing to resolve is written as the engine's batch", "[direct_batch]") {
  store_type db;
  const int writes = backend_of(db).writes();
  auto b = db.batch();
  b.put<note>({1}, "one");
  b.put<note>({2}, "two");
  b.erase<note>({3});
  b.put<note>({1}, "uno");  // later operations on the same key win
  CHECK(b.size() == 4);
  CHECK_FALSE(b.empty());
  // operations(): the batch's operations, in order, copied out of the engine's batch.
  const ks::write_batch& ops = b.operations();
  REQUIRE(ops.size() == 4);
  CHECK(ops[0].kind == ks::write_batch::op_kind::put);
  CHECK(ops[0].value == "one");
  CHECK(ops[2].kind == ks::write_batch::op_kind::erase);
  CHECK(ops[2].value.empty());
  CHECK(ops[3].key == ops[0].key);
  CHECK(ops.byte_size() == b.operations().byte_size());
  b.commit({.sync = false});
  CHECK(b.empty());
  CHECK(b.operations().empty());
  CHECK(backend_of(db).direct_writes() == 1);
  CHECK(backend_of(db).writes() == writes);
  CHECK(db.get<note>({1}) == std::optional<std::string>("uno"));
  CHECK(db.get<note>({2}) == std::optional<std::string>("two"));
  CHECK_FALSE(db.get<note>({3}));
  // Reused after commit: it starts empty.
  b.put<note>({4}, "four");
  CHECK(b.operations().size() == 1);
  b.commit();
  CHECK(backend_of(db).direct_writes() == 2);
  CHECK(db.get<note>({4}) == std::optional<std::string>("four"));
  CHECK(db.get<note>({1}) == std::optional<std::string>("uno"));
}

TEST_CASE("direct batch: adds and writes of keyspaces with derived ones are resolved as before", "[direct_batch]") {
  store_type db;
  const int writes = backend_of(db).writes();
  SECTION("an add") {
    auto b = db.batch();
    b.put<note>({1}, "one");
    b.add<sequence>({}, 5);
    b.put<note>({2}, "two");
    CHECK(b.size() == 3);
    CHECK(b.operations().size() == 2);  // the add is resolved at commit
    b.commit();
    CHECK(db.get<sequence>({}) == std::optional<std::int64_t>(5));
  }
  SECTION("a counted keyspace") {
    auto b = db.batch();
    b.put<note>({1}, "one");
    b.put<message>({"q", 1}, "a");
    b.put<message>({"q", 2}, "b");
    b.commit();
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(2));
    b.erase<message>({"q", 1});
    b.commit();
    CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>(1));
    CHECK(backend_of(db).writes() == writes + 2);
  }
  CHECK(backend_of(db).direct_writes() == 0);
  CHECK(db.get<note>({1}) == std::optional<std::string>("one"));
  // A batch that only clears what needed resolving is direct again.
  auto b = db.batch();
  b.put<message>({"q", 9}, "x");
  b.clear();
  b.put<note>({7}, "seven");
  b.commit();
  CHECK(backend_of(db).direct_writes() == 1);
}

TEST_CASE("direct batch: a failed commit leaves the batch as it was", "[direct_batch]") {
  store_type db;
  auto b = db.batch();
  b.put<note>({1}, "one");
  b.erase<note>({2});
  db.unsafe_backend().fail_next();
  CHECK_THROWS_AS(b.commit(), ks::backend_error);
  CHECK(b.size() == 2);
  CHECK(b.operations().size() == 2);
  CHECK_FALSE(db.get<note>({1}));
  b.commit();
  CHECK(db.get<note>({1}) == std::optional<std::string>("one"));
}

TEST_CASE("direct batch: the store's limits per write apply", "[direct_batch]") {
  store_type db;
  db.unsafe_backend().set_max_ops(2);
  auto b = db.batch();
  b.put<note>({1}, "one");
  b.put<note>({2}, "two");
  b.put<note>({3}, "three");
  try {
    b.commit();
    FAIL("a batch of 3 operations over a limit of 2 committed");
  } catch (const ks::limit_error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("'note'") != std::string::npos);
    CHECK(what.find("max_ops_per_write") != std::string::npos);
  }
  CHECK(b.size() == 3);
  CHECK_FALSE(db.get<note>({1}));
  CHECK(backend_of(db).direct_writes() == 0);
}

TEST_CASE("direct batch: an entry over the backend's limit is refused at put, nothing added", "[direct_batch]") {
  store_type db;
  db.unsafe_backend().set_max_entry(64);
  auto b = db.batch();
  b.put<note>({1}, "fits");
  b.put<blob>({1}, ks::bytes(std::string(40, 'b')));
  // std::string and bytes values are copied from where they are: checked all the same.
  const auto refused = [&](auto&& put) {
    try {
      put();
      FAIL("an entry over 64 bytes was added");
    } catch (const ks::limit_error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("max_entry_bytes") != std::string::npos);
    }
    CHECK(b.size() == 2);
  };
  refused([&] { b.put<note>({2}, std::string(64, 'n')); });
  refused([&] { b.put<blob>({2}, ks::bytes(std::string(64, 'b'))); });
  b.commit();
  CHECK(db.get<note>({1}) == std::optional<std::string>("fits"));
  CHECK(db.get<blob>({1}) == std::optional<ks::bytes>(ks::bytes(std::string(40, 'b'))));
  CHECK_FALSE(db.get<note>({2}));
  CHECK_FALSE(db.get<blob>({2}));
}

TEST_CASE("direct batch: batches queued behind a commit are merged and written together",
          "[direct_batch][concurrency]") {
  store_type db;
  direct_backend& be = db.unsafe_backend();  // the gate: no write through it
  const int writes = be.writes();
  be.close_gate();
  std::thread first([&] {
    auto b = db.batch();
    b.put<note>({0}, "first");
    b.commit();
  });
  be.wait_entered(1);  // the first batch is inside the engine, holding the writer lock
  constexpr int n = 6;
  std::atomic<int> returned{0};
  std::vector<std::exception_ptr> results(n);
  std::vector<std::thread> writers;
  for (int i = 0; i < n; ++i) {
    writers.emplace_back([&, i] {
      try {
        auto b = db.batch();
        b.put<note>({static_cast<std::uint64_t>(100 + i)}, std::string(1000, static_cast<char>('a' + i)));
        if (i % 2 == 0) b.put<message>({"q", static_cast<std::uint64_t>(i)}, "m");  // resolved: counted
        b.erase<note>({static_cast<std::uint64_t>(200 + i)});
        b.commit({.sync = false});
      } catch (...) {
        results[static_cast<std::size_t>(i)] = std::current_exception();
      }
      returned.fetch_add(1);
    });
  }
  // Writers queue behind the first; none can return while it holds the engine. A writer that
  // arrives late only makes a smaller group (the counts below allow for it).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(returned.load() == 0);
  be.open_gate();
  first.join();
  for (auto& t : writers) t.join();
  for (const auto& r : results) CHECK(r == nullptr);
  CHECK(be.direct_writes() >= 1);  // the first batch, alone
  const int engine_writes = be.writes() - writes + be.direct_writes();
  INFO("engine writes for " << (n + 1) << " commits: " << engine_writes);
  CHECK(engine_writes < n + 1);
  for (int i = 0; i < n; ++i) {
    CHECK(db.get<note>({static_cast<std::uint64_t>(100 + i)}) ==
          std::optional<std::string>(std::string(1000, static_cast<char>('a' + i))));
  }
  CHECK(db.get<note>({0}) == std::optional<std::string>("first"));
  CHECK(db.get<message_count>({"q"}) == std::optional<std::int64_t>((n + 1) / 2));
}

}  // namespace direct_batch_test
