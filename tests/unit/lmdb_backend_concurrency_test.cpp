// tests/unit/lmdb_backend_concurrency_test.cpp: keyschema::lmdb_backend with threads.
//
// One writer commits whole generations while readers take snapshots, cursors and point reads;
// every reader must see whole batches only, in commit order, also while the map is being resized
// under them. Copies of one snapshot are read from several threads at once. Point reads on the
// transactions the threads keep (thread_reader.hpp) never overlap a resize, and destroying the
// backend while other threads keep theirs ends those transactions. Catch2 assertions are not
// thread-safe, so worker threads record problems and the test thread checks them.
#include <keyschema/lmdb.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ks = keyschema;
using ks::testing::temp_dir;

namespace {

constexpr int n_keys = 32;

std::string key_of(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "gen/%04d", i);
  return b;
}

// Value of every generation key: the generation number, padded so that values are not tiny.
std::string value_of(long gen) { return std::to_string(gen) + "|" + std::string(200, 'p'); }

long gen_of(std::string_view v) { return std::stol(std::string(v.substr(0, v.find('|')))); }

// Problems seen by worker threads, reported by the test thread.
struct problems {
  std::mutex mu;
  std::vector<std::string> list;
  void add(std::string p) {
    std::lock_guard lk(mu);
    if (list.size() < 20) list.push_back(std::move(p));
  }
};

}  // namespace

TEST_CASE("lmdb_backend: readers see whole batches while one writer commits and the map grows",
          "[lmdb][concurrency]") {
  temp_dir dir("lmdb-conc");
  ks::lmdb_options opts;
  opts.map_size = 64 * 1024;  // tiny: the map is resized many times while readers run
  opts.max_map_size = 256u << 20;
  ks::lmdb_backend db(dir.path(), opts);
  const std::size_t initial_map = db.map_size();

  {
    ks::write_batch w;
    for (int i = 0; i < n_keys; ++i) w.put(key_of(i), value_of(0));
    db.write(w, {});
  }

  constexpr long generations = 300;
  std::atomic<bool> done{false};
  std::atomic<long> reads{0};
  problems bad;

  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&, r] {
      long last_seen = 0;
      try {
        while (!done.load()) {
          if (r == 0) {
            // A snapshot: a cursor over it and point reads in it agree on one generation.
            auto snap = db.snapshot();
            long gen = -1;
            int count = 0;
            for (auto c = db.cursor({"gen/", "gen0", false}, &snap); c.valid(); c.next(), ++count) {
              const long g = gen_of(c.value());
              if (gen == -1) gen = g;
              if (g != gen) bad.add("cursor mixed generations " + std::to_string(gen) + " and " + std::to_string(g));
            }
            if (count != n_keys) bad.add("snapshot cursor saw " + std::to_string(count) + " keys");
            std::string v;
            if (!db.get(key_of(n_keys - 1), v, &snap) || gen_of(v) != gen) bad.add("get in a snapshot disagreed");
            if (gen < last_seen) bad.add("generations went backwards");
            last_seen = gen;
          } else if (r == 1 || r == 3) {
            // Cursors with their private snapshots, reverse (reader 1) and forward (reader 3): two
            // threads take and return the MDB_cursor the environment keeps for reuse.
            const char* const dir = r == 1 ? "reverse" : "forward";
            long gen = -1;
            int count = 0;
            for (auto c = db.cursor({"gen/", "gen0", r == 1}, nullptr); c.valid(); c.next(), ++count) {
              const long g = gen_of(c.value());
              if (gen == -1) gen = g;
              if (g != gen) bad.add(std::string(dir) + " cursor mixed generations");
            }
            if (count != n_keys) bad.add(std::string(dir) + " cursor saw " + std::to_string(count) + " keys");
            if (gen < last_seen) bad.add(std::string("generations went backwards (") + dir + ")");
            last_seen = gen;
          } else {
            // Point reads without a snapshot: each one sees a committed generation, in order.
            std::string v;
            if (!db.get(key_of(0), v, nullptr)) bad.add("get lost a key");
            const long g = gen_of(v);
            if (g < last_seen) bad.add("get went backwards");
            last_seen = g;
          }
          reads.fetch_add(1);
        }
      } catch (const std::exception& e) {
        bad.add(std::string("reader threw: ") + e.what());
      }
    });
  }

  std::string writer_error;
  try {
    for (long gen = 1; gen <= generations; ++gen) {
      ks::write_batch w;
      for (int i = 0; i < n_keys; ++i) w.put(key_of(i), value_of(gen));
      // Growing data: a log entry per generation, so the map must keep growing.
      w.put("log/" + std::to_string(1000000 + gen), std::string(3000, 'l'));
      db.write(w, ks::write_options{gen % 50 == 0});
    }
  } catch (const std::exception& e) {
    writer_error = e.what();
  }
  done.store(true);
  for (auto& t : readers) t.join();

  CHECK(writer_error.empty());
  CHECK(bad.list.empty());
  for (const auto& p : bad.list) UNSCOPED_INFO(p);
  CHECK(reads.load() > 0);
  CHECK(db.map_size() > initial_map);  // resizes happened while readers were running
  std::string v;
  REQUIRE(db.get(key_of(0), v, nullptr));
  CHECK(gen_of(v) == generations);
}

