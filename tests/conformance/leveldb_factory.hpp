// tests/conformance/leveldb_factory.hpp: the conformance suite's factory for
// keyschema::leveldb_backend (see memory_factory.hpp for what a factory provides).
//
// The database lives in <dir>/leveldb. Two options differ from the defaults on purpose:
//   max_entry_bytes = 8 MiB     a finite limit, so the suite exercises limit_error on puts and
//                               on commits (1 MiB values still fit);
//   write_buffer_bytes = 1 MiB  the memtable is flushed to table files during the larger cases,
//                               so scans merge memtable and on-disk levels.
// Thread-safety: stateless.
#pragma once

#include <keyschema/leveldb.hpp>
#include <keyschema/store.hpp>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string_view>

namespace keyschema::conformance {

struct leveldb_factory {
  using backend = keyschema::leveldb_backend;
  static constexpr std::string_view name = "leveldb";
  static constexpr bool persistent = true;
  static constexpr bool accepts_empty_key = true;
  static constexpr std::size_t max_entry_bytes = std::size_t{8} << 20;

  static keyschema::leveldb_options options() {
    keyschema::leveldb_options o;
    o.max_entry_bytes = max_entry_bytes;
    o.write_buffer_bytes = std::size_t{1} << 20;
    return o;
  }
  template <class S>
  static std::unique_ptr<keyschema::store<S, backend>> open(const std::filesystem::path& dir) {
    return std::make_unique<keyschema::store<S, backend>>(dir / "leveldb", options());
  }
  static std::unique_ptr<backend> open_backend(const std::filesystem::path& dir) {
    return std::make_unique<backend>(dir / "leveldb", options());
  }
};

static_assert(keyschema::backend_with_compact_range<keyschema::leveldb_backend>);  // LevelDB compacts a range on demand (store::compact_prefix)

}  // namespace keyschema::conformance
