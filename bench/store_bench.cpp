// store_bench: typed keyschema operations against the same operations written on the native
// LevelDB and LMDB APIs, in one run, on the same keys and at the same durability.
//
// The keys are the broker's message metadata keys ("DESTINATION", queue, "MESSAGE_METADATA",
// message id) -> 1 KiB body. The native side builds exactly the same key bytes with a hand-written
// encoder (checked against keyschema's at start-up), reads the id back from the key bytes and
// calls the engine directly on the same database handle (leveldb_backend::native(),
// lmdb_backend::native()), with the same read options (LevelDB: verify_checksums) and no sync on
// either side. Pairs, per engine:
//
//   put               one put of a new key                    DB::Put / one write transaction
//   batch100          100 puts in one atomic batch             WriteBatch / one write transaction
//   get               a point read returning an owned value    DB::Get into a new std::string /
//                                                              mdb_get in a renewed read txn
//   get_into          a point read into a reused object        the same into a reused string
//   scan_owning       1,000 entries: id and value copied into one reused entry / string
//   scan_views        1,000 entries: id and a view of the value
//   scan_keys         1,000 entries: id only
//   scan_keys_raw     the same over random (incompressible) bodies (LevelDB only: its table
//                     blocks are stored raw and read from the file on every visit, not cached)
//   scan_reverse      1,000 entries last first, owning
//   erase_batch       100 erases in one atomic batch
//   drained_first     the first entry of a drained queue (limit(1); none is there), the queue's
//                     key bytes built once: the native prefix string, keyschema's scan view
//                     (iterated again for each lookup: each pass opens a new cursor)
//   drained_first_named  the same, both sides building the key bytes from the queue's name on
//                     every lookup (native: into a reused string)
//
// Each pair is registered as <engine>/<op>/keyschema and <engine>/<op>/native. After the run a
// table gives, per pair, the CPU time of both sides (the median when --benchmark_repetitions is
// given) and the ratio native/keyschema: 1.00 is parity, the target is >= 0.95. Scans report
// the time per scanned entry. The write pairs (put, batch100, erase_batch) and the gets also run
// as <engine>/<op>/user: the same native code on a plain handle of its own, opened with the
// engine's default options (LevelDB: leveldb::Options{} with create_if_missing, no checksums on
// reads, LevelDB's own Env; LMDB: no flags), the user's view; a second table gives the wall time
// of keyschema, native and user for those (waiting, which CPU time cannot see).
//
// Run: build/bench/bench/store_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
// (databases go to $TMPDIR or /tmp). Interleaving the repetitions keeps either side of a pair from
// running alone while the engine compacts or the machine is busy. KEYSCHEMA_BENCH_CONTROL=1 makes
// a control run: both sides of every pair run the native code, and the ratios show the spread of
// the timings themselves (see control_run below; 0 or unset is a normal run, any other value is
// refused).
//
// Instruction counts, which the machine's load does not move: bench/callgrind_pairs.sh
// build/bench/bench/store_bench [filter] runs each pair under callgrind at two fixed iteration
// counts (KEYSCHEMA_BENCH_ITERATIONS) and prints the instructions per operation.
#include <benchmark/benchmark.h>
#include "fixed_iterations.hpp"
#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>

#include <leveldb/db.h>
#include <leveldb/iterator.h>
#include <leveldb/write_batch.h>
#include <lmdb.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace ks = keyschema;

using metadata = ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                              ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
using schema = ks::schema<metadata>;

constexpr std::size_t kScanEntries = 1000;
constexpr std::size_t kGetKeys = 10000;
constexpr std::size_t kBatch = 100;
constexpr std::uint64_t kFirstId = 1'000'000'000'007ull;  // realistic ids: 5-6 significant bytes
const std::string kBody(1024, 'b');
// The queues the scans read: kScanQueue holds kBody (Snappy shrinks LevelDB's blocks, which
// LevelDB then keeps in its block cache), kRawQueue random bodies (LevelDB stores those blocks raw
// and reads them through its memory map of the table file on every visit).
constexpr char kScanQueue[] = "scan";
constexpr char kRawQueue[] = "rawb";

// 1 KiB of pseudo-random bytes (xorshift64), different for every seed.
std::string random_body(std::uint64_t seed) {
  std::string out(1024, '\0');
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 56);
  }
  return out;
}
// Writes on both sides: no sync (keyschema's default is sync; the native calls' is not).
constexpr ks::write_options kNoSync{.sync = false};

// --- the hand-written native key code -------------------------------------------------------------

const std::string kDestination = std::string("\x02" "DESTINATION", 12) + '\0';
const std::string kMetadata = std::string("\x02" "MESSAGE_METADATA", 17) + '\0';

// The prefix of a queue's metadata keys. REQUIRES: queue holds no NUL.
// The key bytes every metadata key of `queue` starts with, into out (its capacity reused).
void native_prefix_into(std::string& out, std::string_view queue) {
  out.assign(kDestination);
  out.push_back('\x02');
  out.append(queue);
  out.push_back('\0');
  out.append(kMetadata);
}

std::string native_prefix(std::string_view queue) {
  std::string out;
  native_prefix_into(out, queue);
  return out;
}

