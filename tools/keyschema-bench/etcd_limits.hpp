// etcd_limits.hpp (keyschema-bench --etcd-limits): where etcd stops being the right store,
// measured on a local 3-member cluster of its own: the operations and bytes one Txn takes
// (--max-txn-ops 128, --max-request-bytes 1.5 MiB by default), the largest value, and the space
// quota (--quota-backend-bytes, 2 GiB by default; here 64 MiB so that filling it takes seconds):
// writes until etcd raises its NOSPACE alarm, then what still works. Prints each outcome and the
// error text keyschema::etcd_backend gives, with timings.
//
// Thread-safety: call from one thread. Errors: std::runtime_error when the cluster cannot be
// started; an unexpected outcome is printed, not thrown.
#pragma once

#include "etcd_cluster.hpp"

#include <keyschema/etcd.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>

namespace keyschema_bench {

namespace detail {
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `fn` and prints "  <what>: ok (<ms>)" or the exception's type and text.
inline bool attempt(const std::string& what, const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    fn();
    std::printf("  %s: ok (%.1f ms)\n", what.c_str(), seconds_since(t0) * 1e3);
    return true;
  } catch (const keyschema::limit_error& e) {
    std::printf("  %s: refused, keyschema::limit_error:\n      %s\n", what.c_str(), e.what());
  } catch (const keyschema::backend_error& e) {
    std::printf("  %s: failed, keyschema::backend_error (native_call %s, native_code %d):\n      %s\n", what.c_str(),
                e.native_call().c_str(), static_cast<int>(e.native_code()), e.what());
  } catch (const std::exception& e) {
    std::printf("  %s: failed: %s\n", what.c_str(), e.what());
  }
  return false;
}

inline keyschema::write_batch puts(const std::string& tag, std::size_t n, std::size_t value_bytes) {
  keyschema::write_batch b;
  const std::string value(value_bytes, 'v');
  for (std::size_t i = 0; i < n; ++i) b.put(tag + "/" + std::to_string(i), value);
  return b;
}
}  // namespace detail

