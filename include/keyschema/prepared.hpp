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
// manager) keeps its own locks until commit_prepared/rollback_prepared. What the store maintains
// is not recorded but derived again at commit: commit_prepared applies the recorded record writes
// like a batch, so declared counts (count_of) and index entries (index_of) change by what those
// writes create, replace and remove in the state it commits to, and stay equal to the records
// whatever was written in between. An add (counters.hpp) in the transaction is recorded as its
// delta (the sum of its deltas, when it added to one key several times) and applied by
// commit_prepared to the value current then, like a batch's add: an add of 5 prepared over 10
// commits 105 when another writer set 100 meanwhile. An add to a key the transaction had put or
// erased before is part of that put's value and is recorded as the value it produced.
// Records prepared by versions that recorded every add as its value (format KSP1, see
// detail/store/prepared_record.hpp) are still read, and their adds applied as those values.
//
// Thread-safety: every function takes the store's writer lock (through a transaction), so they
// may be called from several threads, and, on LMDB, processes, at once; concurrent calls for one
// xid are serialized, and exactly one commit_prepared or rollback_prepared of it returns true.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/store/derived_writes.hpp>
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
// adds, add_bytes: the number of the record's adds, and their keys' and values' bytes at commit.
inline void check_prepared_limits(std::string_view xid, const backend_limits& l, const write_batch& ops,
                                  std::string_view key, std::size_t record_bytes, std::size_t adds = 0,
                                  std::size_t add_bytes = 0) {
  if (ops.size() + adds > 0xffffffffu) throw_prepared_limit(xid, "the number of writes", ops.size(), "(record format)", 0xffffffffu);
  if (key.size() > l.max_key_bytes) throw_prepared_limit(xid, "its record key (bytes)", key.size(), "max_key_bytes", l.max_key_bytes);
  if (record_bytes > l.max_value_bytes) {
    throw_prepared_limit(xid, "its record (bytes)", record_bytes, "max_value_bytes", l.max_value_bytes);
  }
  if (record_bytes > l.max_entry_bytes || key.size() > l.max_entry_bytes - record_bytes) {
    throw_prepared_limit(xid, "its record key + record (bytes)", key.size() + record_bytes, "max_entry_bytes",
                         l.max_entry_bytes);
  }
  // commit_prepared writes the operations and erases the record in one write.
  if (ops.size() + adds + 1 > l.max_ops_per_write) {
    throw_prepared_limit(xid, "its commit (operations, with the record's erase)", ops.size() + adds + 1,
                         "max_ops_per_write", l.max_ops_per_write);
  }
  if (ops.byte_size() + add_bytes + key.size() > l.max_bytes_per_write) {
    throw_prepared_limit(xid, "its commit (bytes of keys and values)", ops.byte_size() + add_bytes + key.size(),
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
//   usage_error "xid b"..." is already prepared" when a record for xid exists;
//   usage_error when tx is already committed or rolled back;
//   limit_error naming the xid when the record, or the commit of its writes, exceeds the
//     backend's limits (backend_limits: key size, value/entry size, operations or bytes per write);
//   backend_error / limit_error / conflict_error from the engine, as store_transaction::commit
//     (the transaction then stays open only where commit() leaves it open).
template <class Schema, class Backend>
void prepare(store_transaction<Schema, Backend>& tx, std::string_view xid, const write_options& opts = {}) {
  if (!tx.is_open()) {
    throw usage_error("keyschema::prepare: xid " + detail::show_xid(xid) +
                      ": the transaction is already committed or rolled back");
  }
  const std::string key = detail::prepared_key(xid);
  std::string existing;
  if (detail::store_access::raw_get(tx, key, existing)) {
    throw usage_error("keyschema::prepare: xid " + detail::show_xid(xid) +
                      " is already prepared (its record exists); commit_prepared or rollback_prepared it first, or "
                      "use another xid. Nothing was written; the transaction is left open");
  }
  detail::pending_map& pending = detail::store_access::pending(tx);
  const detail::pending_deltas& deltas = detail::store_access::pending_deltas(tx);
  write_batch ops;
  std::size_t pending_bytes = 0;
  for (const auto& [k, v] : pending) pending_bytes += k.size() + (v ? v->size() : 0);
  ops.reserve(pending.size(), pending_bytes);
  std::vector<detail::prepared_add> adds;
  std::size_t add_bytes = 0;
  for (const auto& [k, v] : pending) {
    // Declared counts and index entries are derived again by commit_prepared, from the state it
    // commits to: recorded here, they would overwrite what other writers changed meanwhile.
    if (detail::derived_writes<Schema>::maintained_key(k)) continue;
    if (auto d = deltas.find(k); d != deltas.end()) {
      adds.push_back(detail::prepared_add{k, d->second});  // applied to the value current at commit
      add_bytes += k.size() + sizeof(std::int64_t);
    } else if (v) {
      ops.put(k, *v);
    } else {
      ops.erase(k);
    }
  }
  std::string record = detail::encode_prepared(ops, adds);
  detail::check_prepared_limits(xid, detail::store_access::limits(tx), ops, key, record.size(), adds.size(), add_bytes);
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
// (with the durability of opts). Its adds are applied to the values current now, under the
// writer lock. Returns false, writing nothing, when no record exists for xid (never prepared,
// or already committed or rolled back).
// Errors (nothing written; the record stays):
//   decode_error naming the xid when the record is damaged (see prepared_record.hpp) or adds to
//     a key of no integer keyspace of this schema; roll it back with rollback_prepared, which
//     does not read it;
//   key_error when the record writes a key of a keyspace the store maintains (a declared count
//     or an index; prepare never records one); roll it back;
//   overflow_error when an add's sum does not fit its value type now (names keyspace, key, value
//     and delta); roll it back, or change the value and commit again;
//   usage_error when this thread holds an open transaction on db;
//   limit_error / backend_error / conflict_error from the engine.
template <class Schema, class Backend>
bool commit_prepared(store<Schema, Backend>& db, std::string_view xid, const write_options& opts = {}) {
  const std::string key = detail::prepared_key(xid);
  auto tx = db.transaction();
  std::string record;
  if (!detail::store_access::raw_get(tx, key, record)) return false;
  write_batch ops;
  std::vector<detail::prepared_add> adds;
  detail::decode_prepared(xid, record, ops, &adds);
  const std::string what = "keyschema::commit_prepared: the prepared record of xid " + detail::show_xid(xid);
  detail::derived_writes<Schema>::refuse_maintained(what, ops);
  for (const write_batch::op o : ops) {
    detail::store_access::emplace_op(
        tx, o.kind, [&](std::string& b) { b.append(o.key); }, [&](std::string& b) { b.append(o.value); });
  }
  for (const detail::prepared_add& a : adds) {
    if (!detail::store_access::add_raw(tx, a.key, a.delta)) {
      throw decode_error(what + " adds " + std::to_string(a.delta) + " to key " + detail::describe_key(a.key) +
                         ", which is no key of an integer keyspace of this schema (written by another schema?); "
                         "nothing was applied. Roll it back (rollback_prepared)");
    }
  }
  detail::store_access::emplace_op(
      tx, write_batch::op_kind::erase, [&](std::string& b) { b.append(key); }, [](std::string&) {});
  tx.commit(opts);
  return true;
}

// Drops the writes prepared under xid: erases its record (with the durability of opts) without
// reading it, so a damaged record can be rolled back too. Returns false, writing nothing, when
// no record exists for xid.
// Errors: usage_error when this thread holds an open transaction on db; backend_error /
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
