// keyschema/prepared.hpp: prepared transactions (two-phase commit, XA).
//
// A prepared transaction is a store_transaction whose writes are recorded durably under a
// transaction id (xid: any bytes) instead of being applied, so that a coordinator can decide
// later, also after a crash and restart, to apply them or to drop them:
//
//   auto tx = db.transaction();
//   tx.put<dtx_entry>({xid, 1}, ks::bytes("enqueue"));  tx.erase<message_metadata>({"q", 7});
//   ks::prepare(tx, xid);                   // phase one: durable, nothing applied, tx ended
//   ...                                     // crash, restart: ks::prepared(db) lists xid
//   ks::commit_prepared(db, xid);           // phase two: apply the writes, drop the record
//   // or ks::rollback_prepared(db, xid);   // drop the writes and the record
//
// Storage: one record per xid, under a reserved key outside every keyspace ("\xff"
// "keyschema/prepared/" + the xid as a tuple-encoded bytes element; the record holds the
// transaction's writes, length-prefixed and checksummed: detail/store/prepared_record.hpp).
// Typed scans never see it; keyschema-dump shows it as a "# prepared" line. A store opened on a
// database without a schema record counts these keys like any other (they are not this
// schema's keyspaces' keys, and nothing says their writes are).
//
// Isolation while prepared: the prepared writes are invisible to every reader and writer (they
// exist only inside the record), and a prepared transaction holds no lock: the store's writer
// lock (and LMDB's) is released when prepare() returns. Other writers may meanwhile change keys
// the prepared transaction writes, or that it read; commit_prepared() does not check: it applies
// the recorded writes as they are (blind writes: the last writer wins, so a put overwrites what
// was written after prepare and an erase removes it), and does not re-validate what the
// transaction read. An application that needs the keys of a prepared branch locked (a resource
// manager) keeps its own locks until commit_prepared/rollback_prepared.
//
// Thread-safety: every function takes the store's writer lock (through a transaction), so they
// may be called from several threads, and, on LMDB, processes, at once; concurrent calls for one
// xid are serialized, and exactly one commit_prepared or rollback_prepared of it returns true.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/store/prepared_record.hpp>
#include <keyschema/detail/store/store_access.hpp>
#include <keyschema/error.hpp>
#include <keyschema/store.hpp>
#include <keyschema/write_batch.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {

[[noreturn]] inline void throw_prepared_limit(std::string_view xid, const std::string& what, std::size_t size,
                                              const char* limit_name, std::size_t limit) {
  throw limit_error("keyschema::prepare: xid " + show_xid(xid) + ": " + what + " is " + std::to_string(size) +
                    ", more than the backend's maximum of " + std::to_string(limit) + " (backend_limits::" +
                    limit_name + "); split the transaction. Nothing was written; the transaction is left open");
}

// Checks that the record of ops under key, and the commit of ops plus the record's erase, fit l.
inline void check_prepared_limits(std::string_view xid, const backend_limits& l, const write_batch& ops,
                                  std::string_view key, std::size_t record_bytes) {
  if (ops.size() > 0xffffffffu) throw_prepared_limit(xid, "the number of writes", ops.size(), "(record format)", 0xffffffffu);
  if (key.size() > l.max_key_bytes) throw_prepared_limit(xid, "its record key (bytes)", key.size(), "max_key_bytes", l.max_key_bytes);
  if (record_bytes > l.max_value_bytes) {
    throw_prepared_limit(xid, "its record (bytes)", record_bytes, "max_value_bytes", l.max_value_bytes);
  }
  if (record_bytes > l.max_entry_bytes || key.size() > l.max_entry_bytes - record_bytes) {
    throw_prepared_limit(xid, "its record key + record (bytes)", key.size() + record_bytes, "max_entry_bytes",
                         l.max_entry_bytes);
  }
  // commit_prepared writes the operations and erases the record in one write.
  if (ops.size() + 1 > l.max_ops_per_write) {
    throw_prepared_limit(xid, "its commit (operations, with the record's erase)", ops.size() + 1,
                         "max_ops_per_write", l.max_ops_per_write);
  }
  if (ops.byte_size() + key.size() > l.max_bytes_per_write) {
    throw_prepared_limit(xid, "its commit (bytes of keys and values)", ops.byte_size() + key.size(),
                         "max_bytes_per_write", l.max_bytes_per_write);
  }
}

}  // namespace detail

