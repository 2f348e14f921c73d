// keyschema/etcd.hpp: keyschema::etcd_backend, the etcd storage adapter.
//
// etcd_backend meets the byte-level contract of <keyschema/backend.hpp> on an etcd cluster (v3
// API, etcd 3.4 or later): keys in unsigned byte order (etcd's own), a write_batch committed as
// one etcd Txn (atomic: every member applies all of it or none; later operations on the same key
// win, because the batch is reduced to the last operation per key: etcd refuses a Txn that names
// a key twice), snapshots that read at one revision (etcd_snapshot) and cursors that page through
// a range at one revision in either direction (etcd_cursor). It also models
// backend_with_erase_range: one etcd DeleteRange erases a whole range atomically. Nothing is
// split: a batch beyond the cluster's --max-txn-ops or --max-request-bytes is refused with
// limit_error naming both figures, and limits() reports them so that keyschema::store sizes its
// erase chunks and sweeps by them.
//
// Transport: etcd's v3 JSON gateway (POST /v3/kv/range, /v3/kv/txn; keys and values base64) over
// HTTP with libcurl, because it needs no code generation and no gRPC/protobuf toolchain, and
// stays header-only; gRPC (Debian's libgrpc++ and protobuf) is the alternative, at the cost of a
// generated etcd API library every consumer would have to build. Every call has a deadline
// (etcd_options::deadline). A member that cannot be connected to is skipped for the next
// endpoint; so is a hung one (a stopped process, a dropping network): a read moves on after
// etcd_options::attempt_timeout, a write already sent fails after about as long with an error
// saying its outcome is unknown (it is never sent twice: it may have been applied), and the next
// call goes to the next member (detail/http.hpp). Each backend starts at a random endpoint, so
// clients spread over the members. Errors name the call ("etcd /v3/kv/txn"), the endpoint, the
// HTTP status and the gRPC code: a lost member, a leader change, a member without a leader and a
// timeout each say which, and never hang past the deadline.
//
// Durability: etcd acknowledges a Txn once a majority of members has it in its fsync'ed
// write-ahead log, so every write is durable as with write_options::sync, whatever the option
// says (it is ignored).
//
// Security: https:// endpoints with a CA file, and a client certificate and key for a cluster
// started with --client-cert-auth; a user and password for a cluster with authentication
// enabled (etcd_options). Reads are linearizable unless etcd_options::serializable_reads.
//
// Key prefix: with etcd_options::key_prefix set, every key is stored under that prefix and
// returned without it, so one cluster holds several databases (and the empty key can be stored).
//
//   keyschema::etcd_backend db({.endpoints = {"http://10.0.0.1:2379", "http://10.0.0.2:2379"},
//                               .key_prefix = "broker/"});
//
// Transactions: it models backend_with_write_transaction with optimistic transactions
// (etcd_write_transaction): reads at one revision, and a commit whose compares make it fail with
// conflict_error when another writer changed what was read. keyschema::store's transactions and
// its read-modify-writes (add, declared counts, indexes) are therefore exact across every process
// using the cluster: the store runs its own read-modify-writes again on a conflict, and
// keyschema::run_transaction (<keyschema/retry.hpp>) does so for a transaction function.
//
// Writes in flight: it models backend_with_concurrent_writes, so a keyschema::store shared by many
// threads sends up to etcd_options::writes_in_flight grouped Txns at once instead of one.
//
// Guarded writes (backend_with_write_guards): write(), erase_range() and a transaction's commit()
// take conditions (a key holds given bytes, or is absent) that become compares of the same Txn,
// so keyschema::store's check of its schema record costs no round trip.
//
// Placement (keyschema::placed) is ignored: this backend does not model backend_with_placements
// (<keyschema/backend.hpp>), and every keyspace stays in its one key space.
//
// Thread-safety: get, snapshot, cursor, limits, write and begin_write may be called concurrently
// from any number of threads (each call uses its own HTTP connection from a pool). A single
// cursor, snapshot or write transaction is not shared between threads without external
// synchronization. Construction, moves and destruction need exclusive access. Several processes
// may use one cluster at once.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/etcd/cursor.hpp>
#include <keyschema/etcd/detail/base64.hpp>
#include <keyschema/etcd/detail/client.hpp>
#include <keyschema/etcd/detail/request_size.hpp>
#include <keyschema/etcd/detail/txn_body.hpp>
#include <keyschema/etcd/options.hpp>
#include <keyschema/etcd/snapshot.hpp>
#include <keyschema/etcd/write_transaction.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE


