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
// lock (and LMDB's) is released when prepare() returns, so other writers go on, also on the keys
// the branch wrote or read.
//
// The rule: commit_prepared validates. A branch commits only as prepared, over exactly what it
// saw; if something it saw changed since prepare, commit_prepared refuses with conflict_error and
// the coordinator rolls it back (rollback_prepared). prepare() records, with the writes, a
// validation set taken from the state the transaction started from (before its own writes):
//   - every key it writes (put, erase, add) and every key it read with a point read (get,
//     get_into, contains; the read inside add; the chunk-0 read of copy_chunked): absent, or
//     present with the XXH64 hash of its value (64 bits; detail/store/prepared_record.hpp);
//   - every range its scans visited (scan views, read_chunked, erase_range / erase_prefix /
//     erase_chunked): from the scan's first bound up to
//     the key its cursor stopped on (a scan that ran to its end, or whose cursor was still alive
//     at prepare, counts its whole range), as the number of entries and a digest of their keys
//     and values; overlapping ranges are merged.
// commit_prepared reads all of it again in its own write transaction, under the writer lock, and
// throws conflict_error naming the xid and the first difference (the key, in key order, with its
// keyspace; or the range) when anything differs: a value changed, a key appeared or vanished, an
// entry of a visited range was added, changed or removed. Nothing is applied and the record
// stays. Not validated: the declared counts and index entries the store derives (count_of,
// index_of) when the transaction did not read them itself (they are derived again at commit from
// the state it commits to, so they stay equal to the records); what the transaction read through
// a snapshot or the store rather than through itself; a change that restores the exact value the
// branch saw (same bytes: the branch commits, as if it had run after that change); hash equality
// of different values (2^-64). The cost: prepare reads every validated key and range once more,
// and commit_prepared once; a transaction keeps the keys it reads (and its scans' ranges) until
// it ends, whether it is prepared or not.
//
// Range erases (erase_range, erase_prefix, erase_chunked, put_chunked's erase of the previous
// chunks) are recorded as range erases: commit_prepared erases the keys of that keyspace in the
// range as they are then (the range having been validated), so no stray key is left behind by a
// prefix erase recorded as the point erases of the keys that existed at prepare.
// An add is recorded as its delta (the sum of its deltas, when it added to one key several times)
// and applied to the value current at commit (which validation has found unchanged); an add to a
// key the transaction had put or erased before is part of that put's value.
//
// Schemas: every key a record writes must be a key of a keyspace of the store's schema, decoding
// exactly, with the keyspace's layout (keyspace_fingerprint, fingerprint.hpp) the record names:
// otherwise commit_prepared throws decode_error or schema_error naming the xid and the key, and
// rollback_prepared removes the record. ks::migrate refuses while any record exists.
// What the store maintains is not recorded but derived again at commit: commit_prepared applies
// the recorded record writes like a batch, so declared counts (count_of) and index entries
// (index_of) change by what those writes create, replace and remove in the state it commits to.
//
// Older records: those written by versions before validation (formats KSP1 and KSP2, see
// detail/store/prepared_record.hpp) carry no validation set and no keyspace layouts; they are
// still read and committed as those versions did, blind (the last writer wins; a KSP2 add's
// delta is applied to the value current then; a KSP1 add is the put of the value it produced),
// after the same key checks.
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
#include <keyschema/fingerprint.hpp>
#include <keyschema/store.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {

template <class = void>
[[noreturn]] inline void throw_prepared_limit(std::string_view xid, const std::string& what, std::size_t size,
                                              const char* limit_name, std::size_t limit) {
  throw limit_error("keyschema::prepare: xid " + show_xid(xid) + ": " + what + " is " + std::to_string(size) +
                    ", more than the backend's maximum of " + std::to_string(limit) + " (backend_limits::" +
                    limit_name + "); split the transaction. Nothing was written; the transaction is left open");
}

// Checks that the record of ops under key, and the commit of ops plus the record's erase, fit l.
// adds, add_bytes: the number of the record's adds, and their keys' and values' bytes at commit.
template <class = void>
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


