// bench/concurrency_bench.cpp: concurrent writers, through keyschema and through each engine's own
// API, side by side in one run.
//
// Each writer thread commits single messages: one message is two entries (its metadata and its
// body), written in one atomic commit, durable (sync on) or not (sync off). The keyschema side is
// ks::store<broker, B> with a batch of two puts per commit; the native side is what a user writes
// without keyschema: the engine opened with its default options in a directory of its own, one
// shared handle (LevelDB, RocksDB, LMDB's environment) or one connection per thread (SQLite, WAL,
// synchronous=FULL for sync on and NORMAL for off), the same keys and values, one
// WriteBatch/transaction per message.
//
//   concurrency_bench [--threads 1,2,4,8,16] [--seconds S] [--rounds R] [--sync on|off|both]
//                     [--backends leveldb,lmdb,rocksdb,sqlite] [--dir DIR]
//
// For every backend, sync setting and thread count it runs R rounds (default 3), each measuring
// keyschema and native for S seconds (default 1) in alternating order (so a change in the
// machine's load hits both sides alike), and prints the median commits per second of each side,
// their ratio (keyschema / native), keyschema's rate relative to its own single-thread rate, and
// the min..max of the rounds. Wall time is what counts here: a durable commit is mostly waiting
// for the disk, and sharing that wait between writers (group commit) is what is measured.
//
// Thread-safety: a program; each measurement owns its databases.
#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>
#include <keyschema/rocksdb.hpp>
#include <keyschema/sqlite.hpp>

#include <leveldb/db.h>
#include <leveldb/write_batch.h>
#include <lmdb.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace ks = keyschema;
namespace fs = std::filesystem;

using message_metadata = ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">,
                                      ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">,
                                      ks::field<"message_id", std::uint64_t>>;
using message_content = ks::keyspace<"message_content", ks::bytes, ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>,
                                     ks::field<"offset", std::uint32_t>, ks::lit<"MESSAGE_CONTENT">>;
using broker = ks::schema<message_metadata, message_content>;

const std::string metadata_value(64, 'm');
const std::string body_value(1024, 'b');

// The message ids of thread t: disjoint ranges.
std::uint64_t message_id(int t, std::uint64_t i) { return (static_cast<std::uint64_t>(t) << 40) | i; }

// Runs `threads` writers, each calling commit(t, i) for i = 0, 1, ... until `seconds` have passed.
// Returns commits per second (wall time).
double run_writers(int threads, double seconds, const std::function<void(int, std::uint64_t)>& commit) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> total{0};
  std::vector<std::thread> ws;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    ws.emplace_back([&, t] {
      std::uint64_t i = 0;
      while (!stop.load(std::memory_order_relaxed)) commit(t, i++);
      total.fetch_add(i);
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& w : ws) w.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(total.load()) / elapsed;
}

// --- keyschema -------------------------------------------------------------------------------------

template <class Backend, class... Args>
double keyschema_side(int threads, double seconds, bool sync, Args&&... args) {
  ks::store<broker, Backend> db(std::forward<Args>(args)...);
  return run_writers(threads, seconds, [&](int t, std::uint64_t i) {
    auto b = db.batch();
    const std::uint64_t id = message_id(t, i);
    b.template put<message_metadata>({"queue-" + std::to_string(t % 4), id}, ks::bytes(metadata_value));
    b.template put<message_content>({id, 0u}, ks::bytes(body_value));
    b.commit({.sync = sync});
  });
}

// The keys the keyschema side writes, for the native sides (the same bytes).
std::string metadata_key(int t, std::uint64_t id) {
  return ks::tuple::pack("DESTINATION", "queue-" + std::to_string(t % 4), "MESSAGE_METADATA", id);
}
std::string content_key(std::uint64_t id) { return ks::tuple::pack("MESSAGE", id, std::uint32_t{0}, "MESSAGE_CONTENT"); }

// --- native ----------------------------------------------------------------------------------------

double leveldb_native(const fs::path& dir, int threads, double seconds, bool sync) {
  leveldb::Options o;
  o.create_if_missing = true;
  leveldb::DB* raw = nullptr;
  if (!leveldb::DB::Open(o, dir.string(), &raw).ok()) throw std::runtime_error("leveldb::DB::Open failed");
  std::unique_ptr<leveldb::DB> db(raw);
  leveldb::WriteOptions wo;
  wo.sync = sync;
  return run_writers(threads, seconds, [&](int t, std::uint64_t i) {
    const std::uint64_t id = message_id(t, i);
    leveldb::WriteBatch b;
    b.Put(metadata_key(t, id), metadata_value);
    b.Put(content_key(id), body_value);
    if (!db->Write(wo, &b).ok()) throw std::runtime_error("leveldb::DB::Write failed");
  });
}

