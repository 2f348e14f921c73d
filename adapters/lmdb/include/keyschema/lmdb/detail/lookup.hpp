// keyschema/lmdb/detail/lookup.hpp: point reads, lmdb_detail::lookup() and read_lease.
//
// lookup() is mdb_get in a given transaction, copying the value out of the memory map; it serves
// lmdb_backend::get() and lmdb_write_transaction::get(). guards_hold() checks the conditions of a
// guarded write (backend_with_write_guards) in the write transaction. read_lease holds a short read
// transaction from the environment's pool for a get() without a snapshot.
//
// Thread-safety: lookup() is called with the transaction's lock held when the transaction is a
// shared snapshot's (txn_handle::mu); a read_lease is a scope guard of one thread.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/lmdb/detail/env_state.hpp>
#include <keyschema/lmdb/detail/status.hpp>

#include <lmdb.h>

#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

// Throws the backend_error of a failed mdb_get (out of line: lookup() stays small enough to be
// inlined into every point read).
[[noreturn, gnu::noinline, gnu::cold]] inline void throw_get_failed(const env_state& s, int rc) {
  lmdb_detail::throw_status("keyschema::lmdb_backend::get: read failed on " + s.path, "mdb_get", rc);
}

inline bool lookup(const env_state& s, MDB_txn* txn, std::string_view key, std::string& value) {
  if (key.empty() || key.size() > s.max_key) return false;
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{0, nullptr};
  const int rc = ::mdb_get(txn, s.dbi, &k, &v);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != MDB_SUCCESS) [[unlikely]] throw_get_failed(s, rc);
  value.assign(static_cast<const char*>(v.mv_data), v.mv_size);
  return true;
}

// Whether every condition of g (backend.hpp, write_guard) holds in txn: one mdb_get per
// condition, compared in the map without a copy. Errors: backend_error "mdb_get".
inline bool guards_hold(const env_state& s, MDB_txn* txn, write_guards g) {
  for (const write_guard& c : g) {
    MDB_val k{c.key.size(), const_cast<char*>(c.key.data())};
    MDB_val v{0, nullptr};
    const int rc = c.key.empty() || c.key.size() > s.max_key ? MDB_NOTFOUND : ::mdb_get(txn, s.dbi, &k, &v);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) [[unlikely]] throw_get_failed(s, rc);
    const bool found = rc == MDB_SUCCESS;
    if (found != c.exists) return false;
    if (found && std::string_view(static_cast<const char*>(v.mv_data), v.mv_size) != c.value) return false;
  }
  return true;
}

// A short read transaction from the pool, released at scope exit.
struct read_lease {
  explicit read_lease(env_state& s) : st(s), txn(s.acquire_read()) {}
  read_lease(const read_lease&) = delete;
  read_lease& operator=(const read_lease&) = delete;
  ~read_lease() { st.release_read(txn); }
  env_state& st;
  MDB_txn* txn;
};

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