TEST_CASE("lmdb_backend: copies of one snapshot are read from several threads at once",
          "[lmdb][concurrency]") {
  temp_dir dir("lmdb-conc-snap");
  ks::lmdb_backend db(dir.path());
  {
    ks::write_batch w;
    for (int i = 0; i < n_keys; ++i) w.put(key_of(i), value_of(1));
    db.write(w, {});
  }
  const auto snap = db.snapshot();
  {
    ks::write_batch w;
    for (int i = 0; i < n_keys; ++i) w.put(key_of(i), value_of(2));
    db.write(w, {});
  }

  problems bad;
  std::atomic<long> reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, copy = snap, t] {
      try {
        for (int round = 0; round < 200; ++round) {
          std::string v;
          if (!db.get(key_of((round + t) % n_keys), v, &copy) || gen_of(v) != 1) bad.add("get saw a later write");
          int count = 0;
          for (auto c = db.cursor({"gen/", "gen0", (round & 1) != 0}, &copy); c.valid(); c.next(), ++count) {
            if (gen_of(c.value()) != 1) bad.add("cursor saw a later write");
          }
          if (count != n_keys) bad.add("cursor saw " + std::to_string(count) + " keys");
          reads.fetch_add(1);
        }
      } catch (const std::exception& e) {
        bad.add(std::string("thread threw: ") + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bad.list.empty());
  for (const auto& p : bad.list) UNSCOPED_INFO(p);
  CHECK(reads.load() == 4 * 200);
  std::string v;
  REQUIRE(db.get(key_of(0), v, nullptr));
  CHECK(gen_of(v) == 2);
}

namespace {

// The value of key i at generation gen: both named and padded with bytes derived from them, so
// that a read from a page the map no longer holds (a resize under a live transaction) shows.
std::string checked_value(int i, long gen) {
  std::string v = key_of(i) + "@" + std::to_string(gen) + "|";
  for (int j = 0; j < 300; ++j) v.push_back(static_cast<char>('a' + (i * 7 + gen * 13 + j) % 26));
  return v;
}

// Whether v is checked_value(i, g) for some g in [at_least, ...); sets g.
bool valid_value(std::string_view v, int i, long at_least, long& g) {
  const std::string prefix = key_of(i) + "@";
  if (!v.starts_with(prefix)) return false;
  const auto bar = v.find('|');
  if (bar == std::string_view::npos) return false;
  g = std::stol(std::string(v.substr(prefix.size(), bar - prefix.size())));
  return g >= at_least && v == checked_value(i, g);
}

}  // namespace

TEST_CASE("lmdb_backend: point reads from several threads never overlap a resize", "[lmdb][concurrency]") {
  // Each round: a fresh environment with a tiny map, point reads (no snapshot: each thread's own
  // read transaction) and now and then a short cursor (which takes the thread's transaction)
  // from three threads, and a writer whose growing data forces the map to be resized several
  // times under them. Every value read must be whole, and a point read no older than the one
  // this thread read before.
  constexpr int rounds = 16;
  constexpr int readers = 3;
  problems bad;
  long reads = 0;
  int resizes = 0;
  for (int round = 0; round < rounds; ++round) {
    temp_dir dir("lmdb-conc-points");
    ks::lmdb_options opts;
    opts.map_size = 64 * 1024;
    opts.max_map_size = 256u << 20;
    ks::lmdb_backend db(dir.path(), opts);
    {
      ks::write_batch w;
      for (int i = 0; i < n_keys; ++i) w.put(key_of(i), checked_value(i, 0));
      db.write(w, {});
    }
    std::atomic<bool> done{false};
    std::atomic<long> round_reads{0};
    std::vector<std::thread> threads;
    for (int r = 0; r < readers; ++r) {
      threads.emplace_back([&, r] {
        std::vector<long> last(n_keys, 0);
        std::string v;
        long n = 0;
        try {
          for (unsigned i = static_cast<unsigned>(r); !done.load(); i = i * 1103515245u + 12345u) {
            const int k = static_cast<int>(i % n_keys);
            long g = 0;
            if (n % 16 == 0) {
              // A cursor without a snapshot takes this thread's reader. (No get() while it lives:
              // that would wait for the resize, which waits for the cursor, until resize_wait.)
              int seen = 0;
              for (auto c = db.cursor({key_of(k), "gen0", false}, nullptr); c.valid() && seen < 4; c.next(), ++seen) {
                const int at = std::stoi(std::string(c.key().substr(4)));
                if (!valid_value(c.value(), at, 0, g)) bad.add("cursor read a damaged value at " + key_of(at));
              }
            }
            if (!db.get(key_of(k), v, nullptr)) {
              bad.add("get lost " + key_of(k));
            } else if (!valid_value(v, k, last[static_cast<std::size_t>(k)], g)) {
              bad.add("get of " + key_of(k) + " read a damaged or older value: " + v.substr(0, 40));
            } else {
              last[static_cast<std::size_t>(k)] = g;
            }
            ++n;
          }
        } catch (const std::exception& e) {
          bad.add(std::string("reader threw: ") + e.what());
        }
        round_reads.fetch_add(n);
      });
    }
    std::string writer_error;
    std::size_t size = db.map_size();
    try {
      for (long gen = 1; db.map_size() < (std::size_t{1} << 20); ++gen) {
        ks::write_batch w;
        for (int i = 0; i < n_keys; ++i) w.put(key_of(i), checked_value(i, gen));
        w.put("log/" + std::to_string(1000000 + gen), std::string(20000, 'l'));
        db.write(w, {});
        if (db.map_size() != size) {
          size = db.map_size();
          ++resizes;
        }
      }
    } catch (const std::exception& e) {
      writer_error = e.what();
    }
    done.store(true);
    for (auto& t : threads) t.join();
    CHECK(writer_error.empty());
    if (!writer_error.empty()) UNSCOPED_INFO(writer_error);
    reads += round_reads.load();
  }
  CHECK(bad.list.empty());
  for (const auto& p : bad.list) UNSCOPED_INFO(p);
  CHECK(reads > 0);
  CHECK(resizes >= rounds * 3);  // 64 KiB to 1 MiB: four doublings per round
}

TEST_CASE("lmdb_backend: destroying the backend while other threads keep their read transactions",
          "[lmdb][concurrency]") {
  // Threads read with get() and a cursor (so each keeps a read transaction and an MDB_cursor on
  // the environment), then wait while the test thread destroys the backend and opens the
  // environment again (often at the same address), and read from the new backend: what they kept
  // for the first is ended by its destructor (nothing leaks, no reader slot stays taken) and
  // never used again. One thread exits while a backend lives (giving its transaction back), the
  // others while the backend is destroyed and opened once more.
  temp_dir dir("lmdb-conc-close");
  const auto path = dir.path() / "env";
  ks::lmdb_options opts;
  opts.max_readers = 8;  // the threads' transactions take reader slots: reopening must free them
  std::optional<ks::lmdb_backend> db(std::in_place, path, opts);
  {
    ks::write_batch w;
    for (int i = 0; i < n_keys; ++i) w.put(key_of(i), value_of(1));
    db->write(w, {});
  }
  constexpr int threads_n = 4;
  constexpr int cycles = 12;
  std::mutex mu;
  std::condition_variable cv;
  int phase = 0;    // the cycle the threads may read in; advanced by the test thread
  int arrived = 0;  // threads done with the current phase
  problems bad;
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_n; ++t) {
    threads.emplace_back([&, t] {
      for (int cycle = 0; cycle < cycles; ++cycle) {
        {
          std::unique_lock lk(mu);
          cv.wait(lk, [&] { return phase > cycle; });
        }
        try {
          for (int i = 0; i < n_keys; ++i) {
            std::string v;
            if (!db->get(key_of(i), v, nullptr) || gen_of(v) != cycle + 1) bad.add("get read a wrong value");
          }
          // A cursor leaves its MDB_cursor with the thread's reader for the next one.
          int count = 0;
          for (auto c = db->cursor({"gen/", "gen0", (t & 1) != 0}, nullptr); c.valid(); c.next(), ++count) {
            if (gen_of(c.value()) != cycle + 1) bad.add("cursor read a wrong value");
          }
          if (count != n_keys) bad.add("cursor saw " + std::to_string(count) + " keys");
        } catch (const std::exception& e) {
          bad.add(std::string("reader threw: ") + e.what());
        }
        {
          std::lock_guard lk(mu);
          ++arrived;
        }
        cv.notify_all();
        if (t == 0 && cycle == cycles / 2) return;  // exits while a backend lives
      }
    });
  }
  int expected = threads_n;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    {
      std::lock_guard lk(mu);
      arrived = 0;
      phase = cycle + 1;
    }
    cv.notify_all();
    {
      std::unique_lock lk(mu);
      cv.wait(lk, [&] { return arrived == expected; });
    }
    if (cycle == cycles / 2) --expected;
    // Every thread keeps its read transaction on db: destroy it and open the environment again.
    db.reset();
    db.emplace(path, opts);
    ks::write_batch w;
    for (int i = 0; i < n_keys; ++i) w.put(key_of(i), value_of(cycle + 2));
    db->write(w, {});
  }
  for (auto& th : threads) th.join();
  CHECK(bad.list.empty());
  for (const auto& p : bad.list) UNSCOPED_INFO(p);
  // No reader slot stayed taken: every slot can hold a snapshot.
  std::vector<ks::lmdb_backend::snapshot_type> snaps;
  for (int i = 0; i < 8; ++i) snaps.push_back(db->snapshot());
  std::string v;
  CHECK(db->get(key_of(0), v, &snaps.back()));
  snaps.clear();
  db.reset();
}