// The keyspace of Schema that key is a key of, decoding exactly: calls f(std::type_identity<KS>)
// and returns true; false when no keyspace claims it. Throws decode_error when a keyspace claims
// it (it starts like that keyspace's keys) but it does not decode as one (key_codec::decode).
template <class Schema, class F>
bool with_keyspace_of(std::string_view key, F&& f) {
  return any_keyspace<Schema>([&]<class KS>(std::type_identity<KS> t) {
    if (!key_codec<KS>::matches(key)) return false;
    f(t);
    return true;
  });
}

// "keyspace 'k', key (...)", or "key (...) (of no keyspace of this schema)".
template <class Schema>
std::string describe_prepared_key(std::string_view key) {
  std::string name;
  for_each_keyspace<Schema>([&]<class KS>(std::type_identity<KS>) {
    if (name.empty() && key_codec<KS>::claims(key)) name = KS::name;
  });
  if (name.empty()) return "key " + describe_key(key) + " (of no keyspace of this schema)";
  return "keyspace '" + name + "', key " + describe_key(key);
}

// The range [lower, upper) for messages: "[(...), (...))", "[(...), end)".
template <class = void>
inline std::string describe_prepared_range(std::string_view lower, std::string_view upper) {
  return "[" + describe_key(lower) + ", " + (upper.empty() ? std::string("end") : describe_key(upper)) + ")";
}

