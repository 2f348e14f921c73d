// tests/support/placement_crash.hpp: the crash check of the engines' placement tests (LMDB named
// databases, RocksDB column families, SQLite tables): a child process commits batches that span
// three placements until it is SIGKILLed; afterwards every batch is whole or absent.
//
// Thread-safety: call from the test's main thread only (fork copies only the calling thread).
#pragma once

#include <keyschema/key_arg.hpp>
#include <keyschema/types.hpp>
#include <keyschema/write_batch.hpp>

#include <catch2/catch.hpp>
#include <range/v3/range/operations.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>

namespace keyschema::testing {

// Forks a child that opens a store with open() and commits, for ids 0, 1, 2, ..., one batch each of
// Meta {id} -> "m", Body {id} -> 2,000 bytes and Entry {entry_key(id)...} -> "e" (entry_key returns
// the Entry key's field values as a std::tuple: a key_arg refers to its values), {.sync = false},
// until the parent SIGKILLs it `after` later. Returns true when the child was killed (it did not
// end by itself: opening or writing failed).
template <class Meta, class Body, class Entry, class Open, class EntryKey>
bool commit_batches_until_killed(Open open, EntryKey entry_key, std::chrono::milliseconds after) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      auto db = open();
      for (std::uint64_t id = 0;; ++id) {
        auto b = db.batch();
        b.template put<Meta>({id}, "m");
        b.template put<Body>({id}, bytes(std::string(2000, 'b')));
        std::apply([&](const auto&... f) { b.template put<Entry>({f...}, "e"); }, entry_key(id));
        b.commit(write_options{.sync = false});
      }
    } catch (...) {
    }
    ::_exit(1);
  }
  ::usleep(static_cast<useconds_t>(std::chrono::microseconds(after).count()));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFSIGNALED(status);
}

// Checks a store after commit_batches_until_killed: the Meta ids are 0..n-1 without a gap, each
// with its Body and Entry, and Body and Entry hold n entries each; n > 0. Returns n.
template <class Meta, class Body, class Entry, class Store, class EntryKey>
std::uint64_t check_whole_batches(const Store& db, EntryKey entry_key) {
  std::uint64_t metas = 0;
  for (const auto& e : db.template scan<Meta>()) {
    const std::uint64_t id = std::get<0>(e.key);
    CHECK(id == metas);  // committed in id order: no gap
    CHECK(db.template get<Body>({id}).has_value());
    CHECK(std::apply([&](const auto&... f) { return db.template get<Entry>({f...}).has_value(); }, entry_key(id)));
    ++metas;
  }
  CHECK(metas > 0);
  CHECK(ranges::distance(db.template scan<Body>()) == static_cast<std::ptrdiff_t>(metas));
  CHECK(ranges::distance(db.template scan<Entry>()) == static_cast<std::ptrdiff_t>(metas));
  return metas;
}

}  // namespace keyschema::testing
