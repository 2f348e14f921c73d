// tests/conformance/memory_factory.hpp: the conformance suite's factory for keyschema::memory_backend.
//
// A backend factory tells the suite how to open a store over its backend:
//   using backend = ...;                         the backend type
//   static constexpr std::string_view name;      for messages
//   static constexpr bool persistent;            whether a reopened store sees earlier writes
//   template <class S> static std::unique_ptr<store<S, backend>> open(const std::filesystem::path& dir);
//       opens (creating when missing) the database kept in dir, a fresh empty directory owned by
//       the test; may be called again on the same dir after the previous store was destroyed.
//   static std::unique_ptr<backend> open_backend(const std::filesystem::path& dir);
//       the same, as a bare backend (for the byte-level suite, backend_contract.hpp).
//   static constexpr bool accepts_empty_key;     whether write() stores the empty key
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
  static constexpr bool accepts_empty_key = true;

  template <class S>
  static std::unique_ptr<keyschema::store<S, backend>> open(const std::filesystem::path& /*dir: unused*/) {
    return std::make_unique<keyschema::store<S, backend>>();
  }
  static std::unique_ptr<backend> open_backend(const std::filesystem::path& /*dir: unused*/) {
    return std::make_unique<backend>();
  }
};

}  // namespace keyschema::conformance
