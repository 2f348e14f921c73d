// keyschema/lmdb/detail/commit.hpp: applying a keyschema::write_batch in an LMDB write
// transaction and committing it.
//
// check_limits() refuses a batch LMDB cannot store before anything is touched. apply_batch()
// replays a batch with mdb_put / mdb_del; commit_once() is one attempt of lmdb_backend::write()
// (begin, apply, commit), which reports MDB_MAP_FULL / MDB_MAP_RESIZED to its caller for a retry
// after the map is resized. throw_write_failure() turns the other failures into exceptions
// naming the LMDB call (and a full disk, see keyschema/detail/backend/disk_full.hpp). write_txn aborts an uncommitted
// write transaction at scope exit; nosync_commit makes one commit without the flush.
//
// Thread-safety: the functions are called by the writer, holding env_state::write_mu (or, for
// check_limits, apply_batch and erases_only, from any thread: they touch no shared state). The
// guards are scope objects of one thread.
#pragma once

#include <keyschema/detail/backend/disk_full.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/lmdb/detail/env_state.hpp>
#include <keyschema/lmdb/detail/long_keys.hpp>
#include <keyschema/lmdb/detail/lookup.hpp>
#include <keyschema/lmdb/detail/status.hpp>
#include <keyschema/write_batch.hpp>

#include <lmdb.h>

#include <cstddef>
#include <string>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

inline constexpr std::size_t max_value_size = 0xffffffffu;  // LMDB's MAXDATASIZE

// Aborts a write transaction at scope exit unless it was handed to mdb_txn_commit.
struct write_txn {
  write_txn() = default;
  write_txn(const write_txn&) = delete;
  write_txn& operator=(const write_txn&) = delete;
  ~write_txn() {
    if (txn != nullptr) ::mdb_txn_abort(txn);
  }
  MDB_txn* release() noexcept { return std::exchange(txn, nullptr); }
  MDB_txn* txn = nullptr;
};

// Sets MDB_NOSYNC for one commit made with write_options{.sync = false} and clears it again
// afterwards: the environment is opened without it, so every other commit is LMDB's durable
// one. LMDB documents that MDB_NOSYNC may be changed at any time; only the writer (holding
// env_state::write_mu) changes it.
struct nosync_commit {
  nosync_commit(MDB_env* e, bool sync) noexcept : env(e), on(!sync) {
    if (on) ::mdb_env_set_flags(env, MDB_NOSYNC, 1);
  }
  nosync_commit(const nosync_commit&) = delete;
  nosync_commit& operator=(const nosync_commit&) = delete;
  ~nosync_commit() {
    if (on) ::mdb_env_set_flags(env, MDB_NOSYNC, 0);
  }
  MDB_env* env;
  bool on;
};

// Applies every operation of batch in the write transaction txn. Returns MDB_SUCCESS, or the
// first failure with `call` naming the LMDB function (the transaction must then be aborted;
// MDB_CORRUPTED: a stored long key's value is malformed). A long key of a keyspace with long keys
// goes through apply_long (long_keys.hpp).
inline int apply_batch(const env_state& s, MDB_txn* txn, const write_batch& batch, const char*& call) noexcept {
  for (write_batch::op o : batch) {
    if (may_be_long(s, o.key.size())) [[unlikely]] {
      if (const env_state::long_route* r = long_route_of(s, o.key)) {
        if (const int rc = apply_long(s, txn, o, *r, call); rc != MDB_SUCCESS) return rc;
        continue;
      }
    }
    MDB_val k{o.key.size(), const_cast<char*>(o.key.data())};
    int rc;
    // The placement's named database (keyschema::placed); an erase also erases in the placement
    // the key is moving from (ks::migrate).
    detail::placement_router::target t;
    if (!s.single()) t = s.router.route(o.key);
    if (o.kind == write_batch::op_kind::put) {
      MDB_val v{o.value.size(), const_cast<char*>(o.value.data())};
      rc = ::mdb_put(txn, s.dbis[t.to], &k, &v, 0);
      call = "mdb_put";
    } else {
      rc = ::mdb_del(txn, s.dbis[t.to], &k, nullptr);
      if (rc == MDB_NOTFOUND) rc = MDB_SUCCESS;
      if (rc == MDB_SUCCESS && t.also != detail::placement_router::none) {
        rc = ::mdb_del(txn, s.dbis[t.also], &k, nullptr);
        if (rc == MDB_NOTFOUND) rc = MDB_SUCCESS;
      }
      call = "mdb_del";
    }
    if (rc != MDB_SUCCESS) return rc;
  }
  return MDB_SUCCESS;
}

inline bool erases_only(const write_batch& batch) noexcept {
  for (write_batch::op o : batch) {
    if (o.kind != write_batch::op_kind::erase) return false;
  }
  return true;
}

[[noreturn]] inline void throw_write_failure(const env_state& s, int rc, const char* call) {
  if (rc == MDB_TXN_FULL) {
    throw limit_error("keyschema::lmdb_backend::write: the batch touches more pages than one LMDB transaction "
                      "can hold (MDB_TXN_FULL); split it into smaller batches. Nothing was written");
  }
  const std::string what = "keyschema::lmdb_backend::write: " + std::string(call) + " failed on " + s.path;
  if (const auto full = detail::disk_full(s.path, rc)) {
    throw backend_error(lmdb_detail::lmdb_message(what + ": " + *full, rc) + "; nothing was written",
                        call, rc);
  }
  lmdb_detail::throw_status(what + "; nothing was written", call, rc);
}