// prepare(): the validation set of tx (see the top of this file) over the state it started from:
// every key it read with a point read or writes (put, erase, add; not the declared counts and
// index entries the store derives), and the merged ranges its scans visited.
template <class Transaction, class Maintained>
std::vector<prepared_check> prepared_checks(const transaction_writes<Transaction>& tx, const pending_map& pending,
                                            Maintained maintained) {
  const read_log& log = tx.reads();
  std::vector<std::string_view> keys;
  log.for_each_key([&](std::string_view k) { keys.push_back(k); });
  for (const auto& [k, v] : pending) {
    if (!k.empty() && static_cast<unsigned char>(k.front()) == 0xff) continue;
    if (!maintained(k)) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<prepared_check> out;
  out.reserve(keys.size());
  std::string value;
  for (const std::string_view k : keys) {
    prepared_check c;
    c.key = k;
    if (tx.base_get(k, value)) {
      c.what = prepared_check::kind::present;
      c.hash = xxh64(value);
    }
    out.push_back(std::move(c));
  }
  // The scans: each visited [lower, upper), or up to the key its cursor stopped on, included.
  struct range {
    std::string lower, upper;  // upper empty: no bound
  };
  std::vector<range> ranges;
  for (const auto& s : log.scans) {
    range r{s->lower, s->upper};
    // Keys from 0xFF on are the store's own records (this branch's, once prepared): outside
    // every keyspace, and never part of what a scan of the branch saw.
    if (r.upper.empty() || r.upper > "\xff") r.upper = "\xff";
    if (r.upper <= r.lower) continue;  // an empty range
    if (s->ended && s->stopped) {
      if (s->reverse) {
        r.lower = s->stop;
      } else {
        r.upper = s->stop;
        r.upper.push_back('\0');
      }
    }
    ranges.push_back(std::move(r));
  }
  std::sort(ranges.begin(), ranges.end(), [](const range& a, const range& b) { return a.lower < b.lower; });
  std::vector<range> merged;
  for (range& r : ranges) {
    if (!merged.empty() && (merged.back().upper.empty() || r.lower <= merged.back().upper)) {
      range& m = merged.back();
      if (!m.upper.empty() && (r.upper.empty() || r.upper > m.upper)) m.upper = std::move(r.upper);
      continue;
    }
    merged.push_back(std::move(r));
  }
  for (range& r : merged) {
    prepared_digest d;
    tx.base_scan(key_range{r.lower, r.upper, false}, [&](std::string_view k, std::string_view v) { d.add(k, v); });
    prepared_check c;
    c.what = prepared_check::kind::range;
    c.key = std::move(r.lower);
    c.upper = std::move(r.upper);
    c.entries = d.entries;
    c.hash = d.hash;
    out.push_back(std::move(c));
  }
  return out;
}

// commit_prepared(): throws conflict_error when something of rec's validation set differs in
// what tx reads now (the latest committed state, tx having written nothing yet).
template <class Schema, class Transaction>
void validate_prepared(std::string_view xid, const prepared_record& rec, const Transaction& tx) {
  const auto refuse = [&](const std::string& what, const std::string& how) {
    throw conflict_error("keyschema::commit_prepared: xid " + show_xid(xid) + ": " + what +
                         " changed since prepare (" + how +
                         "), so the branch cannot commit as prepared; nothing was applied and the record stays. "
                         "Roll it back (rollback_prepared)");
  };
  std::string value;
  for (const prepared_check& c : rec.checks) {
    if (c.what == prepared_check::kind::range) continue;
    const bool present = store_access::raw_get(tx, c.key, value);
    if (c.what == prepared_check::kind::absent) {
      if (present) refuse(describe_prepared_key<Schema>(c.key), "absent then, present now");
    } else if (!present) {
      refuse(describe_prepared_key<Schema>(c.key), "present then, absent now");
    } else if (xxh64(value) != c.hash) {
      refuse(describe_prepared_key<Schema>(c.key), "another value now");
    }
  }
  for (const prepared_check& c : rec.checks) {
    if (c.what != prepared_check::kind::range) continue;
    prepared_digest d;
    for (auto cur = store_access::raw_cursor(tx, key_range{c.key, c.upper, false}); cur.valid(); cur.next()) {
      d.add(cur.key(), cur.value());
    }
    if (d.entries != c.entries || d.hash != c.hash) {
      refuse("the range " + describe_prepared_range(c.key, c.upper) + " a scan of the branch visited",
             std::to_string(c.entries) + " entries then, " + std::to_string(d.entries) +
                 " now, or another key or value among them");
    }
  }
}

// commit_prepared(): every key rec puts, erases or adds to must be a key of a keyspace of Schema,
// decoding exactly, whose layout (keyspace_fingerprint) is one the record names (format 3); every
// range erase's keyspace must be one of Schema's, and not one the store maintains.
template <class Schema>
void check_prepared_keys(std::string_view xid, const prepared_record& rec) {
  const std::string what = "keyschema::commit_prepared: the prepared record of xid " + show_xid(xid);
  const auto check = [&](std::string_view key) {
    bool found = false;
    try {
      found = with_keyspace_of<Schema>(key, [&]<class KS>(std::type_identity<KS>) {
        if (rec.validated() &&
            std::find(rec.keyspaces.begin(), rec.keyspaces.end(), keyspace_fingerprint<KS>) == rec.keyspaces.end()) {
          throw schema_error(what + " writes keyspace '" + std::string(KS::name) + "', key " + describe_key(key) +
                             ", but this schema's keyspace '" + std::string(KS::name) +
                             "' has another layout than the schema that prepared it (changed or migrated since); "
                             "nothing was applied. Roll it back (rollback_prepared) with this schema, or commit it "
                             "with the schema that prepared it");
        }
      });
    } catch (const schema_error&) {
      throw;
    } catch (const decode_error& e) {
      throw decode_error(what + " writes a key that does not decode as the keyspace it starts like (" + e.what() +
                         "; written under another schema?); nothing was applied. Roll it back (rollback_prepared)");
    }
    if (!found) {
      throw schema_error(what + " writes key " + describe_key(key) +
                         ", which is no key of a keyspace of this schema (written under another schema, or before "
                         "a migration?); nothing was applied. Roll it back (rollback_prepared)");
    }
  };
  for (const write_batch::op o : rec.ops) check(o.key);
  for (const prepared_add& a : rec.adds) check(a.key);
  for (const prepared_range_erase& e : rec.range_erases) {
    const bool found = any_keyspace<Schema>([&]<class KS>(std::type_identity<KS>) {
      if (keyspace_fingerprint<KS> != e.keyspace) return false;
      if constexpr (is_maintained_keyspace<KS>) {
        throw key_error(what + " erases the range " + describe_prepared_range(e.lower, e.upper) + " of keyspace '" +
                        std::string(KS::name) + "', which the store maintains (a declared count or an index; "
                        "prepare never records one); nothing was applied. Roll it back (rollback_prepared)");
      }
      return true;
    });
    if (!found) {
      throw schema_error(what + " erases the range " + describe_prepared_range(e.lower, e.upper) +
                         " of a keyspace this schema does not have with that layout (keyspace fingerprint " +
                         fingerprint_text(e.keyspace) + "; changed or migrated since?); nothing was applied. Roll it "
                         "back (rollback_prepared)");
    }
  }
}

// commit_prepared(): erases, in tx, every key of e's keyspace in its range as tx sees it now.
template <class Schema, class Transaction>
void apply_prepared_range_erase(std::string_view xid, const prepared_range_erase& e, Transaction& tx) {
  for_each_keyspace<Schema>([&]<class KS>(std::type_identity<KS>) {
    if constexpr (!is_maintained_keyspace<KS>) {
      if (keyspace_fingerprint<KS> != e.keyspace) return;
      std::vector<std::string> keys;
      try {
        for (auto c = store_access::raw_cursor(tx, key_range{e.lower, e.upper, false}); c.valid(); c.next()) {
          if (key_codec<KS>::matches(c.key())) keys.emplace_back(c.key());
        }
      } catch (const decode_error& err) {
        throw decode_error("keyschema::commit_prepared: xid " + show_xid(xid) + ": the range erase " +
                           describe_prepared_range(e.lower, e.upper) + " meets a key it cannot read (" + err.what() +
                           "); nothing was applied. Erase that key, or roll the branch back (rollback_prepared)");
      }
      for (const std::string& k : keys) {
        store_access::emplace_op(
            tx, write_batch::op_kind::erase, [&](std::string& b) { b.append(k); }, [](std::string&) {});
      }
    }
  });
}

}  // namespace detail