// Appends a non-negative integer element: 0x14 + n, then n big-endian bytes.
inline void append_id(std::string& out, std::uint64_t v) {
  const int n = v == 0 ? 0 : (64 - __builtin_clzll(v) + 7) / 8;
  char buf[9];
  buf[0] = static_cast<char>(0x14 + n);
  for (int i = 0; i < n; ++i) buf[1 + i] = static_cast<char>(v >> (8 * (n - 1 - i)));
  out.append(buf, static_cast<std::size_t>(n) + 1);
}

inline void native_key(std::string& out, const std::string& prefix, std::uint64_t id) {
  out.assign(prefix);
  append_id(out, id);
}

// The id at the end of a metadata key whose prefix has prefix_size bytes; false when malformed.
inline bool native_id(const char* k, std::size_t size, std::size_t prefix_size, std::uint64_t& id) {
  if (size <= prefix_size) return false;
  const int n = static_cast<unsigned char>(k[prefix_size]) - 0x14;
  if (n < 0 || n > 8 || size != prefix_size + 1 + static_cast<std::size_t>(n)) return false;
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(k[prefix_size + 1 + i]);
  id = v;
  return true;
}

std::filesystem::path bench_dir(const char* name) {
  const char* tmp = std::getenv("TMPDIR");
  std::filesystem::path p = std::filesystem::path(tmp != nullptr ? tmp : "/tmp") /
                            ("keyschema_store_bench_" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p.parent_path());
  return p;
}

// --- the two engines --------------------------------------------------------------------------------

template <class Backend>
struct fixture {
  std::unique_ptr<ks::store<schema, Backend>> db;
  std::uint64_t next_put_id = kFirstId;
  std::uint64_t next_native_put_id = kFirstId;
};

template <class Backend>
fixture<Backend>& engine();

// Opened on first use, closed in order at the end (native handles before the stores).
std::unique_ptr<fixture<ks::leveldb_backend>> g_leveldb;
std::unique_ptr<fixture<ks::lmdb_backend>> g_lmdb;

void populate(auto& db) {
  // Reads go to queues written once: "get" (kGetKeys keys), "scan" and "rawb" (kScanEntries
  // each), and "drained" (written and erased), followed by "drainee" with entries.
  auto b = db.batch();
  for (std::uint64_t i = 0; i < kGetKeys; ++i) b.template put<metadata>({"get", kFirstId + i}, ks::bytes(kBody));
  for (std::uint64_t i = 0; i < kScanEntries; ++i) b.template put<metadata>({kScanQueue, kFirstId + i}, ks::bytes(kBody));
  for (std::uint64_t i = 0; i < kScanEntries; ++i)
    b.template put<metadata>({kRawQueue, kFirstId + i}, ks::bytes(random_body(i)));
  for (std::uint64_t i = 0; i < 10; ++i) b.template put<metadata>({"drainee", kFirstId + i}, ks::bytes(kBody));
  b.commit();
  for (std::uint64_t i = 0; i < kScanEntries; ++i) b.template put<metadata>({"drained", kFirstId + i}, ks::bytes(kBody));
  b.commit();
  for (std::uint64_t i = 0; i < kScanEntries; ++i) b.template erase<metadata>({"drained", kFirstId + i});
  b.commit({.sync = true});
  // LevelDB: everything both sides read starts compacted (the drained queue's tombstones are
  // gone), so neither side runs before and the other after a compaction that its own seeks
  // triggered.
  if constexpr (requires { db.unsafe_backend().native().CompactRange(nullptr, nullptr); })
    db.unsafe_backend().native().CompactRange(nullptr, nullptr);
}

template <>
fixture<ks::leveldb_backend>& engine<ks::leveldb_backend>() {
  if (!g_leveldb) {
    g_leveldb = std::make_unique<fixture<ks::leveldb_backend>>();
    g_leveldb->db = std::make_unique<ks::store<schema, ks::leveldb_backend>>(bench_dir("leveldb"));
    populate(*g_leveldb->db);
  }
  return *g_leveldb;
}

template <>
fixture<ks::lmdb_backend>& engine<ks::lmdb_backend>() {
  if (!g_lmdb) {
    g_lmdb = std::make_unique<fixture<ks::lmdb_backend>>();
    // A map large enough for the whole run: the native side does not grow it as keyschema does.
    g_lmdb->db = std::make_unique<ks::store<schema, ks::lmdb_backend>>(bench_dir("lmdb"),
                                                                      ks::lmdb_options{.map_size = std::size_t{16} << 30});
    populate(*g_lmdb->db);
  }
  return *g_lmdb;
}

// Which handle a native function runs on: the backend's own (native: keyschema's options and
// Env, the same database), or a plain handle of its own opened with the engine's default options
// (user: what a user who writes the engine calls without keyschema gets; populated with the same
// keys).
enum class side { native, user };

// Native LevelDB: the backend's own handle and read options, or a plain one.
struct native_leveldb {
  leveldb::DB& db;
  leveldb::ReadOptions ro;
  leveldb::WriteOptions wo;  // sync = false, as on the keyschema side
  std::uint64_t next_put_id = kFirstId;  // the user side's ids (the native side's are the fixture's)
  explicit native_leveldb(leveldb::DB& d, bool verify_checksums = true) : db(d) { ro.verify_checksums = verify_checksums; }