TEST_CASE("lmdb_backend: the resize gate's waits end when the other side does, or at their deadline",
          "[lmdb][concurrency]") {
  // txn_gate (lmdb/detail/txn_gate.hpp) on its own: a resize (exclusive) waits for registered
  // transactions, a registration (enter) waits for a running resize; each wait ends as soon as the
  // other side is done, or gives up at the gate's wait. The times only bound from one side what
  // a loaded machine can stretch: a wait that gave up lasted at least the gate's wait, and one
  // that ended with the other side ended before its deadline.
  using gate_t = ks::lmdb_detail::txn_gate;
  using clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  const auto since = [](clock::time_point t0) { return std::chrono::duration_cast<milliseconds>(clock::now() - t0); };

  SECTION("a resize runs once the open transaction ends") {
    gate_t gate(milliseconds(20000));
    REQUIRE(gate.enter() == gate_t::status::ok);
    std::atomic<bool> ran{false};
    bool ran_too_early = false;
    std::thread t([&] {
      std::this_thread::sleep_for(milliseconds(50));
      ran_too_early = ran.load();
      gate.leave();
    });
    std::size_t still = 0;
    const auto t0 = clock::now();
    const auto st = gate.exclusive([&] { ran = true; }, still);
    const auto took = since(t0);
    t.join();
    CHECK(st == gate_t::status::ok);
    CHECK(ran.load());
    CHECK_FALSE(ran_too_early);
    CHECK(took < milliseconds(20000));
  }
  SECTION("a resize gives up when a transaction stays open, and new ones enter again") {
    gate_t gate(milliseconds(100));
    REQUIRE(gate.enter() == gate_t::status::ok);
    std::size_t still = 0;
    bool ran = false;
    const auto t0 = clock::now();
    CHECK(gate.exclusive([&] { ran = true; }, still) == gate_t::status::timed_out);
    CHECK(since(t0) >= milliseconds(100));
    CHECK_FALSE(ran);
    CHECK(still == 1);
    CHECK(gate.enter() == gate_t::status::ok);  // the gate reopened
    gate.leave();
    gate.leave();
  }
  SECTION("a resize waits for a thread's slot too") {
    gate_t gate(milliseconds(20000));
    gate_t::slot slot;
    gate.add_slot(&slot);
    REQUIRE(gate.try_enter(slot));
    std::thread t([&] {
      std::this_thread::sleep_for(milliseconds(50));
      gate.leave(slot);
    });
    std::size_t still = 0;
    bool ran = false;
    CHECK(gate.exclusive([&] { ran = slot.state.load() == gate_t::slot::idle; }, still) == gate_t::status::ok);
    t.join();
    CHECK(ran);
  }
  SECTION("a registration waits while a resize waits, and enters once the resize is over") {
    // A transaction is open, a resize waits for it (the gate is closed), and a new registration
    // waits for the resize: either the transaction ends and the resize runs, or it stays open
    // and the resize gives up at its deadline; the registration enters after that, not before.
    const bool gives_up = GENERATE(false, true);
    gate_t gate(gives_up ? milliseconds(200) : milliseconds(20000));
    REQUIRE(gate.enter() == gate_t::status::ok);  // the open transaction
    // Written by the resizer under the gate's mutex before it reopens the gate, so read safely
    // once enter() got in: the resize ran (ran) or gave up (still: what it left open).
    bool ran = false;
    std::size_t still = 0;
    std::thread resizer([&] { gate.exclusive([&] { ran = true; }, still); });
    // The resize has closed the gate once try_enter() fails.
    for (;;) {
      if (!gate.try_enter()) break;
      gate.leave();
      std::this_thread::yield();
    }
    std::thread ender([&] {
      std::this_thread::sleep_for(milliseconds(50));
      if (!gives_up) gate.leave();  // the open transaction ends: the resize runs
    });
    // Giving up, the resize must reach its deadline well before the registration reaches its own.
    if (gives_up) std::this_thread::sleep_for(milliseconds(100));
    const auto st = gate.enter();
    const bool resize_ran = ran;
    const std::size_t left_open = still;
    ender.join();
    resizer.join();
    CHECK(st == gate_t::status::ok);
    if (gives_up) {
      CHECK_FALSE(resize_ran);
      CHECK(left_open == 1);
    } else {
      CHECK(resize_ran);
    }
    gate.leave();
    if (gives_up) gate.leave();
  }
}