// Phase one: records tx's pending writes durably under xid, without applying them, and ends tx
// (is_open() is false after a successful call; its writer lock is released). The record and the
// check that xid is not already prepared happen in one write under tx's lock.
// xid: any bytes (empty too); the caller's encoding of its transaction id.
// REQUIRES: tx is open, and no scan of tx is used afterwards.
// Also records the transaction's validation set (see the top of this file): reads each key it
// read or writes, and each range its scans visited, once more in the state it started from.
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
  detail::transaction_writes<store_transaction<Schema, Backend>> view(tx);
  const detail::pending_map& pending = view.writes();
  const detail::pending_deltas& deltas = view.deltas();
  const detail::read_log& log = view.reads();
  detail::prepared_record rec;
  for (const detail::range_erase_read& e : log.range_erases) {
    rec.range_erases.push_back(detail::prepared_range_erase{e.lower, e.upper, e.keyspace});
  }
  // An erase the transaction made by a range erase is applied by that range erase at commit.
  const auto covered = [&](std::string_view k) {
    for (const detail::range_erase_read& e : log.range_erases) {
      if (k >= e.lower && (e.upper.empty() || k < e.upper) && e.matches(k)) return true;
    }
    return false;
  };
  write_batch& ops = rec.ops;
  std::size_t pending_bytes = 0;
  for (const auto& [k, v] : pending) pending_bytes += k.size() + (v ? v->size() : 0);
  ops.reserve(pending.size(), pending_bytes);
  std::size_t add_bytes = 0;
  for (const auto& [k, v] : pending) {
    // Declared counts and index entries are derived again by commit_prepared, from the state it
    // commits to: recorded here, they would overwrite what other writers changed meanwhile.
    if (detail::derived_writes<Schema>::maintained_key(k)) continue;
    detail::with_keyspace_of<Schema>(k, [&]<class KS>(std::type_identity<KS>) {
      if (std::find(rec.keyspaces.begin(), rec.keyspaces.end(), keyspace_fingerprint<KS>) == rec.keyspaces.end()) {
        rec.keyspaces.push_back(keyspace_fingerprint<KS>);
      }
    });
    if (auto d = deltas.find(k); d != deltas.end()) {
      rec.adds.push_back(detail::prepared_add{k, d->second});  // applied to the value current at commit
      add_bytes += k.size() + sizeof(std::int64_t);
    } else if (v) {
      ops.put(k, *v);
    } else if (!covered(k)) {
      ops.erase(k);
    }
  }
  std::size_t range_bytes = 0;  // what the range erases erase is not known before commit
  for (const detail::prepared_range_erase& e : rec.range_erases) range_bytes += e.lower.size() + e.upper.size();
  rec.checks = detail::prepared_checks(
      view, pending, [](std::string_view k) { return detail::derived_writes<Schema>::maintained_key(k); });
  std::string record = detail::encode_prepared(rec);
  detail::check_prepared_limits(xid, detail::store_access::limits(tx), ops, key, record.size(),
                                rec.adds.size() + rec.range_erases.size(), add_bytes + range_bytes);
  detail::pending_map only;
  only.emplace(key, std::move(record));
  view.commit_instead(std::move(only), opts);  // on failure the transaction goes on as it was
}