  void put(const std::string& k, const std::string& v) {
    if (!db.Put(wo, k, v).ok()) throw std::runtime_error("Put");
  }
  void write(leveldb::WriteBatch& b) {
    if (!db.Write(wo, &b).ok()) throw std::runtime_error("Write");
  }
  bool get(const std::string& k, std::string& v) {
    const leveldb::Status s = db.Get(ro, k, &v);
    if (s.ok()) return true;
    if (s.IsNotFound()) return false;
    throw std::runtime_error("Get");
  }
};

// Native LMDB: the backend's env and dbi, or a plain env's; one read transaction renewed per read,
// as native code keeps it; writes commit with MDB_NOSYNC like the keyschema side's sync = false.
struct native_lmdb {
  MDB_env* env;
  MDB_dbi dbi;
  MDB_txn* rtxn = nullptr;
  std::uint64_t next_put_id = kFirstId;  // the user side's ids
  native_lmdb(MDB_env* e, MDB_dbi d) : env(e), dbi(d) {
    if (::mdb_txn_begin(env, nullptr, MDB_RDONLY, &rtxn) != MDB_SUCCESS) throw std::runtime_error("mdb_txn_begin");
    ::mdb_txn_reset(rtxn);
    ::mdb_env_set_flags(env, MDB_NOSYNC, 1);
  }
  ~native_lmdb() {
    ::mdb_env_set_flags(env, MDB_NOSYNC, 0);
    ::mdb_txn_abort(rtxn);
  }
  native_lmdb(const native_lmdb&) = delete;
  native_lmdb& operator=(const native_lmdb&) = delete;

  MDB_txn* begin_read() {
    if (::mdb_txn_renew(rtxn) != MDB_SUCCESS) throw std::runtime_error("mdb_txn_renew");
    return rtxn;
  }
  void end_read() { ::mdb_txn_reset(rtxn); }
  template <class F>
  void write(F&& f) {
    ::mdb_env_set_flags(env, MDB_NOSYNC, 1);  // per write: keyschema's no-sync writes clear it after themselves
    MDB_txn* t = nullptr;
    if (::mdb_txn_begin(env, nullptr, 0, &t) != MDB_SUCCESS) throw std::runtime_error("mdb_txn_begin");
    f(t);
    if (::mdb_txn_commit(t) != MDB_SUCCESS) throw std::runtime_error("mdb_txn_commit");
  }
  void put(MDB_txn* t, const std::string& k, const std::string& v) {
    MDB_val mk{k.size(), const_cast<char*>(k.data())};
    MDB_val mv{v.size(), const_cast<char*>(v.data())};
    if (::mdb_put(t, dbi, &mk, &mv, 0) != MDB_SUCCESS) throw std::runtime_error("mdb_put");
  }
  void del(MDB_txn* t, const std::string& k) {
    MDB_val mk{k.size(), const_cast<char*>(k.data())};
    const int rc = ::mdb_del(t, dbi, &mk, nullptr);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) throw std::runtime_error("mdb_del");
  }
  bool get(const std::string& k, std::string& v) {
    MDB_txn* t = begin_read();
    MDB_val mk{k.size(), const_cast<char*>(k.data())};
    MDB_val mv;
    const int rc = ::mdb_get(t, dbi, &mk, &mv);
    if (rc == MDB_SUCCESS) v.assign(static_cast<const char*>(mv.mv_data), mv.mv_size);
    end_read();
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) throw std::runtime_error("mdb_get");
    return rc == MDB_SUCCESS;
  }
};

std::unique_ptr<native_leveldb> g_native_leveldb;
std::unique_ptr<native_lmdb> g_native_lmdb;

// The user side's plain handles: LevelDB with leveldb::Options{} (create_if_missing), LMDB with
// no flags (a map large enough for the run), each in its own directory, holding the keys the
// reads use ("get": kGetKeys entries of kBody), written natively. Closed before the stores.
struct user_handles {
  std::unique_ptr<leveldb::DB> leveldb_db;
  std::unique_ptr<native_leveldb> leveldb;
  MDB_env* lmdb_env = nullptr;
  std::unique_ptr<native_lmdb> lmdb;
  ~user_handles() {
    lmdb.reset();
    if (lmdb_env != nullptr) ::mdb_env_close(lmdb_env);
    leveldb.reset();
    leveldb_db.reset();
  }
};
std::unique_ptr<user_handles> g_user;

user_handles& user() {
  if (!g_user) g_user = std::make_unique<user_handles>();
  return *g_user;
}

native_leveldb& ul() {
  user_handles& u = user();
  if (!u.leveldb) {
    leveldb::Options o;
    o.create_if_missing = true;
    leveldb::DB* db = nullptr;
    if (!leveldb::DB::Open(o, bench_dir("leveldb-user").string(), &db).ok()) throw std::runtime_error("leveldb::DB::Open");
    u.leveldb_db.reset(db);
    u.leveldb = std::make_unique<native_leveldb>(*db, /*verify_checksums=*/false);
    leveldb::WriteBatch b;
    std::string k;
    const std::string prefix = native_prefix("get");
    for (std::uint64_t i = 0; i < kGetKeys; ++i) {
      native_key(k, prefix, kFirstId + i);
      b.Put(k, kBody);
    }
    u.leveldb->write(b);
    db->CompactRange(nullptr, nullptr);
  }
  return *u.leveldb;
}

