// tests/conformance/etcd_factory.hpp: the conformance suite's factory for keyschema::etcd_backend
// (see memory_factory.hpp for what a factory provides).
//
// The cluster is the one the CTest fixture etcd_cluster started (scripts/etcd-cluster.sh): its
// client URLs come from the environment variable KEYSCHEMA_ETCD_ENDPOINTS (comma-separated). Each
// test directory is one database: its key prefix is "keyschema-test" + the directory's path + "/",
// so tests share the cluster without seeing each other's keys, and a reopen of the same
// directory sees what was written before (persistent). The first open of a directory erases
// whatever its prefix holds (a marker file in the directory records that it was done), then
// compacts the cluster's history up to that point (etcd_backend::compact_history): etcd 3.4
// keeps erased keys as tombstones until a compaction, and after the 100k-key erase case they made
// every later call about eight times slower (a put and a get: 5.3 ms fresh, 43 ms after erasing
// 100k keys, 2.1 ms after compacting). Compacting is safe here because the suite runs one case at
// a time in one process, and a case holds no snapshot across the opening of a new directory: no
// other program may take snapshots on this cluster while the suite runs.
// The cluster runs with raised limits, which the options repeat: --max-txn-ops 16384 and
// --max-request-bytes 8 MiB (etcd's defaults are 128 and 1.5 MiB), because the suite loads its
// data in batches of up to 10001 operations and writes 3 MiB batches of 1 MiB values.
// Databases opened by the suite are not exclusive (shared_open): any client may open a prefix.
// Cursors read pages of 512 keys (the default is 256): etcd 3.4 walks the rest of the range in its
// index for every page, so that counting 100k keys took 9.6 s in pages of 256 and 3.4 s in pages
// of 1024. Pages are still crossed in both directions: forward by the scans of the 5000-key and
// 100k-key cases, in reverse by the 1000-key erase chunks of the 5000-key case.
// Calls get a deadline of 60 s instead of 5 s: erasing the 100k-key prefix (one DeleteRange
// applied on three members) took over 5 s on a loaded 2-core machine. For the same reason an
// attempt at one member gets 5 s instead of 1 s before the member is taken for hung.
// Thread-safety: stateless.
#pragma once

#include <keyschema/etcd.hpp>
#include <keyschema/store.hpp>


#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace keyschema::conformance {

struct etcd_factory {
  using backend = keyschema::etcd_backend;
  static constexpr std::string_view name = "etcd";
  static constexpr bool persistent = true;
  static constexpr bool accepts_empty_key = true;  // under the key prefix
  static constexpr bool shared_open = true;        // no locked_error on a second open
  static constexpr std::size_t max_txn_ops = 16384;
  static constexpr std::size_t max_request_bytes = std::size_t{8} << 20;
  static constexpr std::size_t page_size = 512;

  // The endpoints of KEYSCHEMA_ETCD_ENDPOINTS. Throws std::runtime_error when it is not set.
  static std::vector<std::string> endpoints() {
    const char* env = std::getenv("KEYSCHEMA_ETCD_ENDPOINTS");
    if (env == nullptr || *env == '\0') {
      throw std::runtime_error("KEYSCHEMA_ETCD_ENDPOINTS is not set: start a cluster with scripts/etcd-cluster.sh "
                               "start <dir> and export its endpoints (ctest does both)");
    }
    std::vector<std::string> out;
    std::string_view s(env);
    while (!s.empty()) {
      const std::size_t comma = s.find(',');
      if (comma != 0) out.emplace_back(s.substr(0, comma));
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
    return out;
  }

  static keyschema::etcd_options options(const std::filesystem::path& dir) {
    keyschema::etcd_options o;
    o.endpoints = endpoints();
    o.key_prefix = "keyschema-test" + dir.string() + "/";
    o.max_txn_ops = max_txn_ops;
    o.max_request_bytes = max_request_bytes;
    o.deadline = std::chrono::seconds(60);
    o.attempt_timeout = std::chrono::seconds(5);  // no member is stopped here: a slow answer is load
    o.page_size = page_size;
    const std::filesystem::path marker = dir / "etcd-prefix-cleared";
    if (!std::filesystem::exists(marker)) {
      keyschema::etcd_backend db(o);
      db.erase_range({}, {});
      db.compact_history();
      std::ofstream(marker) << o.key_prefix << '\n';
    }
    return o;
  }

  template <class S>
  static std::unique_ptr<keyschema::store<S, backend>> open(const std::filesystem::path& dir) {
    return std::make_unique<keyschema::store<S, backend>>(options(dir));
  }
  static std::unique_ptr<backend> open_backend(const std::filesystem::path& dir) {
    return std::make_unique<backend>(options(dir));
  }
};

}  // namespace keyschema::conformance
