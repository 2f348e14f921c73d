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
  // Client URLs of the cluster's members ("http://127.0.0.1:2379"), tried in order: a call goes
  // to the endpoint that answered last, and moves on to the next one when it cannot connect (or,
  // for reads only, when the member answers that it has no leader). At least one.
  std::vector<std::string> endpoints = {"http://127.0.0.1:2379"};

  // The deadline of one call (get, write, one page of a cursor, snapshot), across every
  // endpoint it tries (CURLOPT_TIMEOUT_MS of each attempt is what remains of it). A call past it
  // throws backend_error naming the call, the endpoint and the deadline.
  std::chrono::milliseconds deadline{5000};

  // The longest wait for a TCP connection to one endpoint before the next one is tried
  // (CURLOPT_CONNECTTIMEOUT_MS, capped by what remains of the deadline).
  std::chrono::milliseconds connect_timeout{1000};

  // The cluster's --max-txn-ops: the most distinct keys one write() (one etcd Txn) may hold.
  std::size_t max_txn_ops = etcd_default_max_txn_ops;

  // The cluster's --max-request-bytes: the largest encoded (protobuf) request a write() may send.
  std::size_t max_request_bytes = etcd_default_max_request_bytes;

  // Keys per page of a cursor (etcd RangeRequest::limit). Larger pages: fewer round trips, more
  // memory per cursor. At least 1.
  std::size_t page_size = 256;

  // Prepended to every key the backend stores and stripped from every key it returns, so that
  // several databases share one cluster (one prefix each; prefixes must not be prefixes of each
  // other). Empty (the default): keys are stored as given, and the empty key cannot be stored
  // (etcd refuses it). Counts against every key-length and request-size limit.
  std::string key_prefix;
};

KEYSCHEMA_END_NAMESPACE
