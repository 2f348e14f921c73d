// tests/unit/sqlite_readers_test.cpp: the reader connection each thread keeps per sqlite_backend
// (keyschema/sqlite/detail/thread_reader.hpp): get()s and cursors of one thread reuse one
// connection, threads do not share one, a thread's exit leaves it to the next thread, a backend
// destroyed while a thread keeps one closes it (and a reopened backend is told apart), a get()
// while the thread's cursor holds its connection reads the latest state, a thread's reader made
// before place() reads a keyspace being moved in both tables, and errors name the path.
// Connections are counted with SQLite's own sqlite3_auto_extension (called on every open).
#include <keyschema/sqlite.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace sqlite_readers_test {

namespace ks = keyschema;
namespace fs = std::filesystem;
using ks::testing::temp_dir;

namespace {

std::atomic<std::size_t> opened{0};

int count_open(sqlite3*, const char**, const sqlite3_api_routines*) {
  opened.fetch_add(1, std::memory_order_relaxed);
  return SQLITE_OK;
}

// Counts the SQLite connections the process opens while it lives.
struct open_counter {
  open_counter() {
    opened = 0;
    REQUIRE(::sqlite3_auto_extension(reinterpret_cast<void (*)()>(&count_open)) == SQLITE_OK);
  }
  ~open_counter() { ::sqlite3_cancel_auto_extension(reinterpret_cast<void (*)()>(&count_open)); }
  open_counter(const open_counter&) = delete;
  open_counter& operator=(const open_counter&) = delete;
  std::size_t count() const { return opened.load(); }
};

// The file descriptors of this process open on file (one per SQLite connection to it).
std::size_t open_fds(const fs::path& file) {
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(file, ec);
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd", ec)) {
    std::error_code le;
    if (fs::read_symlink(e.path(), le) == target) ++n;
  }
  return n;
}

void put(ks::sqlite_backend& b, const std::string& k, const std::string& v) {
  ks::write_batch w;
  w.put(k, v);
  b.write(w, {.sync = false});
}

// Runs fn on n threads at once (none ends before all have run fn); returns how many of them
// failed (an exception, or fn false).
template <class F>
std::size_t on_threads(unsigned n, F fn) {
  std::atomic<std::size_t> failed{0};
  std::latch all_ran(n);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < n; ++t) {
    ts.emplace_back([&, t] {
      try {
        if (!fn(t)) ++failed;
      } catch (...) {
        ++failed;
      }
      all_ran.arrive_and_wait();
    });
  }
  for (auto& t : ts) t.join();
  return failed;
}

// A one-way signal between two threads.
struct gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void signal() {
    std::lock_guard lk(mu);
    open = true;
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return open; });
  }
};

}  // namespace

TEST_CASE("sqlite: a thread keeps one reader connection for its get()s and cursors; threads do not share one, "
          "and a thread's exit leaves it to the next thread",
          "[sqlite][readers]") {
  temp_dir dir("sqlite-readers-keep");
  ks::sqlite_options o;
  o.idle_readers = 0;  // the pool keeps nothing: every pooled read would open a connection
  ks::sqlite_backend b(dir.path() / "db", o);
  for (int i = 0; i < 10; ++i) put(b, "k" + std::to_string(i), "v" + std::to_string(i));
  open_counter opens;

  std::string v;
  for (int i = 0; i < 200; ++i) {
    REQUIRE(b.get("k" + std::to_string(i % 10), v, nullptr));
    CHECK(v == "v" + std::to_string(i % 10));
  }
  for (int i = 0; i < 20; ++i) {
    std::size_t n = 0;
    for (auto c = b.cursor(ks::key_range{"k", "l"}, nullptr); c.valid(); c.next()) ++n;
    CHECK(n == 10);
  }
  CHECK(opens.count() == 1);

  const auto reads = [&](unsigned t) {
    std::string tv;
    for (int i = 0; i < 200; ++i) {
      const std::string k = "k" + std::to_string((i + static_cast<int>(t)) % 10);
      if (!b.get(k, tv, nullptr) || tv != "v" + k.substr(1)) return false;
    }
    return true;
  };
  CHECK(on_threads(4, reads) == 0);
  CHECK(opens.count() == 1 + 4);  // one each, the main thread's still its own
  // Those threads ended: their connections serve the next ones.
  CHECK(on_threads(4, reads) == 0);
  CHECK(opens.count() == 1 + 4);
  // Writes in between: the kept connections read the latest state.
  put(b, "k3", "v3b");
  CHECK(b.get("k3", v, nullptr));
  CHECK(v == "v3b");
  CHECK(on_threads(2, [&](unsigned) {
          std::string tv;
          return b.get("k3", tv, nullptr) && tv == "v3b";
        }) == 0);
  CHECK(opens.count() == 1 + 4);
}