native_lmdb& um() {
  user_handles& u = user();
  if (!u.lmdb) {
    const std::filesystem::path dir = bench_dir("lmdb-user");
    std::filesystem::create_directories(dir);
    MDB_txn* t = nullptr;
    MDB_dbi dbi = 0;
    if (::mdb_env_create(&u.lmdb_env) != MDB_SUCCESS || ::mdb_env_set_mapsize(u.lmdb_env, std::size_t{16} << 30) != MDB_SUCCESS ||
        ::mdb_env_open(u.lmdb_env, dir.c_str(), 0, 0644) != MDB_SUCCESS || ::mdb_txn_begin(u.lmdb_env, nullptr, 0, &t) != MDB_SUCCESS ||
        ::mdb_dbi_open(t, nullptr, 0, &dbi) != MDB_SUCCESS || ::mdb_txn_commit(t) != MDB_SUCCESS)
      throw std::runtime_error("lmdb: cannot open the user side's environment");
    u.lmdb = std::make_unique<native_lmdb>(u.lmdb_env, dbi);
    std::string k;
    const std::string prefix = native_prefix("get");
    u.lmdb->write([&](MDB_txn* w) {
      for (std::uint64_t i = 0; i < kGetKeys; ++i) {
        native_key(k, prefix, kFirstId + i);
        u.lmdb->put(w, k, kBody);
      }
    });
  }
  return *u.lmdb;
}

// --- keyschema side (the same code for both engines) -------------------------------------------------

template <class Backend>
void ks_put(benchmark::State& state) {
  auto& f = engine<Backend>();
  const ks::bytes body(kBody);
  for (auto _ : state) f.db->template put<metadata>({"putk", f.next_put_id++}, body, kNoSync);
}

template <class Backend>
void ks_batch100(benchmark::State& state) {
  auto& f = engine<Backend>();
  const ks::bytes body(kBody);
  auto b = f.db->batch();
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) b.template put<metadata>({"btck", f.next_put_id++}, body);
    b.commit(kNoSync);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}

template <class Backend>
void ks_get(benchmark::State& state) {
  auto& f = engine<Backend>();
  std::uint64_t i = 0;
  for (auto _ : state) {
    auto v = f.db->template get<metadata>({"get", kFirstId + (i++ * 7919) % kGetKeys});
    benchmark::DoNotOptimize(v);
  }
}

template <class Backend>
void ks_get_into(benchmark::State& state) {
  auto& f = engine<Backend>();
  std::uint64_t i = 0;
  ks::bytes v;
  for (auto _ : state) {
    const bool found = f.db->template get_into<metadata>({"get", kFirstId + (i++ * 7919) % kGetKeys}, v);
    benchmark::DoNotOptimize(found);
    benchmark::DoNotOptimize(v);
  }
}

template <class Backend>
void ks_scan_owning(benchmark::State& state) {
  auto& f = engine<Backend>();
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (const auto& e : f.db->template scan<metadata>(kScanQueue)) sum += e.template get<"message_id">() + e.value.size();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kScanEntries));
}

template <class Backend>
void ks_scan_views(benchmark::State& state) {
  auto& f = engine<Backend>();
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (const auto& e : f.db->template scan<metadata>(kScanQueue).value_views())
      sum += e.template get<"message_id">() + e.value.size();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kScanEntries));
}

template <class Backend, const char* Queue = kScanQueue>
void ks_scan_keys(benchmark::State& state) {
  auto& f = engine<Backend>();
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (const auto& e : f.db->template scan<metadata>(Queue).keys_only()) sum += e.template get<"message_id">();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kScanEntries));
}

template <class Backend>
void ks_scan_reverse(benchmark::State& state) {
  auto& f = engine<Backend>();
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (const auto& e : f.db->template scan<metadata>(kScanQueue).reverse())
      sum += e.template get<"message_id">() + e.value.size();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kScanEntries));
}

template <class Backend>
void ks_erase_batch(benchmark::State& state) {
  auto& f = engine<Backend>();
  const std::uint64_t first = f.next_put_id;
  f.next_put_id += kBatch * static_cast<std::uint64_t>(state.max_iterations);
  keyschema_bench::not_counted([&] {
    auto b = f.db->batch();
    for (std::uint64_t i = 0; i < kBatch * state.max_iterations; ++i) {
      b.template put<metadata>({"ersk", first + i}, ks::bytes("x"));
      if (b.size() == 1000) b.commit(kNoSync);
    }
    b.commit(kNoSync);
  });
  std::uint64_t id = first;
  auto b = f.db->batch();
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) b.template erase<metadata>({"ersk", id++});
    b.commit(kNoSync);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}

// Where the first-entry lookups get the queue's key bytes from: built once before the loop
// (drained_first: the native side's prefix string; keyschema's scan view, which opens a new cursor
// each time it is iterated) or from the queue's name on every lookup (drained_first_named: the
// native side writes its prefix into a reused string).
enum class queue_key { kept, per_lookup };

template <class Backend, queue_key Q>
void ks_drained_first(benchmark::State& state) {
  auto& f = engine<Backend>();
  const std::string queue = "drained";
  const auto head = f.db->template scan<metadata>(queue).limit(1);
  for (auto _ : state) {
    std::uint64_t first = 0;
    if constexpr (Q == queue_key::kept) {
      for (const auto& e : head) first = e.template get<"message_id">();
    } else {
      for (const auto& e : f.db->template scan<metadata>(queue).limit(1)) first = e.template get<"message_id">();
    }
    benchmark::DoNotOptimize(first);
  }
}

