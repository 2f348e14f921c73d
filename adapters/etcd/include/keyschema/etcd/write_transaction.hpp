// keyschema/etcd/write_transaction.hpp: keyschema::etcd_write_transaction, an optimistic
// read-write transaction on an etcd cluster: reads at one revision, and a commit that applies
// only if nothing it read changed since.
//
// etcd_backend::begin_write() returns one. It takes no lock anywhere: its first read is made at
// the cluster's latest revision R and every later read at R (a snapshot). Every key it is
// positioned on or looks up and every range its cursors go over is recorded (read_set.hpp).
// commit() sends the batch as one etcd Txn whose compares check that each key read still has the
// mod_revision it had at R (0: still missing) and that no key of a covered range was created or
// changed after R. If another writer (of this process or any other, through any client) changed
// any of it, etcd applies nothing and commit() throws conflict_error: run the transaction again
// from its first read. A transaction that read nothing commits unconditionally.
//
// This makes keyschema::store's transactions, and its read-modify-write operations (add, the
// upkeep of declared counts and indexes), exact across processes on one cluster: the store runs
// them in an etcd_write_transaction, and runs them again on conflict_error (its transactions
// leave that to the caller: see keyschema::run_transaction in <keyschema/retry.hpp>).
//
// Limits: the compares count against etcd's --max-txn-ops (the compares of one Txn, separately
// from its operations) and --max-request-bytes: a transaction that read more keys than
// etcd_options::max_txn_ops cannot commit (limit_error); operation_count() says before commit
// what it would count. A cursor records only what it went over: reading the head of a queue
// does not conflict with writes past it. A range the transaction erases (erase_cursor) costs one
// operation and one compare, whatever the number of keys in it.
//
// Thread-safety: begun, used, committed and destroyed by one thread. Cursors made from it record
// into it: they are used by the same thread and not after the transaction ended.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/etcd/cursor.hpp>
#include <keyschema/etcd/detail/client.hpp>
#include <keyschema/etcd/detail/read_set.hpp>
#include <keyschema/etcd/detail/txn_body.hpp>
#include <keyschema/write_batch.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class etcd_backend;

class etcd_write_transaction {
 public:
  etcd_write_transaction(etcd_write_transaction&&) noexcept = default;
  etcd_write_transaction& operator=(etcd_write_transaction&&) noexcept = default;
  etcd_write_transaction(const etcd_write_transaction&) = delete;
  etcd_write_transaction& operator=(const etcd_write_transaction&) = delete;
  // Destroying an open transaction abandons it: nothing was written, nothing is held.
  ~etcd_write_transaction() = default;

  // True until commit() succeeded or failed in a way that ended the transaction.
  bool is_open() const noexcept { return reads_ != nullptr; }

  // The revision the transaction reads at (0 until its first read).
  std::int64_t revision() const noexcept { return reads_ ? reads_->revision : 0; }

  // Reads key at the transaction's revision into value, and records it (with its mod_revision,
  // or as missing). Returns false when the key does not exist.
  // REQUIRES: is_open(). Errors: as etcd_backend::get (backend_error, native_call
  // "etcd /v3/kv/range"; the revision was compacted: the transaction cannot go on, begin again).
  bool get(std::string_view key, std::string& value) const {
    require_open();
    std::string k = c_->etcd_key(key);
    if (k.empty()) {
      // etcd cannot hold the empty key: it is missing, now and at commit.
      return false;
    }
    etcd_detail::range_page p = c_->get("keyschema::etcd_write_transaction: get", k, reads_->revision);
    if (reads_->revision == 0) reads_->revision = p.revision;
    if (p.kvs.empty()) {
      reads_->note_key(std::move(k), 0);
      return false;
    }
    reads_->note_key(std::move(k), p.kvs.front().mod_revision);
    value = std::move(p.kvs.front().value);
    return true;
  }

  // A cursor over range (as etcd_backend::cursor) at the transaction's revision, recording what
  // it goes over. REQUIRES: is_open(); the cursor is not used after the transaction ended.
  // Errors: as etcd_backend::cursor.
  etcd_cursor cursor(const key_range& range) const {
    require_open();
    return etcd_cursor(c_, range, reads_->revision, reads_);
  }