class etcd_backend {
 public:
  using snapshot_type = etcd_snapshot;
  using cursor_type = etcd_cursor;
  using write_transaction_type = etcd_write_transaction;

  // Connects to the cluster: reads its current revision once, so that an unreachable cluster
  // fails here rather than at the first write.
  // Errors:
  //   usage_error: options.endpoints is empty, or max_txn_ops is 0, or
  //     max_request_bytes leaves no room for one operation, or writes_in_flight is 0, or
  //     attempt_timeout is under 2 ms, or
  //     only one of cert_file and key_file is set, or a password without a user.
  //   backend_error, native_call "etcd /v3/kv/range": no endpoint answered within
  //     options.deadline (what() lists each endpoint's failure: a certificate that does not
  //     verify, or a client certificate the cluster refuses, says so), or the cluster has no
  //     leader (see get()), or (auth enabled, no user) etcd's "user name is empty".
  //   backend_error, native_call "etcd /v3/auth/authenticate": options.user and password were
  //     refused (what() names the user).
  //   backend_error, native_call "curl_global_init"; std::bad_alloc.
  explicit etcd_backend(const etcd_options& options = {}) {
    if (options.endpoints.empty()) {
      throw usage_error("keyschema::etcd_backend: etcd_options::endpoints is empty; name at least one "
                        "member's client URL (http://host:2379)");
    }
    if (options.max_txn_ops == 0 ||
        options.max_request_bytes <= etcd_detail::request_overhead_bytes + etcd_detail::op_overhead_bytes +
                                         options.key_prefix.size()) {
      throw usage_error("keyschema::etcd_backend: etcd_options::max_txn_ops is 0 or max_request_bytes (" +
                        std::to_string(options.max_request_bytes) +
                        ") leaves no room for one operation; use the cluster's --max-txn-ops and "
                        "--max-request-bytes");
    }
    if (options.writes_in_flight == 0) {
      throw usage_error("keyschema::etcd_backend: etcd_options::writes_in_flight is 0; at least one write must be "
                        "in flight (1: one Txn at a time, as a single-writer engine)");
    }
    if (options.cert_file.empty() != options.key_file.empty()) {
      throw usage_error(std::string("keyschema::etcd_backend: etcd_options::") +
                                  (options.cert_file.empty() ? "key_file" : "cert_file") + " is set but not " +
                                  (options.cert_file.empty() ? "cert_file" : "key_file") +
                                  "; a client certificate needs both (PEM files)");
    }
    if (options.user.empty() && !options.password.empty()) {
      throw usage_error("keyschema::etcd_backend: etcd_options::password is set but user is empty; name "
                                  "the etcd user to authenticate as");
    }
    if (options.attempt_timeout < std::chrono::milliseconds(2)) {
      throw usage_error("keyschema::etcd_backend: etcd_options::attempt_timeout (" +
                                  std::to_string(options.attempt_timeout.count()) +
                                  " ms) is under 2 ms; give an attempt at one member at least 2 ms (default 1000)");
    }
    c_ = std::make_shared<const etcd_detail::client>(options);
    static_cast<void>(c_->current_revision("keyschema::etcd_backend: connecting to the cluster"));
  }

  // Moving transfers the connection state; snapshots and cursors taken before stay usable.
  etcd_backend(etcd_backend&&) noexcept = default;
  etcd_backend& operator=(etcd_backend&&) noexcept = default;
  etcd_backend(const etcd_backend&) = delete;
  etcd_backend& operator=(const etcd_backend&) = delete;
  // Closes idle connections once the last cursor is gone. Nothing to flush: every write() was
  // committed by the cluster before it returned.
  ~etcd_backend() = default;