// --- native LevelDB ------------------------------------------------------------------------------------

native_leveldb& nl() {
  if (!g_native_leveldb) g_native_leveldb = std::make_unique<native_leveldb>(engine<ks::leveldb_backend>().db->unsafe_backend().native());
  return *g_native_leveldb;
}
template <side S>
native_leveldb& ldb() {
  if constexpr (S == side::native) return nl();
  else return ul();
}
// The next id of a native side's new keys.
template <side S>
std::uint64_t& leveldb_next_id() {
  if constexpr (S == side::native) return engine<ks::leveldb_backend>().next_native_put_id;
  else return ul().next_put_id;
}

template <side S = side::native>
void leveldb_put(benchmark::State& state) {
  std::uint64_t& next = leveldb_next_id<S>();
  const std::string prefix = native_prefix("putn");
  std::string k;
  for (auto _ : state) {
    native_key(k, prefix, next++);
    ldb<S>().put(k, kBody);
  }
}

template <side S = side::native>
void leveldb_batch100(benchmark::State& state) {
  std::uint64_t& next = leveldb_next_id<S>();
  const std::string prefix = native_prefix("btcn");
  std::string k;
  leveldb::WriteBatch b;
  for (auto _ : state) {
    b.Clear();
    for (std::size_t i = 0; i < kBatch; ++i) {
      native_key(k, prefix, next++);
      b.Put(k, kBody);
    }
    ldb<S>().write(b);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}

template <side S = side::native>
void leveldb_get(benchmark::State& state) {
  const std::string prefix = native_prefix("get");
  std::string k;
  std::uint64_t i = 0;
  for (auto _ : state) {
    native_key(k, prefix, kFirstId + (i++ * 7919) % kGetKeys);
    std::string v;
    const bool found = ldb<S>().get(k, v);
    benchmark::DoNotOptimize(found);
    benchmark::DoNotOptimize(v);
  }
}

template <side S = side::native>
void leveldb_get_into(benchmark::State& state) {
  const std::string prefix = native_prefix("get");
  std::string k, v;
  std::uint64_t i = 0;
  for (auto _ : state) {
    native_key(k, prefix, kFirstId + (i++ * 7919) % kGetKeys);
    const bool found = ldb<S>().get(k, v);
    benchmark::DoNotOptimize(found);
    benchmark::DoNotOptimize(v);
  }
}

enum class scan_kind { owning, views, keys, reverse };

template <scan_kind Kind, const char* Queue = kScanQueue>
void leveldb_scan(benchmark::State& state) {
  const std::string prefix = native_prefix(Queue);
  std::string upper = prefix;
  upper.push_back('\xff');
  std::string value;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    std::unique_ptr<leveldb::Iterator> it(nl().db.NewIterator(nl().ro));
    if constexpr (Kind == scan_kind::reverse) {
      it->Seek(upper);
      if (it->Valid()) it->Prev();
      else it->SeekToLast();
    } else {
      it->Seek(prefix);
    }
    for (; it->Valid();) {
      const leveldb::Slice k = it->key();
      if (k.size() < prefix.size() || std::memcmp(k.data(), prefix.data(), prefix.size()) != 0) break;
      std::uint64_t id = 0;
      if (!native_id(k.data(), k.size(), prefix.size(), id)) throw std::runtime_error("bad key");
      sum += id;
      if constexpr (Kind == scan_kind::owning || Kind == scan_kind::reverse) {
        const leveldb::Slice v = it->value();
        value.assign(v.data(), v.size());
        sum += value.size();
      } else if constexpr (Kind == scan_kind::views) {
        sum += it->value().size();
      }
      if constexpr (Kind == scan_kind::reverse) it->Prev();
      else it->Next();
    }
    if (!it->status().ok()) throw std::runtime_error("Iterator");
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kScanEntries));
}