TEST_CASE("sqlite: sqlite_options::thread_readers bounds the kept connections; beyond, reads use the pool",
          "[sqlite][readers]") {
  temp_dir dir("sqlite-readers-cap");
  ks::sqlite_options o;
  o.idle_readers = 0;
  o.thread_readers = 2;
  ks::sqlite_backend b(dir.path() / "db", o);
  put(b, "k", "v");
  open_counter opens;
  // Four threads reading at once, twice: two keep a connection (opened in the first round, kept
  // for the second), the other two read with a pooled one each time (the pool keeps none).
  for (int round = 0; round < 2; ++round) {
    gate done;
    std::atomic<int> ok{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) {
      ts.emplace_back([&] {
        std::string v;
        if (b.get("k", v, nullptr) && v == "v") ++ok;
        done.wait();
      });
    }
    while (ok.load() < 4) std::this_thread::yield();
    done.signal();
    for (auto& t : ts) t.join();
  }
  CHECK(opens.count() == 2 + 2 + 2);
}

TEST_CASE("sqlite: a backend destroyed while a thread keeps its reader closes it; the thread reads a reopened one",
          "[sqlite][readers]") {
  temp_dir dir("sqlite-readers-lifetime");
  const fs::path path = dir.path() / "db";
  const fs::path file = path / "keyschema.sqlite3";
  auto b = std::make_unique<ks::sqlite_backend>(path);
  put(*b, "k", "v1");
  ks::sqlite_backend* current = b.get();
  gate read1, destroyed, read2, reopened_gone;
  std::string got1, got2;
  std::thread t([&] {
    current->get("k", got1, nullptr);
    read1.signal();
    destroyed.wait();
    current->get("k", got2, nullptr);  // the reopened backend: another generation
    read2.signal();
    reopened_gone.wait();
  });
  read1.wait();
  CHECK(got1 == "v1");
  CHECK(open_fds(file) == 2);  // the writer and the thread's reader
  b.reset();
  // Every connection closed: the last one checkpointed and removed the write-ahead log.
  CHECK(open_fds(file) == 0);
  CHECK_FALSE(fs::exists(path / "keyschema.sqlite3-wal"));
  b = std::make_unique<ks::sqlite_backend>(path);
  put(*b, "k", "v2");
  current = b.get();
  destroyed.signal();
  read2.wait();
  CHECK(got2 == "v2");
  b.reset();  // the thread still caches the destroyed backend's reader: never used again
  CHECK(open_fds(file) == 0);
  reopened_gone.signal();
  t.join();  // the thread's exit finds no backend to give its readers back to

  // A thread that ends while the backend lives leaves its connection to it; the backend closes it.
  b = std::make_unique<ks::sqlite_backend>(path);
  std::thread([&] {
    std::string v;
    b->get("k", v, nullptr);
  }).join();
  CHECK(open_fds(file) == 2);
  b.reset();
  CHECK(open_fds(file) == 0);
  CHECK_FALSE(fs::exists(path / "keyschema.sqlite3-wal"));
}