  // Reads key at *snap's revision (the latest, linearizable, when snap is nullptr) into value.
  // Returns false when the key does not exist (value is then unspecified).
  // Errors (backend_error, native_call "etcd /v3/kv/range"):
  //   no endpoint answered (connection refused, or no answer within the attempt's timeout, at
  //     each; what() lists them), or the deadline passed (native_code 28,
  //     CURLE_OPERATION_TIMEDOUT);
  //   every member answered that it has no leader (gRPC 14): the cluster lost its majority;
  //   the snapshot's revision was compacted (gRPC 11): take a new snapshot;
  //   any other answer than HTTP 200 (what() holds etcd's message).
  // REQUIRES: snap, when not null, comes from this backend.
  bool get(std::string_view key, std::string& value, const snapshot_type* snap) const {
    if (key.empty() && c_->prefix().empty()) return false;  // etcd cannot hold the empty key
    etcd_detail::range_page p =
        c_->get("keyschema::etcd_backend: get", c_->etcd_key(key), snap != nullptr ? snap->revision() : 0);
    if (p.kvs.empty()) return false;
    value = std::move(p.kvs.front().value);
    return true;
  }

  // Commits batch as one etcd Txn of puts and deletes (after reducing it to the last operation
  // per key): every member applies all of it or none, and it is durable when write() returns
  // (opts is ignored: see the header comment). An empty batch does nothing.
  // Errors (nothing of batch was applied, except where "unknown" is said):
  //   limit_error: the batch holds more distinct keys than limits().max_ops_per_write
  //     (etcd_options::max_txn_ops), or its encoded request is larger than
  //     etcd_options::max_request_bytes; what() names the figure and the limit. Or the server
  //     refused it for the same reasons (its flags are lower than the options), or its space
  //     quota is exhausted (NOSPACE alarm). Nothing is split: write smaller batches.
  //   limit_error: a key is empty and there is no key_prefix (etcd refuses the empty key), or an
  //     operation's key or key + value exceeds limits().max_key_bytes / max_entry_bytes.
  //   backend_error, native_call "etcd /v3/kv/txn":
  //     no endpoint could be connected to (what() lists each failure): nothing was applied;
  //     the deadline passed, the connection broke after the request was sent, or the member
  //       was taken for hung (no answer, and none to GET /version within
  //       etcd_options::attempt_timeout; native_code 28): the outcome is unknown (what() says
  //       so): the batch may have been applied. It is never sent again: read back what it wrote
  //       to know. The next call goes to the next endpoint;
  //     the member has no leader / the leader changed (gRPC 14) / the request timed out in the
  //       cluster: what() says which; for a timeout the outcome is unknown.
  //   std::bad_alloc.
  void write(const write_batch& batch, const write_options& opts) { static_cast<void>(write(batch, opts, {})); }

  // As write(batch, opts), with the conditions of guards (a key holds given bytes, or is absent;
  // backend_with_write_guards) as compares of the same Txn: no extra round trip. Returns false,
  // writing nothing, when one does not hold; true when batch was applied. An empty batch checks
  // nothing (and returns true). Errors: as write(batch, opts).
  bool write(const write_batch& batch, const write_options& /*opts: always durable*/, write_guards guards) {
    if (batch.empty()) return true;
    std::size_t n = 0;
    const std::string body =
        etcd_detail::txn_body(*c_, limits(), batch, nullptr, "keyschema::etcd_backend", n, guards);
    const etcd_detail::txn_result r =
        c_->txn("keyschema::etcd_backend: writing a batch of " + std::to_string(n) + " operations", body);
    return r.succeeded || guards.empty();
  }

  // Erases every key k with range.lower <= k < range.upper (no upper bound when range.upper is
  // empty; range.reverse is ignored) with one etcd DeleteRange in one Txn: atomic, whatever the
  // number of keys (etcd counts it as one operation), durable when it returns.
  // Errors: as write() (native_call "etcd /v3/kv/txn"), except the limits of a batch; std::bad_alloc.
  void erase_range(const key_range& range, const write_options& opts) {
    static_cast<void>(erase_range(range, opts, {}));
  }

  // As erase_range(range, opts), with the conditions of guards as compares of the same Txn.
  // Returns false, erasing nothing, when one does not hold. An empty range checks nothing.
  bool erase_range(const key_range& range, const write_options& /*opts: always durable*/, write_guards guards) {
    const etcd_detail::etcd_range r = c_->to_etcd(range.lower, range.upper);
    if (r.empty()) return true;
    std::string body = "{";
    if (!guards.empty()) {
      body += "\"compare\":[";
      etcd_detail::append_guard_compares(*c_, body, guards, true);
      body += "],";
    }
    body += "\"success\":[{\"request_delete_range\":{\"key\":\"";
    etcd_detail::base64_append(body, r.begin);
    body += "\",\"range_end\":\"";
    etcd_detail::base64_append(body, r.end);
    body += "\"}}]}";
    return c_->txn("keyschema::etcd_backend: erasing a range", body).succeeded || guards.empty();
  }