// Phase two: validates the record of xid (see the top of this file), then applies its writes
// (range erases first) and erases the record, in one atomic write (with the durability of opts).
// Its adds are applied to the values current now, under the writer lock. Returns false, writing
// nothing, when no record exists for xid (never prepared, or already committed or rolled back).
// Errors (nothing written; the record stays; rollback_prepared, which does not read the record,
// removes it):
//   conflict_error "keyschema::commit_prepared: xid b"...": keyspace 'k', key (...) changed since
//     prepare (absent then, present now)" (or "present then, absent now", "another value now",
//     or "the range [(...), (...)) a scan of the branch visited changed ..."): the branch cannot
//     commit as prepared. Remedy: roll it back (the coordinator aborts the global transaction);
//     committing it again refuses again;
//   schema_error naming the xid and the key when a key it writes is no key of a keyspace of this
//     schema, or its keyspace's layout differs from the one it was prepared under (changed
//     without ks::migrate, which refuses while records exist); roll it back;
//   decode_error naming the xid when the record is damaged (see prepared_record.hpp), writes a
//     key that starts like a keyspace's keys but does not decode as one, or adds to a key of no
//     integer keyspace of this schema; roll it back;
//   key_error when the record writes a key of a keyspace the store maintains (a declared count
//     or an index; prepare never records one); roll it back;
//   overflow_error when an add's sum does not fit its value type now (names keyspace, key, value
//     and delta; only a record of the older formats, applied blind, can meet another value than
//     the one prepared); roll it back, or change the value and commit again;
//   usage_error when this thread holds an open transaction on db;
//   limit_error / backend_error / conflict_error from the engine.
template <class Schema, class Backend>
bool commit_prepared(store<Schema, Backend>& db, std::string_view xid, const write_options& opts = {}) {
  const std::string key = detail::prepared_key(xid);
  auto tx = db.transaction();
  std::string record;
  if (!detail::store_access::raw_get(tx, key, record)) return false;
  const detail::prepared_record rec = detail::decode_prepared(xid, record);
  const std::string what = "keyschema::commit_prepared: the prepared record of xid " + detail::show_xid(xid);
  detail::derived_writes<Schema>::refuse_maintained(what, rec.ops);
  detail::check_prepared_keys<Schema>(xid, rec);
  if (rec.validated()) detail::validate_prepared<Schema>(xid, rec, tx);
  for (const detail::prepared_range_erase& e : rec.range_erases) detail::apply_prepared_range_erase<Schema>(xid, e, tx);
  for (const write_batch::op o : rec.ops) {
    detail::store_access::emplace_op(
        tx, o.kind, [&](std::string& b) { b.append(o.key); }, [&](std::string& b) { b.append(o.value); });
  }
  for (const detail::prepared_add& a : rec.adds) {
    if (!detail::transaction_writes<store_transaction<Schema, Backend>>(tx).add(a.key, a.delta)) {
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