TEST_CASE("sqlite: while a thread's cursor holds its connection, its get()s read the latest state; the cursor ends "
          "on another thread and frees it",
          "[sqlite][readers]") {
  temp_dir dir("sqlite-readers-cursor");
  ks::sqlite_options o;
  o.idle_readers = 0;
  ks::sqlite_backend b(dir.path() / "db", o);
  put(b, "a", "1");
  put(b, "b", "2");
  open_counter opens;
  std::string v;
  CHECK(b.get("a", v, nullptr));
  auto c = std::make_optional(b.cursor(ks::key_range{"a", "z"}, nullptr));  // the thread's connection
  REQUIRE(c->valid());
  CHECK(c->key() == "a");
  put(b, "c", "3");
  // Not in the cursor's read (its statement fixed the state): a pooled connection.
  CHECK(b.get("c", v, nullptr));
  CHECK(v == "3");
  CHECK(opens.count() == 2);
  std::thread([&] {
    c->next();
    c.reset();
  }).join();
  for (int i = 0; i < 10; ++i) CHECK(b.get("c", v, nullptr));
  CHECK(opens.count() == 2);  // the thread's own connection again
}

TEST_CASE("sqlite: a thread's reader made before place() reads a keyspace being moved in both tables",
          "[sqlite][readers][placement]") {
  temp_dir dir("sqlite-readers-moving");
  const std::string p = "\x02" "K" + std::string(1, '\0');
  ks::sqlite_backend b(dir.path() / "db");
  const ks::placement_route before[] = {{p, "old", std::nullopt}};
  b.place(before);
  put(b, p + "1", "v1");
  gate read, placed, done, written;
  std::string v1, v2, v3, after;
  std::thread t([&] {
    b.get(p + "1", v1, nullptr);  // the thread's reader, prepared for kv_old
    read.signal();
    placed.wait();
    b.get(p + "1", v2, nullptr);  // in kv_old
    b.get(p + "2", v3, nullptr);  // in kv_new, a table its connection had not read
    done.signal();
    written.wait();
    b.get(p + "1", after, nullptr);  // the read transaction of the reads above ended
  });
  read.wait();
  const ks::placement_route moving[] = {{p, "new", std::string_view("old")}};
  b.place(moving);
  put(b, p + "2", "v2");
  placed.signal();
  done.wait();
  put(b, p + "1", "v1b");
  written.signal();
  t.join();
  CHECK(v1 == "v1");
  CHECK(v2 == "v1");
  CHECK(v3 == "v2");
  CHECK(after == "v1b");
}

TEST_CASE("sqlite: a get() or cursor that fails names the database's path", "[sqlite][readers]") {
  temp_dir dir("sqlite-readers-error");
  ks::sqlite_backend b(dir.path() / "db");
  put(b, "k", "v");
  sqlite3* raw = nullptr;
  REQUIRE(::sqlite3_open((dir.path() / "db" / "keyschema.sqlite3").c_str(), &raw) == SQLITE_OK);
  REQUIRE(::sqlite3_exec(raw, "DROP TABLE kv", nullptr, nullptr, nullptr) == SQLITE_OK);
  ::sqlite3_close_v2(raw);
  std::string v;
  try {
    b.get("k", v, nullptr);
    FAIL("get() over a dropped table returned");
  } catch (const ks::backend_error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("get from " + b.path()));
    CHECK(std::string(e.native_call()) == "sqlite3_prepare_v3");
  }
  // Its siblings: a cursor without a snapshot, and a write transaction's get().
  try {
    static_cast<void>(b.cursor(ks::key_range{}, nullptr));
    FAIL("cursor() over a dropped table returned");
  } catch (const ks::backend_error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("reading " + b.path() + " through a cursor"));
    CHECK(std::string(e.native_call()) == "sqlite3_prepare_v3");
  }
  auto tx = b.begin_write();
  try {
    tx.get("k", v);
    FAIL("a write transaction's get() over a dropped table returned");
  } catch (const ks::backend_error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("reading " + b.path()));
    CHECK_THAT(e.what(), Catch::Matchers::Contains("no such table: kv"));  // the writer's stale schema: at the step
  }
}

}  // namespace sqlite_readers_test
