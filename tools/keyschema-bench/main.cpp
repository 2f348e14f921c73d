// keyschema-bench: chooses the store by measurement. Runs the broker workload and the field's
// standard table through keyschema on every backend built in (memory, LevelDB, LMDB, and RocksDB
// and SQLite when their adapters exist), at sync on and off, in one run; runs the write and read
// workloads (publish and its variants, writers_N, readers_N, the standard table's) on each
// engine's native API with hand-written keys in the same run, twice: with the adapter's settings
// (the native column: what the typed layer costs) and as a user would open the engine, with its
// default options (the user column); runs the mixed workload (publishers, consumers and an
// expiry sweeper at once on one store, each role reported on its own); measures the machine's
// fsync rate first. --setting-costs measures what each adapter setting costs instead. Built on
// <keyschema/comparison.hpp>: table on stdout, --json, --svg, progress on stderr.
//
// etcd (keyschema::etcd) joins when --backends names it: the program starts a local 3-member
// cluster with scripts/etcd-cluster.sh (etcd_cluster.hpp) under the data directory, or uses
// --etcd-endpoints, runs the same workloads at sync on with batches cut to etcd's 128 operations
// per Txn, and stops the cluster at the end. --etcd-limits measures etcd's limits instead
// (etcd_limits.hpp).
//
// KEYSCHEMA_BENCH_WITH_<DB> (1 or 0, set by tools/CMakeLists.txt from the targets that exist)
// select the backends compiled in; KEYSCHEMA_BENCH_ETCD_SCRIPT is the cluster script's path
// relative to the directory of the program's executable (installed: bin/../share/keyschema/; in a
// build tree, tools/CMakeLists.txt puts a copy at the same relative place).
#include <keyschema/comparison.hpp>
#include <keyschema/keyschema.hpp>

#ifndef KEYSCHEMA_BENCH_WITH_LEVELDB
#define KEYSCHEMA_BENCH_WITH_LEVELDB 0
#endif
#ifndef KEYSCHEMA_BENCH_WITH_LMDB
#define KEYSCHEMA_BENCH_WITH_LMDB 0
#endif
#ifndef KEYSCHEMA_BENCH_WITH_ROCKSDB
#define KEYSCHEMA_BENCH_WITH_ROCKSDB 0
#endif
#ifndef KEYSCHEMA_BENCH_WITH_SQLITE
#define KEYSCHEMA_BENCH_WITH_SQLITE 0
#endif
#ifndef KEYSCHEMA_BENCH_WITH_ETCD
#define KEYSCHEMA_BENCH_WITH_ETCD 0
#endif
#ifndef KEYSCHEMA_BENCH_ETCD_SCRIPT
#define KEYSCHEMA_BENCH_ETCD_SCRIPT "../share/keyschema/etcd-cluster.sh"
#endif

// KEYSCHEMA_BENCH_IF_<DB>(x): ", x" when that backend is built in.
#if KEYSCHEMA_BENCH_WITH_LEVELDB
#define KEYSCHEMA_BENCH_IF_LEVELDB(x) , x
#else
#define KEYSCHEMA_BENCH_IF_LEVELDB(x)
#endif
#if KEYSCHEMA_BENCH_WITH_LMDB
#define KEYSCHEMA_BENCH_IF_LMDB(x) , x
#else
#define KEYSCHEMA_BENCH_IF_LMDB(x)
#endif
#if KEYSCHEMA_BENCH_WITH_ROCKSDB
#define KEYSCHEMA_BENCH_IF_ROCKSDB(x) , x
#else
#define KEYSCHEMA_BENCH_IF_ROCKSDB(x)
#endif
#if KEYSCHEMA_BENCH_WITH_SQLITE
#define KEYSCHEMA_BENCH_IF_SQLITE(x) , x
#else
#define KEYSCHEMA_BENCH_IF_SQLITE(x)
#endif
#if KEYSCHEMA_BENCH_WITH_ETCD
#define KEYSCHEMA_BENCH_IF_ETCD(x) , x
#else
#define KEYSCHEMA_BENCH_IF_ETCD(x)
#endif

#if KEYSCHEMA_BENCH_WITH_LEVELDB
#include <keyschema/leveldb.hpp>
#include <keyschema/leveldb/detail/read_counting_env.hpp>
#include <keyschema/leveldb/detail/syncing_env.hpp>
#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/write_batch.h>
#endif
#if KEYSCHEMA_BENCH_WITH_LMDB
#include <keyschema/lmdb.hpp>
#include <lmdb.h>
#endif
#if KEYSCHEMA_BENCH_WITH_ROCKSDB
#include <keyschema/rocksdb.hpp>
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#endif
#if KEYSCHEMA_BENCH_WITH_SQLITE
#include <keyschema/sqlite.hpp>
#include <sqlite3.h>
#endif
#if KEYSCHEMA_BENCH_WITH_ETCD
#include <keyschema/etcd.hpp>
#include "etcd_cluster.hpp"
#include "etcd_limits.hpp"
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <mutex>
#include <optional>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace ks = keyschema;
namespace cmp = keyschema::comparison;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------------
// Schemas

// MESSAGE.$id.$offset.MESSAGE_CONTENT -> content chunk
using message_content = ks::keyspace<"message_content", ks::bytes, ks::lit<"MESSAGE">,
    ks::field<"message_id", std::uint64_t>, ks::field<"offset", std::uint32_t>, ks::lit<"MESSAGE_CONTENT">>;
// DESTINATION.$destination.MESSAGE_METADATA.$id -> metadata
using message_metadata = ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">,
    ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
// MESSAGE_INDEX.$id -> destination (which queue holds a message)
using message_index = ks::keyspace<"message_index", std::string, ks::lit<"MESSAGE_INDEX">,
    ks::field<"message_id", std::uint64_t>>;
// MESSAGE_COUNT.$destination -> count
using message_count = ks::keyspace<"message_count", std::int64_t, ks::lit<"MESSAGE_COUNT">,
    ks::field<"destination", std::string>>;
using broker = ks::schema<message_content, message_metadata, message_index, message_count>;
// The placed variant: the content in a placement of its own ("content"; LMDB: a named database).
// It runs the 64 KiB workloads as stores of their own beside the others: "lmdb-placed" (LMDB: a
// named database) and "rocksdb-blobs" (RocksDB: a column family with blob files).
using content_placed = ks::placed<"content", message_content>;
using broker_placed = ks::schema<content_placed, message_metadata, message_index, message_count>;
// The content keyspace of a store: content_placed in a store of broker_placed, else message_content.
template <class Store>
struct content_of {
  using type = message_content;
};
template <class B>
struct content_of<ks::store<broker_placed, B>> {
  using type = content_placed;
};
template <class Store>
using content_t = typename content_of<std::remove_cvref_t<Store>>::type;

// The expiry workload: metadata whose first 8 bytes are the expiry time (milliseconds since the
// epoch, big-endian; 0: no expiry), and the index the store maintains from it.
using expiring_metadata = ks::keyspace<"expiring_metadata", ks::bytes, ks::lit<"DESTINATION">,
    ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
struct by_expiry {
  std::optional<std::tuple<std::int64_t, std::string, std::uint64_t>> operator()(
      const expiring_metadata::key_type& k, const ks::bytes& v) const {
    const std::string_view b = v.view();
    if (b.size() < 8) return std::nullopt;
    std::uint64_t at = 0;
    for (int i = 0; i < 8; ++i) at = at << 8 | static_cast<unsigned char>(b[static_cast<std::size_t>(i)]);
    if (at == 0) return std::nullopt;
    return std::tuple{static_cast<std::int64_t>(at), std::get<0>(k), std::get<1>(k)};
  }
};
using expiry_index = ks::keyspace<"expiry_index", ks::index_of<expiring_metadata, by_expiry>, ks::lit<"EXPIRY">,
    ks::field<"at", std::int64_t>, ks::field<"destination", std::string>, ks::field<"message_id", std::uint64_t>>;
using expiry_schema = ks::schema<expiring_metadata, expiry_index>;
// The mixed workload's store: messages whose metadata may carry an expiry, with the index.
using mixed_schema = ks::schema<message_content, message_index, message_count, expiring_metadata, expiry_index>;

// The standard table: 24-byte keys, 150-byte values.
using kv = ks::keyspace<"kv", ks::bytes, ks::lit<"KV">, ks::field<"k", ks::bytes>>;
using table = ks::schema<kv>;

// The default sizes (with 5 repetitions of every cell, no warm-up, both baselines of the native
// side) keep the default run short on a 2-core machine with a few hundred fsyncs per second;
// --full multiplies them by 10, --scale F by F.
struct sizes {
  std::uint64_t messages = 1000;    // broker: messages published / preloaded per run
  std::uint64_t variant_messages = 1000;  // publish over 1, 100 and 10,000 queues
  std::uint64_t queues = 10;
  std::uint64_t entries = 5000;     // standard table: entries loaded
  std::uint64_t single_writes = 40;   // individual writes (one commit each)
  std::uint64_t batches = 20;       // batch writes: batches of 100
  std::uint64_t reads = 5000;       // random reads
  std::uint64_t range_reads = 2000; // random range reads of 10 entries
  std::uint64_t removals = 2000;    // removals, in batches of 100
  std::uint64_t lookups = 200;      // first-message lookups on a drained queue
  std::uint64_t chunked = 40;       // publish_64k: messages of 64 KiB
  std::uint64_t xa = 12;            // XA transactions (10 enqueues + 10 dequeues each)
  std::uint64_t topics = 3000;      // recovery: topics, 2 messages each
  std::uint64_t reopens = 3;        // reopens per repetition
  std::uint64_t concurrent_commits = 80;   // writers_N: single-message commits, all threads together
  std::uint64_t concurrent_reads = 40000;  // readers_N: point reads, all threads together (tens of
                                           // milliseconds a sample on the fast engines)
  std::uint64_t mixed_messages = 400;      // mixed: messages published, all publishers together

  void scale(double f) {
    for (std::uint64_t* v : {&messages, &variant_messages, &entries, &single_writes, &batches, &reads, &range_reads, &removals, &lookups,
                             &chunked, &xa, &topics, &concurrent_commits, &concurrent_reads, &mixed_messages})
      *v = std::max<std::uint64_t>(10, static_cast<std::uint64_t>(static_cast<double>(*v) * f));
  }
};

// Batches that do not fit a backend's limits (etcd: 128 operations and 1.5 MiB per Txn) run
// with the largest batch that does; each reduction is noted here and printed under the table.
std::set<std::string>& batch_notes() {
  static std::set<std::string> notes;
  return notes;
}

// The most items (at most `want`) of `ops_per_item` operations and about `bytes_per_item` key and
// value bytes that one write of db's backend takes, with `extra_ops(n)` more operations for n items.
template <class Store, class Extra>
std::size_t fit_batch(const Store& db, const char* workload, std::size_t want, std::size_t ops_per_item,
                      std::size_t bytes_per_item, Extra extra_ops) {
  const ks::backend_limits lim = db.backend().limits();
  std::size_t n = want;
  while (n > 1 && (n * ops_per_item + extra_ops(n) > lim.max_ops_per_write ||
                   (lim.max_bytes_per_write != ks::backend_limits::unlimited &&
                    n * bytes_per_item > lim.max_bytes_per_write)))
    --n;
  if (n < want)
    batch_notes().insert(std::string(workload) + ": " + std::to_string(n) + " per commit instead of " +
                              std::to_string(want) + " (the backend takes " + std::to_string(lim.max_ops_per_write) +
                              " operations per write)");
  return n;
}

const ks::bytes content_1k(std::string(1024, 'c'));
const ks::bytes metadata(std::string(64, 'm'));
std::string queue_name(std::uint64_t q) { return "queue-" + std::to_string(q); }
// A metadata value whose first 8 bytes are the expiry time `at` (big-endian; 0: none).
std::string expiring_meta(std::uint64_t at) {
  std::string v(metadata.view());
  for (int i = 0; i < 8; ++i) v[static_cast<std::size_t>(i)] = static_cast<char>(at >> (56 - 8 * i));
  return v;
}
bool no_expiry(std::string_view meta) { return meta.substr(0, 8) == std::string_view("\0\0\0\0\0\0\0\0", 8); }
// The expiry workload's message id: 20 % with an expiry (already due when swept), the others none.
std::uint64_t expiry_at(std::uint64_t id) { return id % 5 == 0 ? 1000 + id : 0; }

// Consumes every queue from its head: per queue, page(queue) as one timed operation (it returns
// the messages it consumed) until a page returns fewer than `per`.
template <class Page>
void consume_queues(const sizes& sz, std::size_t per, cmp::probe& p, Page&& page) {
  for (std::uint64_t q = 0; q < sz.queues; ++q) {
    const std::string name = queue_name(q);
    for (;;) {
      std::uint64_t got = 0;
      p.op([&] { return got = page(name); });
      if (got < per) break;
    }
  }
}

// 64 KiB bodies (large): stored as chunks of 16 KiB.
const std::string body_64k(64 * 1024, 'b');
constexpr std::size_t chunk_16k = 16 * 1024;

// Publishes `n` messages round-robin over `queues` queues, 100 per commit (fewer when the
// backend's writes take fewer operations: 3 per message, or 8 for a large one, and one count per
// queue touched): each message's content, metadata, index entry, and the counts of the queues
// the commit touched. The content: 1 KiB in one value, written in a batch; or, when `large`, a
// 64 KiB body in chunks of 16 KiB (put_chunked: a header and 4 chunks under one message), written
// in a transaction (put_chunked needs one). Content: the content keyspace, message_content or
// content_placed (the placed variant: content_t<Store>).
template <class Content = message_content, class Store>
void publish(Store& db, std::uint64_t n, std::uint64_t queues, ks::write_options wo, cmp::probe* p,
             const std::string& workload = "publish", bool large = false) {
  std::map<std::string, std::int64_t> counts;
  const std::string name = p != nullptr ? workload : std::string(large ? "publish_64k" : "publish") + " (preparation, not timed)";
  auto per_queue = [&](std::size_t k) { return std::min<std::size_t>(k, queues); };
  const std::uint64_t per = large ? fit_batch(db, name.c_str(), 100, 8, body_64k.size() + 200, per_queue)
                                  : fit_batch(db, name.c_str(), 100, 3, 1300, per_queue);
  for (std::uint64_t first = 0; first < n; first += per) {
    const std::uint64_t last = std::min(n, first + per);
    auto write = [&](auto&& w) {
      std::map<std::string, std::int64_t> touched;
      for (std::uint64_t id = first; id < last; ++id) {
        const std::string q = queue_name(id % queues);
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(w)>, decltype(db.batch())>)
          w.template put<Content>({id, 0u}, content_1k);
        else
          ks::put_chunked<Content>(w, {id}, body_64k, chunk_16k);
        w.template put<message_metadata>({q, id}, metadata);
        w.template put<message_index>({id}, q);
        touched[q] = ++counts[q];
      }
      for (const auto& [q, c] : touched) w.template put<message_count>({q}, c);
      w.commit(wo);
    };
    auto commit = [&] {
      if (large) write(db.transaction());
      else write(db.batch());
    };
    if (p != nullptr) p->op(commit, last - first);
    else commit();
  }
}

auto publish_workload(std::string name, std::uint64_t messages, std::uint64_t queues) {
  return [name, messages, queues](auto& db, cmp::probe& p) { publish(db, messages, queues, p.write(), &p, name); };
}

auto publish_64k_workload(const sizes& sz) {
  return [sz](auto& db, cmp::probe& p) {
    publish<content_t<decltype(db)>>(db, sz.chunked, sz.queues, p.write(), &p, "publish_64k", true);
  };
}
// The body of message id, read whole (read_chunked); its size checked.
template <class Content, class Store>
void read_body(Store& db, std::uint64_t id) {
  const std::optional<ks::bytes> body = ks::read_chunked<Content>(db, {id});
  if (!body || body->size() != body_64k.size())
    throw std::runtime_error("64 KiB: body of message " + std::to_string(id) + " missing or incomplete");
}
// consume of 64 KiB bodies: per queue, `per` messages from the head a transaction, each body read
// and erased (erase_chunked) with the metadata and index entry, the count written.
auto consume_64k_workload(const sizes& sz) {
  return [sz](auto& db, cmp::probe& p) {
    using Content = content_t<decltype(db)>;
    publish<Content>(db, sz.chunked, sz.queues, {.sync = false}, nullptr, {}, true);
    // Per message: the header and 4 chunks, the metadata and the index entry erased, and what the
    // transaction read (a backend's write limit counts it: etcd), 12 in all; and the count.
    const std::size_t per = fit_batch(db, "consume_64k", 100, 12, 200, [](std::size_t) { return std::size_t{2}; });
    consume_queues(sz, per, p, [&](const std::string& q) {
      auto tx = db.transaction();
      std::vector<std::uint64_t> ids;
      for (const auto& m : tx.template scan<message_metadata>(q).limit(per)) ids.push_back(m.template get<"message_id">());
      for (const std::uint64_t id : ids) {
        read_body<Content>(tx, id);
        ks::erase_chunked<Content>(tx, {id});
        tx.template erase<message_metadata>({q, id});
        tx.template erase<message_index>({id});
      }
      tx.template put<message_count>({q}, tx.template get<message_count>({q}).value_or(0) - static_cast<std::int64_t>(ids.size()));
      tx.commit(p.write());
      return ids.size();
    });
  };
}
// browse of 64 KiB bodies: 5 rounds over every queue, each a scan of its metadata and a read of
// each body.
auto browse_64k_workload(const sizes& sz) {
  return [sz](auto& db, cmp::probe& p) {
    using Content = content_t<decltype(db)>;
    publish<Content>(db, sz.chunked, sz.queues, {.sync = false}, nullptr, {}, true);
    for (int round = 0; round < 5; ++round)
      for (std::uint64_t q = 0; q < sz.queues; ++q)
        p.op([&] {
          std::uint64_t got = 0;
          for (const auto& m : db.template scan<message_metadata>(queue_name(q))) {
            read_body<Content>(db, m.template get<"message_id">());
            ++got;
          }
          return got;
        });
  };
}