  // Begins an optimistic write transaction (etcd_write_transaction): no lock is taken; it reads
  // at the revision of its first read, and its commit applies only if nothing it read changed,
  // or throws conflict_error. keyschema::store runs its transactions and read-modify-writes in
  // one, which makes them exact across processes. Errors: none here (std::bad_alloc); its reads
  // and commit report theirs.
  write_transaction_type begin_write() { return write_transaction_type(c_); }

  // A view of the latest committed state: the cluster's current revision, read linearizably now.
  // Errors: as get() (native_call "etcd /v3/kv/range"); std::bad_alloc.
  snapshot_type snapshot() const {
    return snapshot_type(c_->current_revision("keyschema::etcd_backend: taking a snapshot"));
  }

  // Compacts the cluster's history up to its current revision, physically (etcd
  // /v3/kv/compaction; returns once every member removed it). etcd keeps every erased or
  // overwritten key as history until a compaction, and reads over a range full of it slow down
  // (a put and a get: 5.3 ms on a fresh cluster, 43 ms after erasing 100k keys, 2.1 ms after
  // compacting); clusters usually compact on their own (--auto-compaction-retention).
  // The history is the whole cluster's, not this backend's key prefix: afterwards, a snapshot or
  // transaction of any client reading at an older revision fails (backend_error, "the snapshot's
  // revision was removed by an etcd compaction"). Call it only where no other client holds one.
  // Errors: backend_error, native_call "etcd /v3/kv/range" (reading the current revision) or
  // "etcd /v3/kv/compaction"; std::bad_alloc. Compacting twice with no write between is no error.
  void compact_history() const {
    const std::string context = "keyschema::etcd_backend: compacting the history";
    c_->compact(context, c_->current_revision(context));
  }

  // A cursor over the keys k with range.lower <= k < range.upper (no upper bound when
  // range.upper is empty), ascending, or descending when range.reverse, at *snap's revision, or
  // at the revision of the first page's answer when snap is nullptr. The bounds are copied; the
  // first page is read here.
  // Errors: as etcd_cursor::next(); std::bad_alloc.
  // REQUIRES: snap, when not null, comes from this backend.
  cursor_type cursor(const key_range& range, const snapshot_type* snap) const {
    return cursor_type(c_, range, snap != nullptr ? snap->revision() : 0);
  }

  // What write() accepts, from etcd_options::max_txn_ops and max_request_bytes:
  // max_ops_per_write = max_txn_ops; max_bytes_per_write = what is left of max_request_bytes
  // when every one of max_txn_ops operations carries its encoding overhead and the key prefix;
  // max_entry_bytes and max_key_bytes = half of max_bytes_per_write (so that one operation at the
  // limit still fits a batch with others; a larger value is written in chunks, see chunked.hpp).
  // A batch within these always fits the request limit.
  backend_limits limits() const noexcept { return etcd_detail::limits_of(c_->options()); }
  // backend_with_concurrent_writes: how many commit groups a keyschema::store keeps in flight at
  // once (etcd_options::writes_in_flight; the constructor refuses 0).
  std::size_t concurrent_writes() const noexcept { return c_->options().writes_in_flight; }

  // The options the backend was made with (endpoints, limits, prefix).
  const etcd_options& options() const noexcept { return c_->options(); }

 private:
  std::shared_ptr<const etcd_detail::client> c_;
};

static_assert(backend<etcd_backend>, "keyschema::etcd_backend: does not meet the backend contract; see keyschema/backend.hpp");
static_assert(backend_with_write_transaction<etcd_backend>,
              "keyschema::etcd_backend: does not provide write transactions; see keyschema/backend.hpp");
static_assert(backend_with_erase_range<etcd_backend>,
              "keyschema::etcd_backend: does not provide erase_range; see keyschema/backend.hpp");
static_assert(backend_with_write_guards<etcd_backend>,
              "keyschema::etcd_backend: other clients can write its cluster, so it must guard writes "
              "(backend_with_write_guards); see keyschema/backend.hpp");

KEYSCHEMA_END_NAMESPACE