double rocksdb_native(const fs::path& dir, int threads, double seconds, bool sync) {
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(o, dir.string(), &raw).ok()) throw std::runtime_error("rocksdb::DB::Open failed");
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return run_writers(threads, seconds, [&](int t, std::uint64_t i) {
    const std::uint64_t id = message_id(t, i);
    rocksdb::WriteBatch b;
    b.Put(metadata_key(t, id), metadata_value);
    b.Put(content_key(id), body_value);
    if (!db->Write(wo, &b).ok()) throw std::runtime_error("rocksdb::DB::Write failed");
  });
}

double lmdb_native(const fs::path& dir, int threads, double seconds, bool sync) {
  fs::create_directories(dir);
  MDB_env* env = nullptr;
  if (mdb_env_create(&env) != 0) throw std::runtime_error("mdb_env_create failed");
  mdb_env_set_mapsize(env, std::size_t{4} << 30);
  mdb_env_set_maxreaders(env, 256);
  if (mdb_env_open(env, dir.c_str(), sync ? 0u : MDB_NOSYNC, 0644) != 0) throw std::runtime_error("mdb_env_open failed");
  MDB_dbi dbi = 0;
  {
    MDB_txn* txn = nullptr;
    mdb_txn_begin(env, nullptr, 0, &txn);
    mdb_dbi_open(txn, nullptr, 0, &dbi);
    mdb_txn_commit(txn);
  }
  const double rate = run_writers(threads, seconds, [&](int t, std::uint64_t i) {
    const std::uint64_t id = message_id(t, i);
    const std::string mk = metadata_key(t, id), ck = content_key(id);
    MDB_txn* txn = nullptr;
    if (mdb_txn_begin(env, nullptr, 0, &txn) != 0) throw std::runtime_error("mdb_txn_begin failed");
    MDB_val k1{mk.size(), const_cast<char*>(mk.data())}, v1{metadata_value.size(), const_cast<char*>(metadata_value.data())};
    MDB_val k2{ck.size(), const_cast<char*>(ck.data())}, v2{body_value.size(), const_cast<char*>(body_value.data())};
    if (mdb_put(txn, dbi, &k1, &v1, 0) != 0 || mdb_put(txn, dbi, &k2, &v2, 0) != 0) {
      mdb_txn_abort(txn);
      throw std::runtime_error("mdb_put failed");
    }
    if (mdb_txn_commit(txn) != 0) throw std::runtime_error("mdb_txn_commit failed");
  });
  mdb_env_close(env);
  return rate;
}