auto browse_workload(const sizes& sz) {
  return [sz](auto& db, cmp::probe& p) {
    publish(db, sz.messages, sz.queues, {.sync = false}, nullptr);
    for (int round = 0; round < 5; ++round) {
      for (std::uint64_t q = 0; q < sz.queues; ++q) {
        const std::string name = queue_name(q);
        std::uint64_t after = 0;
        bool first = true;
        for (;;) {
          std::uint64_t got = 0;
          p.op([&] {
            auto page = first ? db.template scan<message_metadata>(name).limit(1000)
                              : db.template scan<message_metadata>(name).after(after).limit(1000);
            for (const auto& m : page) {
              after = m.template get<"message_id">();
              ++got;
            }
            return got;
          });
          first = false;
          if (got < 1000) break;
        }
      }
    }
  };
}

// writers_N: N threads, each committing its own messages one at a time (content, metadata, index
// entry and an add to its queue's count per commit): concurrent durable commits, which the store
// groups (group commit: the x fsync column shows commits per fsync above 1).
auto writers_workload(const sizes& sz, unsigned threads) {
  return [sz, threads](auto& db, cmp::probe& p) {
    p.parallel(threads, sz.concurrent_commits / threads, [&](unsigned t, std::uint64_t i) {
      const std::uint64_t id = (std::uint64_t{t} << 32) | i;
      const std::string q = queue_name(t % sz.queues);
      auto b = db.batch();
      b.template put<message_content>({id, 0u}, content_1k);
      b.template put<message_metadata>({q, id}, metadata);
      b.template put<message_index>({id}, q);
      b.template add<message_count>({q}, 1);
      b.commit(p.write());
    });
  };
}

// The entries of a database: how many, their key and value bytes, and an order-independent
// digest of their bytes (the sum of a 64-bit FNV-1a hash per entry). Two databases with equal
// digests hold the same entries (up to a hash collision).
struct entries_digest {
  std::uint64_t entries = 0, bytes = 0, hash = 0;
  void add(std::string_view k, std::string_view v) {
    std::uint64_t h = 14695981039346656037ull;
    auto mix = [&](std::string_view s) {
      for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    };
    mix(k);
    h = (h ^ 0x100) * 1099511628211ull;  // separates key from value: ("ab", "c") != ("a", "bc")
    mix(v);
    ++entries;
    bytes += k.size() + v.size();
    hash += h;
  }
  bool operator==(const entries_digest&) const = default;
  std::string str() const { return std::to_string(entries) + " entries of " + std::to_string(bytes) + " bytes"; }
};
// readers_N's preload as the first store that ran it held it (its keys and values, the store's
// own records, whose keys start with 0xFF, left out): every store and both native sides of every
// engine must hold the same entries (readers_native says why).
std::optional<entries_digest>& readers_preload() {
  static std::optional<entries_digest> d;
  return d;
}
// Throws when `d` (what `side` holds after readers_N's preload) differs from what the first store
// held.
void check_readers_preload(const entries_digest& d, const std::string& side) {
  std::optional<entries_digest>& first = readers_preload();
  if (!first) first = d;
  else if (d != *first)
    throw std::runtime_error("readers: " + side + " holds " + d.str() + " after the preload, the first store " +
                             first->str() + (d.entries == first->entries && d.bytes == first->bytes
                                                 ? " with other bytes" : "") +
                             ": the sides would read different databases (a LevelDB or RocksDB of another size has "
                             "another shape: other memtable flushes, another fit in the block cache)");
}

// readers_N: N threads reading message contents at random (preloaded, not timed). Afterwards (not
// timed: a scan before the reads would fill the engine's block cache) the store's entries are
// checked against the other sides' (check_readers_preload).
auto readers_workload(const sizes& sz, unsigned threads) {
  return [sz, threads](auto& db, cmp::probe& p) {
    publish(db, sz.messages, sz.queues, {.sync = false}, nullptr);
    p.parallel(threads, sz.concurrent_reads / threads, [&](unsigned t, std::uint64_t i) {
      const std::uint64_t id = (i * 2654435761u + t * 97u) % sz.messages;
      // Into a kept value, as the native side reads into a kept string: both sides copy each
      // value once and allocate nothing per read (get(), which returns a new value, allocates).
      thread_local typename message_content::value_type v;
      if (!db.template get_into<message_content>({id, 0u}, v)) throw std::runtime_error("readers: message missing");
    });
    entries_digest d;
    for (auto c = db.backend().cursor(ks::key_range{"", "\xff"}, nullptr); c.valid(); c.next()) d.add(c.key(), c.value());
    check_readers_preload(d, "the store");
  };
}

auto consume_workload(const sizes& sz) {
  return [sz](auto& db, cmp::probe& p) {
    publish(db, sz.messages, sz.queues, {.sync = false}, nullptr);
    // 3 erases per message and the count.
    const std::size_t per = fit_batch(db, "consume", 100, 3, 200, [](std::size_t) { return std::size_t{1}; });
    consume_queues(sz, per, p, [&](const std::string& q) {
      std::uint64_t got = 0;
      auto b = db.batch();
      for (const auto& m : db.template scan<message_metadata>(q).limit(per)) {
        const std::uint64_t id = m.template get<"message_id">();
        if (!db.template get<message_content>({id, 0u})) throw std::runtime_error("consume: content missing");
        b.template erase<message_content>({id, 0u});
        b.template erase<message_metadata>({q, id});
        b.template erase<message_index>({id});
        ++got;
      }
      const std::int64_t left = db.template get<message_count>({q}).value_or(0) - static_cast<std::int64_t>(got);
      b.template put<message_count>({q}, left);
      b.commit(p.write());
      return got;
    });
  };
}

// Drains queue 0 from the head (erase_range of its metadata, contents and index entries).
template <class Store>
std::uint64_t drain_queue0(Store& db, ks::write_options wo) {
  std::uint64_t n = db.erase_range(db.template scan<message_metadata>(queue_name(0)), wo);
  n += db.erase_range(db.template scan<message_content>(), wo);
  n += db.erase_range(db.template scan<message_index>(), wo);
  db.template put<message_count>({queue_name(0)}, 0, wo);
  return n;
}

auto drain_workload(const sizes& sz) {
  return [sz](auto& db, cmp::probe& p) {
    publish(db, sz.messages, 1, {.sync = false}, nullptr);
    p.op([&] { drain_queue0(db, p.write()); }, sz.messages);
  };
}

// Compacts the whole store where the engine has a compaction (LevelDB, RocksDB).
template <class Store>
void compact_all(Store& db) {
  if constexpr (ks::backend_with_compact_range<typename Store::backend_type>) db.unsafe_backend().compact_range(ks::key_range{});
}

// drained_lookup: the first message of drained queue 0; after the engine's compaction of the
// drained range when `compacted` (drained_lookup_compacted).
auto drained_lookup_workload(const sizes& sz, bool compacted) {
  return [sz, compacted](auto& db, cmp::probe& p) {
    publish(db, sz.messages, 1, {.sync = false}, nullptr);
    drain_queue0(db, p.write());
    if (compacted) compact_all(db);
    for (std::uint64_t i = 0; i < sz.lookups; ++i) {
      p.op([&] {
        for (const auto& m : db.template scan<message_metadata>(queue_name(0)).limit(1))
          throw std::runtime_error("drained queue still has message " + std::to_string(m.template get<"message_id">()));
      });
    }
  };
}

// XA: a branch enqueues 10 messages (content, metadata, index) and dequeues 10 published ones on
// queue 0, updating the count; prepared under its xid (durable, nothing applied), then committed
// or rolled back. One operation = prepare + commit_prepared (or rollback_prepared).
auto xa_workload(const sizes& sz, bool commit) {
  return [sz, commit](auto& db, cmp::probe& p) {
    publish(db, sz.xa * 10, 1, {.sync = false}, nullptr);
    const std::string q = queue_name(0);
    std::uint64_t next_id = sz.xa * 10, dequeued = 0;
    for (std::uint64_t t = 0; t < sz.xa; ++t) {
      p.op([&] {
        auto tx = db.transaction();
        for (int i = 0; i < 10; ++i, ++next_id) {
          tx.template put<message_content>({next_id, 0u}, content_1k);
          tx.template put<message_metadata>({q, next_id}, metadata);
          tx.template put<message_index>({next_id}, q);
        }
        for (int i = 0; i < 10; ++i, ++dequeued) {
          tx.template erase<message_content>({dequeued, 0u});
          tx.template erase<message_metadata>({q, dequeued});
          tx.template erase<message_index>({dequeued});
        }
        tx.template put<message_count>({q}, tx.template get<message_count>({q}).value_or(0));
        const std::string xid = "xid-" + std::to_string(t);
        ks::prepare(tx, xid, p.write());
        const bool done = commit ? ks::commit_prepared(db, xid, p.write()) : ks::rollback_prepared(db, xid, p.write());
        if (!done) throw std::runtime_error("xa: " + xid + " was not prepared");
      });
      if (!commit) dequeued -= 10;  // rolled back: the same messages are still there
    }
    if (commit != !db.template contains<message_metadata>({q, 0})) throw std::runtime_error("xa: outcome not applied");
  };
}

// Expiry: `messages` over 10 queues, 20 % with a TTL (already due when swept), the others without;
// one sweep (ks::sweep over the declared expiry index, batches of 100) erases the due ones.
auto expiry_workload(const sizes& sz) {
  return [sz](auto& db, cmp::probe& p) {
    std::uint64_t due = 0;
    // A put and its index entry per message.
    const std::uint64_t per = fit_batch(db, "expiry (preparation, not timed)", 100, 2, 200,
                                        [](std::size_t) { return std::size_t{0}; });
    for (std::uint64_t first = 0; first < sz.messages; first += per) {
      auto b = db.batch();
      for (std::uint64_t id = first; id < std::min(sz.messages, first + per); ++id) {
        const std::uint64_t at = expiry_at(id);
        due += at != 0;
        b.template put<expiring_metadata>({queue_name(id % sz.queues), id}, ks::bytes(expiring_meta(at)));
      }
      b.commit({.sync = false});
    }
    p.op([&] {
      const std::size_t n = ks::sweep<expiry_index>(db, std::int64_t{1} << 62, 100, [](const auto&, const auto&) {},
                                                    p.write());
      if (n != due) throw std::runtime_error("expiry: swept " + std::to_string(n) + " of " + std::to_string(due));
      return n;
    });
  };
}

// mixed: the broker's shape on one store at once. 2 publishers each commit their own queue's
// messages 10 at a time (content, metadata, index entry, an add to the queue's count), 20 % of
// them with an expiry that is already due; 2 consumers each drain one publisher's queue from the
// head, 20 messages per commit (a read of each content, the erases, an add of -n), leaving the
// expiring messages to the sweeper; 1 sweeper runs ks::sweep over the expiry index (batches of
// 100, erasing each message's content and index entry and decrementing its count in the same
// transaction) until every expiring message is gone. Each role is timed on its own: its items
// (messages published, consumed, swept) over the wall time from the common start to the role's
// end, and the latency of each of its commits (a sweep call: all its batches). Afterwards every
// queue must be empty with a count of 0.
struct mixed_roles {
  static constexpr unsigned publishers = 2, consumers = 2;
  static constexpr const char* names[3] = {"mixed_publishers", "mixed_consumers", "mixed_sweeper"};
};

// The roles' threads and their timing, for the store and for a native API alike:
// publish(t, q, first, last) commits messages [first, last) of publisher t to queue q (timed);
// consume(t, q, timed) -> n reads up to 20 of q's messages without an expiry and commits their
// erases through timed(commit) (0: none there yet); sweep() -> n sweeps the due messages once
// (timed); check(q) checks queue q after the run.
template <class Publish, class Consume, class Sweep, class Check>
std::array<cmp::sample, 3> run_mixed_roles(const sizes& sz, Publish publish, Consume consume, Sweep sweep_once, Check check) {
  constexpr unsigned P = mixed_roles::publishers;
  const std::uint64_t per_publisher = std::max<std::uint64_t>(10, sz.mixed_messages / P);
  const std::uint64_t expiring_per_queue = (per_publisher + 4) / 5;  // ids 0, 5, 10, ...
  std::array<cmp::sample, 3> out;
  std::vector<cmp::sample> pub(P), con(P);
  cmp::sample sweep;
  std::vector<std::exception_ptr> failed(2 * P + 1);
  std::atomic<bool> stop{false};
  const auto t0 = std::chrono::steady_clock::now();
  auto since_start = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  auto timed = [](cmp::sample& s, auto&& fn) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    s.latencies_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
    ++s.calls;
  };
  auto guarded = [&](std::size_t slot, auto&& fn) {
    return [&, slot, fn] {
      try {
        fn();
      } catch (...) {
        failed[slot] = std::current_exception();
        stop = true;
      }
    };
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < P; ++t) {
    pool.emplace_back(guarded(t, [&, t] {
      const std::string q = queue_name(t);
      for (std::uint64_t first = 0; first < per_publisher && !stop; first += 10) {
        const std::uint64_t last = std::min(per_publisher, first + 10);
        timed(pub[t], [&] { publish(t, q, first, last); });
        pub[t].items += last - first;
      }
      pub[t].seconds = since_start();
    }));
    pool.emplace_back(guarded(P + t, [&, t] {
      const std::string q = queue_name(t);
      const std::uint64_t want = per_publisher - expiring_per_queue;
      while (con[t].items < want && !stop) {
        const std::uint64_t got = consume(t, q, [&](auto&& commit) { timed(con[t], commit); });
        if (got == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          continue;
        }
        con[t].items += got;
      }
      con[t].seconds = since_start();
    }));
  }
  pool.emplace_back(guarded(2 * P, [&] {
    std::uint64_t swept = 0;
    while (swept < P * expiring_per_queue && !stop) {
      const auto a = std::chrono::steady_clock::now();
      const std::size_t n = sweep_once();
      if (n == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(500));
        continue;
      }
      sweep.latencies_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
      ++sweep.calls;
      swept += n;
    }
    sweep.items = swept;
    sweep.seconds = since_start();
  }));
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  for (unsigned t = 0; t < P; ++t) check(queue_name(t));
  // Each role: every thread's items and latencies, over the wall time until its last thread ended.
  auto merge = [](const std::vector<cmp::sample>& parts) {
    cmp::sample m;
    for (const cmp::sample& s : parts) {
      m.items += s.items;
      m.calls += s.calls;
      m.seconds = std::max(m.seconds, s.seconds);
      m.latencies_us.insert(m.latencies_us.end(), s.latencies_us.begin(), s.latencies_us.end());
    }
    return m;
  };
  out[0] = merge(pub);
  out[1] = merge(con);
  out[2] = std::move(sweep);
  return out;
}

// Message i of publisher t: its id, and its expiry (20 % of them, due at once).
std::uint64_t mixed_id(unsigned t, std::uint64_t i) { return (std::uint64_t{t} << 32) | i; }
std::uint64_t mixed_expiry(std::uint64_t i) { return i % 5 == 0 ? 1 + i : 0; }