// check_limits for an operation i, o the fast test did not pass: accepts a long key of a
// keyspace with long keys (long_keys.hpp) whose stored value fits, or throws the error (out of
// line: the check itself builds no string).
[[gnu::cold, gnu::noinline]] inline void refuse_op(const env_state& s, std::size_t i, write_batch::op o) {
  const env_state::long_route* r = long_route_of(s, o.key);
  if (r != nullptr && (r->encode || o.key.size() <= s.max_key)) {
    // Stored: the key's rest and the value in one LMDB value (a plain key of at most max_key
    // bytes needs no more; counted alike, the stricter).
    const std::size_t rest = o.key.size() - long_head;
    const std::size_t value = o.kind == write_batch::op_kind::put ? o.value.size() : 0;
    if (rest <= max_value_size - long_len && value <= max_value_size - long_len - rest) return;
    throw limit_error("keyschema::lmdb_backend::write: a long key (keyschema::long_keys) of " +
                      std::to_string(o.key.size()) + " bytes with a value of " + std::to_string(value) +
                      " bytes exceeds LMDB's maximum value size of " + std::to_string(max_value_size) +
                      " bytes, which holds the key's bytes beyond the first " + std::to_string(long_head) +
                      " and the value; shorten them. Nothing was written");
  }
  if (o.kind == write_batch::op_kind::put && o.key.size() <= s.max_key && o.value.size() <= max_value_size &&
      !o.key.empty())
    return;  // passed the fast test's margin for long keys only
  if (o.key.empty()) {
    throw limit_error("keyschema::lmdb_backend::write: operation " + std::to_string(i) +
                      " of the batch has an empty key, which LMDB cannot store (limit: 1 to " +
                      std::to_string(s.max_key) + " bytes). Nothing was written");
  }
  if (o.key.size() > s.max_key) {
    throw limit_error("keyschema::lmdb_backend::write: a key of " + std::to_string(o.key.size()) +
                      " bytes exceeds LMDB's maximum key size of " + std::to_string(s.max_key) +
                      " bytes (mdb_env_get_maxkeysize); shorten the key, or store it in a keyspace with "
                      "long keys (keyschema::long_keys). Nothing was written");
  }
  throw limit_error("keyschema::lmdb_backend::write: a value of " + std::to_string(o.value.size()) +
                    " bytes exceeds LMDB's maximum value size of " + std::to_string(max_value_size) +
                    " bytes. Nothing was written");
}

// Refuses (limit_error) an operation LMDB cannot store: an empty key, a key longer than max_key
// outside the keyspaces with long keys, a value too long (with a long key: the key's rest and the
// value together; long_keys.hpp).
inline void check_limits(const env_state& s, const write_batch& batch) {
  std::size_t i = 0;
  for (write_batch::op o : batch) {
    if (o.key.empty() || o.key.size() > s.max_key ||
        (o.kind == write_batch::op_kind::put && o.value.size() > max_value_size - long_len - s.max_key)) [[unlikely]]
      refuse_op(s, i, o);
    ++i;
  }
}

// One attempt at committing batch, when every condition of g holds in the write transaction
// (otherwise sets refused and returns MDB_SUCCESS, nothing applied). Returns MDB_SUCCESS, or
// MDB_MAP_FULL / MDB_MAP_RESIZED (nothing applied; the caller resizes and retries). Throws for
// every other failure. Sets s.grow_pending when the committed state uses more than 3/4 of the map.
inline int commit_once(env_state& s, const write_batch& batch, write_guards g, bool& refused) {
  s.enter_gate();
  gate_lease lease(s.gate);
  write_txn w;
  int rc = ::mdb_txn_begin(s.env, nullptr, 0, &w.txn);
  if (rc == MDB_MAP_RESIZED) return rc;
  if (rc != MDB_SUCCESS) {
    w.txn = nullptr;
    lmdb_detail::throw_status("keyschema::lmdb_backend::write: cannot begin a write transaction on " + s.path,
                         "mdb_txn_begin", rc);
  }
  const bool same = !g.empty() && same_guards(s, g);
  if (!guards_hold_since(s, w.txn, g, same)) {
    refused = true;
    return MDB_SUCCESS;  // w aborts the transaction
  }
  const std::size_t id = ::mdb_txn_id(w.txn);
  const char* call = nullptr;
  rc = apply_batch(s, w.txn, batch, call);
  if (rc == MDB_MAP_FULL) return rc;
  if (rc != MDB_SUCCESS) throw_write_failure(s, rc, call);
  rc = s.commit_write(w.release());  // frees the transaction whatever the outcome
  if (rc == MDB_MAP_FULL) return rc;
  if (rc != MDB_SUCCESS) throw_write_failure(s, rc, "mdb_txn_commit");
  remember_guards(s, id, g, batch, same);
  s.note_usage();  // still registered with the gate: the map cannot move meanwhile
  return MDB_SUCCESS;
}

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
