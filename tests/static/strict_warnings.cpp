// tests/static/strict_warnings.cpp: keyschema's headers are clean under a strict consumer's
// warnings.
//
// A program that consumes keyschema may build with -Wshadow -Wconversion -Wsign-conversion
// -Werror. keyschema's CMake targets hand their include directories to consumers as SYSTEM
// directories (warnings inside them are not reported), but a consumer that adds the headers with
// a plain -I, or a compiler that ignores the SYSTEM marking, sees every warning of every template
// it instantiates. This file includes every public header of the core and of each adapter enabled
// in the build, and instantiates the store's whole typed surface (point reads and writes, scans
// with bounds, batches, transactions, adds, declared counts, indexes and their sweep, chunked
// values, prepared transactions) on every backend, with the extra warning flags given in
// tests/CMakeLists.txt and the include directories as plain -I (not SYSTEM). It is compiled only
// (front end, -fsyntax-only, which instantiates the templates); nothing runs.
#include <keyschema/chunked.hpp>
#include <keyschema/keyschema.hpp>
#include <keyschema/prepared.hpp>
#include <keyschema/retry.hpp>
#include <keyschema/sum.hpp>

#if __has_include(<keyschema/leveldb.hpp>) && defined(STRICT_WITH_LEVELDB)
#include <keyschema/leveldb.hpp>
#endif
#if __has_include(<keyschema/lmdb.hpp>) && defined(STRICT_WITH_LMDB)
#include <keyschema/lmdb.hpp>
#endif
#if __has_include(<keyschema/rocksdb.hpp>) && defined(STRICT_WITH_ROCKSDB)
#include <keyschema/rocksdb.hpp>
#endif
#if __has_include(<keyschema/sqlite.hpp>) && defined(STRICT_WITH_SQLITE)
#include <keyschema/sqlite.hpp>
#endif
#if __has_include(<keyschema/etcd.hpp>) && defined(STRICT_WITH_ETCD)
#include <keyschema/etcd.hpp>
#endif
#include <keyschema/comparison.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace strict_warnings {

namespace ks = keyschema;
using ms_time = std::chrono::sys_time<std::chrono::milliseconds>;

using message = ks::keyspace<"message", std::tuple<std::int64_t, std::string>, ks::lit<"DESTINATION">,
                             ks::field<"destination", std::string>, ks::lit<"MESSAGE">, ks::field<"id", std::uint64_t>>;
struct by_expiry {
  std::optional<std::tuple<ms_time, std::string, std::uint64_t>> operator()(const message::key_type& k,
                                                                           const message::value_type& v) const {
    if (std::get<0>(v) == 0) return std::nullopt;
    return std::tuple(ms_time(std::chrono::milliseconds(std::get<0>(v))), std::get<0>(k), std::get<1>(k));
  }
};
using expiry = ks::keyspace<"expiry", ks::index_of<message, by_expiry>, ks::lit<"EXPIRY">, ks::field<"at", ms_time>,
                            ks::field<"destination", std::string>, ks::field<"id", std::uint64_t>>;
using count = ks::keyspace<"count", ks::count_of<message, 1>, ks::lit<"COUNT">, ks::field<"destination", std::string>>;
using last_id = ks::keyspace<"last_id", std::uint64_t, ks::lit<"LAST_ID">>;
using small = ks::keyspace<"small", std::int16_t, ks::lit<"SMALL">, ks::field<"k", std::uint8_t>,
                           ks::field<"d", ks::desc<std::int32_t>>>;
using content = ks::keyspace<"content", ks::bytes, ks::lit<"CONTENT">, ks::field<"message_id", std::uint64_t>,
                             ks::field<"chunk", std::uint32_t>>;
// An owned keyspace and a sum (derivation.hpp's plug-ins).
using dead_letter = ks::keyspace<"dead_letter", ks::owned_by<message, std::string>, ks::lit<"DLQ">,
                                 ks::field<"destination", std::string>, ks::field<"id", std::uint64_t>>;