template <class Store>
std::array<cmp::sample, 3> run_mixed(Store& db, const sizes& sz, ks::write_options wo) {
  auto publish = [&](unsigned t, const std::string& q, std::uint64_t first, std::uint64_t last) {
    auto b = db.batch();
    for (std::uint64_t i = first; i < last; ++i) {
      const std::uint64_t id = mixed_id(t, i);
      b.template put<message_content>({id, 0u}, content_1k);
      b.template put<expiring_metadata>({q, id}, ks::bytes(expiring_meta(mixed_expiry(i))));
      b.template put<message_index>({id}, q);
    }
    b.template add<message_count>({q}, static_cast<std::int64_t>(last - first));
    b.commit(wo);
  };
  auto consume = [&](unsigned, const std::string& q, auto&& timed) {
    std::uint64_t got = 0;
    auto b = db.batch();
    for (const auto& m : db.template scan<expiring_metadata>(q).limit(100)) {
      if (!no_expiry(m.value.view())) continue;  // the sweeper's
      const std::uint64_t id = m.template get<"message_id">();
      if (!db.template get<message_content>({id, 0u})) throw std::runtime_error("mixed: content missing");
      b.template erase<message_content>({id, 0u});
      b.template erase<expiring_metadata>({q, id});
      b.template erase<message_index>({id});
      if (++got == 20) break;
    }
    if (got == 0) return got;
    b.template add<message_count>({q}, -static_cast<std::int64_t>(got));
    timed([&] { b.commit(wo); });
    return got;
  };
  auto sweep_once = [&] {
    return ks::sweep<expiry_index>(db, std::int64_t{1} << 62, 100, [](auto& tx, const auto& k, const auto&) {
      const std::uint64_t id = std::get<1>(k);
      tx.template erase<message_content>({id, 0u});
      tx.template erase<message_index>({id});
      tx.template add<message_count>({std::get<0>(k)}, -1);
    }, wo);
  };
  auto check = [&](const std::string& q) {
    if (const std::int64_t c = db.template get<message_count>({q}).value_or(0); c != 0)
      throw std::runtime_error("mixed: " + q + " has count " + std::to_string(c) + " after the run, not 0");
    for (const auto& m : db.template scan<expiring_metadata>(q).limit(1))
      throw std::runtime_error("mixed: " + q + " still holds message " + std::to_string(m.template get<"message_id">()));
  };
  return run_mixed_roles(sz, publish, consume, sweep_once, check);
}

// Recovery: reopening a store of `messages` published messages (the time of one reopen).
auto reopen_workload(const sizes& sz) {
  return [sz](auto& db, cmp::probe& p) {
    publish(db, sz.messages, sz.queues, {}, nullptr);
    auto* cur = &db;
    for (std::uint64_t i = 0; i < sz.reopens; ++i) p.op([&] { cur = &p.reopen(*cur); });
    if (!cur->template get<message_count>({queue_name(0)})) throw std::runtime_error("reopen: count missing");
  };
}

// Recovery of per-topic state: `topics` topics of 2 messages each, read back by one grouped scan
// (group_by destination) or by one scan per topic; one operation = the whole pass.
template <class Store>
void preload_topics(Store& db, const sizes& sz) {
  const std::uint64_t per = fit_batch(db, "recovery (preparation, not timed)", 500, 2, 200,
                                      [](std::size_t) { return std::size_t{0}; });
  for (std::uint64_t first = 0; first < sz.topics; first += per) {
    auto b = db.batch();
    for (std::uint64_t t = first; t < std::min(sz.topics, first + per); ++t)
      for (std::uint64_t m = 0; m < 2; ++m) b.template put<message_metadata>({"topic-" + std::to_string(t), m}, metadata);
    b.commit({.sync = false});
  }
}
// The topics' names in key order.
std::vector<std::string> sorted_topic_names(const sizes& sz) {
  std::vector<std::string> names;
  for (std::uint64_t t = 0; t < sz.topics; ++t) names.push_back("topic-" + std::to_string(t));
  std::sort(names.begin(), names.end());
  return names;
}
auto recovery_workload(const sizes& sz, bool grouped) {
  return [sz, grouped](auto& db, cmp::probe& p) {
    preload_topics(db, sz);
    const std::vector<std::string> names = sorted_topic_names(sz);
    p.op([&] {
      std::uint64_t entries = 0, topics = 0;
      if (grouped) {
        for (auto&& g : db.template scan<message_metadata>().template group_by<"destination">()) {
          ++topics;
          for (const auto& e : g) entries += e.value.size() != 0;
        }
      } else {
        for (const std::string& n : names) {
          ++topics;
          for (const auto& e : db.template scan<message_metadata>(n)) entries += e.value.size() != 0;
        }
      }
      if (topics != sz.topics || entries != 2 * sz.topics) throw std::runtime_error("recovery: wrong count");
      return entries;
    });
  };
}

// ---------------------------------------------------------------------------------------------
// The standard table

std::string random_key(std::mt19937_64& rng) {
  std::string k(24, ' ');
  for (char& c : k) c = static_cast<char>(1 + rng() % 255);  // no 0x00: no escapes in the encoding
  return k;
}
const std::string value_150(150, 'v');

std::vector<std::string> make_keys(std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys;
  keys.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) keys.push_back(random_key(rng));
  return keys;
}

template <class Store>
void load(Store& db, const std::vector<std::string>& keys, std::size_t batch, ks::write_options wo, cmp::probe* p,
          const char* workload = "load (preparation, not timed)") {
  batch = fit_batch(db, workload, batch, 1, 200, [](std::size_t) { return std::size_t{0}; });
  for (std::size_t first = 0; first < keys.size(); first += batch) {
    const std::size_t last = std::min(keys.size(), first + batch);
    auto commit = [&] {
      auto b = db.batch();
      for (std::size_t i = first; i < last; ++i) b.template put<kv>({ks::bytes(keys[i])}, ks::bytes(value_150));
      b.commit(wo);
    };
    if (p != nullptr) p->op(commit, last - first);
    else commit();
  }
}

// One interface for the native side of the comparison: the same operations with hand-written keys
// ("KV." + the 24 key bytes). Every member may be called from several threads at once.
struct native_kv {
  virtual ~native_kv() = default;
  virtual void write(const std::vector<std::string>& keys, std::size_t first, std::size_t last) = 0;
  virtual bool get(const std::string& key, std::string& value) { return get_raw("KV." + key, value); }
  // The value of the hand-written key `key` itself (no "KV." prefix).
  virtual bool get_raw(const std::string& key, std::string& value) = 0;
  virtual std::size_t range(const std::string& from, std::size_t n) = 0;
  // One atomic commit of `kvs`.
  void write_pairs(const std::vector<std::pair<std::string, std::string>>& kvs) { apply(kvs, {}); }
  // One atomic commit of the puts `kvs` and the erases of `gone` (absent keys are no error).
  virtual void apply(const std::vector<std::pair<std::string, std::string>>& kvs, const std::vector<std::string>& gone) = 0;
  // One atomic commit erasing keys[first, last).
  virtual void erase(const std::vector<std::string>& keys, std::size_t first, std::size_t last) = 0;
  // Calls fn(key, value) for the keys starting with `prefix`, in order, from the first (`after`
  // empty) or from the first one after `after`, at most `limit` of them, until fn returns false;
  // returns how many it visited. fn runs inside the engine's read (LMDB: its read transaction,
  // SQLite: its statement, under the connection's mutex) and must not call this object.
  virtual std::size_t scan(std::string_view prefix, std::string_view after, std::size_t limit,
                           const std::function<bool(std::string_view, std::string_view)>& fn) = 0;
  // Erases every key starting with `prefix` in one atomic commit, as a user of the engine would:
  // by default a scan and a write of their erases; RocksDB: one range tombstone (DeleteRange);
  // LMDB: a cursor deleting in one write transaction; SQLite: one DELETE of the key range.
  virtual void erase_prefix(const std::string& prefix) {
    std::vector<std::string> keys;
    scan(prefix, {}, static_cast<std::size_t>(-1), [&](std::string_view k, std::string_view) {
      keys.emplace_back(k);
      return true;
    });
    apply({}, keys);
  }
  // The engine's compaction of everything (LevelDB, RocksDB: CompactRange); others: nothing.
  virtual void compact() {}
  // Whether the commits from now on are durable (the durability the side was opened with, until
  // changed): WriteOptions::sync, MDB_NOSYNC, PRAGMA synchronous. Not while another thread writes.
  virtual void set_sync(bool on) = 0;
  bool sync() const noexcept { return sync_; }

 protected:
  bool sync_ = false;
};

// Preparation (not timed) writes unsynced, as the keyschema workloads' preparation does
// ({.sync = false}); the side's durability comes back at the end of the scope.
class unsynced {
 public:
  explicit unsynced(native_kv& db) : db_(db), was_(db.sync()) { db_.set_sync(false); }
  ~unsynced() { db_.set_sync(was_); }
  unsynced(const unsynced&) = delete;
  unsynced& operator=(const unsynced&) = delete;

 private:
  native_kv& db_;
  bool was_;
};
std::string native_key(const std::string& k) { return "KV." + k; }

// The first key after every key starting with `prefix` (its last byte below 0xFF incremented,
// the bytes after it dropped); "" when there is none.
std::string prefix_end(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xFF) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

// native_kv::scan over a LevelDB or RocksDB iterator.
template <class Iterator>
std::size_t iterator_scan(Iterator& it, std::string_view prefix, std::string_view after, std::size_t limit,
                          const std::function<bool(std::string_view, std::string_view)>& fn) {
  const std::string_view from = after.empty() ? prefix : after;
  it.Seek({from.data(), from.size()});
  if (!after.empty() && it.Valid() && std::string_view(it.key().data(), it.key().size()) == after) it.Next();
  std::size_t n = 0;
  for (; it.Valid() && n < limit; it.Next()) {
    const std::string_view k(it.key().data(), it.key().size());
    if (!k.starts_with(prefix)) break;
    ++n;
    if (!fn(k, std::string_view(it.value().data(), it.value().size()))) break;
  }
  return n;
}

// How a native side opens its engine: with the adapter's settings (cmp::baseline::same_settings),
// one of them left out when `without` names it (the setting-cost table, --setting-costs), or as
// a user would open it without keyschema (cmp::baseline::user_view): the plain engine with its
// own default options (LevelDB and RocksDB: Options{} with create_if_missing; LMDB: no flags,
// only the map size it needs; SQLite: its default rollback journal), the same keys and the same
// durability (WriteOptions::sync / MDB_NOSYNC / PRAGMA synchronous = OFF at sync off).
struct native_setup {
  cmp::baseline view = cmp::baseline::same_settings;
  std::string without;  // one adapter setting left out (same_settings only); see native_settings()
  bool has(const char* setting) const { return view == cmp::baseline::same_settings && without != setting; }
};

// The adapter settings the native side of each engine can leave out one at a time (--setting-costs):
// each is part of what the adapter sets that the engine's default options do not.
const std::map<std::string, std::vector<std::string>>& native_settings() {
  static const std::map<std::string, std::vector<std::string>> m{
      {"leveldb", {"paranoid_checks", "verify_checksums", "syncing_env", "bloom_filter"}},
      {"rocksdb", {"wal_recovery", "track_wals", "bloom_filter", "cache_8mib", "info_log"}},
      {"lmdb", {"notls"}},
      {"sqlite", {"wal", "cache_8mib"}},
  };
  return m;
}

// The native side's engine batch: one per thread, emptied and kept between writes, as the
// adapters keep theirs (a fresh batch of megabytes is a fresh mapping at every write, whose page
// faults would be measured instead of the engine).
template <class Batch>
Batch& kept_batch() {
  static thread_local Batch b;
  b.Clear();
  return b;
}

using native_open = std::function<std::unique_ptr<native_kv>(const fs::path&, bool sync, const native_setup&)>;

void native_load(native_kv& db, const std::vector<std::string>& keys, std::size_t batch, cmp::probe* p) {
  for (std::size_t first = 0; first < keys.size(); first += batch) {
    const std::size_t last = std::min(keys.size(), first + batch);
    if (p != nullptr) p->op([&] { db.write(keys, first, last); }, last - first);
    else db.write(keys, first, last);
  }
}

#if KEYSCHEMA_BENCH_WITH_LEVELDB
// LevelDB with the adapter's default options (leveldb_options{}): 8 MiB block cache (LevelDB's
// default too), 10-bit Bloom filter, paranoid checks, checksums verified on reads, and the
// adapter's Env (syncing_env: a synced write first syncs the logs LevelDB switched away from;
// read_counting_env); or, in the user view, leveldb::Options{} with create_if_missing.
class leveldb_native final : public native_kv {
 public:
  leveldb_native(const fs::path& dir, bool sync, const native_setup& setup = {}) {
    ::leveldb::Options o;
    o.create_if_missing = true;
    if (setup.has("syncing_env")) {
      sync_env_ = std::make_unique<ks::leveldb_detail::syncing_env>(::leveldb::Env::Default());
      reads_env_ = std::make_unique<ks::leveldb_detail::read_counting_env>(sync_env_.get());
      o.env = reads_env_.get();
    }
    if (setup.view == cmp::baseline::same_settings) {
      cache_.reset(::leveldb::NewLRUCache(8 << 20));
      o.block_cache = cache_.get();
    }
    if (setup.has("bloom_filter")) {
      filter_.reset(::leveldb::NewBloomFilterPolicy(10));
      o.filter_policy = filter_.get();
    }
    o.paranoid_checks = setup.has("paranoid_checks");
    ::leveldb::DB* db = nullptr;
    const auto s = ::leveldb::DB::Open(o, (dir / "native").string(), &db);
    if (!s.ok()) throw std::runtime_error("leveldb::DB::Open: " + s.ToString());
    db_.reset(db);
    set_sync(sync);
    ro_.verify_checksums = setup.has("verify_checksums");
  }
  void set_sync(bool on) override { wo_.sync = sync_ = on; }
  ~leveldb_native() override { db_.reset(); }
  void write(const std::vector<std::string>& keys, std::size_t first, std::size_t last) override {
    ::leveldb::WriteBatch& b = kept_batch<::leveldb::WriteBatch>();
    for (std::size_t i = first; i < last; ++i) b.Put(native_key(keys[i]), value_150);
    const auto s = db_->Write(wo_, &b);
    if (!s.ok()) throw std::runtime_error("leveldb::DB::Write: " + s.ToString());
  }
  bool get_raw(const std::string& key, std::string& value) override { return db_->Get(ro_, key, &value).ok(); }
  void erase(const std::vector<std::string>& keys, std::size_t first, std::size_t last) override {
    ::leveldb::WriteBatch& b = kept_batch<::leveldb::WriteBatch>();
    for (std::size_t i = first; i < last; ++i) b.Delete(native_key(keys[i]));
    const auto s = db_->Write(wo_, &b);
    if (!s.ok()) throw std::runtime_error("leveldb::DB::Write: " + s.ToString());
  }
  void apply(const std::vector<std::pair<std::string, std::string>>& kvs, const std::vector<std::string>& gone) override {
    ::leveldb::WriteBatch& b = kept_batch<::leveldb::WriteBatch>();
    for (const auto& [k, v] : kvs) b.Put(k, v);
    for (const std::string& k : gone) b.Delete(k);
    const auto s = db_->Write(wo_, &b);
    if (!s.ok()) throw std::runtime_error("leveldb::DB::Write: " + s.ToString());
  }
  std::size_t scan(std::string_view prefix, std::string_view after, std::size_t limit,
                   const std::function<bool(std::string_view, std::string_view)>& fn) override {
    std::unique_ptr<::leveldb::Iterator> it(db_->NewIterator(ro_));
    const std::size_t n = iterator_scan(*it, prefix, after, limit, fn);
    if (const auto s = it->status(); !s.ok()) throw std::runtime_error("leveldb::Iterator: " + s.ToString());
    return n;
  }
  void compact() override { db_->CompactRange(nullptr, nullptr); }
  std::size_t range(const std::string& from, std::size_t n) override {
    std::unique_ptr<::leveldb::Iterator> it(db_->NewIterator(ro_));
    std::size_t got = 0;
    std::string copy;
    for (it->Seek(native_key(from)); it->Valid() && got < n && it->key().starts_with("KV."); it->Next()) {
      copy.assign(it->value().data(), it->value().size());
      ++got;
    }
    return got;
  }

 private:
  std::unique_ptr<ks::leveldb_detail::syncing_env> sync_env_;  // outlive db_
  std::unique_ptr<ks::leveldb_detail::read_counting_env> reads_env_;
  std::unique_ptr<::leveldb::Cache> cache_;
  std::unique_ptr<const ::leveldb::FilterPolicy> filter_;
  std::unique_ptr<::leveldb::DB> db_;
  ::leveldb::WriteOptions wo_;
  ::leveldb::ReadOptions ro_;
};
#endif