// Phase one: records tx's pending writes durably under xid, without applying them, and ends tx
// (is_open() is false after a successful call; its writer lock is released). The record and the
// check that xid is not already prepared happen in one write under tx's lock.
// xid: any bytes (empty too); the caller's encoding of its transaction id.
// REQUIRES: tx is open, and no scan of tx is used afterwards.
// Errors (the transaction is left open and unchanged, nothing written):
//   keyschema::error "xid b"..." is already prepared" when a record for xid exists;
//   keyschema::error when tx is already committed or rolled back;
//   limit_error naming the xid when the record, or the commit of its writes, exceeds the
//     backend's limits (backend_limits: key size, value/entry size, operations or bytes per write);
//   backend_error / limit_error / conflict_error from the engine, as store_transaction::commit
//     (the transaction then stays open only where commit() leaves it open).
template <class Schema, class Backend>
void prepare(store_transaction<Schema, Backend>& tx, std::string_view xid, const write_options& opts = {}) {
  if (!tx.is_open()) {
    throw error("keyschema::prepare: xid " + detail::show_xid(xid) +
                ": the transaction is already committed or rolled back");
  }
  const std::string key = detail::prepared_key(xid);
  std::string existing;
  if (detail::store_access::raw_get(tx, key, existing)) {
    throw error("keyschema::prepare: xid " + detail::show_xid(xid) +
                " is already prepared (its record exists); commit_prepared or rollback_prepared it first, or use "
                "another xid. Nothing was written; the transaction is left open");
  }
  detail::pending_map& pending = detail::store_access::pending(tx);
  write_batch ops;
  for (const auto& [k, v] : pending) {
    if (v)
      ops.put(k, *v);
    else
      ops.erase(k);
  }
  std::string record = detail::encode_prepared(ops);
  detail::check_prepared_limits(xid, detail::store_access::limits(tx), ops, key, record.size());
  detail::pending_map saved;
  saved.swap(pending);
  pending.emplace(key, std::move(record));
  try {
    tx.commit(opts);
  } catch (...) {
    if (tx.is_open()) pending = std::move(saved);  // the transaction goes on as it was
    throw;
  }
}

// Phase two: applies the writes prepared under xid and erases its record, in one atomic write
// (with the durability of opts). Returns false, writing nothing, when no record exists for xid
// (never prepared, or already committed or rolled back).
// Errors (nothing written; the record stays):
//   decode_error naming the xid when the record is damaged (see prepared_record.hpp); roll it
//     back with rollback_prepared, which does not read it;
//   keyschema::error when this thread holds an open transaction on db;
//   limit_error / backend_error / conflict_error from the engine.
template <class Schema, class Backend>
bool commit_prepared(store<Schema, Backend>& db, std::string_view xid, const write_options& opts = {}) {
  const std::string key = detail::prepared_key(xid);
  auto tx = db.transaction();
  std::string record;
  if (!detail::store_access::raw_get(tx, key, record)) return false;
  write_batch ops;
  detail::decode_prepared(xid, record, ops);
  for (const write_batch::op o : ops) {
    detail::store_access::emplace_op(
        tx, o.kind, [&](std::string& b) { b.append(o.key); }, [&](std::string& b) { b.append(o.value); });
  }
  detail::store_access::emplace_op(
      tx, write_batch::op_kind::erase, [&](std::string& b) { b.append(key); }, [](std::string&) {});
  tx.commit(opts);
  return true;
}

// Drops the writes prepared under xid: erases its record (with the durability of opts) without
// reading it, so a damaged record can be rolled back too. Returns false, writing nothing, when
// no record exists for xid.
// Errors: keyschema::error when this thread holds an open transaction on db; backend_error /
// limit_error from the engine (nothing written).
template <class Schema, class Backend>
bool rollback_prepared(store<Schema, Backend>& db, std::string_view xid, const write_options& opts = {}) {
  const std::string key = detail::prepared_key(xid);
  auto tx = db.transaction();
  std::string record;
  if (!detail::store_access::raw_get(tx, key, record)) return false;
  detail::store_access::emplace_op(
      tx, write_batch::op_kind::erase, [&](std::string& b) { b.append(key); }, [](std::string&) {});
  tx.commit(opts);
  return true;
}

// The xids that have a prepared record (prepared and neither committed nor rolled back: after a
// restart, the branches to recover), in ascending byte order of the xid encoding (the order of
// the xids' bytes, as for keyschema::bytes). Reads the latest committed state.
// Errors: decode_error when a key under the reserved prefix does not decode as an xid (damaged:
// names the key in hex); backend_error from the engine.
template <class Schema, class Backend>
std::vector<std::string> prepared(const store<Schema, Backend>& db) {
  std::string upper(prepared_key_prefix);
  upper.back() = static_cast<char>(upper.back() + 1);  // '/' + 1: just past every record key
  std::vector<std::string> out;
  for (auto c = db.backend().cursor(key_range{prepared_key_prefix, upper, false}, nullptr); c.valid(); c.next()) {
    std::optional<std::string> xid = detail::prepared_xid(c.key());
    if (!xid) {
      static constexpr char hex[] = "0123456789abcdef";
      std::string h;
      for (const char ch : std::string_view(c.key())) {
        h += hex[static_cast<unsigned char>(ch) >> 4];
        h += hex[static_cast<unsigned char>(ch) & 0xf];
      }
      throw decode_error("keyschema::prepared: the reserved key x\"" + h +
                         "\" is not a prepared-transaction key (damaged); erase it with a raw write");
    }
    out.push_back(std::move(*xid));
  }
  return out;
}

KEYSCHEMA_END_NAMESPACE
