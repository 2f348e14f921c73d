// keyschema/etcd/detail/status.hpp: turns a failed etcd call into a keyschema exception.
//
// etcd's JSON gateway answers a failed call with an HTTP status and a body
// {"error": "...", "code": <gRPC code>, "message": "..."}. Every failure surfaces as
// keyschema::backend_error (limit_error for the server's size, operation-count and space
// limits) whose native_call() names the call ("etcd /v3/kv/txn"), whose native_code() is the
// gRPC status code (the HTTP status when the body carries none), and whose what() names the
// endpoint, the HTTP status, the gRPC code's name and etcd's own message, plus what it means when
// etcd's message is one this adapter knows (compacted revision, no leader, leader changed, request
// timeout, space quota).
//
// Thread-safety: stateless functions.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace etcd_detail {

inline const char* grpc_code_name(int code) noexcept {
  switch (code) {
    case 0: return "OK";
    case 1: return "Canceled";
    case 2: return "Unknown";
    case 3: return "InvalidArgument";
    case 4: return "DeadlineExceeded";
    case 5: return "NotFound";
    case 6: return "AlreadyExists";
    case 7: return "PermissionDenied";
    case 8: return "ResourceExhausted";
    case 9: return "FailedPrecondition";
    case 10: return "Aborted";
    case 11: return "OutOfRange";
    case 12: return "Unimplemented";
    case 13: return "Internal";
    case 14: return "Unavailable";
    case 15: return "DataLoss";
    case 16: return "Unauthenticated";
    default: return "unknown gRPC code";
  }
}

// The gRPC code and message of an error body; code -1 and the body itself (cut to 300 bytes)
// when it is not the gateway's error shape.
struct error_body {
  int code = -1;
  std::string message;
};

inline error_body parse_error_body(std::string_view body) {
  error_body e;
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    if (const auto c = j.find("code"); c != j.end() && c->is_number_integer()) e.code = c->get<int>();
    for (const char* field : {"message", "error"}) {
      if (const auto m = j.find(field); m != j.end() && m->is_string() && !m->get<std::string>().empty()) {
        e.message = m->get<std::string>();
        break;
      }
    }
  }
  if (e.code < 0 && e.message.empty()) e.message.assign(body.substr(0, 300));
  return e;
}

// True when a read may be retried on another member: it has no leader, lost it, or timed out.
inline bool is_unavailable(long http_status, std::string_view body) {
  if (http_status == 200) return false;
  const error_body e = parse_error_body(body);
  return e.code == 14 || e.message.find("no leader") != std::string::npos ||
         e.message.find("leader changed") != std::string::npos;
}

// Throws the exception for a non-200 answer of `call` ("etcd /v3/kv/txn") from endpoint.
[[noreturn]] inline void throw_etcd_error(const std::string& context, const std::string& call,
                                          const std::string& endpoint, long http_status, std::string_view body) {
  const error_body e = parse_error_body(body);
  std::string msg = context + ": " + call + " at " + endpoint + " failed: HTTP " + std::to_string(http_status);
  if (e.code >= 0) msg += ", gRPC " + std::to_string(e.code) + " (" + grpc_code_name(e.code) + ")";
  msg += ": " + e.message;
  const int code = e.code >= 0 ? e.code : static_cast<int>(http_status);
  const auto has = [&](const char* s) { return e.message.find(s) != std::string::npos; };
  if (has("too many operations in txn request") || has("request is too large")) {
    throw limit_error(msg + " [" + call + "]; the cluster's --max-txn-ops or --max-request-bytes is lower than "
                            "etcd_options says; nothing was written");
  }
  if (has("database space exceeded")) {
    throw limit_error(msg + " [" + call + "]; the cluster reached its space quota (--quota-backend-bytes): compact "
                            "and defragment it, then disarm the NOSPACE alarm (etcdctl alarm disarm); nothing was "
                            "written");
  }
  if (has("user name is empty") || has("invalid auth token")) {
    throw backend_error(msg + "; the cluster has authentication enabled: set etcd_options::user and password", call,
                        code);
  }
  if (has("permission denied")) {
    throw backend_error(msg + "; the etcd user (etcd_options::user) lacks a role granting this key range", call, code);
  }
  if (has("required revision has been compacted")) {
    throw backend_error(msg + "; the snapshot's revision was removed by an etcd compaction: take a new snapshot (a "
                              "snapshot cannot outlive the cluster's compaction of its revision)",
                        call, code);
  }
  if (has("no leader")) {
    throw backend_error(msg + "; the member has no leader (it lost contact with a majority of the cluster, or an "
                              "election is under way): retry, or use another endpoint",
                        call, code);
  }
  if (has("leader changed")) {
    throw backend_error(msg + "; the leader changed while the call ran: retry", call, code);
  }
  if (has("request timed out")) {
    throw backend_error(msg + "; the cluster did not commit the request in time (a member lost, or an overloaded "
                              "disk): the outcome of a write is unknown",
                        call, code);
  }
  throw backend_error(msg, call, code);
}

}  // namespace etcd_detail
KEYSCHEMA_END_NAMESPACE