#if KEYSCHEMA_BENCH_WITH_LMDB
// LMDB as the adapter opens it (MDB_NOTLS) or, in the user view, with no flags; both with a
// 4 GiB map (the adapter grows its map as needed; the native sides need one that fits the run).
class lmdb_native final : public native_kv {
 public:
  lmdb_native(const fs::path& dir, bool sync, const native_setup& setup = {}) {
    check(::mdb_env_create(&env_), "mdb_env_create");
    check(::mdb_env_set_mapsize(env_, std::size_t{4} << 30), "mdb_env_set_mapsize");
    const unsigned flags = (setup.has("notls") ? MDB_NOTLS : 0u) | (sync ? 0u : MDB_NOSYNC);
    sync_ = sync;
    check(::mdb_env_open(env_, dir.c_str(), flags, 0644), "mdb_env_open");
    MDB_txn* txn = nullptr;
    check(::mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
    check(::mdb_dbi_open(txn, nullptr, 0, &dbi_), "mdb_dbi_open");
    check(::mdb_txn_commit(txn), "mdb_txn_commit");
  }
  ~lmdb_native() override {
    for (MDB_txn* t : readers_) ::mdb_txn_abort(t);  // reset transactions: any thread may end them
    ::mdb_env_close(env_);
  }
  void set_sync(bool on) override {
    check(::mdb_env_set_flags(env_, MDB_NOSYNC, on ? 0 : 1), "mdb_env_set_flags");
    sync_ = on;
  }
  void write(const std::vector<std::string>& keys, std::size_t first, std::size_t last) override {
    MDB_txn* txn = nullptr;
    check(::mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
    for (std::size_t i = first; i < last; ++i) {
      std::string k = native_key(keys[i]);
      MDB_val key{k.size(), k.data()}, val{value_150.size(), const_cast<char*>(value_150.data())};
      if (const int rc = ::mdb_put(txn, dbi_, &key, &val, 0); rc != 0) {
        ::mdb_txn_abort(txn);
        check(rc, "mdb_put");
      }
    }
    check(::mdb_txn_commit(txn), "mdb_txn_commit");
  }
  void apply(const std::vector<std::pair<std::string, std::string>>& kvs, const std::vector<std::string>& gone) override {
    MDB_txn* txn = nullptr;
    check(::mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
    for (const auto& [k, v] : kvs) {
      MDB_val key{k.size(), const_cast<char*>(k.data())}, val{v.size(), const_cast<char*>(v.data())};
      if (const int rc = ::mdb_put(txn, dbi_, &key, &val, 0); rc != 0) {
        ::mdb_txn_abort(txn);
        check(rc, "mdb_put");
      }
    }
    for (const std::string& k : gone) {
      MDB_val key{k.size(), const_cast<char*>(k.data())};
      if (const int rc = ::mdb_del(txn, dbi_, &key, nullptr); rc != 0 && rc != MDB_NOTFOUND) {
        ::mdb_txn_abort(txn);
        check(rc, "mdb_del");
      }
    }
    check(::mdb_txn_commit(txn), "mdb_txn_commit");
  }
  std::size_t scan(std::string_view prefix, std::string_view after, std::size_t limit,
                   const std::function<bool(std::string_view, std::string_view)>& fn) override {
    MDB_txn* txn = nullptr;
    check(::mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn), "mdb_txn_begin");
    std::size_t n = 0;
    try {
      n = cursor_scan(txn, prefix, after, limit, [&](MDB_cursor*, std::string_view k, std::string_view v) { return fn(k, v); });
    } catch (...) {
      ::mdb_txn_abort(txn);
      throw;
    }
    ::mdb_txn_abort(txn);
    return n;
  }
  // A cursor deleting every key of the prefix in one write transaction.
  void erase_prefix(const std::string& prefix) override {
    MDB_txn* txn = nullptr;
    check(::mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
    try {
      cursor_scan(txn, prefix, {}, static_cast<std::size_t>(-1), [&](MDB_cursor* c, std::string_view, std::string_view) {
        check(::mdb_cursor_del(c, 0), "mdb_cursor_del");
        return true;
      });
    } catch (...) {
      ::mdb_txn_abort(txn);
      throw;
    }
    check(::mdb_txn_commit(txn), "mdb_txn_commit");
  }
  void erase(const std::vector<std::string>& keys, std::size_t first, std::size_t last) override {
    MDB_txn* txn = nullptr;
    check(::mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
    for (std::size_t i = first; i < last; ++i) {
      std::string k = native_key(keys[i]);
      MDB_val key{k.size(), k.data()};
      if (const int rc = ::mdb_del(txn, dbi_, &key, nullptr); rc != 0 && rc != MDB_NOTFOUND) {
        ::mdb_txn_abort(txn);
        check(rc, "mdb_del");
      }
    }
    check(::mdb_txn_commit(txn), "mdb_txn_commit");
  }
  // A read transaction per thread, renewed for each read and reset after it (as LMDB's docs
  // advise for frequent short reads).
  bool get_raw(const std::string& k, std::string& value) override {
    MDB_txn* txn = thread_reader();
    check(::mdb_txn_renew(txn), "mdb_txn_renew");
    MDB_val key{k.size(), const_cast<char*>(k.data())}, val{};
    const int rc = ::mdb_get(txn, dbi_, &key, &val);
    if (rc == 0) value.assign(static_cast<const char*>(val.mv_data), val.mv_size);
    ::mdb_txn_reset(txn);
    return rc == 0;
  }
  std::size_t range(const std::string& from, std::size_t n) override {
    MDB_txn* txn = nullptr;
    check(::mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn), "mdb_txn_begin");
    MDB_cursor* c = nullptr;
    check(::mdb_cursor_open(txn, dbi_, &c), "mdb_cursor_open");
    std::string nk = native_key(from);
    MDB_val key{nk.size(), nk.data()}, val{};
    std::size_t got = 0;
    std::string copy;
    for (int rc = ::mdb_cursor_get(c, &key, &val, MDB_SET_RANGE); rc == 0 && got < n;
         rc = ::mdb_cursor_get(c, &key, &val, MDB_NEXT)) {
      copy.assign(static_cast<const char*>(val.mv_data), val.mv_size);
      ++got;
    }
    ::mdb_cursor_close(c);
    ::mdb_txn_abort(txn);
    return got;
  }

 private:
  static void check(int rc, const char* call) {
    if (rc != 0) throw std::runtime_error(std::string(call) + ": " + ::mdb_strerror(rc));
  }
  // native_kv::scan's walk in txn; fn(cursor, key, value) may delete the entry under the cursor
  // (mdb_cursor_del: the next MDB_NEXT then returns the entry after it, not the one after that).
  template <class Fn>
  std::size_t cursor_scan(MDB_txn* txn, std::string_view prefix, std::string_view after, std::size_t limit, Fn&& fn) {
    MDB_cursor* c = nullptr;
    check(::mdb_cursor_open(txn, dbi_, &c), "mdb_cursor_open");
    const std::string_view from = after.empty() ? prefix : after;
    MDB_val key{from.size(), const_cast<char*>(from.data())}, val{};
    int rc = ::mdb_cursor_get(c, &key, &val, MDB_SET_RANGE);
    auto view = [](const MDB_val& v) { return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size); };
    if (rc == 0 && !after.empty() && view(key) == after) rc = ::mdb_cursor_get(c, &key, &val, MDB_NEXT);
    std::size_t n = 0;
    try {
      for (; rc == 0 && n < limit && view(key).starts_with(prefix);
           rc = ::mdb_cursor_get(c, &key, &val, MDB_NEXT)) {
        ++n;
        if (!fn(c, view(key), view(val))) break;
      }
    } catch (...) {
      ::mdb_cursor_close(c);
      throw;
    }
    ::mdb_cursor_close(c);
    if (rc != 0 && rc != MDB_NOTFOUND) check(rc, "mdb_cursor_get");
    return n;
  }
  // This thread's reset read transaction on this environment (made on first use). The
  // generation tells this object from an earlier one at the same address.
  MDB_txn* thread_reader() {
    thread_local std::uint64_t gen = 0;
    thread_local MDB_txn* txn = nullptr;
    if (gen != gen_) {
      MDB_txn* t = nullptr;
      check(::mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t), "mdb_txn_begin");
      ::mdb_txn_reset(t);
      std::lock_guard lk(readers_mu_);
      readers_.push_back(t);
      gen = gen_;
      txn = t;
    }
    return txn;
  }
  static std::uint64_t next_generation() {
    static std::atomic<std::uint64_t> n{0};
    return ++n;
  }
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
  const std::uint64_t gen_ = next_generation();
  std::mutex readers_mu_;
  std::vector<MDB_txn*> readers_;
};
#endif

#if KEYSCHEMA_BENCH_WITH_ROCKSDB
// RocksDB with the adapter's default options (rocksdb_options{}): 8 MiB block cache, 10-bit
// Bloom filter, Snappy, 64 MiB write buffer, paranoid checks, checksums verified on reads (the
// last four are RocksDB's defaults too), torn-tail WAL recovery with the WALs tracked in the
// MANIFEST, 1000 open files, keyschema's info log; or, in the user view, rocksdb::Options{} with
// create_if_missing.
class rocksdb_native final : public native_kv {
 public:
  rocksdb_native(const fs::path& dir, bool sync, const native_setup& setup = {}) {
    ::rocksdb::Options o;
    o.create_if_missing = true;
    if (setup.view == cmp::baseline::same_settings) {
      o.paranoid_checks = true;
      o.write_buffer_size = std::size_t{64} << 20;
      o.max_open_files = 1000;
      o.compression = ::rocksdb::kSnappyCompression;
    }
    if (setup.has("wal_recovery")) o.wal_recovery_mode = ::rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
    if (setup.has("track_wals")) o.track_and_verify_wals_in_manifest = true;
    if (setup.has("info_log"))
      o.info_log = std::make_shared<ks::rocksdb_info_log>((dir / "native").string() + "/LOG");
    ::rocksdb::BlockBasedTableOptions t;
    if (setup.has("cache_8mib")) t.block_cache = ::rocksdb::NewLRUCache(std::size_t{8} << 20);
    if (setup.has("bloom_filter")) t.filter_policy.reset(::rocksdb::NewBloomFilterPolicy(10));
    if (setup.view == cmp::baseline::same_settings) o.table_factory.reset(::rocksdb::NewBlockBasedTableFactory(t));
    if (o.info_log) fs::create_directories(dir / "native");
    ::rocksdb::DB* db = nullptr;
    check(::rocksdb::DB::Open(o, (dir / "native").string(), &db), "rocksdb::DB::Open");
    db_.reset(db);
    set_sync(sync);
    ro_.verify_checksums = true;  // RocksDB's default too
  }
  void set_sync(bool on) override { wo_.sync = sync_ = on; }
  void write(const std::vector<std::string>& keys, std::size_t first, std::size_t last) override {
    ::rocksdb::WriteBatch& b = kept_batch<::rocksdb::WriteBatch>();
    for (std::size_t i = first; i < last; ++i) b.Put(native_key(keys[i]), value_150);
    check(db_->Write(wo_, &b), "rocksdb::DB::Write");
  }
  void apply(const std::vector<std::pair<std::string, std::string>>& kvs, const std::vector<std::string>& gone) override {
    ::rocksdb::WriteBatch& b = kept_batch<::rocksdb::WriteBatch>();
    for (const auto& [k, v] : kvs) b.Put(k, v);
    for (const std::string& k : gone) b.Delete(k);
    check(db_->Write(wo_, &b), "rocksdb::DB::Write");
  }
  std::size_t scan(std::string_view prefix, std::string_view after, std::size_t limit,
                   const std::function<bool(std::string_view, std::string_view)>& fn) override {
    std::unique_ptr<::rocksdb::Iterator> it(db_->NewIterator(ro_));
    const std::size_t n = iterator_scan(*it, prefix, after, limit, fn);
    check(it->status(), "rocksdb::Iterator");
    return n;
  }
  // One range tombstone.
  void erase_prefix(const std::string& prefix) override {
    ::rocksdb::WriteBatch& b = kept_batch<::rocksdb::WriteBatch>();
    check(b.DeleteRange(prefix, prefix_end(prefix)), "rocksdb::WriteBatch::DeleteRange");
    check(db_->Write(wo_, &b), "rocksdb::DB::Write");
  }
  void compact() override { check(db_->CompactRange(::rocksdb::CompactRangeOptions(), nullptr, nullptr), "rocksdb::DB::CompactRange"); }
  void erase(const std::vector<std::string>& keys, std::size_t first, std::size_t last) override {
    ::rocksdb::WriteBatch& b = kept_batch<::rocksdb::WriteBatch>();
    for (std::size_t i = first; i < last; ++i) b.Delete(native_key(keys[i]));
    check(db_->Write(wo_, &b), "rocksdb::DB::Write");
  }
  bool get_raw(const std::string& key, std::string& value) override {
    const auto s = db_->Get(ro_, key, &value);
    if (s.IsNotFound()) return false;
    check(s, "rocksdb::DB::Get");
    return true;
  }
  std::size_t range(const std::string& from, std::size_t n) override {
    std::unique_ptr<::rocksdb::Iterator> it(db_->NewIterator(ro_));
    std::size_t got = 0;
    std::string copy;
    for (it->Seek(native_key(from)); it->Valid() && got < n && it->key().starts_with("KV."); it->Next()) {
      copy.assign(it->value().data(), it->value().size());
      ++got;
    }
    check(it->status(), "rocksdb::Iterator");
    return got;
  }

