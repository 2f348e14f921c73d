// tests/conformance/derived_fixture.hpp: the fixtures of the conformance topics with a schema of
// their own (derived data: counters, indexes, sums, owned keyspaces; cases/*.cpp), written once.
//
//   schema_fixture<S>   a store of S in a fresh directory of its own; reopen() closes and opens it
//                       again (on the memory backend, a new empty store)
//   schema_change<Old>  a database written with schema Old that a case opens with another schema
//                       (a store that must refuse it, ks::migrate, then a store of the new schema):
//                       on a persistent backend the files in its directory, reopened; on the
//                       memory backend the backend, moved from store to store
//   expiring_messages:: a message keyspace with an expiry index over it (indexes.cpp, owned.cpp)
//
// Included by conformance.hpp users after it (backend_factory is the suite's factory).
// Thread-safety: test fixtures for one thread.
#pragma once

#include <conformance/conformance.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace keyschema::conformance {

template <class S>
class schema_fixture {
 public:
  using store_type = ks::store<S, backend_factory::backend>;
  explicit schema_fixture(const char* name) : dir_(name), db_(backend_factory::open<S>(dir_.path())) {}
  store_type& db() noexcept { return *db_; }
  void reopen() {
    db_.reset();
    db_ = backend_factory::open<S>(dir_.path());
  }

 private:
  testing::temp_dir dir_;
  std::unique_ptr<store_type> db_;
};

template <class Old>
class schema_change {
 public:
  using backend_type = backend_factory::backend;
  static constexpr bool in_memory = std::is_same_v<backend_type, ks::memory_backend>;

  explicit schema_change(const char* name) : dir_(name) {}

  // Writes through a store of Old: fill(store&).
  template <class Fill>
  void write(Fill&& fill) {
    auto db = backend_factory::open<Old>(dir_.path());
    std::forward<Fill>(fill)(*db);
    if constexpr (in_memory) b_ = std::make_unique<backend_type>(std::move(db->unsafe_backend()));
  }

  // What opening a store of New over what was written threw (schema_error's what()), or
  // "<opened>". The memory backend is opened through a copy, which the next step does not see.
  template <class New>
  std::string open_refusal() {
    try {
      if constexpr (in_memory) {
        ks::memory_backend copy;
        ks::write_batch all;
        for (auto c = b_->cursor(ks::key_range{}, nullptr); c.valid(); c.next()) all.put(c.key(), c.value());
        copy.write(all, {});
        ks::store<New, backend_type> s(std::move(copy));
      } else {
        backend_factory::open<New>(dir_.path());
      }
    } catch (const ks::schema_error& e) {
      return e.what();
    }
    return "<opened>";
  }

  // The database as a bare backend (for ks::migrate).
  backend_type& backend() {
    if constexpr (!in_memory) {
      if (!b_) b_ = backend_factory::open_backend(dir_.path());
    }
    return *b_;
  }

  // A store of New over the database; the bare backend is closed (on the memory backend, moved).
  template <class New>
  std::unique_ptr<ks::store<New, backend_type>> open() {
    if constexpr (in_memory) {
      return std::make_unique<ks::store<New, backend_type>>(std::move(*b_));
    } else {
      b_.reset();
      return backend_factory::open<New>(dir_.path());
    }
  }

 private:
  testing::temp_dir dir_;
  std::unique_ptr<backend_type> b_;
};

namespace expiring_messages {

using ms_time = std::chrono::sys_time<std::chrono::milliseconds>;
// A message: (expires at, in ms since the epoch, 0 = never; body), keyed by destination and id.
using message = ks::keyspace<"message", std::tuple<std::int64_t, std::string>, ks::lit<"DESTINATION">,
                             ks::field<"destination", std::string>, ks::lit<"MESSAGE">,
                             ks::field<"message_id", std::uint64_t>>;
struct by_expiry {
  std::optional<std::tuple<ms_time, std::string, std::uint64_t>> operator()(const message::key_type& k,
                                                                           const message::value_type& v) const {
    if (std::get<0>(v) == 0) return std::nullopt;  // never expires: not indexed
    return std::tuple(ms_time(std::chrono::milliseconds(std::get<0>(v))), std::get<0>(k), std::get<1>(k));
  }
};
using expiry_index = ks::keyspace<"expiry_index", ks::index_of<message, by_expiry>, ks::lit<"EXPIRY">,
                                  ks::field<"at", ms_time>, ks::field<"destination", std::string>,
                                  ks::field<"message_id", std::uint64_t>>;

inline ms_time at_ms(std::int64_t ms) { return ms_time(std::chrono::milliseconds(ms)); }

}  // namespace expiring_messages

}  // namespace keyschema::conformance
