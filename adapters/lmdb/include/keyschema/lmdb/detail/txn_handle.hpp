// keyschema/lmdb/detail/txn_handle.hpp: lmdb_detail::txn_handle, one LMDB transaction shared by
// the objects that read it.
//
// A read transaction is shared by the copies of an lmdb_snapshot and by the cursors reading it
// (through std::shared_ptr<txn_handle>); it is released to the environment's pool when the last
// of them is gone. A write transaction is shared by its lmdb_write_transaction and its cursors.
// new_read_handle() takes a read transaction from the pool into a new handle.
//
// Thread-safety: the shared_ptr count may be copied and dropped from any thread. mu serializes
// LMDB calls on a read transaction whose snapshot copies are used from several threads; a write
// transaction belongs to the thread that began it.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/lmdb/detail/env_state.hpp>

#include <lmdb.h>

#include <memory>
#include <mutex>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

// One LMDB transaction, shared by the cursors that read it and by the copies of a snapshot
// (read-only) or by an lmdb_write_transaction (write). mu serializes LMDB calls on a read
// transaction across threads. A write transaction is ended by its lmdb_write_transaction, which
// sets txn to nullptr: LMDB has then freed the cursors opened in it.
struct txn_handle {
  txn_handle(env_state* s, MDB_txn* t, bool w) noexcept : st(s), txn(t), write(w) {}
  txn_handle(const txn_handle&) = delete;
  txn_handle& operator=(const txn_handle&) = delete;
  ~txn_handle() {
    if (txn == nullptr) return;
    if (write) {
      st->end_write(txn);
    } else {
      st->release_read(txn);
    }
  }
  env_state* st;
  MDB_txn* txn;
  const bool write;
  std::mutex mu;
};

// A read transaction from s's pool (see env_state::acquire_read) in a new handle; released when
// the last owner of the handle is gone. REQUIRES: s outlives the handle.
// Errors: those of env_state::acquire_read; std::bad_alloc (the transaction is released first).
inline std::shared_ptr<txn_handle> new_read_handle(env_state& s) {
  MDB_txn* t = s.acquire_read();
  try {
    return std::make_shared<txn_handle>(&s, t, false);
  } catch (...) {
    s.release_read(t);
    throw;
  }
}

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
