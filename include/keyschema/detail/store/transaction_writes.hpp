// keyschema/detail/store/transaction_writes.hpp: what a store_transaction has written and read so
// far, as the features built on transactions see it.
//
// A feature that turns a transaction into something else (prepared.hpp: prepare records a
// branch's writes and reads instead of applying them; commit_prepared applies a record's adds)
// uses this view of one open store_transaction instead of the transaction's members. The
// transaction's typed reads and writes (basic_reader, basic_writer) are not part of it.
//
// Thread-safety: none; the view belongs to the thread using the transaction. It is valid while
// the transaction is open; writes() reflects the transaction's writes as they are made.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/store/overlay_cursor.hpp>
#include <keyschema/write_batch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// The adds of a store_transaction still recorded as deltas: key -> the sum of its deltas (see
// store_transaction::add).
using pending_deltas = std::map<std::string, std::int64_t, std::less<>>;

// A view of the open transaction Tx (a store_transaction). REQUIRES: tx is open and outlives
// the view.
template <class Tx>
class transaction_writes {
 public:
  explicit transaction_writes(Tx& tx) noexcept : tx_(&tx) {}

  // The transaction's writes: key -> value (a put) or std::nullopt (an erase), one per key, in
  // key order, with what the store derived from them (counts, index entries, owned entries).
  const pending_map& writes() const noexcept { return tx_->pending_; }
  // The keys of writes() that hold the value before the transaction plus a delta the transaction
  // added (add<KS>, no put or erase of the key by it), and that delta.
  const pending_deltas& deltas() const noexcept { return tx_->deltas_; }
  // What the transaction read (point reads, scans) and range-erased (overlay_cursor.hpp).
  const read_log& reads() const noexcept { return tx_->reads_; }
  // Reads key in the state the transaction started from (without its writes); false when absent.
  bool base_get(std::string_view key, std::string& value) const { return tx_->base_get_raw(key, value); }
  // Calls f(key, value) for each entry of r in that state, in key order.
  template <class F>
  void base_scan(const key_range& r, F&& f) const {
    tx_->base_scan(r, std::forward<F>(f));
  }
  // Adds delta to the integer under key (a key of an integer keyspace the store does not
  // maintain), as add<KS> does. Returns false, doing nothing, when key is no such keyspace's.
  // Errors: those of add<KS> (overflow_error, decode_error); the transaction is unchanged then.
  bool add(std::string_view key, std::int64_t delta) { return tx_->add_raw(key, delta); }
  // Commits `instead` (key -> value or std::nullopt), in place of the transaction's writes, as
  // commit(opts) would commit them. When it throws and the transaction stays open, the
  // transaction's writes are what they were. Errors: those of commit.
  void commit_instead(pending_map instead, const write_options& opts) {
    pending_map saved;
    saved.swap(tx_->pending_);
    tx_->pending_ = std::move(instead);
    try {
      tx_->commit(opts);
    } catch (...) {
      if (tx_->is_open()) tx_->pending_ = std::move(saved);
      throw;
    }
  }

 private:
  Tx* tx_;
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