// Starts a cluster in `dir` on base_port..base_port + 5 with a 64 MiB quota, measures, stops it.
// Returns 0 (the process's exit status).
inline int measure_etcd_limits(const std::filesystem::path& script, const std::filesystem::path& dir, int base_port) {
  namespace ks = keyschema;
  using detail::attempt;
  using detail::puts;
  constexpr std::uint64_t quota = std::uint64_t{64} << 20;
  std::fprintf(stderr, "keyschema-bench: starting a 3-member etcd cluster on ports %d..%d (64 MiB quota)\n", base_port,
               base_port + 5);
  local_etcd_cluster cluster(script, dir, base_port, "--quota-backend-bytes " + std::to_string(quota));
  ks::etcd_options o;
  o.endpoints = cluster.endpoints();
  o.key_prefix = "limits/";
  o.deadline = std::chrono::milliseconds(30000);
  o.attempt_timeout = std::chrono::milliseconds(5000);  // a loaded machine: slow answers, no hung member
  ks::etcd_backend db(o);
  const ks::backend_limits lim = db.limits();
  std::printf("etcd limits, measured on a local 3-member cluster (etcd defaults but --quota-backend-bytes %llu):\n",
              static_cast<unsigned long long>(quota));
  std::printf("  adapter limits(): max_ops_per_write %zu, max_bytes_per_write %zu, max_entry_bytes %zu, max_key_bytes %zu\n",
              lim.max_ops_per_write, lim.max_bytes_per_write, lim.max_entry_bytes, lim.max_key_bytes);

  std::printf("operations per Txn (--max-txn-ops 128):\n");
  attempt("a batch of 128 puts", [&] { db.write(puts("ops128", 128, 10), {}); });
  attempt("a batch of 129 puts", [&] { db.write(puts("ops129", 129, 10), {}); });
  ks::etcd_options lax = o;  // the client believes the cluster takes more: the server refuses
  lax.max_txn_ops = 100000;
  lax.max_request_bytes = std::size_t{64} << 20;
  ks::etcd_backend lax_db(lax);
  attempt("a batch of 129 puts, client limit raised (etcd answers)", [&] { lax_db.write(puts("ops129s", 129, 10), {}); });

  std::printf("bytes per Txn (--max-request-bytes 1.5 MiB):\n");
  const std::size_t half = lim.max_entry_bytes - 64;
  attempt("a batch of 2 puts of " + std::to_string(half) + " value bytes", [&] { db.write(puts("bytes2", 2, half), {}); });
  attempt("a batch of 3 puts of " + std::to_string(half) + " value bytes", [&] { db.write(puts("bytes3", 3, half), {}); });
  attempt("the same, client limit raised (etcd answers)", [&] { lax_db.write(puts("bytes3s", 3, half), {}); });

  std::printf("value size:\n");
  attempt("one put of " + std::to_string(lim.max_entry_bytes - 16) + " value bytes (max_entry_bytes less the key)",
          [&] { db.write(puts("value", 1, lim.max_entry_bytes - 16), {}); });
  attempt("one put of " + std::to_string(lim.max_entry_bytes + 1) + " value bytes",
          [&] { db.write(puts("value+", 1, lim.max_entry_bytes + 1), {}); });
  attempt("one put of 1.4 MiB, client limit raised (etcd answers)",
          [&] { lax_db.write(puts("value14", 1, std::size_t{1400} << 10), {}); });
  attempt("one put of 1.7 MiB, client limit raised (etcd answers)",
          [&] { lax_db.write(puts("value17", 1, std::size_t{1700} << 10), {}); });
  attempt("one put of 2 MiB, client limit raised (etcd answers)",
          [&] { lax_db.write(puts("value2m", 1, std::size_t{2} << 20), {}); });

  std::printf("space quota (--quota-backend-bytes %llu):\n", static_cast<unsigned long long>(quota));
  const std::size_t value = 256 << 10;
  std::uint64_t written = 0, txns = 0;
  const auto t0 = std::chrono::steady_clock::now();
  bool refused = false;
  for (std::uint64_t i = 0; !refused && written < 4 * quota; ++i) {
    try {
      db.write(puts("fill/" + std::to_string(i), 4, value), {});
      written += 4 * value;
      ++txns;
    } catch (const ks::limit_error& e) {
      const double s = detail::seconds_since(t0);
      std::printf("  filling with Txns of 4 x 256 KiB: %llu Txns (%.1f MiB of values) accepted in %.2f s "
                  "(%.1f MiB/s replicated), then refused, keyschema::limit_error:\n      %s\n",
                  static_cast<unsigned long long>(txns), static_cast<double>(written) / (1 << 20), s,
                  static_cast<double>(written) / (1 << 20) / s, e.what());
      std::printf("  at that rate the default 2 GiB quota fills in about %.0f s\n",
                  2048.0 / (static_cast<double>(written) / (1 << 20) / s));
      refused = true;
    }
  }
  if (!refused) std::printf("  filling: %llu Txns accepted, never refused\n", static_cast<unsigned long long>(txns));
  std::string v;
  attempt("a read under the NOSPACE alarm", [&] {
    if (!db.get("fill/0/0", v, nullptr)) throw std::runtime_error("key missing");
  });
  attempt("a small put under the NOSPACE alarm", [&] { db.write(puts("after", 1, 10), {}); });
  attempt("a delete under the NOSPACE alarm", [&] {
    ks::write_batch b;
    b.erase("fill/0/0");
    db.write(b, {});
  });
  attempt("erase_range of everything written (one DeleteRange)", [&] { db.erase_range(ks::key_range{}, {}); });
  attempt("a small put after the erase (the alarm stays until disarmed)", [&] { db.write(puts("after2", 1, 10), {}); });
  cluster.stop();
  return 0;
}

}  // namespace keyschema_bench
