// tests/package/consumer.cpp: a downstream program built against an installed keyschema (or one
// added with add_subdirectory). It checks that the targets carry the include paths, the C++20
// requirement, the installed headers and the database libraries: it includes the umbrella and
// adapter headers, packs keys, links a symbol of each database, and runs.
#include <keyschema/keyschema.hpp>

#if defined(CONSUMER_WITH_LEVELDB)
#include <keyschema/leveldb.hpp>
#include <leveldb/db.h>
#endif
#if defined(CONSUMER_WITH_LMDB)
#include <keyschema/lmdb.hpp>
#include <lmdb.h>
#endif
#if defined(CONSUMER_WITH_SQLITE)
#include <keyschema/sqlite.hpp>
#include <sqlite3.h>
#endif
#if defined(CONSUMER_WITH_ROCKSDB)
#include <keyschema/rocksdb.hpp>
#include <rocksdb/db.h>
#include <rocksdb/version.h>
#endif
#if defined(CONSUMER_WITH_ETCD)
#include <curl/curl.h>
#include <keyschema/etcd.hpp>
#endif

#if defined(CONSUMER_WITH_COMPARISON)
#include <keyschema/comparison.hpp>
#endif

#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>

namespace consumer {
namespace ks = keyschema;
// A schema with a declared count, instantiated on the memory backend: the consumer is built with
// -Wshadow -Wconversion -Wsign-conversion -Werror (CMakeLists.txt), and keyschema's templates
// instantiated here must not break that build.
using message = ks::keyspace<"message", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                             ks::lit<"MESSAGE">, ks::field<"id", std::uint64_t>>;
using message_count =
    ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"COUNT">, ks::field<"destination", std::string>>;
using broker = ks::schema<message, message_count>;
}  // namespace consumer

int main() {
  int failures = 0;

  {
    keyschema::store<consumer::broker, keyschema::memory_backend> db;
    db.put<consumer::message>({"orders", 9}, keyschema::bytes("a"));
    db.put<consumer::message>({"orders", 10}, keyschema::bytes("b"));
    std::uint64_t last = 0;
    for (const auto& m : db.scan<consumer::message>("orders")) last = m.get<"id">();
    if (last != 10 || db.get<consumer::message_count>({"orders"}).value_or(0) != 2) {
      std::puts("FAIL: keyschema::store scan order / declared count");
      ++failures;
    }
  }

  const keyschema::decode_error e("consumer: probe");
  if (std::string(e.what()) != "consumer: probe") {
    std::puts("FAIL: keyschema::decode_error::what()");
    ++failures;
  }
  // Integers sort numerically in packed keys (9 < 10), unlike decimal text keys.
  const std::string k9 = keyschema::tuple::pack("MESSAGE", std::uint64_t{9});
  const std::string k10 = keyschema::tuple::pack("MESSAGE", std::uint64_t{10});
  if (!(k9 < k10) || std::get<1>(keyschema::tuple::unpack<std::string, std::uint64_t>(k10)) != 10) {
    std::puts("FAIL: keyschema::tuple::pack order / unpack");
    ++failures;
  }

#if defined(CONSUMER_WITH_COMPARISON)
  // keyschema::comparison carries its header: the nearest-rank median of 1..4 is 2.
  if (keyschema::comparison::percentile({4, 1, 3, 2}, 50) != 2) {
    std::puts("FAIL: keyschema::comparison::percentile");
    ++failures;
  }
#endif

  std::printf("keyschema %d.%d.%d\n", KEYSCHEMA_VERSION_MAJOR, KEYSCHEMA_VERSION_MINOR,
              KEYSCHEMA_VERSION_PATCH);

#if defined(CONSUMER_WITH_LEVELDB)
  // Linking a LevelDB symbol proves keyschema::leveldb carries leveldb::leveldb.
  leveldb::Options options;
  if (options.create_if_missing) {
    std::puts("FAIL: leveldb::Options defaults");
    ++failures;
  }
  std::printf("leveldb %d.%d\n", leveldb::kMajorVersion, leveldb::kMinorVersion);
#endif
#if defined(CONSUMER_WITH_LMDB)
  int major = 0;
  int minor = 0;
  int patch = 0;
  const char* version = mdb_version(&major, &minor, &patch);
  if (version == nullptr || major != MDB_VERSION_MAJOR) {
    std::puts("FAIL: mdb_version");
    ++failures;
  }
  std::printf("lmdb %d.%d.%d\n", major, minor, patch);
#endif
#if defined(CONSUMER_WITH_SQLITE)
  // Linking an SQLite symbol proves keyschema::sqlite carries SQLite::SQLite3.
  if (sqlite3_libversion_number() < 3037000) {
    std::puts("FAIL: sqlite3_libversion_number");
    ++failures;
  }
  std::printf("sqlite %s\n", sqlite3_libversion());
#endif
#if defined(CONSUMER_WITH_ROCKSDB)
  // Linking a RocksDB symbol proves keyschema::rocksdb carries the RocksDB library.
  const std::string rocksdb_version = rocksdb::GetRocksVersionAsString();
  if (rocksdb_version.empty() || rocksdb_version[0] != char('0' + ROCKSDB_MAJOR)) {
    std::puts("FAIL: rocksdb::GetRocksVersionAsString");
    ++failures;
  }
  std::printf("rocksdb %s\n", rocksdb_version.c_str());
#endif
#if defined(CONSUMER_WITH_ETCD)
  // Linking a libcurl symbol proves keyschema::etcd carries CURL::libcurl (its JSON parser,
  // nlohmann-json, is header-only: including <keyschema/etcd.hpp> proves its include path).
  const curl_version_info_data* curl = curl_version_info(CURLVERSION_NOW);
  const keyschema::etcd_options etcd_defaults;
  if (curl == nullptr || etcd_defaults.max_txn_ops != keyschema::etcd_default_max_txn_ops) {
    std::puts("FAIL: curl_version_info / keyschema::etcd_options");
    ++failures;
  }
  std::printf("libcurl %s\n", curl != nullptr ? curl->version : "?");
#endif

  std::puts(failures == 0 ? "consumer: ok" : "consumer: FAILED");
  return failures == 0 ? 0 : 1;
}