struct body_size {
  std::size_t operator()(const message::key_type&, const message::value_type& v) const { return std::get<1>(v).size(); }
};
using body_bytes =
    ks::keyspace<"body_bytes", ks::sum_of<message, body_size, 1>, ks::lit<"BODY_BYTES">, ks::field<"destination", std::string>>;
using broker = ks::schema<message, expiry, count, last_id, small, content, dead_letter, body_bytes>;

template <class Backend, class... Args>
void exercise(Args&&... args) {
  ks::store<broker, Backend> db(std::forward<Args>(args)...);
  db.template put<message>({"orders", 1}, {1000, "soon"});
  db.template put<small>({std::uint8_t{7}, ks::desc<std::int32_t>{-3}}, std::int16_t{-2});
  db.template put<dead_letter>({"orders", 1}, "poison");
  std::optional<message::value_type> m = db.template get<message>({"orders", 1});
  std::size_t n = 0;
  for (const auto& e : db.template scan<message>("orders").from(1u).limit(10)) n += std::get<1>(e.value).size() + e.template get<"id">();
  for (const auto& e : db.template scan<small>().reverse()) n += static_cast<std::size_t>(e.value < 0 ? 0 : e.value);
  for (const auto& e : db.template scan<message>("orders").value_views()) n += e.value.size();
  for (const auto& e : db.template scan<message>().keys_only()) n += std::get<1>(e.key);
  auto b = db.batch();
  b.template put<message>({"orders", 2}, {0, "never"});
  b.template add<last_id>({}, 1);
  b.commit({.sync = false});
  {
    auto tx = db.transaction();
    tx.template add<last_id>({}, 1);
    const std::uint64_t id = tx.template get<last_id>({}).value_or(0);
    tx.template put<message>({"orders", id}, {2000, "later"});
    tx.template erase_prefix<message>("gone");
    ks::prepare(tx, "xid-1");
  }
  ks::commit_prepared(db, "xid-1");
  ks::rollback_prepared(db, "xid-2");
  n += ks::prepared(db).size();
  ks::run_transaction(db, [&](auto& tx) { return tx.template get<count>({"orders"}).value_or(0); });
  n += ks::sweep<expiry>(db, ms_time(std::chrono::seconds(2)), 100,
                         [&](const message::key_type& k, const message::value_type&) { n += std::get<0>(k).size(); });
  ks::put_chunked<content>(db, {42}, std::string(1000, 'x'), 64);
  if (std::optional<ks::bytes> whole = ks::read_chunked<content>(db, {42})) n += whole->size();
  ks::read_chunked<content>(db.snapshot(), {42}, [&](std::string_view piece) { n += piece.size(); });
  n += ks::find_orphans<dead_letter>(db).size();
  n += static_cast<std::size_t>(db.template get<body_bytes>({"orders"}).value_or(0));
  db.template erase_prefix<message>("orders");
  db.template erase<small>({std::uint8_t{7}, ks::desc<std::int32_t>{-3}});
  if (m && n == 0) db.template erase<message>({"orders", 1});
}

// Never called: instantiates exercise<> for each backend, and the comparison harness.
[[maybe_unused]] void instantiate_all() {
  exercise<ks::memory_backend>();
  ks::comparison::runner<broker> r(ks::comparison::options{});
  r.run("writes", [](auto& db, ks::comparison::probe& p) {
    p.op([&] { db.template put<last_id>({}, std::uint64_t{1}, p.write()); });
  }, ks::comparison::backend<broker, ks::memory_backend>{"memory"});
  r.finish();
#if defined(STRICT_WITH_LEVELDB)
  exercise<ks::leveldb_backend>("/nonexistent");
#endif
#if defined(STRICT_WITH_LMDB)
  exercise<ks::lmdb_backend>("/nonexistent");
#endif
#if defined(STRICT_WITH_ROCKSDB)
  exercise<ks::rocksdb_backend>("/nonexistent");
#endif
#if defined(STRICT_WITH_SQLITE)
  exercise<ks::sqlite_backend>("/nonexistent");
#endif
#if defined(STRICT_WITH_ETCD)
  exercise<ks::etcd_backend>(ks::etcd_options{});
#endif
}

}  // namespace strict_warnings
