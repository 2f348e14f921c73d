// tests/conformance/rocksdb_factory.hpp: the conformance suite's factory for
// keyschema::rocksdb_backend (see memory_factory.hpp for what a factory provides).
//
// The database lives in <dir>/rocksdb. Two options differ from the defaults on purpose:
//   max_entry_bytes = 8 MiB     a finite limit, so the suite exercises limit_error on puts and
//                               on commits (1 MiB values still fit);
//   write_buffer_bytes = 1 MiB  the memtable is flushed to table files during the larger cases,
//                               so scans merge memtable and on-disk levels.
// A store whose schema places keyspaces (keyschema::placed; the placement cases) gets column-family
// options for the placements it names: "content" keeps values of 8 bytes or more in BlobDB blob
// files, "queues" has a prefix bloom filter on the first 12 bytes (a literal such as "PL_QUEUE"
// and the start of the next field) and universal compaction; so the placement cases run over
// families tuned as a broker would tune them.
// Thread-safety: stateless.
#pragma once

#include <keyschema/rocksdb.hpp>
#include <keyschema/store.hpp>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>

namespace keyschema::conformance {

struct rocksdb_factory {
  using backend = keyschema::rocksdb_backend;
  static constexpr std::string_view name = "rocksdb";
  static constexpr bool persistent = true;
  static constexpr bool accepts_empty_key = true;
  static constexpr std::size_t max_entry_bytes = std::size_t{8} << 20;

  static keyschema::rocksdb_options options() {
    keyschema::rocksdb_options o;
    o.max_entry_bytes = max_entry_bytes;
    o.write_buffer_bytes = std::size_t{1} << 20;
    return o;
  }
  // options(), plus the placement options of the placements S places (see above).
  template <class S>
  static keyschema::rocksdb_options options_for() {
    keyschema::rocksdb_options o = options();
    for (const keyschema::detail::prefix_placement& p : keyschema::detail::prefix_placements<S>(true)) {
      if (p.placement == "content") o.placement_options["content"] = {.blob_files = true, .min_blob_size = 8};
      if (p.placement == "queues") {
        o.placement_options["queues"] = {.prefix_bloom_length = 12, .universal_compaction = true};
      }
    }
    return o;
  }
  template <class S>
  static std::unique_ptr<keyschema::store<S, backend>> open(const std::filesystem::path& dir) {
    return std::make_unique<keyschema::store<S, backend>>(dir / "rocksdb", options_for<S>());
  }
  static std::unique_ptr<backend> open_backend(const std::filesystem::path& dir) {
    return std::make_unique<backend>(dir / "rocksdb", options());
  }
  // The keys the engine holds in placement `placement` ("": the default one), read from its column
  // family with RocksDB's own iterator (the placement cases check the mapping with it); nullopt
  // when the database has no such family.
  static std::optional<std::vector<std::string>> placement_keys(backend& b, std::string_view placement) {
    ::rocksdb::ColumnFamilyHandle* cf = b.native_family(placement);
    if (cf == nullptr) return std::nullopt;
    std::unique_ptr<::rocksdb::Iterator> it(b.native().NewIterator(::rocksdb::ReadOptions(), cf));
    std::vector<std::string> keys;
    for (it->SeekToFirst(); it->Valid(); it->Next()) keys.push_back(it->key().ToString());
    if (!it->status().ok()) throw std::runtime_error("rocksdb_factory::placement_keys: " + it->status().ToString());
    return keys;
  }
};

}  // namespace keyschema::conformance
