// keyschema/etcd/options.hpp: how keyschema::etcd_backend reaches an etcd cluster.
//
// etcd_options is a plain aggregate handed to the etcd_backend constructor. The two limits must
// match the cluster's own flags (etcd --max-txn-ops, --max-request-bytes): the backend refuses
// what exceeds them before sending it, and reports them in limits() so that keyschema::store
// sizes its erase chunks and sweeps by them. Set lower than the cluster's they only refuse more;
// set higher, a batch the cluster refuses fails with limit_error from the server's answer.
// The options are read once, when the backend is constructed.
//
// Thread-safety: a plain value type.
#pragma once

#include <keyschema/detail/config.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

// etcd's defaults for the two server limits a write meets.
inline constexpr std::size_t etcd_default_max_txn_ops = 128;                       // --max-txn-ops
inline constexpr std::size_t etcd_default_max_request_bytes = std::size_t{1572864};  // --max-request-bytes (1.5 MiB)

struct etcd_options {
  // Client URLs of the cluster's members ("http://127.0.0.1:2379"). A call goes to the endpoint
  // that answered last, and moves on to the next one (in the listed order, wrapping around) when
  // it cannot connect, when the member does not answer within attempt_timeout (see there), or,
  // for reads only, when the member answers that it has no leader. At least one.
  std::vector<std::string> endpoints = {"http://127.0.0.1:2379"};

  // true (the default): a backend's first call goes to an endpoint chosen at random, so that many
  // clients listing the members in the same order spread over them (also after a lost member or
  // a leader change sent them all to the next one). false: to the first one listed.
  bool random_first_endpoint = true;

  // The deadline of one call (get, write, one page of a cursor, snapshot), across every
  // endpoint it tries. A call past it throws backend_error naming the call, the endpoint and the
  // deadline.
  std::chrono::milliseconds deadline{5000};

  // How long one attempt at one endpoint may go without an answer before the member is taken for
  // hung (a stopped process, a stalled disk, a network that drops packets), so that a call fails
  // over long before its deadline:
  //   - a read (get, snapshot, a cursor's page) gives the attempt attempt_timeout, the next
  //     attempt (at the next endpoint) twice as long, then four times..., each capped by what is
  //     left of the deadline: a read that a slow cluster answers late still succeeds;
  //   - a write (write, erase_range, a transaction's commit; also a compaction) is never given up
  //     while its member is alive, since a long one (a DeleteRange of many keys) may take
  //     seconds: after attempt_timeout / 2 without an answer the member is asked for its version
  //     on a separate connection (GET /version), again each attempt_timeout / 2 while it answers.
  //     When it does not answer within attempt_timeout / 2, the write is abandoned: a write
  //     already sent may have been applied and is never sent again, so it fails with
  //     backend_error "the outcome of the write is unknown" (a compaction, which may be repeated,
  //     moves on to the next endpoint instead). The next call starts at the next endpoint.
  // With the defaults a hung member costs a read about 1 s and a write one failed call of
  // about 1 s; later calls go to the other members. At least 2 ms.
  std::chrono::milliseconds attempt_timeout{1000};

  // The longest wait for a TCP connection to one endpoint before the next one is tried
  // (CURLOPT_CONNECTTIMEOUT_MS, capped by what remains of the attempt and of the deadline).
  std::chrono::milliseconds connect_timeout{1000};

  // The cluster's --max-txn-ops: the most distinct keys one write() (one etcd Txn) may hold.
  std::size_t max_txn_ops = etcd_default_max_txn_ops;

  // The cluster's --max-request-bytes: the largest encoded (protobuf) request a write() may send.
  std::size_t max_request_bytes = etcd_default_max_request_bytes;

  // Keys per page of a cursor (etcd RangeRequest::limit). Larger pages: fewer round trips, more
  // memory per cursor. At least 1.
  std::size_t page_size = 256;

  // TLS, for https:// endpoints: the PEM file of the CA that signed the members' certificates
  // (CURLOPT_CAINFO; empty: the system's CAs), and a client certificate and its private key (PEM
  // files; CURLOPT_SSLCERT, CURLOPT_SSLKEY) for a cluster started with --client-cert-auth: both
  // or neither. A member whose certificate does not verify, or that refuses the client's, is an
  // error of the call naming the endpoint and libcurl's reason (it is not tried as hung).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;

  // Authentication, for a cluster with `etcdctl auth enable`: a user name and its password. The
  // backend gets a token for them (POST /v3/auth/authenticate) when it is constructed, sends it
  // with every request, and gets a new one when etcd answers that the token is no longer valid
  // (its TTL, --auth-token-ttl, passed). Empty user (the default): no authentication.
  std::string user;
  std::string password;

  // Reads at the latest revision (get and cursors without a snapshot, snapshot(), the first read
  // of a write transaction): false (the default), linearizable: the member confirms with the
  // leader that it has every commit, so a read sees every write acknowledged before it began.
  // true, serializable: the member answers from its own state, without that round trip (faster,
  // and answered by a member cut off from the leader), but possibly behind the latest commits:
  // a read may miss a write acknowledged before it began, and a read after it may see an older
  // state than one before it when they go to different members. Each read (and each snapshot)
  // is still one consistent revision, and a write transaction's commit still fails with
  // conflict_error if what it read (at a stale revision) was changed since.
  bool serializable_reads = false;

  // How many commit groups one keyschema::store keeps in flight at once on this backend (its
  // concurrent_writes(); see backend_with_concurrent_writes in keyschema/backend.hpp). Writes that
  // threads commit at the same time are grouped into one Txn each (group commit), and up to this
  // many such Txns of plain writes (puts and erases with no add, count or index to resolve) are
  // sent at once, each on its own connection; a Txn that resolves what it writes from what it
  // reads, and a transaction, wait until they alone are in flight. 1: one Txn at a time; 0 is
  // refused (usage_error from the constructor).
  std::size_t writes_in_flight = 4;

  // Prepended to every key the backend stores and stripped from every key it returns, so that
  // several databases share one cluster (one prefix each; prefixes must not be prefixes of each
  // other). Empty (the default): keys are stored as given, and the empty key cannot be stored
  // (etcd refuses it). Counts against every key-length and request-size limit.
  std::string key_prefix;
};

KEYSCHEMA_END_NAMESPACE