template <side S = side::native>
void leveldb_erase_batch(benchmark::State& state) {
  std::uint64_t& next = leveldb_next_id<S>();
  const std::string prefix = native_prefix("ersn");
  const std::uint64_t first = next;
  next += kBatch * static_cast<std::uint64_t>(state.max_iterations);
  std::string k;
  keyschema_bench::not_counted([&] {
    leveldb::WriteBatch b;
    for (std::uint64_t i = 0; i < kBatch * state.max_iterations; ++i) {
      native_key(k, prefix, first + i);
      b.Put(k, "x");
      if ((i + 1) % 1000 == 0) {
        ldb<S>().write(b);
        b.Clear();
      }
    }
    ldb<S>().write(b);
  });
  std::uint64_t id = first;
  leveldb::WriteBatch b;
  for (auto _ : state) {
    b.Clear();
    for (std::size_t i = 0; i < kBatch; ++i) {
      native_key(k, prefix, id++);
      b.Delete(k);
    }
    ldb<S>().write(b);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}

template <queue_key Q>
void leveldb_drained_first(benchmark::State& state) {
  const std::string queue = "drained";
  std::string prefix = native_prefix(queue);
  for (auto _ : state) {
    if constexpr (Q == queue_key::per_lookup) native_prefix_into(prefix, queue);
    std::uint64_t first = 0;
    std::unique_ptr<leveldb::Iterator> it(nl().db.NewIterator(nl().ro));
    it->Seek(prefix);
    if (it->Valid()) {
      const leveldb::Slice k = it->key();
      if (k.size() >= prefix.size() && std::memcmp(k.data(), prefix.data(), prefix.size()) == 0 &&
          !native_id(k.data(), k.size(), prefix.size(), first))
        throw std::runtime_error("bad key");
    }
    if (!it->status().ok()) throw std::runtime_error("Iterator");
    benchmark::DoNotOptimize(first);
  }
}

// --- native LMDB ---------------------------------------------------------------------------------------

native_lmdb& nm() {
  if (!g_native_lmdb) {
    auto& b = engine<ks::lmdb_backend>().db->unsafe_backend();
    g_native_lmdb = std::make_unique<native_lmdb>(b.native(), b.native_dbi());
  }
  return *g_native_lmdb;
}

template <side S>
native_lmdb& mdb() {
  if constexpr (S == side::native) return nm();
  else return um();
}
template <side S>
std::uint64_t& lmdb_next_id() {
  if constexpr (S == side::native) return engine<ks::lmdb_backend>().next_native_put_id;
  else return um().next_put_id;
}

template <side S = side::native>
void lmdb_put(benchmark::State& state) {
  std::uint64_t& next = lmdb_next_id<S>();
  const std::string prefix = native_prefix("putn");
  std::string k;
  for (auto _ : state) {
    native_key(k, prefix, next++);
    mdb<S>().write([&](MDB_txn* t) { mdb<S>().put(t, k, kBody); });
  }
}

template <side S = side::native>
void lmdb_batch100(benchmark::State& state) {
  std::uint64_t& next = lmdb_next_id<S>();
  const std::string prefix = native_prefix("btcn");
  std::string k;
  for (auto _ : state) {
    mdb<S>().write([&](MDB_txn* t) {
      for (std::size_t i = 0; i < kBatch; ++i) {
        native_key(k, prefix, next++);
        mdb<S>().put(t, k, kBody);
      }
    });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}

template <side S = side::native>
void lmdb_get(benchmark::State& state) {
  const std::string prefix = native_prefix("get");
  std::string k;
  std::uint64_t i = 0;
  for (auto _ : state) {
    native_key(k, prefix, kFirstId + (i++ * 7919) % kGetKeys);
    std::string v;
    const bool found = mdb<S>().get(k, v);
    benchmark::DoNotOptimize(found);
    benchmark::DoNotOptimize(v);
  }
}

template <side S = side::native>
void lmdb_get_into(benchmark::State& state) {
  const std::string prefix = native_prefix("get");
  std::string k, v;
  std::uint64_t i = 0;
  for (auto _ : state) {
    native_key(k, prefix, kFirstId + (i++ * 7919) % kGetKeys);
    const bool found = mdb<S>().get(k, v);
    benchmark::DoNotOptimize(found);
    benchmark::DoNotOptimize(v);
  }
}

template <scan_kind Kind>
void lmdb_scan(benchmark::State& state) {
  const std::string prefix = native_prefix(kScanQueue);
  std::string upper = prefix;
  upper.push_back('\xff');
  std::string value;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    MDB_txn* t = nm().begin_read();
    MDB_cursor* c = nullptr;
    if (::mdb_cursor_open(t, nm().dbi, &c) != MDB_SUCCESS) throw std::runtime_error("mdb_cursor_open");
    MDB_val k, v;
    int rc;
    if constexpr (Kind == scan_kind::reverse) {
      k = MDB_val{upper.size(), upper.data()};
      rc = ::mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
      rc = rc == MDB_SUCCESS ? ::mdb_cursor_get(c, &k, &v, MDB_PREV) : ::mdb_cursor_get(c, &k, &v, MDB_LAST);
    } else {
      k = MDB_val{prefix.size(), const_cast<char*>(prefix.data())};
      rc = ::mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    }
    for (; rc == MDB_SUCCESS;) {
      const char* kd = static_cast<const char*>(k.mv_data);
      if (k.mv_size < prefix.size() || std::memcmp(kd, prefix.data(), prefix.size()) != 0) break;
      std::uint64_t id = 0;
      if (!native_id(kd, k.mv_size, prefix.size(), id)) throw std::runtime_error("bad key");
      sum += id;
      if constexpr (Kind == scan_kind::owning || Kind == scan_kind::reverse) {
        value.assign(static_cast<const char*>(v.mv_data), v.mv_size);
        sum += value.size();
      } else if constexpr (Kind == scan_kind::views) {
        sum += std::string_view(static_cast<const char*>(v.mv_data), v.mv_size).size();
      }
      rc = ::mdb_cursor_get(c, &k, &v, Kind == scan_kind::reverse ? MDB_PREV : MDB_NEXT);
    }
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) throw std::runtime_error("mdb_cursor_get");
    ::mdb_cursor_close(c);
    nm().end_read();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kScanEntries));
}

