// tests/conformance/memory_factory.hpp: the conformance suite's factory for keyschema::memory_backend.
//
// A backend factory tells the suite how to open a store over its backend:
//   using backend = ...;                         the backend type
//   static constexpr std::string_view name;      for messages
//   static constexpr bool persistent;            whether a reopened store sees earlier writes
//   static constexpr bool entry_limit_counts_value;  whether max_key_size() bounds key + value
//                                                    (LevelDB) rather than the key alone
//   template <class S> static std::unique_ptr<store<S, backend>> open(const std::filesystem::path& dir);
//       opens (creating when missing) the database kept in dir, a fresh empty directory owned by
//       the test; may be called again on the same dir after the previous store was destroyed.
// Stores are returned by pointer because a store is neither copyable nor movable, and reopen
// cases destroy one and construct another in the same variable.
//
// memory_backend keeps nothing on disk: dir is ignored and every open starts empty.
// Thread-safety: stateless.
#pragma once

#include <keyschema/memory_backend.hpp>
#include <keyschema/store.hpp>

#include <filesystem>
#include <memory>
#include <string_view>

namespace keyschema::conformance {

struct memory_factory {
  using backend = keyschema::memory_backend;
  static constexpr std::string_view name = "memory";
  static constexpr bool persistent = false;
  static constexpr bool entry_limit_counts_value = false;

  template <class S>
  static std::unique_ptr<keyschema::store<S, backend>> open(const std::filesystem::path& /*dir: unused*/) {
    return std::make_unique<keyschema::store<S, backend>>();
  }
};

}  // namespace keyschema::conformance