double sqlite_native(const fs::path& dir, int threads, double seconds, bool sync) {
  fs::create_directories(dir);
  const std::string file = (dir / "native.sqlite3").string();
  auto open = [&] {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK)
      throw std::runtime_error("sqlite3_open_v2 failed");
    sqlite3_busy_timeout(db, 60'000);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
    sqlite3_exec(db, sync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
    return db;
  };
  {
    sqlite3* db = open();
    sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  std::vector<sqlite3*> conns(static_cast<std::size_t>(threads));
  std::vector<sqlite3_stmt*> stmts(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    conns[static_cast<std::size_t>(t)] = open();
    sqlite3_prepare_v2(conns[static_cast<std::size_t>(t)], "INSERT OR REPLACE INTO kv(k, v) VALUES(?1, ?2)", -1,
                       &stmts[static_cast<std::size_t>(t)], nullptr);
  }
  const double rate = run_writers(threads, seconds, [&](int t, std::uint64_t i) {
    sqlite3* db = conns[static_cast<std::size_t>(t)];
    sqlite3_stmt* st = stmts[static_cast<std::size_t>(t)];
    const std::uint64_t id = message_id(t, i);
    const std::string mk = metadata_key(t, id), ck = content_key(id);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) throw std::runtime_error("BEGIN failed");
    for (const auto& [k, v] : {std::pair<const std::string&, const std::string&>(mk, metadata_value), {ck, body_value}}) {
      sqlite3_bind_blob(st, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
      sqlite3_bind_blob(st, 2, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
      if (sqlite3_step(st) != SQLITE_DONE) throw std::runtime_error("INSERT failed");
      sqlite3_reset(st);
    }
    if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) throw std::runtime_error("COMMIT failed");
  });
  for (int t = 0; t < threads; ++t) {
    sqlite3_finalize(stmts[static_cast<std::size_t>(t)]);
    sqlite3_close(conns[static_cast<std::size_t>(t)]);
  }
  return rate;
}

// --- the run ---------------------------------------------------------------------------------------

struct side_fns {
  std::function<double(const fs::path&, int, double, bool)> keyschema, native;
};

side_fns backend_fns(const std::string& name) {
  if (name == "leveldb")
    return {[](const fs::path& d, int t, double s, bool y) { return keyschema_side<ks::leveldb_backend>(t, s, y, d); },
            leveldb_native};
  if (name == "rocksdb")
    return {[](const fs::path& d, int t, double s, bool y) { return keyschema_side<ks::rocksdb_backend>(t, s, y, d); },
            rocksdb_native};
  if (name == "lmdb")
    return {[](const fs::path& d, int t, double s, bool y) {
              return keyschema_side<ks::lmdb_backend>(t, s, y, d, ks::lmdb_options{.map_size = std::size_t{4} << 30});
            },
            lmdb_native};
  if (name == "sqlite")
    return {[](const fs::path& d, int t, double s, bool y) { return keyschema_side<ks::sqlite_backend>(t, s, y, d); },
            sqlite_native};
  throw std::invalid_argument("concurrency_bench: unknown backend '" + name + "' (known: leveldb, lmdb, rocksdb, sqlite)");
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= s.size()) {
    const std::size_t comma = s.find(',', at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<int> thread_counts{1, 2, 4, 8, 16};
    std::vector<std::string> backends{"leveldb", "rocksdb", "lmdb", "sqlite"};
    std::vector<bool> syncs{true, false};
    double seconds = 1.0;
    int rounds = 3;
    fs::path dir = fs::temp_directory_path() / ("keyschema-concurrency-bench-" + std::to_string(::getpid()));
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument("concurrency_bench: " + a + " needs a value");
        return argv[++i];
      };
      if (a == "--threads") {
        thread_counts.clear();
        for (const auto& t : split(value())) thread_counts.push_back(std::stoi(t));
      } else if (a == "--backends") {
        backends = split(value());
      } else if (a == "--seconds") {
        seconds = std::stod(value());
      } else if (a == "--rounds") {
        rounds = std::stoi(value());
      } else if (a == "--dir") {
        dir = value();
      } else if (a == "--sync") {
        const std::string v = value();
        if (v == "on") syncs = {true};
        else if (v == "off") syncs = {false};
        else if (v == "both") syncs = {true, false};
        else throw std::invalid_argument("concurrency_bench: --sync takes on, off or both, not '" + v + "'");
      } else {
        throw std::invalid_argument("concurrency_bench: unknown argument '" + a +
                                    "' (--threads, --seconds, --rounds, --sync, --backends, --dir)");
      }
    }
    for (const auto& b : backends) (void)backend_fns(b);  // refuse an unknown name before running anything
    if (rounds < 1 || seconds <= 0) throw std::invalid_argument("concurrency_bench: --rounds and --seconds must be positive");

    std::printf("# concurrency_bench: single-message commits (2 entries: 64 B + 1 KiB) per second, wall time;\n"
                "# median of %d rounds of %.1f s per side, sides alternating; ratio = keyschema / native\n",
                rounds, seconds);
    std::printf("%-8s %-4s %7s %12s %12s %7s %9s %23s %23s\n", "backend", "sync", "threads", "keyschema", "native",
                "ratio", "x 1 thr", "keyschema min..max", "native min..max");
    int run = 0;
    for (const auto& name : backends) {
      const side_fns fns = backend_fns(name);
      for (const bool sync : syncs) {
        double single = 0;
        for (const int threads : thread_counts) {
          std::vector<double> k, n;
          for (int r = 0; r < rounds; ++r) {
            const fs::path kd = dir / ("k" + std::to_string(run)), nd = dir / ("n" + std::to_string(run));
            ++run;
            if (r % 2 == 0) {
              k.push_back(fns.keyschema(kd, threads, seconds, sync));
              n.push_back(fns.native(nd, threads, seconds, sync));
            } else {
              n.push_back(fns.native(nd, threads, seconds, sync));
              k.push_back(fns.keyschema(kd, threads, seconds, sync));
            }
            fs::remove_all(kd);
            fs::remove_all(nd);
          }
          const double km = median(k), nm = median(n);
          if (threads == thread_counts.front()) single = km;
          char kr[64], nr[64];
          std::snprintf(kr, sizeof kr, "%.0f..%.0f", *std::min_element(k.begin(), k.end()), *std::max_element(k.begin(), k.end()));
          std::snprintf(nr, sizeof nr, "%.0f..%.0f", *std::min_element(n.begin(), n.end()), *std::max_element(n.begin(), n.end()));
          std::printf("%-8s %-4s %7d %12.0f %12.0f %7.2f %9.2f %23s %23s\n", name.c_str(), sync ? "on" : "off", threads, km,
                      nm, km / nm, single > 0 ? km / single : 0.0, kr, nr);
          std::fflush(stdout);
        }
      }
    }
    fs::remove_all(dir);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