template <side S = side::native>
void lmdb_erase_batch(benchmark::State& state) {
  std::uint64_t& next = lmdb_next_id<S>();
  const std::string prefix = native_prefix("ersn");
  const std::uint64_t first = next;
  next += kBatch * static_cast<std::uint64_t>(state.max_iterations);
  std::string k;
  keyschema_bench::not_counted([&] {
    for (std::uint64_t i = 0; i < kBatch * state.max_iterations; i += 1000) {
      mdb<S>().write([&](MDB_txn* t) {
        for (std::uint64_t j = i; j < i + 1000 && j < kBatch * state.max_iterations; ++j) {
          native_key(k, prefix, first + j);
          mdb<S>().put(t, k, "x");
        }
      });
    }
  });
  std::uint64_t id = first;
  for (auto _ : state) {
    mdb<S>().write([&](MDB_txn* t) {
      for (std::size_t i = 0; i < kBatch; ++i) {
        native_key(k, prefix, id++);
        mdb<S>().del(t, k);
      }
    });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}

template <queue_key Q>
void lmdb_drained_first(benchmark::State& state) {
  const std::string queue = "drained";
  std::string prefix = native_prefix(queue);
  for (auto _ : state) {
    if constexpr (Q == queue_key::per_lookup) native_prefix_into(prefix, queue);
    std::uint64_t first = 0;
    MDB_txn* t = nm().begin_read();
    MDB_cursor* c = nullptr;
    if (::mdb_cursor_open(t, nm().dbi, &c) != MDB_SUCCESS) throw std::runtime_error("mdb_cursor_open");
    MDB_val k{prefix.size(), const_cast<char*>(prefix.data())}, v;
    const int rc = ::mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    if (rc == MDB_SUCCESS) {
      const char* kd = static_cast<const char*>(k.mv_data);
      if (k.mv_size >= prefix.size() && std::memcmp(kd, prefix.data(), prefix.size()) == 0 &&
          !native_id(kd, k.mv_size, prefix.size(), first))
        throw std::runtime_error("bad key");
    } else if (rc != MDB_NOTFOUND) {
      throw std::runtime_error("mdb_cursor_get");
    }
    ::mdb_cursor_close(c);
    nm().end_read();
    benchmark::DoNotOptimize(first);
  }
}

// The native key encoder writes exactly keyschema's bytes.
void check_keys() {
  for (std::uint64_t id : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{255}, std::uint64_t{256}, kFirstId,
                           ~std::uint64_t{0}}) {
    std::string mine;
    native_key(mine, native_prefix("scan"), id);
    if (mine != ks::tuple::pack("DESTINATION", "scan", "MESSAGE_METADATA", id)) {
      std::fprintf(stderr, "store_bench: the native key encoder differs from keyschema's for id %llu\n",
                   static_cast<unsigned long long>(id));
      std::exit(2);
    }
  }
}

constexpr std::int64_t kEraseIterations = 2000;

using keyschema_bench::fixed_iterations;  // KEYSCHEMA_BENCH_ITERATIONS (bench/fixed_iterations.hpp)

// The control run (KEYSCHEMA_BENCH_CONTROL=1 in the environment): the keyschema side of every
// pair runs the native code too, so each ratio shows how far two runs of the same code differ in
// this run, on this machine: the spread within which a timed ratio says nothing.
bool control_run() {
  static const bool on = [] {
    const char* v = std::getenv("KEYSCHEMA_BENCH_CONTROL");
    if (v == nullptr || std::string_view(v) == "0") return false;
    if (std::string_view(v) == "1") return true;
    std::fprintf(stderr, "store_bench: KEYSCHEMA_BENCH_CONTROL is '%s'; set it to 1 (control run) or 0 (normal run)\n", v);
    std::exit(2);
  }();
  return on;
}
using bench_fn = void (*)(benchmark::State&);
bench_fn keyschema_side(bench_fn ks_fn, bench_fn native_fn) { return control_run() ? native_fn : ks_fn; }

// Registers fn as name at static initialization (as BENCHMARK does, for a function pointer).
#define KS_CAT2(a, b) a##b
#define KS_CAT(a, b) KS_CAT2(a, b)
#define KS_REGISTER(name, fn)                                                                 \
  [[maybe_unused]] ::benchmark::internal::Benchmark* const KS_CAT(ks_registered_, __COUNTER__) = \
      ::benchmark::RegisterBenchmark(name, fn)

