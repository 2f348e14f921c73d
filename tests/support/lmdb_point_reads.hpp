// tests/support/lmdb_point_reads.hpp: an lmdb_backend's point reads as tests check them, and
// what LMDB itself holds in the main database, for the tests of how reads are routed
// (placements, long keys).
//
// in_main_database(b, k): whether k is stored under exactly these bytes in b's main database,
// read with LMDB directly (mdb_get), not through keyschema's routing.
// checked_read(b, k): b.get(k) without and with a snapshot, which must agree; a miss must leave
// the caller's value unchanged (lmdb_backend models backend_with_value_kept_on_miss). Returns the
// value, or std::nullopt on a miss. Catch2 checks: include after <catch2/catch.hpp>.
//
// Thread-safety: as the backend's get() and snapshot().
#pragma once

#include <keyschema/lmdb.hpp>

#include <lmdb.h>

#include <optional>
#include <string>

namespace keyschema::testing {

inline bool in_main_database(lmdb_backend& b, const std::string& k) {
  MDB_txn* t = nullptr;
  REQUIRE(::mdb_txn_begin(b.native(), nullptr, MDB_RDONLY, &t) == MDB_SUCCESS);
  MDB_val mk{k.size(), const_cast<char*>(k.data())};
  MDB_val mv{0, nullptr};
  const int rc = ::mdb_get(t, b.native_dbi(), &mk, &mv);
  ::mdb_txn_abort(t);
  return rc == MDB_SUCCESS;
}

inline std::optional<std::string> checked_read(const lmdb_backend& b, const std::string& k) {
  std::string v = "untouched";
  const bool found = b.get(k, v, nullptr);
  const auto snap = b.snapshot();
  std::string in_snap = "untouched";
  CHECK(b.get(k, in_snap, &snap) == found);
  CHECK(in_snap == v);
  if (!found) {
    CHECK(v == "untouched");
    return std::nullopt;
  }
  return v;
}

}  // namespace keyschema::testing
