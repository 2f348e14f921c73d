// tests/conformance/sqlite_factory.hpp: the conformance suite's factory for
// keyschema::sqlite_backend (see memory_factory.hpp for what a factory provides).
//
// The database lives in <dir>/sqlite. One option differs from the defaults on purpose:
//   max_entry_bytes = 8 MiB   a finite limit, so the suite exercises limit_error on puts and on
//                             commits (1 MiB values still fit).
// Thread-safety: stateless.
#pragma once

#include <keyschema/sqlite.hpp>
#include <keyschema/store.hpp>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string_view>

namespace keyschema::conformance {

struct sqlite_factory {
  using backend = keyschema::sqlite_backend;
  static constexpr std::string_view name = "sqlite";
  static constexpr bool persistent = true;
  static constexpr bool accepts_empty_key = true;
  static constexpr std::size_t max_entry_bytes = std::size_t{8} << 20;

  static keyschema::sqlite_options options() {
    keyschema::sqlite_options o;
    o.max_entry_bytes = max_entry_bytes;
    return o;
  }
  template <class S>
  static std::unique_ptr<keyschema::store<S, backend>> open(const std::filesystem::path& dir) {
    return std::make_unique<keyschema::store<S, backend>>(dir / "sqlite", options());
  }
  static std::unique_ptr<backend> open_backend(const std::filesystem::path& dir) {
    return std::make_unique<backend>(dir / "sqlite", options());
  }
};

// Placement keeps each placement in a table of its own (placement.cpp checks they are apart).
static_assert(keyschema::backend_with_placements<keyschema::sqlite_backend>);

}  // namespace keyschema::conformance