#define KS_PAIR(engine_name, op, ks_fn, native_fn)                                                            \
  KS_REGISTER(#engine_name "/" #op "/keyschema", keyschema_side(ks_fn, native_fn))->Apply(fixed_iterations); \
  KS_REGISTER(#engine_name "/" #op "/native", native_fn)->Apply(fixed_iterations)

// The pairs of every engine e (leveldb, lmdb): its native functions are e##_put, e##_scan<...>, ...
// The user side (a plain handle with the engine's default options) of the write pairs and gets.
#define KS_USER(e, op) KS_REGISTER(#e "/" #op "/user", e##_##op<side::user>)->Apply(fixed_iterations)

#define KS_ENGINE_PAIRS(e)                                                                                  \
  KS_PAIR(e, put, ks_put<ks::e##_backend>, e##_put<>);                                                     \
  KS_USER(e, put);                                                                                         \
  KS_PAIR(e, batch100, ks_batch100<ks::e##_backend>, e##_batch100<>);                                      \
  KS_USER(e, batch100);                                                                                    \
  KS_PAIR(e, get, ks_get<ks::e##_backend>, e##_get<>);                                                     \
  KS_USER(e, get);                                                                                         \
  KS_PAIR(e, get_into, ks_get_into<ks::e##_backend>, e##_get_into<>);                                      \
  KS_USER(e, get_into);                                                                                    \
  KS_PAIR(e, scan_owning, ks_scan_owning<ks::e##_backend>, e##_scan<scan_kind::owning>);                   \
  KS_PAIR(e, scan_views, ks_scan_views<ks::e##_backend>, e##_scan<scan_kind::views>);                      \
  KS_PAIR(e, scan_keys, ks_scan_keys<ks::e##_backend>, e##_scan<scan_kind::keys>);                         \
  KS_PAIR(e, scan_reverse, ks_scan_reverse<ks::e##_backend>, e##_scan<scan_kind::reverse>);                \
  KS_REGISTER(#e "/erase_batch/keyschema", keyschema_side(ks_erase_batch<ks::e##_backend>, e##_erase_batch<>)) \
      ->Iterations(kEraseIterations)                                                                       \
      ->Apply(fixed_iterations);                                                                           \
  KS_REGISTER(#e "/erase_batch/native", e##_erase_batch<>)->Iterations(kEraseIterations)->Apply(fixed_iterations); \
  KS_REGISTER(#e "/erase_batch/user", e##_erase_batch<side::user>)->Iterations(kEraseIterations)->Apply(fixed_iterations); \
  KS_PAIR(e, drained_first, (ks_drained_first<ks::e##_backend, queue_key::kept>),                          \
          e##_drained_first<queue_key::kept>);                                                             \
  KS_PAIR(e, drained_first_named, (ks_drained_first<ks::e##_backend, queue_key::per_lookup>),              \
          e##_drained_first<queue_key::per_lookup>)

KS_ENGINE_PAIRS(leveldb);
KS_PAIR(leveldb, scan_keys_raw, (ks_scan_keys<ks::leveldb_backend, kRawQueue>),
        (leveldb_scan<scan_kind::keys, kRawQueue>));
KS_ENGINE_PAIRS(lmdb);

// Prints the normal console output and remembers each run's CPU time for the summary.
class summary_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {  // single runs, or the median when repetitions are aggregated
      if (r.error_occurred) continue;
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      if (r.run_type != Run::RT_Aggregate && r.repetitions > 1) continue;
      std::string name = r.run_name.str();
      if (const auto it = name.find("/iterations:"); it != std::string::npos) name.erase(it);
      const auto slash = name.rfind('/');
      if (slash == std::string::npos) continue;
      times_[name.substr(0, slash)][name.substr(slash + 1)] = {r.GetAdjustedCPUTime(), r.GetAdjustedRealTime()};
    }
  }

  void print_summary() const {
    std::printf("\nsummary: CPU time per operation (scans: per scan of %zu entries; batches: per batch of %zu), "
                "ratio = native / keyschema (1.00 = parity, target >= 0.95)\n",
                kScanEntries, kBatch);
    if (control_run())
      std::printf("control run (KEYSCHEMA_BENCH_CONTROL=1): the keyschema column ran the native code; each ratio "
                  "is two runs of the same code\n");
    std::printf("  %-26s %14s %14s %7s\n", "pair", "keyschema", "native", "ratio");
    for (const auto& [op, sides] : times_) {
      const auto k = sides.find("keyschema");
      const auto n = sides.find("native");
      if (k == sides.end() || n == sides.end() || k->second.cpu <= 0) continue;
      std::printf("  %-26s %11.1f ns %11.1f ns %7.2f\n", op.c_str(), k->second.cpu, n->second.cpu,
                  n->second.cpu / k->second.cpu);
    }
    // Wall time shows waiting (a sync, a stall behind a compaction, a lock) that CPU time and
    // instruction counts cannot see; the user side is the same operation on a plain handle with
    // the engine's default options (its own database), what a user without keyschema gets.
    std::printf("\nwall time per operation of the pairs with a user side; ratio = other / keyschema\n");
    std::printf("  %-26s %14s %14s %7s %14s %7s\n", "pair", "keyschema", "native", "ratio", "user", "ratio");
    for (const auto& [op, sides] : times_) {
      const auto k = sides.find("keyschema");
      const auto n = sides.find("native");
      const auto u = sides.find("user");
      if (k == sides.end() || n == sides.end() || u == sides.end() || k->second.wall <= 0) continue;
      std::printf("  %-26s %11.1f ns %11.1f ns %7.2f %11.1f ns %7.2f\n", op.c_str(), k->second.wall, n->second.wall,
                  n->second.wall / k->second.wall, u->second.wall, u->second.wall / k->second.wall);
    }
  }

 private:
  struct times {
    double cpu = 0, wall = 0;
  };
  std::map<std::string, std::map<std::string, times>> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  check_keys();
  summary_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  g_user.reset();
  g_native_leveldb.reset();
  g_native_lmdb.reset();
  g_leveldb.reset();
  g_lmdb.reset();
  const char* tmp = std::getenv("TMPDIR");
  std::filesystem::remove_all(std::filesystem::path(tmp != nullptr ? tmp : "/tmp") /
                              ("keyschema_store_bench_" + std::to_string(::getpid())));
  return 0;
}