  // A cursor over range (as cursor()) for a range erase: the caller erases, in the batch it
  // commits, keys it goes over (keyschema::store's range erases use it). Those the committed batch
  // erases get no compare of their own, and a run of them with no put between them is sent as
  // one DeleteRange: one commit erases any number of keys (etcd's --max-txn-ops counts a
  // DeleteRange once). A key created or changed in the range it went over after the
  // transaction's revision still fails the commit (the range compare); one erased by another
  // writer meanwhile does not (it is erased either way). The keys it went over that the batch
  // does not erase are compared as any key read, and so are keys the transaction looked up or
  // went over before it. REQUIRES: is_open(); the keys it goes over that the batch erases are not
  // read again through the transaction for their stored value. Errors: as cursor().
  etcd_cursor erase_cursor(const key_range& range) const {
    require_open();
    return etcd_cursor(c_, range, reads_->revision, reads_, /*erase_scan=*/true);
  }

  // The number commit(batch) counts against etcd's --max-txn-ops (etcd_options::max_txn_ops,
  // limits().max_ops_per_write): the larger of the Txn's operations (distinct keys written, a
  // merged run of erased keys counting one) and its compares (the keys and ranges read).
  // commit() refuses a batch above the limit before sending it. REQUIRES: is_open().
  // Errors: limit_error for an empty key or an operation over the entry limits (as commit);
  // std::bad_alloc. guards: the conditions a guarded commit (commit(batch, opts, guards)) adds,
  // each one more compare.
  std::size_t operation_count(const write_batch& batch, std::size_t guards = 0) const {
    require_open();
    return etcd_detail::txn_operation_count(*c_, batch, reads_.get(), "keyschema::etcd_write_transaction", guards);
  }

  // Commits batch as one etcd Txn with the compares of everything read (see the header comment),
  // and ends the transaction. opts is ignored: etcd's commits are always durable.
  // Errors (nothing of batch was applied unless "unknown" is said):
  //   conflict_error: another writer changed something the transaction read; the transaction
  //     ended. Remedy: run it again from its first read (keyschema::run_transaction does).
  //   limit_error, checked before sending (the transaction stays open): as etcd_backend::write,
  //     and: it read more keys and ranges than etcd_options::max_txn_ops compares allow.
  //   limit_error from the cluster (its limits are lower than the options; the space quota):
  //     the transaction ended.
  //   backend_error: as etcd_backend::write (no endpoint, deadline, no leader, leader changed;
  //     for a timeout or a broken connection the outcome is unknown); the transaction ended.
  // REQUIRES: is_open().
  void commit(const write_batch& batch, const write_options& opts) { static_cast<void>(commit(batch, opts, {})); }

  // As commit(batch, opts), with the conditions of guards (backend.hpp, write_guard) as compares
  // of the same Txn. Returns false when one does not hold: nothing was written, the transaction
  // has ended; true when batch was committed. When the Txn fails, the guarded keys are read again
  // to tell a failed condition (false) from a conflict (conflict_error). An empty batch checks
  // nothing (and returns true). Errors: as commit(batch, opts). REQUIRES: is_open().
  bool commit(const write_batch& batch, const write_options& /*opts: always durable*/, write_guards guards) {
    require_open();
    std::size_t n = 0;
    const std::string body = etcd_detail::txn_body(*c_, etcd_detail::limits_of(c_->options()), batch, reads_.get(),
                                                   "keyschema::etcd_write_transaction", n, guards);
    std::shared_ptr<etcd_detail::read_set> reads = std::move(reads_);  // ended, whatever happens now
    if (batch.empty()) return true;  // nothing to write: what it read was one consistent state
    const etcd_detail::txn_result r = c_->txn(
        "keyschema::etcd_write_transaction: committing " + std::to_string(n) + " operations", body);
    if (!r.succeeded) {
      for (const write_guard& g : guards) {
        etcd_detail::range_page p = c_->get("keyschema::etcd_write_transaction: reading a guarded key",
                                            c_->etcd_key(g.key), 0);
        if (p.kvs.empty() ? g.exists : (!g.exists || p.kvs.front().value != g.value)) return false;
      }
      throw conflict_error("keyschema::etcd_write_transaction: another writer changed what the transaction read (" +
                           std::to_string(reads->keys.size()) + " keys and " +
                           std::to_string(reads->merged_ranges().size()) + " ranges read at revision " +
                           std::to_string(reads->revision) + "; the cluster is at revision " +
                           std::to_string(r.revision) +
                           "); nothing was written: run the transaction again from its first read");
    }
    return true;
  }

 private:
  friend class etcd_backend;
  explicit etcd_write_transaction(std::shared_ptr<const etcd_detail::client> c)
      : c_(std::move(c)), reads_(std::make_shared<etcd_detail::read_set>()) {}

  void require_open() const {
    if (!is_open()) throw usage_error("keyschema::etcd_write_transaction: the transaction has already ended");
  }

  std::shared_ptr<const etcd_detail::client> c_;
  std::shared_ptr<etcd_detail::read_set> reads_;  // null once ended
};

KEYSCHEMA_END_NAMESPACE