 private:
  static void check(const ::rocksdb::Status& s, const char* call) {
    if (!s.ok()) throw std::runtime_error(std::string(call) + ": " + s.ToString());
  }
  std::unique_ptr<::rocksdb::DB> db_;
  ::rocksdb::WriteOptions wo_;
  ::rocksdb::ReadOptions ro_;
};
#endif

#if KEYSCHEMA_BENCH_WITH_SQLITE
// SQLite as the adapter sets it up: one STRICT, WITHOUT ROWID table of BLOB keys in WAL mode,
// synchronous FULL (sync on) or NORMAL (sync off), 8 MiB page cache, statements prepared once,
// one BEGIN IMMEDIATE ... COMMIT per batch; or, in the user view, the same table in SQLite's
// default rollback journal (DELETE) and page cache, synchronous FULL (its default) or OFF (sync
// off). One connection, used by one thread at a time (a mutex), as a user's code would share it.
class sqlite_native final : public native_kv {
 public:
  sqlite_native(const fs::path& dir, bool sync, const native_setup& setup = {}) {
    fs::create_directories(dir);
    check(::sqlite3_open_v2((dir / "native.sqlite3").c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
          "sqlite3_open_v2");
    wal_ = setup.has("wal");
    if (wal_) exec("PRAGMA journal_mode = WAL");
    set_sync(sync);
    if (setup.has("cache_8mib")) exec("PRAGMA cache_size = -8192");
    exec("CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID");
    put_ = prepare("INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)");
    get_ = prepare("SELECT v FROM kv WHERE k = ?1");
    del_ = prepare("DELETE FROM kv WHERE k = ?1");
    range_ = prepare("SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2");
    // Every scanned prefix ends below 0xFF: its end (prefix_end) is never "".
    scan_ = prepare("SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k LIMIT ?3");
    erase_range_ = prepare("DELETE FROM kv WHERE k >= ?1 AND k < ?2");
    begin_ = prepare("BEGIN IMMEDIATE");
    commit_ = prepare("COMMIT");
  }
  ~sqlite_native() override {
    for (sqlite3_stmt* st : {put_, get_, del_, range_, scan_, erase_range_, begin_, commit_}) ::sqlite3_finalize(st);
    ::sqlite3_close(db_);
  }
  // WAL: FULL, or NORMAL at sync off; the rollback journal (the user view): FULL (SQLite's
  // default), or OFF.
  void set_sync(bool on) override {
    std::lock_guard lk(mu_);
    exec(on ? "PRAGMA synchronous = FULL" : wal_ ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = OFF");
    sync_ = on;
  }
  void write(const std::vector<std::string>& keys, std::size_t first, std::size_t last) override {
    std::lock_guard lk(mu_);
    step_done(begin_, "BEGIN IMMEDIATE");
    for (std::size_t i = first; i < last; ++i) put(native_key(keys[i]), value_150);
    step_done(commit_, "COMMIT");
  }
  void apply(const std::vector<std::pair<std::string, std::string>>& kvs, const std::vector<std::string>& gone) override {
    std::lock_guard lk(mu_);
    step_done(begin_, "BEGIN IMMEDIATE");
    for (const auto& [k, v] : kvs) put(k, v);
    for (const std::string& k : gone) {
      ::sqlite3_bind_blob(del_, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
      step_done(del_, "DELETE");
    }
    step_done(commit_, "COMMIT");
  }
  std::size_t scan(std::string_view prefix, std::string_view after, std::size_t limit,
                   const std::function<bool(std::string_view, std::string_view)>& fn) override {
    std::lock_guard lk(mu_);
    const std::string_view from = after.empty() ? prefix : after;
    const std::string end = prefix_end(std::string(prefix));
    ::sqlite3_bind_blob(scan_, 1, from.data(), static_cast<int>(from.size()), SQLITE_STATIC);
    ::sqlite3_bind_blob(scan_, 2, end.data(), static_cast<int>(end.size()), SQLITE_STATIC);
    // One row more when it starts at `after` itself (skipped below).
    ::sqlite3_bind_int64(scan_, 3, limit == static_cast<std::size_t>(-1) ? -1 : static_cast<sqlite3_int64>(limit + !after.empty()));
    std::size_t n = 0;
    int rc;
    while ((rc = ::sqlite3_step(scan_)) == SQLITE_ROW) {
      const std::string_view k(static_cast<const char*>(::sqlite3_column_blob(scan_, 0)), static_cast<std::size_t>(::sqlite3_column_bytes(scan_, 0)));
      const std::string_view v(static_cast<const char*>(::sqlite3_column_blob(scan_, 1)), static_cast<std::size_t>(::sqlite3_column_bytes(scan_, 1)));
      if (!after.empty() && k == after) continue;  // the first row, at most (keys are unique)
      ++n;
      bool more = false;
      try {
        more = fn(k, v);
      } catch (...) {
        ::sqlite3_reset(scan_);
        throw;
      }
      if (!more || n == limit) break;
    }
    ::sqlite3_reset(scan_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) check(rc, "sqlite3_step");
    return n;
  }
  // One DELETE of the key range.
  void erase_prefix(const std::string& prefix) override {
    std::lock_guard lk(mu_);
    const std::string end = prefix_end(prefix);
    ::sqlite3_bind_blob(erase_range_, 1, prefix.data(), static_cast<int>(prefix.size()), SQLITE_STATIC);
    ::sqlite3_bind_blob(erase_range_, 2, end.data(), static_cast<int>(end.size()), SQLITE_STATIC);
    step_done(erase_range_, "DELETE");
  }
  void erase(const std::vector<std::string>& keys, std::size_t first, std::size_t last) override {
    std::lock_guard lk(mu_);
    step_done(begin_, "BEGIN IMMEDIATE");
    for (std::size_t i = first; i < last; ++i) {
      const std::string k = native_key(keys[i]);
      ::sqlite3_bind_blob(del_, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
      step_done(del_, "DELETE");
    }
    step_done(commit_, "COMMIT");
  }
  bool get_raw(const std::string& k, std::string& value) override {
    std::lock_guard lk(mu_);
    ::sqlite3_bind_blob(get_, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
    const int rc = ::sqlite3_step(get_);
    const bool found = rc == SQLITE_ROW;
    if (found) value.assign(static_cast<const char*>(::sqlite3_column_blob(get_, 0)), static_cast<std::size_t>(::sqlite3_column_bytes(get_, 0)));
    ::sqlite3_reset(get_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) check(rc, "sqlite3_step");
    return found;
  }
  std::size_t range(const std::string& from, std::size_t n) override {
    std::lock_guard lk(mu_);
    const std::string k = native_key(from);
    ::sqlite3_bind_blob(range_, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
    ::sqlite3_bind_int64(range_, 2, static_cast<sqlite3_int64>(n));
    std::size_t got = 0;
    std::string copy;
    int rc;
    while ((rc = ::sqlite3_step(range_)) == SQLITE_ROW) {
      const auto* key = static_cast<const char*>(::sqlite3_column_blob(range_, 0));
      const auto key_size = static_cast<std::size_t>(::sqlite3_column_bytes(range_, 0));
      if (key_size < 3 || std::string_view(key, 3) != "KV.") break;
      copy.assign(static_cast<const char*>(::sqlite3_column_blob(range_, 1)), static_cast<std::size_t>(::sqlite3_column_bytes(range_, 1)));
      ++got;
    }
    ::sqlite3_reset(range_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) check(rc, "sqlite3_step");
    return got;
  }

 private:
  void check(int rc, const char* call) const {
    if (rc != SQLITE_OK) throw std::runtime_error(std::string(call) + ": " + ::sqlite3_errstr(rc));
  }
  void exec(const char* sql) {
    char* msg = nullptr;
    if (::sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      const std::string what = msg != nullptr ? msg : "?";
      ::sqlite3_free(msg);
      throw std::runtime_error(std::string("sqlite3_exec: ") + sql + ": " + what);
    }
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* st = nullptr;
    check(::sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr), "sqlite3_prepare_v3");
    return st;
  }
  void step_done(sqlite3_stmt* st, const char* what) {
    const int rc = ::sqlite3_step(st);
    ::sqlite3_reset(st);
    if (rc != SQLITE_DONE) check(rc, what);
  }
  void put(const std::string& k, const std::string& v) {
    ::sqlite3_bind_blob(put_, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
    ::sqlite3_bind_blob(put_, 2, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    step_done(put_, "INSERT");
  }
  std::mutex mu_;  // one thread at a time on the connection and its statements
  bool wal_ = false;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* put_ = nullptr;
  sqlite3_stmt* get_ = nullptr;
  sqlite3_stmt* del_ = nullptr;
  sqlite3_stmt* range_ = nullptr;
  sqlite3_stmt* scan_ = nullptr;
  sqlite3_stmt* erase_range_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
};
#endif

// The broker's publish on a native API, with hand-written binary keys in the seed's layout:
// "M" id offset (content), "D" queue 0x00 id (metadata), "I" id (index), "C" queue (count), ids
// and offsets big-endian so that they sort numerically.
std::string be(std::uint64_t v, int bytes) {
  std::string out(static_cast<std::size_t>(bytes), '\0');
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) out[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xFF);
  return out;
}

// The tuple encoding (docs/encoding.md) of a text without a NUL byte (02 text 00) and of an
// unsigned integer (14 for zero, else 14 + n and the value big-endian in its n bytes), by hand.
std::string tuple_text(std::string_view s) {
  std::string out(1, '\x02');
  out.append(s);
  out.push_back('\0');
  return out;
}
std::string tuple_uint(std::uint64_t v) {
  int n = 0;
  for (std::uint64_t x = v; x != 0; x >>= 8) ++n;
  return static_cast<char>(0x14 + n) + (n == 0 ? std::string() : be(v, n));
}

// The keys (and count values) the native side writes for the broker's keyspaces.
//   hand_packed: one-letter tags, ids big-endian, counts 8 bytes big-endian (the layout above),
//     what a user of the plain engine would pack by hand; every broker workload but readers_N.
//   seed_words: the seed schema's words and fields as the store writes them, in the tuple
//     encoding, written by hand (tuple_text, tuple_uint): "MESSAGE" id offset "MESSAGE_CONTENT",
//     "DESTINATION" queue "MESSAGE_METADATA" id, "MESSAGE_INDEX" id, "MESSAGE_COUNT" queue, counts
//     as one tuple integer. readers_N: a point read's speed depends on the database's shape,
//     which follows its size (readers_native says how).
enum class native_keys { hand_packed, seed_words };
std::string broker_content_key(native_keys k, std::uint64_t id, std::uint64_t offset) {
  if (k == native_keys::hand_packed) return "M" + be(id, 8) + be(offset, 4);
  return tuple_text("MESSAGE") + tuple_uint(id) + tuple_uint(offset) + tuple_text("MESSAGE_CONTENT");
}
std::string broker_meta_key(native_keys k, const std::string& q, std::uint64_t id) {
  if (k == native_keys::hand_packed) return "D" + q + std::string(1, '\0') + be(id, 8);
  return tuple_text("DESTINATION") + tuple_text(q) + tuple_text("MESSAGE_METADATA") + tuple_uint(id);
}
std::string broker_index_key(native_keys k, std::uint64_t id) {
  return k == native_keys::hand_packed ? "I" + be(id, 8) : tuple_text("MESSAGE_INDEX") + tuple_uint(id);
}
std::string broker_count_key(native_keys k, const std::string& q) {
  return k == native_keys::hand_packed ? "C" + q : tuple_text("MESSAGE_COUNT") + tuple_text(q);
}
// A count of at least 0.
std::string broker_count_value(native_keys k, std::int64_t c) {
  const auto u = static_cast<std::uint64_t>(c);
  return k == native_keys::hand_packed ? be(u, 8) : tuple_uint(u);
}
// The first bytes of every key of each broker keyspace.
std::vector<std::string> broker_prefixes(native_keys k) {
  if (k == native_keys::hand_packed) return {"C", "D", "I", "M"};
  return {tuple_text("DESTINATION"), tuple_text("MESSAGE"), tuple_text("MESSAGE_COUNT"), tuple_text("MESSAGE_INDEX")};
}

// chunk_size 0: one 1 KiB content value per message; otherwise 64 KiB bodies in chunks of
// chunk_size (the chunks only: no header, no erase of a previous value). Not timed when p is null.
// keys: the key layout (native_keys).
void publish_native(native_kv& db, std::uint64_t messages, std::uint64_t queues, std::size_t chunk_size,
                    cmp::probe* p, native_keys keys = native_keys::hand_packed) {
  std::optional<unsynced> preparing;
  if (p == nullptr) preparing.emplace(db);
  std::map<std::string, std::int64_t> counts;
  const std::string content(1024, 'c'), meta(64, 'm');
  std::vector<std::pair<std::string, std::string>> kvs;
  for (std::uint64_t first = 0; first < messages; first += 100) {
    const std::uint64_t last = std::min(messages, first + 100);
    auto commit = [&] {
      kvs.clear();
      std::map<std::string, std::int64_t> touched;
      for (std::uint64_t id = first; id < last; ++id) {
        const std::string q = queue_name(id % queues);
        if (chunk_size == 0) kvs.emplace_back(broker_content_key(keys, id, 0), content);
        else
          for (std::size_t off = 0, c = 1; off < body_64k.size(); off += chunk_size, ++c)
            kvs.emplace_back(broker_content_key(keys, id, c), body_64k.substr(off, chunk_size));
        kvs.emplace_back(broker_meta_key(keys, q, id), meta);
        kvs.emplace_back(broker_index_key(keys, id), q);
        touched[q] = ++counts[q];
      }
      for (const auto& [q, c] : touched) kvs.emplace_back(broker_count_key(keys, q), broker_count_value(keys, c));
      db.write_pairs(kvs);
    };
    if (p != nullptr) p->op(commit, last - first);
    else commit();
  }
}

std::string native_content_key(std::uint64_t id) { return "M" + be(id, 8) + be(0, 4); }

// writers_N on a native API: each thread commits its own messages one at a time (content,
// metadata, index entry and its queue's count). A thread's queue is its own (threads <= queues),
// so it keeps the count itself and writes it, where the store adds 1 to the stored count.
void writers_native(native_kv& db, const sizes& sz, unsigned threads, cmp::probe& p) {
  std::vector<std::int64_t> counts(threads, 0);
  const std::string content(1024, 'c'), meta(64, 'm');
  p.parallel(threads, sz.concurrent_commits / threads, [&](unsigned t, std::uint64_t i) {
    thread_local std::vector<std::pair<std::string, std::string>> kvs;
    const std::uint64_t id = (std::uint64_t{t} << 32) | i;
    const std::string q = queue_name(t % sz.queues);
    kvs.clear();
    kvs.emplace_back(native_content_key(id), content);
    kvs.emplace_back("D" + q + std::string(1, '\0') + be(id, 8), meta);
    kvs.emplace_back("I" + be(id, 8), q);
    kvs.emplace_back("C" + q, be(static_cast<std::uint64_t>(++counts[t]), 8));
    db.write_pairs(kvs);
  });
}

// readers_N on a native API: the same random reads of message contents (preloaded, not timed),
// on the same entries as the store's: the seed's keys in the store's bytes (native_keys::
// seed_words), checked afterwards (check_readers_preload). A point read's speed depends on where
// its entry is: in LevelDB's or RocksDB's memtable (a skip list search), in a table block in the
// block cache, or in a block read from the table file, checked and decompressed; where the
// entries are when the reads start follows from their bytes, at thresholds (a memtable is
// written to a table when it reaches write_buffer_size, tables fit the block cache or not).
// With the shorter hand-packed keys, --scale 10 (10,000 messages) left LevelDB's native side
// with 3,200 messages in its memtable and 6,800 in tables that fit its 8 MiB block cache, and
// the store with all of them in tables (its third memtable filled at message 9,900), 2 MiB of
// blocks more than the cache holds: 44 % of its reads missed the cache and keyschema read at
// about half the native rate, at the native rate with 9,000 or 11,000 messages. What the longer
// keys cost is the schema's choice of words, not the typed layer's
// (docs/performance.md#key-length).
void readers_native(native_kv& db, const sizes& sz, unsigned threads, cmp::probe& p) {
  publish_native(db, sz.messages, sz.queues, 0, nullptr, native_keys::seed_words);
  p.parallel(threads, sz.concurrent_reads / threads, [&](unsigned t, std::uint64_t i) {
    thread_local std::string k, v;  // kept: no allocation per read, as the store encodes its keys
    const std::uint64_t id = (i * 2654435761u + t * 97u) % sz.messages;
    // broker_content_key(native_keys::seed_words, id, 0), encoded in place.
    k.assign("\x02MESSAGE\x00", 9);
    int n = 0;
    for (std::uint64_t x = id; x != 0; x >>= 8) ++n;
    k.push_back(static_cast<char>(0x14 + n));
    for (int b = n - 1; b >= 0; --b) k.push_back(static_cast<char>(id >> (8 * b)));
    k.push_back('\x14');  // offset 0
    k.append("\x02MESSAGE_CONTENT\x00", 17);
    if (!db.get_raw(k, v)) throw std::runtime_error("readers native: message missing");
  });
  entries_digest d;
  for (const std::string& prefix : broker_prefixes(native_keys::seed_words))
    db.scan(prefix, {}, static_cast<std::size_t>(-1), [&](std::string_view k, std::string_view v) {
      d.add(k, v);
      return true;
    });
  check_readers_preload(d, "the native side");
}

// The broker's other workloads on a native API, written as a user of the plain engine would write
// them with the keys of publish_native: the same reads, writes and commits as the keyschema
// workloads above, each commit at the durability the native side was opened with.
std::string meta_prefix(const std::string& q) { return "D" + q + std::string(1, '\0'); }
std::string meta_key(const std::string& q, std::uint64_t id) { return meta_prefix(q) + be(id, 8); }
std::string index_key(std::uint64_t id) { return "I" + be(id, 8); }
std::string count_key(const std::string& q) { return "C" + q; }
std::string content_prefix(std::uint64_t id) { return "M" + be(id, 8); }
// The big-endian integer of the last `bytes` bytes of `s` (a key's id, a count, an expiry time).
std::uint64_t from_be(std::string_view s, std::size_t bytes = 8) {
  std::uint64_t v = 0;
  for (std::size_t i = s.size() - bytes; i < s.size(); ++i) v = v << 8 | static_cast<unsigned char>(s[i]);
  return v;
}
std::int64_t native_count(native_kv& db, const std::string& q) {
  std::string v;
  return db.get_raw(count_key(q), v) ? static_cast<std::int64_t>(from_be(v)) : 0;
}
using native_pairs = std::vector<std::pair<std::string, std::string>>;

// reopen: `messages` published durably, then the engine closed and opened again (one operation).
using native_opener = std::function<std::unique_ptr<native_kv>()>;
void reopen_native(const native_opener& opener, const sizes& sz, cmp::probe& p) {
  std::unique_ptr<native_kv> db = opener();
  publish_native(*db, sz.messages, sz.queues, 0, nullptr);
  for (std::uint64_t i = 0; i < sz.reopens; ++i)
    p.op([&] {
      db.reset();
      db = opener();
    });
  std::string v;
  if (!db->get_raw(count_key(queue_name(0)), v)) throw std::runtime_error("reopen native: count missing");
}

// browse: 5 rounds over every queue, pages of 1,000 metadata entries after the last id seen.
void browse_native(native_kv& db, const sizes& sz, cmp::probe& p) {
  publish_native(db, sz.messages, sz.queues, 0, nullptr);
  for (int round = 0; round < 5; ++round)
    for (std::uint64_t q = 0; q < sz.queues; ++q) {
      const std::string prefix = meta_prefix(queue_name(q));
      std::string after;
      for (;;) {
        std::uint64_t got = 0, id = 0;
        p.op([&] {
          got = db.scan(prefix, after, 1000, [&](std::string_view k, std::string_view) {
            id = from_be(k);
            return true;
          });
          return got;
        });
        if (got < 1000) break;
        after = meta_key(queue_name(q), id);
      }
    }
}

// The 64 KiB body of message id (publish_native's chunks "M" id chunk), read by a scan of its
// chunks into body; their keys appended to *keys when keys is not null.
std::size_t read_body_native(native_kv& db, std::uint64_t id, std::string& body, std::vector<std::string>* keys) {
  body.clear();
  db.scan(content_prefix(id), {}, static_cast<std::size_t>(-1), [&](std::string_view k, std::string_view v) {
    body.append(v);
    if (keys != nullptr) keys->emplace_back(k);
    return true;
  });
  if (body.size() != body_64k.size()) throw std::runtime_error("64 KiB native: body of message " + std::to_string(id) + " incomplete");
  return body.size();
}
// The ids of the first `limit` messages of a queue (a scan of its metadata), into ids.
void queue_ids(native_kv& db, const std::string& queue, std::size_t limit, std::vector<std::uint64_t>& ids) {
  ids.clear();
  db.scan(meta_prefix(queue), {}, limit, [&](std::string_view k, std::string_view) {
    ids.push_back(from_be(k));
    return true;
  });
}

// consume: per queue, pages of `per` messages from the head: each message's content read (the
// 1 KiB value; chunk_size != 0: the 64 KiB body's chunks, by a scan), its keys erased and the
// queue's count written, one commit per page.
void consume_native(native_kv& db, const sizes& sz, std::size_t per, std::size_t chunk_size, cmp::probe& p) {
  publish_native(db, chunk_size == 0 ? sz.messages : sz.chunked, sz.queues, chunk_size, nullptr);
  std::vector<std::uint64_t> ids;
  std::vector<std::string> gone;
  std::string v;
  consume_queues(sz, per, p, [&](const std::string& q) {
    queue_ids(db, q, per, ids);
    gone.clear();
    for (const std::uint64_t id : ids) {
      if (chunk_size != 0) {
        read_body_native(db, id, v, &gone);
      } else {
        if (!db.get_raw(native_content_key(id), v)) throw std::runtime_error("consume native: content missing");
        gone.push_back(native_content_key(id));
      }
      gone.push_back(meta_key(q, id));
      gone.push_back(index_key(id));
    }
    db.apply({{count_key(q), be(static_cast<std::uint64_t>(native_count(db, q) - static_cast<std::int64_t>(ids.size())), 8)}}, gone);
    return ids.size();
  });
}

// drain: queue 0's metadata, every content and index entry (erase_prefix: the engine's way), then
// the count set to 0: four commits, as drain_queue0's.
void drain_native_queue0(native_kv& db) {
  db.erase_prefix(meta_prefix(queue_name(0)));
  db.erase_prefix("M");
  db.erase_prefix("I");
  db.write_pairs({{count_key(queue_name(0)), be(0, 8)}});
}
void drain_native(native_kv& db, const sizes& sz, cmp::probe& p) {
  publish_native(db, sz.messages, 1, 0, nullptr);
  p.op([&] { drain_native_queue0(db); }, sz.messages);
}
// drained_lookup(_compacted): the first message of the drained queue 0, after the engine's
// compaction when `compacted`.
void drained_lookup_native(native_kv& db, const sizes& sz, bool compacted, cmp::probe& p) {
  publish_native(db, sz.messages, 1, 0, nullptr);
  drain_native_queue0(db);  // at the durability of the keyschema side's drain (p.write())
  if (compacted) db.compact();
  const std::string prefix = meta_prefix(queue_name(0));
  for (std::uint64_t i = 0; i < sz.lookups; ++i)
    p.op([&] {
      if (db.scan(prefix, {}, 1, [](std::string_view, std::string_view) { return true; }) != 0)
        throw std::runtime_error("drained_lookup native: the drained queue still has a message");
    });
}

// xa: the branch's writes (10 enqueues, 10 dequeues, the count read and written back) encoded
// into one prepared record "X" xid and committed durably (prepare); then, in one commit, the writes
// applied and the record erased (commit), or the record erased alone (rollback).
void xa_native(native_kv& db, const sizes& sz, bool commit, cmp::probe& p) {
  publish_native(db, sz.xa * 10, 1, 0, nullptr);
  const std::string q = queue_name(0), content(1024, 'c'), meta(64, 'm');
  std::uint64_t next_id = sz.xa * 10, dequeued = 0;
  native_pairs puts;
  std::vector<std::string> gone;
  for (std::uint64_t t = 0; t < sz.xa; ++t) {
    p.op([&] {
      puts.clear();
      gone.clear();
      for (int i = 0; i < 10; ++i, ++next_id) {
        puts.emplace_back(native_content_key(next_id), content);
        puts.emplace_back(meta_key(q, next_id), meta);
        puts.emplace_back(index_key(next_id), q);
      }
      for (int i = 0; i < 10; ++i, ++dequeued) {
        gone.push_back(native_content_key(dequeued));
        gone.push_back(meta_key(q, dequeued));
        gone.push_back(index_key(dequeued));
      }
      puts.emplace_back(count_key(q), be(static_cast<std::uint64_t>(native_count(db, q)), 8));
      // The prepared record: each write as a tag, lengths and bytes.
      std::string record;
      for (const auto& [k, v] : puts) record += "P" + be(k.size(), 4) + k + be(v.size(), 4) + v;
      for (const std::string& k : gone) record += "E" + be(k.size(), 4) + k;
      const std::string xid_key = "X" + std::string("xid-") + std::to_string(t);
      db.write_pairs({{xid_key, record}});
      if (commit) {
        gone.push_back(xid_key);
        db.apply(puts, gone);
      } else {
        db.apply({}, {xid_key});
      }
    });
    if (!commit) dequeued -= 10;
  }
  std::string v;
  if (commit == db.get_raw(meta_key(q, 0), v)) throw std::runtime_error("xa native: outcome not applied");
}

// expiry: the metadata of `messages` messages over the queues, 20 % with an expiry time in its
// first 8 bytes and an index entry "E" time queue 0x00 id written with it; the sweep reads up to
// 100 due index entries, each entry's metadata, and erases both, one commit per 100, until none.
std::string expiry_key(std::uint64_t at, const std::string& q, std::uint64_t id) { return "E" + be(at, 8) + meta_key(q, id).substr(1); }
// One sweep batch: the first `limit` index entries, each with its metadata (read first, as
// ks::sweep reads the record) erased, and `extra(queue, id, gone)` for what else goes with it,
// committed by commit(gone). Returns the records erased.
template <class Extra, class Commit>
std::size_t sweep_batch_native(native_kv& db, std::size_t limit, Extra&& extra, Commit&& commit) {
  thread_local std::vector<std::string> due, gone;
  due.clear();
  gone.clear();
  db.scan("E", {}, limit, [&](std::string_view k, std::string_view) {
    due.emplace_back(k);
    return true;
  });
  std::size_t n = 0;
  std::string v;
  for (const std::string& e : due) {
    const std::string record = "D" + e.substr(9);  // "E" + 8 bytes of time
    const std::string q = record.substr(1, record.size() - 10);
    if (db.get_raw(record, v)) {
      gone.push_back(record);
      extra(q, from_be(record), gone);
      ++n;
    }
    gone.push_back(e);
  }
  if (!gone.empty()) commit(gone);
  return n;
}
void expiry_native(native_kv& db, const sizes& sz, cmp::probe& p) {
  std::uint64_t due = 0;
  native_pairs kvs;
  std::optional<unsynced> preparing{std::in_place, db};
  for (std::uint64_t first = 0; first < sz.messages; first += 100) {
    kvs.clear();
    for (std::uint64_t id = first; id < std::min(sz.messages, first + 100); ++id) {
      const std::uint64_t at = expiry_at(id);
      const std::string q = queue_name(id % sz.queues);
      kvs.emplace_back(meta_key(q, id), expiring_meta(at));
      if (at != 0) kvs.emplace_back(expiry_key(at, q, id), std::string());
      due += at != 0;
    }
    db.write_pairs(kvs);
  }
  preparing.reset();
  p.op([&] {
    std::size_t n = 0;
    auto commit = [&](const std::vector<std::string>& gone) { db.apply({}, gone); };
    while (const std::size_t k = sweep_batch_native(db, 100, [](const std::string&, std::uint64_t, auto&) {}, commit)) n += k;
    if (n != due) throw std::runtime_error("expiry native: swept " + std::to_string(n) + " of " + std::to_string(due));
    return n;
  });
}

// recovery: `topics` topics of 2 messages each, read back by one scan of every metadata entry
// (grouped: a topic ends where the destination in the key changes) or one scan per topic.
void recovery_native(native_kv& db, const sizes& sz, bool grouped, cmp::probe& p) {
  native_pairs kvs;
  const std::string meta(64, 'm');
  const unsynced preparing(db);
  for (std::uint64_t first = 0; first < sz.topics; first += 500) {
    kvs.clear();
    for (std::uint64_t t = first; t < std::min(sz.topics, first + 500); ++t)
      for (std::uint64_t m = 0; m < 2; ++m) kvs.emplace_back(meta_key("topic-" + std::to_string(t), m), meta);
    db.write_pairs(kvs);
  }
  const std::vector<std::string> names = sorted_topic_names(sz);
  p.op([&] {
    std::uint64_t entries = 0, topics = 0;
    if (grouped) {
      std::string current;
      db.scan("D", {}, static_cast<std::size_t>(-1), [&](std::string_view k, std::string_view v) {
        const std::string_view dest = k.substr(1, k.size() - 10);
        if (topics == 0 || dest != current) {
          current.assign(dest);
          ++topics;
        }
        entries += !v.empty();
        return true;
      });
    } else {
      for (const std::string& n : names) {
        ++topics;
        db.scan(meta_prefix(n), {}, static_cast<std::size_t>(-1), [&](std::string_view, std::string_view v) {
          entries += !v.empty();
          return true;
        });
      }
    }
    if (topics != sz.topics || entries != 2 * sz.topics) throw std::runtime_error("recovery native: wrong count");
    return entries;
  });
}

// browse_64k: 5 rounds over every queue, each a scan of its metadata and a read of each body.
void browse_64k_native(native_kv& db, const sizes& sz, cmp::probe& p) {
  publish_native(db, sz.chunked, sz.queues, chunk_16k, nullptr);
  std::vector<std::uint64_t> ids;
  std::string body;
  for (int round = 0; round < 5; ++round)
    for (std::uint64_t q = 0; q < sz.queues; ++q)
      p.op([&] {
        queue_ids(db, queue_name(q), static_cast<std::size_t>(-1), ids);
        for (const std::uint64_t id : ids) read_body_native(db, id, body, nullptr);
        return ids.size();
      });
}

// mixed on a native API (the keys of publish_native, the expiry index of expiry_native): the
// same roles and commits. The engines have no add: each commit that changes counts reads them
// and writes the new values under one mutex (a user's read-modify-write must not interleave
// with another's; held across the commit, which is what makes it atomic), as the store
// serializes its counted writes.
std::array<cmp::sample, 3> run_mixed_native(native_kv& db, const sizes& sz) {
  std::mutex counts_mu;
  auto commit_counted = [&](native_pairs& puts, const std::vector<std::string>& gone,
                            const std::map<std::string, std::int64_t>& delta) {
    std::lock_guard lk(counts_mu);
    for (const auto& [q, d] : delta) puts.emplace_back(count_key(q), be(static_cast<std::uint64_t>(native_count(db, q) + d), 8));
    db.apply(puts, gone);
  };
  const std::string content(1024, 'c');
  auto publish = [&](unsigned t, const std::string& q, std::uint64_t first, std::uint64_t last) {
    native_pairs puts;
    for (std::uint64_t i = first; i < last; ++i) {
      const std::uint64_t id = mixed_id(t, i), at = mixed_expiry(i);
      puts.emplace_back(native_content_key(id), content);
      puts.emplace_back(meta_key(q, id), expiring_meta(at));
      puts.emplace_back(index_key(id), q);
      if (at != 0) puts.emplace_back(expiry_key(at, q, id), std::string());
    }
    commit_counted(puts, {}, {{q, static_cast<std::int64_t>(last - first)}});
  };
  auto consume = [&](unsigned, const std::string& q, auto&& timed) {
    std::vector<std::uint64_t> ids;
    db.scan(meta_prefix(q), {}, 100, [&](std::string_view k, std::string_view v) {
      if (no_expiry(v)) ids.push_back(from_be(k));
      return ids.size() < 20;
    });
    if (ids.empty()) return std::uint64_t{0};
    std::vector<std::string> gone;
    std::string v;
    for (const std::uint64_t id : ids) {
      if (!db.get_raw(native_content_key(id), v)) throw std::runtime_error("mixed native: content missing");
      gone.push_back(native_content_key(id));
      gone.push_back(meta_key(q, id));
      gone.push_back(index_key(id));
    }
    native_pairs puts;
    timed([&] { commit_counted(puts, gone, {{q, -static_cast<std::int64_t>(ids.size())}}); });
    return static_cast<std::uint64_t>(ids.size());
  };
  auto sweep_once = [&] {
    std::size_t n = 0;
    for (;;) {
      std::map<std::string, std::int64_t> delta;
      std::vector<std::string> gone;
      const std::size_t k = sweep_batch_native(db, 100, [&](const std::string& q, std::uint64_t id, std::vector<std::string>& out) {
        out.push_back(native_content_key(id));
        out.push_back(index_key(id));
        --delta[q];
      }, [&](std::vector<std::string>& all) {
        native_pairs puts;
        commit_counted(puts, all, delta);
      });
      if (k == 0) return n;
      n += k;
    }
  };
  auto check = [&](const std::string& q) {
    if (const std::int64_t c = native_count(db, q); c != 0)
      throw std::runtime_error("mixed native: " + q + " has count " + std::to_string(c) + " after the run, not 0");
    if (db.scan(meta_prefix(q), {}, 1, [](std::string_view, std::string_view) { return true; }) != 0)
      throw std::runtime_error("mixed native: " + q + " still holds messages");
  };
  return run_mixed_roles(sz, publish, consume, sweep_once, check);
}

// Runs the mixed workload on every selected backend at each selected durability, and on each
// engine's native API with both baselines (run_mixed_native), warm-up + repetitions
// round-robin, and adds one result per role (mixed_publishers, mixed_consumers, mixed_sweeper)
// to r, with the native sides' rates.
template <class... Bs>
void run_mixed_all(cmp::runner<broker>& r, const sizes& sz, const std::vector<std::pair<std::string, native_open>>& natives,
                   const cmp::backend<mixed_schema, Bs>&... bs) {
  const cmp::options& opt = r.opts();
  struct cell {
    std::function<std::array<cmp::sample, 3>(std::uint64_t& bytes)> run;
    std::string backend;
    bool sync, durable;
    std::array<std::vector<cmp::sample>, 3> reps;
    std::uint64_t bytes = 0;  // the store's disk bytes at the end of the last run
    std::optional<cmp::baseline> native{};  // a native side's cell: which baseline
  };
  std::vector<cell> cells;
  std::uint64_t counter = 0;
  auto add = [&](const auto& b) {
    if (!opt.wants_backend(b.name)) return;
    std::vector<bool> syncs;
    if (!b.durable) syncs.push_back(false);
    else if (b.always_sync) syncs.push_back(true);
    else {
      if (opt.sync_on) syncs.push_back(true);
      if (opt.sync_off) syncs.push_back(false);
    }
    for (const bool sync : syncs)
      cells.push_back(cell{[&, sync](std::uint64_t& bytes) {
                             const fs::path dir = r.data_dir() / ("mixed-" + std::to_string(++counter));
                             fs::create_directories(dir);
                             std::array<cmp::sample, 3> s;
                             {
                               auto db = b.open(dir);
                               s = run_mixed(*db, sz, ks::write_options{.sync = sync});
                               bytes = b.measure_disk ? b.measure_disk(dir) : cmp::disk_bytes(dir);
                             }
                             fs::remove_all(dir);
                             return s;
                           },
                           b.name, sync, b.durable, {}});
  };
  (add(bs), ...);
  // The native sides of the engines whose store runs, at the same durabilities.
  const std::size_t stores = cells.size();
  for (std::size_t n = 0; n < stores; ++n)
    for (const auto& [engine, open] : natives) {
      if (cells[n].backend != engine) continue;
      for (const cmp::baseline view : {cmp::baseline::same_settings, cmp::baseline::user_view})
        cells.push_back(cell{[&, sync = cells[n].sync, open = open, view](std::uint64_t&) {
                               const fs::path dir = r.data_dir() / ("mixed-" + std::to_string(++counter));
                               fs::create_directories(dir);
                               std::array<cmp::sample, 3> s;
                               {
                                 auto db = open(dir, sync, native_setup{view, {}});
                                 s = run_mixed_native(*db, sz);
                               }
                               fs::remove_all(dir);
                               return s;
                             },
                             engine, cells[n].sync, true, {}, 0, view});
    }
  for (int i = 0; i < opt.warmup + opt.repetitions; ++i)
    for (cell& c : cells) {
      r.progress("mixed " + c.backend + (!c.native ? "" : *c.native == cmp::baseline::user_view ? " user view" : " native") +
                 " sync " + (c.sync ? "on" : "off") + (i < opt.warmup ? " warm-up" : " rep " + std::to_string(i - opt.warmup + 1)));
      std::array<cmp::sample, 3> s = c.run(c.bytes);
      if (i >= opt.warmup)
        for (std::size_t k = 0; k < 3; ++k) c.reps[k].push_back(std::move(s[k]));
    }
  std::vector<cmp::result> out;
  for (std::size_t k = 0; k < 3; ++k)
    for (cell& c : cells) {
      if (c.native) continue;
      cmp::result res = cmp::aggregate(c.backend, c.sync, mixed_roles::names[k], c.reps[k]);
      res.durable = c.durable;
      res.disk_bytes = c.bytes;
      for (const cell& n : cells) {
        if (!n.native || n.backend != c.backend || n.sync != c.sync) continue;
        const cmp::result nr = cmp::aggregate(n.backend, n.sync, mixed_roles::names[k], n.reps[k]);
        (*n.native == cmp::baseline::user_view ? res.user_ops_per_s : res.native_ops_per_s) = nr.ops_per_s;
        (*n.native == cmp::baseline::user_view ? res.user_samples : res.native_samples) = nr.samples;
      }
      out.push_back(std::move(res));
    }
  r.add_results(out);
}

struct table_workloads {
  sizes sz;
  std::vector<std::string> keys;    // entries loaded
  std::vector<std::string> fresh;   // keys written by the write workloads
  std::vector<std::size_t> probes;  // indexes of keys read

  explicit table_workloads(const sizes& s) : sz(s), keys(make_keys(s.entries, 1)),
                                             fresh(make_keys(std::max(s.single_writes, s.batches * 100), 2)) {
    std::mt19937_64 rng(3);
    for (std::uint64_t i = 0; i < std::max(s.reads, s.range_reads); ++i) probes.push_back(rng() % keys.size());
  }

  auto bulk_load() const {
    return [this](auto& db, cmp::probe& p) { load(db, keys, 1000, p.write(), &p, "bulk_load"); };
  }
  void bulk_load_native(native_kv& db, cmp::probe& p) const { native_load(db, keys, 1000, &p); }

  auto individual_writes() const {
    return [this](auto& db, cmp::probe& p) {
      for (std::uint64_t i = 0; i < sz.single_writes; ++i)
        p.op([&] { db.template put<kv>({ks::bytes(fresh[i])}, ks::bytes(value_150), p.write()); });
    };
  }
  void individual_writes_native(native_kv& db, cmp::probe& p) const {
    for (std::uint64_t i = 0; i < sz.single_writes; ++i) p.op([&] { db.write(fresh, i, i + 1); });
  }

  auto batch_writes() const {
    return [this](auto& db, cmp::probe& p) {
      std::vector<std::string> ks_(fresh.begin(), fresh.begin() + static_cast<std::ptrdiff_t>(sz.batches * 100));
      load(db, ks_, 100, p.write(), &p, "batch_writes");
    };
  }
  void batch_writes_native(native_kv& db, cmp::probe& p) const {
    std::vector<std::string> ks_(fresh.begin(), fresh.begin() + static_cast<std::ptrdiff_t>(sz.batches * 100));
    native_load(db, ks_, 100, &p);
  }

  auto random_reads() const {
    return [this](auto& db, cmp::probe& p) {
      load(db, keys, 1000, {.sync = false}, nullptr);
      for (std::uint64_t i = 0; i < sz.reads; ++i)
        p.op([&] {
          if (!db.template get<kv>({ks::bytes(keys[probes[i]])})) throw std::runtime_error("random_reads: key missing");
        });
    };
  }
  void random_reads_native(native_kv& db, cmp::probe& p) const {
    native_load(db, keys, 1000, nullptr);
    std::string v;
    for (std::uint64_t i = 0; i < sz.reads; ++i)
      p.op([&] {
        if (!db.get(keys[probes[i]], v)) throw std::runtime_error("random_reads native: key missing");
      });
  }

  // random_reads from two threads at once on one store (the keys split between them).
  auto random_reads_2_threads() const {
    return [this](auto& db, cmp::probe& p) {
      load(db, keys, 1000, {.sync = false}, nullptr);
      p.parallel(2, sz.reads / 2, [&](unsigned t, std::uint64_t i) {
        if (!db.template get<kv>({ks::bytes(keys[probes[2 * i + t]])}))
          throw std::runtime_error("random_reads_2_threads: key missing");
      });
    };
  }
  void random_reads_2_threads_native(native_kv& db, cmp::probe& p) const {
    native_load(db, keys, 1000, nullptr);
    p.parallel(2, sz.reads / 2, [&](unsigned t, std::uint64_t i) {
      thread_local std::string v;
      if (!db.get(keys[probes[2 * i + t]], v)) throw std::runtime_error("random_reads_2_threads native: key missing");
    });
  }

  auto range_reads() const {
    return [this](auto& db, cmp::probe& p) {
      load(db, keys, 1000, {.sync = false}, nullptr);
      for (std::uint64_t i = 0; i < sz.range_reads; ++i) {
        std::size_t got = 0;
        p.op([&] {
          for (const auto& e : db.template scan<kv>().from(ks::bytes(keys[probes[i]])).limit(10)) got += e.value.size() > 0;
        }, 10);
      }
    };
  }
  void range_reads_native(native_kv& db, cmp::probe& p) const {
    native_load(db, keys, 1000, nullptr);
    for (std::uint64_t i = 0; i < sz.range_reads; ++i) p.op([&] { db.range(keys[probes[i]], 10); }, 10);
  }

  auto removals() const {
    return [this](auto& db, cmp::probe& p) {
      load(db, keys, 1000, {.sync = false}, nullptr);
      const std::uint64_t n = std::min<std::uint64_t>(sz.removals, keys.size());
      for (std::uint64_t first = 0; first < n; first += 100) {
        const std::uint64_t last = std::min(n, first + 100);
        p.op([&] {
          auto b = db.batch();
          for (std::uint64_t i = first; i < last; ++i) b.template erase<kv>({ks::bytes(keys[i])});
          b.commit(p.write());
        }, last - first);
      }
    };
  }
  void removals_native(native_kv& db, cmp::probe& p) const {
    native_load(db, keys, 1000, nullptr);
    const std::uint64_t n = std::min<std::uint64_t>(sz.removals, keys.size());
    for (std::uint64_t first = 0; first < n; first += 100) {
      const std::uint64_t last = std::min(n, first + 100);
      p.op([&] { db.erase(keys, first, last); }, last - first);
    }
  }
};

// --setting-costs: what each adapter setting costs, measured on the engines' native APIs. For
// each engine, the native side runs with all of the adapter's settings, with all but one (each
// setting of native_settings() in turn) and as a user would open the engine (the engine's
// default options), round-robin over warm-up + repetitions; each row prints the rate with the
// setting divided by the rate without it (with every setting: the adapter's settings against
// the engine's defaults). Below 1: what the setting costs; "~" marks a difference the decision
// rule does not call significant. Workloads: publish at sync on and off, random_reads and
// random_range_reads of the standard table.
int measure_setting_costs(cmp::runner<broker>& br, const std::vector<std::pair<std::string, native_open>>& natives,
                          const sizes& sz) {
  const table_workloads tw(sz);
  struct workload {
    const char* name;
    bool sync;
    std::function<void(native_kv&, cmp::probe&)> fn;
  };
  const std::vector<workload> workloads{
      {"publish sync on", true, [&](native_kv& db, cmp::probe& p) { publish_native(db, sz.messages, sz.queues, 0, &p); }},
      {"publish sync off", false, [&](native_kv& db, cmp::probe& p) { publish_native(db, sz.messages, sz.queues, 0, &p); }},
      {"random_reads", false, [&](native_kv& db, cmp::probe& p) { tw.random_reads_native(db, p); }},
      {"random_range_reads", false, [&](native_kv& db, cmp::probe& p) { tw.range_reads_native(db, p); }},
  };
  const cmp::options& opt = br.opts();
  std::cout << "setting costs: the native API's rate with the setting / without it (below 1: its cost; "
            << "~: not significant, Mann-Whitney U p >= 0.01 or < 5 % apart; " << opt.repetitions << " repetitions)\n";
  std::printf("%-8s %-26s", "engine", "setting");
  for (const workload& w : workloads) std::printf(" %20s", w.name);
  std::printf("\n");
  std::uint64_t counter = 0;
  for (const auto& [engine, open] : natives) {
    const auto found = native_settings().find(engine);
    if (found == native_settings().end()) continue;
    std::vector<native_setup> setups{native_setup{}};
    for (const std::string& s : found->second) setups.push_back(native_setup{cmp::baseline::same_settings, s});
    setups.push_back(native_setup{cmp::baseline::user_view, {}});
    // rates[setup][workload]: ops/s of each repetition.
    std::vector<std::vector<std::vector<double>>> rates(setups.size(), std::vector<std::vector<double>>(workloads.size()));
    for (std::size_t wi = 0; wi < workloads.size(); ++wi) {
      for (int rep = 0; rep < opt.warmup + opt.repetitions; ++rep) {
        for (std::size_t si = 0; si < setups.size(); ++si) {
          br.progress("setting costs: " + engine + " " + workloads[wi].name + " " +
                      (setups[si].view == cmp::baseline::user_view ? "defaults"
                       : setups[si].without.empty()                ? "adapter"
                                                                   : "without " + setups[si].without));
          const fs::path dir = br.data_dir() / ("cost-" + std::to_string(++counter));
          fs::create_directories(dir);
          cmp::probe p(workloads[wi].sync);
          {
            auto db = open(dir, workloads[wi].sync, setups[si]);
            workloads[wi].fn(*db, p);
          }
          fs::remove_all(dir);
          const cmp::sample& m = p.measured();
          if (rep >= opt.warmup && m.seconds > 0) rates[si][wi].push_back(static_cast<double>(m.items) / m.seconds);
        }
      }
    }
    for (std::size_t si = 1; si < setups.size(); ++si) {
      const bool user = setups[si].view == cmp::baseline::user_view;
      std::printf("%-8s %-26s", engine.c_str(), user ? "all (against defaults)" : setups[si].without.c_str());
      for (std::size_t wi = 0; wi < workloads.size(); ++wi) {
        const auto& with = rates[0][wi];
        const auto& without = rates[si][wi];
        const cmp::comparison_result c = cmp::compare(with, without);
        char cell[32];
        std::snprintf(cell, sizeof cell, "%.2f%s", cmp::median(with) / cmp::median(without),
                      c.v == cmp::verdict::no_clear_winner ? " ~" : "");
        std::printf(" %20s", cell);
      }
      std::printf("\n");
    }
    std::fflush(stdout);
  }
  return 0;
}

#if KEYSCHEMA_BENCH_WITH_ETCD
// The etcd side: every run's store keeps its keys under one prefix of the cluster. Opening a
// store (not timed) first erases what the previous run left under it and compacts the history,
// so that each run starts from an empty keyspace; its disk figure is what the members' databases
// grew by during the run (dbSizeInUse, summed over the members: every replica's copy and the
// history the run left).
struct etcd_target {
  std::vector<std::string> endpoints;
  std::uint64_t baseline = 0;
  static constexpr const char* prefix = "keyschema-bench/";

  ks::etcd_options options() const {
    ks::etcd_options o;
    o.endpoints = endpoints;
    o.key_prefix = prefix;
    o.deadline = std::chrono::milliseconds(30000);
    o.attempt_timeout = std::chrono::milliseconds(5000);  // a loaded machine: slow answers, no hung member
    return o;
  }
  void clear() {
    ks::etcd_backend clean(options());
    clean.erase_range(ks::key_range{}, ks::write_options{});
    clean.compact_history();
    baseline = keyschema_bench::etcd_admin(endpoints).db_bytes_in_use();
  }
  std::uint64_t grown() const {
    const std::uint64_t now = keyschema_bench::etcd_admin(endpoints).db_bytes_in_use();
    return now > baseline ? now - baseline : 0;
  }
};

template <class Schema>
cmp::backend<Schema, ks::etcd_backend> etcd_bench_backend(etcd_target& t) {
  cmp::backend<Schema, ks::etcd_backend> b{"etcd"};
  b.durable = true;
  b.always_sync = true;
  b.open = [&t](const fs::path&) {
    t.clear();
    return std::make_unique<ks::store<Schema, ks::etcd_backend>>(t.options());
  };
  b.measure_disk = [&t](const fs::path&) { return t.grown(); };
  b.reopen = [&t](const fs::path&) { return std::make_unique<ks::store<Schema, ks::etcd_backend>>(t.options()); };
  return b;
}
#endif

// The backends of one schema that the program runs, each with its settings: the engine's
// compaction for the disk size after compaction (LevelDB and RocksDB: compact_range, the
// harness's default; SQLite: VACUUM and a truncating WAL checkpoint; LMDB, which cannot shrink
// its file in place: the size of a compacted copy, mdb_env_copy2 with MDB_CP_COMPACT).
template <class Schema>
struct bench_backends {
  cmp::backend<Schema, ks::memory_backend> memory{"memory"};
#if KEYSCHEMA_BENCH_WITH_LEVELDB
  cmp::backend<Schema, ks::leveldb_backend> leveldb{"leveldb"};
#endif
#if KEYSCHEMA_BENCH_WITH_LMDB
  cmp::backend<Schema, ks::lmdb_backend> lmdb{"lmdb"};
#endif
#if KEYSCHEMA_BENCH_WITH_ROCKSDB
  cmp::backend<Schema, ks::rocksdb_backend> rocksdb{"rocksdb"};
#endif
#if KEYSCHEMA_BENCH_WITH_SQLITE
  cmp::backend<Schema, ks::sqlite_backend> sqlite{"sqlite"};
#endif
#if KEYSCHEMA_BENCH_WITH_ETCD
  cmp::backend<Schema, ks::etcd_backend> etcd;
  explicit bench_backends(etcd_target& t) : etcd(etcd_bench_backend<Schema>(t)) { init(); }
#else
  bench_backends() { init(); }
#endif

  // Calls f(backend...) with every backend above.
  template <class F>
  void apply(F&& f) const {
    std::apply([&](const auto&... b) { f(b...); },
               std::tuple_cat(std::tie(memory) KEYSCHEMA_BENCH_IF_LEVELDB(std::tie(leveldb))
                                  KEYSCHEMA_BENCH_IF_LMDB(std::tie(lmdb)) KEYSCHEMA_BENCH_IF_ROCKSDB(std::tie(rocksdb))
                                      KEYSCHEMA_BENCH_IF_SQLITE(std::tie(sqlite)) KEYSCHEMA_BENCH_IF_ETCD(std::tie(etcd))));
  }
  // r.run(name, work, every backend), or only those that keep data on disk.
  template <class Work>
  void run(cmp::runner<Schema>& r, const std::string& name, Work work, bool durable_only = false) const {
    apply([&](const auto&... b) {
      if (!durable_only) r.run(name, work, b...);
      else ([&] { if (b.durable) r.run(name, work, b); }(), ...);
    });
  }
  template <class Work>
  void run_reads(cmp::runner<Schema>& r, const std::string& name, Work work, bool durable_only = false) const {
    apply([&](const auto&... b) {
      if (!durable_only) r.run_reads(name, work, b...);
      else ([&] { if (b.durable) r.run_reads(name, work, b); }(), ...);
    });
  }

 private:
  void init() {
#if KEYSCHEMA_BENCH_WITH_SQLITE
    sqlite.compact = [](auto& db, const fs::path& dir) {
      for (const char* sql : {"VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"}) {
        char* err = nullptr;
        if (::sqlite3_exec(db.unsafe_backend().native(), sql, nullptr, nullptr, &err) != SQLITE_OK) {
          const std::string what = std::string("sqlite3_exec ") + sql + ": " + (err != nullptr ? err : "?");
          ::sqlite3_free(err);
          throw std::runtime_error(what);
        }
      }
      return cmp::disk_bytes(dir);
    };
#endif
#if KEYSCHEMA_BENCH_WITH_LMDB
    lmdb.compact = [](auto& db, const fs::path& dir) {
      const fs::path copy = dir.parent_path() / (dir.filename().string() + "-compacted");
      fs::remove_all(copy);
      fs::create_directories(copy);
      if (const int rc = ::mdb_env_copy2(db.unsafe_backend().native(), copy.c_str(), MDB_CP_COMPACT); rc != 0)
        throw std::runtime_error(std::string("mdb_env_copy2 ") + copy.string() + ": " + ::mdb_strerror(rc));
      const std::uint64_t bytes = cmp::disk_bytes(copy);
      fs::remove_all(copy);
      return bytes;
    };
#endif
  }
};

void usage() {
  std::puts(
      "usage: keyschema-bench [--quick | --full | --scale F]\n"
      "         [--backends memory,leveldb,lmdb,lmdb-placed,rocksdb,rocksdb-blobs,sqlite,etcd]\n"
      "         [--workloads publish,publish_1_queue,publish_100_queues,publish_10000_queues,publish_64k,\n"
      "                      consume_64k,browse_64k,\n"
      "                      browse,consume,drain,drained_lookup,drained_lookup_compacted,xa_commit,\n"
      "                      xa_rollback,reopen,recovery_grouped,recovery_per_topic,expiry,bulk_load,\n"
      "                      individual_writes,batch_writes,random_reads,random_reads_2_threads,\n"
      "                      random_range_reads,removals,writers_1,writers_2,writers_4,writers_8,\n"
      "                      readers_1,readers_2,readers_4,readers_8,mixed]\n"
      "         [--sync on|off|both] [--repetitions N] [--warmup N] [--dir PATH]\n"
      "         [--json PATH] [--svg PATH] [--no-progress]\n"
      "         [--etcd-endpoints URL,... | --etcd-script PATH] [--etcd-port N] [--etcd-limits]\n"
      "         [--setting-costs] [--reads-per-sample N]\n"
      "Default: every backend but etcd and every workload, no warm-up and 5 repetitions, --json\n"
      "keyschema-bench.json --svg keyschema-bench.svg in the current directory, data in a fresh\n"
      "temporary directory. --quick: sizes / 20, no warm-up, 1 repetition (seconds; indicative only:\n"
      "one repetition names no store faster); --full: sizes x 10; --scale F: sizes x F.\n"
      "etcd (a replicated server, minutes per run) joins when --backends names it, e.g.\n"
      "  --backends leveldb,lmdb,rocksdb,sqlite,etcd --sync on\n"
      "The program then starts a local 3-member cluster with etcd-cluster.sh (--etcd-script;\n"
      "default: the one installed beside the program, share/keyschema/) on ports N..N+5 (--etcd-port, default 24800), its data under the\n"
      "data directory (real disk: --dir), and stops it and removes its data at the end, on error and\n"
      "on Ctrl-C; --etcd-endpoints uses a running cluster instead (its keys under keyschema-bench/;\n"
      "default limits assumed: 128 operations, 1.5 MiB per Txn). etcd runs at sync on only (every\n"
      "commit is replicated and fsync'ed); batches beyond its 128 operations per Txn run smaller\n"
      "(listed under the table). --etcd-limits: instead of the workloads, measure etcd's limits on a\n"
      "cluster of its own (operations and bytes per Txn, value size, a 64 MiB space quota filled\n"
      "until etcd refuses writes) and print each error the adapter gives.\n"
      "--reads-per-sample N: readers_N's point reads per repetition, all threads together (default\n"
      "40,000, scaled by --quick/--full/--scale; more make each sample longer and steadier).\n"
      "--setting-costs: instead of the workloads, measure what each adapter setting costs on the\n"
      "engines' native APIs (the rate with the setting / without it; publish at sync on and off,\n"
      "random reads, range reads), and the adapter's settings against the engine's defaults.\n"
      "The native columns: 'native' divides keyschema's rate by the engine's with the adapter's\n"
      "settings (what the typed layer costs), 'user' by the plain engine's with its default\n"
      "options (what a user writing the engine calls themselves gives up, settings included).");
}

}  // namespace

// The cluster script installed (or copied into the build tree) beside the program:
// KEYSCHEMA_BENCH_ETCD_SCRIPT relative to the executable's directory (/proc/self/exe), or that
// relative path itself when the executable's path cannot be read.
static std::string default_etcd_script() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return KEYSCHEMA_BENCH_ETCD_SCRIPT;
  return (exe.parent_path() / KEYSCHEMA_BENCH_ETCD_SCRIPT).lexically_normal().string();
}

int main(int argc, char** argv) {
  try {
    cmp::options opt = cmp::options::parse(argc, argv);
    // No warm-up run unless --warmup asks for one: every run opens a fresh store in a fresh
    // directory, and the round-robin order of the repetitions keeps any one store from always
    // running first.
    if (std::none_of(argv + 1, argv + argc, [](const char* a) { return std::string_view(a) == "--warmup"; }))
      opt.warmup = 0;
    sizes sz;
    bool quick = false;
    std::string etcd_endpoints, etcd_script = default_etcd_script();
    int etcd_port = 24800;
    bool etcd_limits = false, setting_costs = false;
    std::uint64_t reads_per_sample = 0;  // 0: readers_N's default (scaled)
    for (std::size_t i = 0; i < opt.rest.size(); ++i) {
      const std::string& a = opt.rest[i];
      if (a == "--etcd-endpoints" && i + 1 < opt.rest.size()) {
        etcd_endpoints = opt.rest[++i];
      } else if (a == "--etcd-script" && i + 1 < opt.rest.size()) {
        etcd_script = opt.rest[++i];
      } else if (a == "--etcd-port" && i + 1 < opt.rest.size()) {
        etcd_port = std::stoi(opt.rest[++i]);
      } else if (a == "--etcd-limits") {
        etcd_limits = true;
      } else if (a == "--reads-per-sample" && i + 1 < opt.rest.size()) {
        const std::string& n = opt.rest[++i];
        std::size_t used = 0;
        try {
          reads_per_sample = std::stoull(n, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != n.size() || reads_per_sample < 8 || n.front() == '-') {
          std::fprintf(stderr, "keyschema-bench: --reads-per-sample '%s' is not a whole number of at least 8\n", n.c_str());
          return 2;
        }
      } else if (a == "--setting-costs") {
        setting_costs = true;
      } else if (a == "--help" || a == "-h") {
        usage();
        return 0;
      } else {
        std::fprintf(stderr, "keyschema-bench: unknown option '%s' (--help lists them)\n", a.c_str());
        return 2;
      }
    }
    // --quick, --full and --scale are the comparison harness's options (options::parse).
    quick = opt.quick;
    if (opt.scale != 1.0) sz.scale(opt.scale);
    if (reads_per_sample != 0) sz.concurrent_reads = reads_per_sample;
    if (opt.json.empty()) opt.json = "keyschema-bench.json";
    if (opt.svg.empty()) opt.svg = "keyschema-bench.svg";
    // Every backend but etcd unless --backends names them.
    if (opt.backends.empty()) {
      opt.backends = {"memory"};
      if (KEYSCHEMA_BENCH_WITH_LEVELDB) opt.backends.emplace_back("leveldb");
      if (KEYSCHEMA_BENCH_WITH_LMDB) opt.backends.insert(opt.backends.end(), {"lmdb", "lmdb-placed"});
      if (KEYSCHEMA_BENCH_WITH_ROCKSDB) opt.backends.insert(opt.backends.end(), {"rocksdb", "rocksdb-blobs"});
      if (KEYSCHEMA_BENCH_WITH_SQLITE) opt.backends.emplace_back("sqlite");
    }
    const bool with_etcd = etcd_limits || std::find(opt.backends.begin(), opt.backends.end(), "etcd") != opt.backends.end();
    if (with_etcd && !KEYSCHEMA_BENCH_WITH_ETCD) {
      std::fprintf(stderr, "keyschema-bench: etcd is not built in (keyschema::etcd needs libcurl and nlohmann/json)\n");
      return 2;
    }

    cmp::runner<broker> br(opt);
    // A misspelt --workloads or --backends name is an error now, not after the run.
    br.expect({"publish", "publish_1_queue", "publish_100_queues", "publish_10000_queues", "publish_64k", "consume_64k",
               "browse_64k", "browse",
               "consume", "drain", "drained_lookup", "drained_lookup_compacted", "xa_commit", "xa_rollback", "reopen",
               "recovery_grouped", "recovery_per_topic", "expiry", "bulk_load", "individual_writes", "batch_writes",
               "random_reads", "random_reads_2_threads", "random_range_reads", "removals", "writers_1", "writers_2",
               "writers_4", "writers_8", "readers_1", "readers_2", "readers_4", "readers_8", "mixed"},
              {"memory", "leveldb", "lmdb", "lmdb-placed", "rocksdb", "rocksdb-blobs", "sqlite", "etcd"});
#if KEYSCHEMA_BENCH_WITH_ETCD
    // Declared after the runner: stopped before the runner removes the data directory.
    std::optional<keyschema_bench::local_etcd_cluster> cluster;
    if (etcd_limits) return keyschema_bench::measure_etcd_limits(etcd_script, br.data_dir() / "etcd-limits", etcd_port);
    etcd_target etcd;
    if (with_etcd) {
      if (!etcd_endpoints.empty()) {
        etcd.endpoints = keyschema_bench::split_endpoints(etcd_endpoints);
      } else {
        br.progress("starting a 3-member etcd cluster on ports " + std::to_string(etcd_port) + ".." +
                    std::to_string(etcd_port + 5));
        cluster.emplace(etcd_script, br.data_dir() / "etcd-cluster", etcd_port);
        etcd.endpoints = cluster->endpoints();
      }
    }
#endif
    br.measure_fsync(quick ? 0.2 : 1.0);

#if KEYSCHEMA_BENCH_WITH_ETCD
    bench_backends<broker> bb(etcd);
    bench_backends<table> tb(etcd);
    bench_backends<expiry_schema> eb(etcd);
    bench_backends<mixed_schema> mb(etcd);
#else
    bench_backends<broker> bb;
    bench_backends<table> tb;
    bench_backends<expiry_schema> eb;
    bench_backends<mixed_schema> mb;
#endif
    std::vector<std::pair<std::string, native_open>> natives;
#if KEYSCHEMA_BENCH_WITH_LEVELDB
    natives.emplace_back("leveldb", [](const fs::path& d, bool s, const native_setup& u) {
      return std::make_unique<leveldb_native>(d, s, u);
    });
#endif
#if KEYSCHEMA_BENCH_WITH_LMDB
    natives.emplace_back("lmdb", [](const fs::path& d, bool s, const native_setup& u) {
      return std::make_unique<lmdb_native>(d, s, u);
    });
#endif
#if KEYSCHEMA_BENCH_WITH_ROCKSDB
    natives.emplace_back("rocksdb", [](const fs::path& d, bool s, const native_setup& u) {
      return std::make_unique<rocksdb_native>(d, s, u);
    });
#endif
#if KEYSCHEMA_BENCH_WITH_SQLITE
    natives.emplace_back("sqlite", [](const fs::path& d, bool s, const native_setup& u) {
      return std::make_unique<sqlite_native>(d, s, u);
    });
#endif
    if (setting_costs) return measure_setting_costs(br, natives, sz);
    // Runs fn(native_kv&, probe&) as `workload` of runner r on every engine's native API, with the
    // adapter's settings and as a user would open the engine (both baselines); or fn(opener,
    // probe&), where opener() opens the engine (again) in the run's directory (reopen).
    auto run_natives = [&](auto& r, const std::string& workload, auto fn) {
      for (const auto& [backend, open] : natives)
        for (const cmp::baseline view : {cmp::baseline::same_settings, cmp::baseline::user_view})
          r.run_native(workload, backend, [&, open = open, view](const fs::path& d, cmp::probe& p) {
            auto opener = [&] { return open(d, p.sync(), native_setup{view, {}}); };
            if constexpr (std::is_invocable_v<decltype(fn)&, native_kv&, cmp::probe&>) {
              auto db = opener();
              fn(*db, p);
            } else {
              fn(native_opener(opener), p);
            }
          }, view);
    };

    // The broker workload and its variants.
    auto publish_variant = [&](const std::string& name, auto work, std::uint64_t messages, std::uint64_t queues,
                               std::size_t chunk_size) {
      bb.run(br, name, work);
      run_natives(br, name, [&](native_kv& db, cmp::probe& p) { publish_native(db, messages, queues, chunk_size, &p); });
    };
    publish_variant("publish", publish_workload("publish", sz.messages, sz.queues), sz.messages, sz.queues, 0);
    for (const std::uint64_t queues : {1, 100, 10000}) {
      const std::string name = "publish_" + std::to_string(queues) + (queues == 1 ? "_queue" : "_queues");
      publish_variant(name, publish_workload(name, sz.variant_messages, queues), sz.variant_messages, queues, 0);
    }
    // The 64 KiB workloads, and their placed variant: the content in a placement of its own, as a
    // store of its own beside the others, on the backends that keep placements apart (LMDB: a
    // named database; RocksDB: a column family with blob files), round-robin with them. It has no
    // native side: a user placing the content by hand calls the same engine functions on a second
    // named database or column family; the unplaced rows' native columns are the comparison.
    bb.apply([&](const auto&... b) {
#if KEYSCHEMA_BENCH_WITH_LMDB
      cmp::backend<broker, ks::lmdb_backend, ks::store<broker_placed, ks::lmdb_backend>> lmdb_placed{"lmdb-placed"};
#define KEYSCHEMA_BENCH_PLACED_LMDB , lmdb_placed
#else
#define KEYSCHEMA_BENCH_PLACED_LMDB
#endif
#if KEYSCHEMA_BENCH_WITH_ROCKSDB
      // RocksDB: the content in a column family of its own with BlobDB blob files (values of
      // 4 KiB and more go to blob files, the LSM tree keeps their references).
      cmp::backend<broker, ks::rocksdb_backend, ks::store<broker_placed, ks::rocksdb_backend>> rocksdb_blobs{"rocksdb-blobs"};
      rocksdb_blobs.open = [](const fs::path& d) {
        ks::rocksdb_options o;
        o.placement_options["content"].blob_files = true;
        return std::make_unique<ks::store<broker_placed, ks::rocksdb_backend>>(d, o);
      };
#define KEYSCHEMA_BENCH_PLACED_ROCKSDB , rocksdb_blobs
#else
#define KEYSCHEMA_BENCH_PLACED_ROCKSDB
#endif
      br.run("publish_64k", publish_64k_workload(sz), b... KEYSCHEMA_BENCH_PLACED_LMDB KEYSCHEMA_BENCH_PLACED_ROCKSDB);
      br.run("consume_64k", consume_64k_workload(sz), b... KEYSCHEMA_BENCH_PLACED_LMDB KEYSCHEMA_BENCH_PLACED_ROCKSDB);
      br.run_reads("browse_64k", browse_64k_workload(sz), b... KEYSCHEMA_BENCH_PLACED_LMDB KEYSCHEMA_BENCH_PLACED_ROCKSDB);
#undef KEYSCHEMA_BENCH_PLACED_LMDB
#undef KEYSCHEMA_BENCH_PLACED_ROCKSDB
    });
    run_natives(br, "publish_64k", [&](native_kv& db, cmp::probe& p) { publish_native(db, sz.chunked, sz.queues, chunk_16k, &p); });
    run_natives(br, "consume_64k", [&](native_kv& db, cmp::probe& p) { consume_native(db, sz, 100, chunk_16k, p); });
    run_natives(br, "browse_64k", [&](native_kv& db, cmp::probe& p) { browse_64k_native(db, sz, p); });
    for (const unsigned threads : {1u, 2u, 4u, 8u}) {
      const std::string w = "writers_" + std::to_string(threads), rd = "readers_" + std::to_string(threads);
      bb.run(br, w, writers_workload(sz, threads));
      run_natives(br, w, [&](native_kv& db, cmp::probe& p) { writers_native(db, sz, threads, p); });
      bb.run_reads(br, rd, readers_workload(sz, threads));
      run_natives(br, rd, [&](native_kv& db, cmp::probe& p) { readers_native(db, sz, threads, p); });
    }
    bb.run_reads(br, "browse", browse_workload(sz));
    run_natives(br, "browse", [&](native_kv& db, cmp::probe& p) { browse_native(db, sz, p); });
    bb.run(br, "consume", consume_workload(sz));
    run_natives(br, "consume", [&](native_kv& db, cmp::probe& p) { consume_native(db, sz, 100, 0, p); });
    bb.run(br, "drain", drain_workload(sz));
    run_natives(br, "drain", [&](native_kv& db, cmp::probe& p) { drain_native(db, sz, p); });
    for (const bool compacted : {false, true}) {
      const std::string name = compacted ? "drained_lookup_compacted" : "drained_lookup";
      bb.run_reads(br, name, drained_lookup_workload(sz, compacted));
      run_natives(br, name, [&](native_kv& db, cmp::probe& p) { drained_lookup_native(db, sz, compacted, p); });
    }
    for (const bool commit : {true, false}) {
      const std::string name = commit ? "xa_commit" : "xa_rollback";
      bb.run(br, name, xa_workload(sz, commit));
      run_natives(br, name, [&](native_kv& db, cmp::probe& p) { xa_native(db, sz, commit, p); });
    }
    bb.run_reads(br, "reopen", reopen_workload(sz), /*durable_only=*/true);
    run_natives(br, "reopen", [&](const native_opener& opener, cmp::probe& p) { reopen_native(opener, sz, p); });
    for (const bool grouped : {true, false}) {
      const std::string name = grouped ? "recovery_grouped" : "recovery_per_topic";
      bb.run_reads(br, name, recovery_workload(sz, grouped));
      run_natives(br, name, [&](native_kv& db, cmp::probe& p) { recovery_native(db, sz, grouped, p); });
    }

    // The expiry sweep, on a schema with a declared index.
    cmp::options eopt = opt;
    eopt.dir = br.data_dir() / "expiry";
    cmp::runner<expiry_schema> er(eopt);
    eb.run(er, "expiry", expiry_workload(sz));
    run_natives(er, "expiry", [&](native_kv& db, cmp::probe& p) { expiry_native(db, sz, p); });

    // The mixed workload: publishers, consumers and the expiry sweeper at once on one store.
    if (br.offer("mixed")) mb.apply([&](const auto&... b) { run_mixed_all(br, sz, natives, b...); });

    // The standard table runs in a runner of its own schema; its results join the first's.
    cmp::options topt = opt;
    topt.dir = br.data_dir() / "table";
    cmp::runner<table> tr(topt);
    const table_workloads tw(sz);

    auto native = [&](const std::string& workload, void (table_workloads::*fn)(native_kv&, cmp::probe&) const) {
      run_natives(tr, workload, [&](native_kv& db, cmp::probe& p) { (tw.*fn)(db, p); });
    };
    tb.run(tr, "bulk_load", tw.bulk_load());
    native("bulk_load", &table_workloads::bulk_load_native);
    tb.run(tr, "individual_writes", tw.individual_writes());
    native("individual_writes", &table_workloads::individual_writes_native);
    tb.run(tr, "batch_writes", tw.batch_writes());
    native("batch_writes", &table_workloads::batch_writes_native);
    tb.run_reads(tr, "random_reads", tw.random_reads());
    native("random_reads", &table_workloads::random_reads_native);
    tb.run_reads(tr, "random_reads_2_threads", tw.random_reads_2_threads());
    native("random_reads_2_threads", &table_workloads::random_reads_2_threads_native);
    tb.run_reads(tr, "random_range_reads", tw.range_reads());
    native("random_range_reads", &table_workloads::range_reads_native);
    tb.run(tr, "removals", tw.removals());
    native("removals", &table_workloads::removals_native);

    // One report: the broker runner owns the output options and the machine description.
    br.machine().note = quick ? "--quick sizes" : "";
    br.add_results(er);
    br.add_results(tr);
    const int rc = br.finish();
    if (!batch_notes().empty()) {
      std::cout << "smaller batches (the backend's write limits):\n";
      for (const std::string& n : batch_notes()) std::cout << "  " << n << "\n";
    }
    return rc;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "keyschema-bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nkeyschema-bench: %s\n", e.what());
    return 1;
  }
}
