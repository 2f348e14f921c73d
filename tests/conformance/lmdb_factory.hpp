// tests/conformance/lmdb_factory.hpp: the conformance suite's factory for keyschema::lmdb_backend
// (see memory_factory.hpp for what a factory provides).
//
// The environment lives in <dir>/lmdb and is opened with the default lmdb_options (64 MiB initial
// map, which every case fits in without growing, so snapshots held across writes never make a
// write wait for a map resize; growth has its own tests in the adapter's unit tests). LMDB's
// limits().max_key_bytes (511 bytes by default) bounds keys alone: values may be far larger.
// Thread-safety: stateless.
#pragma once

#include <keyschema/lmdb.hpp>
#include <keyschema/store.hpp>

#include <filesystem>
#include <memory>
#include <string_view>

namespace keyschema::conformance {

struct lmdb_factory {
  using backend = keyschema::lmdb_backend;
  static constexpr std::string_view name = "lmdb";
  static constexpr bool persistent = true;
  static constexpr bool accepts_empty_key = false;  // LMDB refuses it with limit_error

  template <class S>
  static std::unique_ptr<keyschema::store<S, backend>> open(const std::filesystem::path& dir) {
    return std::make_unique<keyschema::store<S, backend>>(dir / "lmdb");
  }
  static std::unique_ptr<backend> open_backend(const std::filesystem::path& dir) {
    return std::make_unique<backend>(dir / "lmdb");
  }
};

static_assert(!keyschema::backend_with_compact_range<keyschema::lmdb_backend>);  // LMDB leaves no tombstones: compact_prefix is a no-op

}  // namespace keyschema::conformance
