// keyschema/etcd/detail/txn_body.hpp: a write_batch (and a transaction's read set) as the JSON
// body of one etcd Txn, checked against the cluster's limits before anything is sent.
//
// The batch is reduced to the last operation per key (etcd refuses a Txn that names a key twice;
// later operations win, as the backend contract says). Puts become request_put, erases
// request_delete_range of one key, except the runs of erases a transaction's erase scans allow
// to merge, which become one request_delete_range with a range_end each (read_set.hpp). A read
// set adds its compares.
//
// Thread-safety: stateless functions.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/etcd/detail/base64.hpp>
#include <keyschema/etcd/detail/client.hpp>
#include <keyschema/etcd/detail/read_set.hpp>
#include <keyschema/etcd/detail/request_size.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace etcd_detail {

// etcd_backend::limits() for options o (see there).
inline backend_limits limits_of(const etcd_options& o) noexcept {
  const std::size_t per_op = etcd_detail::op_overhead_bytes + o.key_prefix.size();
  const std::size_t room = o.max_request_bytes - etcd_detail::request_overhead_bytes;
  backend_limits l;
  l.max_ops_per_write = o.max_txn_ops;
  const std::size_t all_ops = o.max_txn_ops * per_op;
  l.max_bytes_per_write = room > all_ops ? room - all_ops : (room - per_op) / o.max_txn_ops;
  // Half a batch: an operation at the limit still fits a batch with the records the store adds
  // to it (a count, an index entry, a second chunk).
  l.max_entry_bytes = l.max_bytes_per_write / 2;
  l.max_key_bytes = l.max_entry_bytes;
  return l;
}

// Appends the compares of guards (backend_with_write_guards) to body, each preceded by a comma
// unless `first`: a key that must hold given bytes compares its VALUE, one that must be absent its
// VERSION with 0 (etcd compares a missing key as version 0). Returns the protobuf bytes they add.
inline std::size_t append_guard_compares(const client& c, std::string& body, write_guards guards, bool first) {
  std::size_t bytes = 0;
  for (const write_guard& g : guards) {
    if (!first) body += ',';
    first = false;
    const std::string key = c.etcd_key(g.key);
    body += "{\"result\":\"EQUAL\",\"target\":\"";
    body += g.exists ? "VALUE" : "VERSION";
    body += "\",\"key\":\"";
    base64_append(body, key);
    if (g.exists) {
      body += "\",\"value\":\"";
      base64_append(body, g.value);
      body += "\"}";
    } else {
      body += "\",\"version\":\"0\"}";
    }
    // result and target varints, the key, and the value field (or the version: a tag and up to
    // 10 bytes), in a length-delimited field of the TxnRequest.
    bytes += field_size(4 + field_size(key.size()) + (g.exists ? field_size(g.value.size()) : 11));
  }
  return bytes;
}

// What one Txn of a batch holds: its operations after reducing the batch to the last operation
// per key, minus the erases merged into range deletes.
struct txn_plan {
  std::vector<write_batch::op> ops;
  std::vector<etcd_range> deletes;  // etcd keys [begin, end)
  // Keys erase scans went over that the batch does not erase: compared as keys read.
  std::vector<std::pair<std::string, std::int64_t>> extra;
  std::size_t compares = 0;  // of the read set, with extra
  std::size_t operations() const noexcept { return ops.size() + deletes.size(); }
};

// The range deletes that reads' erase runs allow for ops (see read_set.hpp): each maximal part of
// a run whose keys ops all erase, with no put of ops between them, of at least two keys; merged
// where they overlap or touch.
inline std::vector<etcd_range> erase_run_deletes(const client& c, const std::vector<write_batch::op>& ops,
                                                 const read_set& reads) {
  std::vector<etcd_range> out;
  if (reads.erase_runs.empty()) return out;
  std::map<std::string, bool, std::less<>> final_op;  // etcd key -> is a put
  for (const write_batch::op& o : ops) final_op.emplace(c.etcd_key(o.key), o.kind == write_batch::op_kind::put);
  std::vector<std::string_view> part;
  const auto flush = [&] {
    if (part.size() >= 2) {
      etcd_range r;
      r.begin.assign(part.front());
      r.end.assign(part.back());
      r.end.push_back('\0');
      out.push_back(std::move(r));
    }
    part.clear();
  };
  for (const std::vector<std::string>& run : reads.erase_runs) {
    {
      const bool descending = run.size() >= 2 && run[1] < run[0];
      for (std::size_t i = 0; i < run.size(); ++i) {
        const std::string& k = descending ? run[run.size() - 1 - i] : run[i];
        const auto it = final_op.find(k);
        if (it == final_op.end() || it->second) {  // not erased: the part ends before it
          flush();
          continue;
        }
        if (!part.empty()) {
          // A put between the previous key and this one (a key created by the transaction) ends it.
          for (auto p = final_op.upper_bound(part.back()); p != final_op.end() && p->first < k; ++p) {
            if (p->second) {
              flush();
              break;
            }
          }
        }
        part.push_back(k);
      }
      flush();
    }
  }
  std::sort(out.begin(), out.end(), [](const etcd_range& a, const etcd_range& b) { return a.begin < b.begin; });
  std::vector<etcd_range> merged;
  for (etcd_range& r : out) {
    if (!merged.empty() && !(merged.back().end < r.begin)) {
      if (merged.back().end < r.end) merged.back().end = std::move(r.end);
      continue;
    }
    merged.push_back(std::move(r));
  }
  return merged;
}

// Plans the Txn of batch (and of reads' erase runs, when not null). context prefixes the
// messages. Errors (nothing is sent): limit_error: a key is empty and there is no key prefix; an
// operation exceeds lim's max_key_bytes / max_entry_bytes. std::bad_alloc.
inline txn_plan plan_txn(const client& c, const backend_limits& lim, const write_batch& batch, const read_set* reads,
                         const std::string& context) {
  txn_plan plan;
  std::vector<write_batch::op>& ops = plan.ops;
  ops.reserve(batch.size());
  {
    std::unordered_map<std::string_view, std::size_t> last;
    last.reserve(batch.size());
    for (const write_batch::op o : batch) {
      if (o.key.empty() && c.prefix().empty()) {
        throw limit_error(context + ": etcd cannot store the empty key (set etcd_options::key_prefix to store it "
                                    "under the prefix); nothing was written");
      }
      if (o.key.size() > lim.max_key_bytes || o.value.size() > lim.max_entry_bytes - o.key.size()) {
        throw limit_error(context + ": an operation of " + std::to_string(o.key.size()) + " key bytes and " +
                          std::to_string(o.value.size()) + " value bytes exceeds the limit of " +
                          std::to_string(lim.max_entry_bytes) +
                          " bytes per entry (max_key_bytes, max_entry_bytes: half of what etcd_options::"
                          "max_request_bytes leaves a batch); nothing was written");
      }
      const auto [it, inserted] = last.try_emplace(o.key, ops.size());
      if (inserted) ops.push_back(o);
      else ops[it->second] = o;
    }
  }
  if (reads != nullptr) {
    if (!reads->unchecked.empty()) {
      std::set<std::string, std::less<>> erased;
      for (const write_batch::op& o : ops) {
        if (o.kind == write_batch::op_kind::erase) erased.insert(c.etcd_key(o.key));
      }
      plan.extra = reads->kept_unchecked([&](const std::string& k) { return erased.find(k) != erased.end(); });
    }
    plan.compares = reads->compare_count(plan.extra.size());
    plan.deletes = erase_run_deletes(c, ops, *reads);
    if (!plan.deletes.empty()) {
      std::string k;
      const auto covered = [&](const write_batch::op& o) {
        if (o.kind != write_batch::op_kind::erase) return false;
        k = c.etcd_key(o.key);
        const auto r = std::upper_bound(plan.deletes.begin(), plan.deletes.end(), k,
                                        [](const std::string& key, const etcd_range& d) { return key < d.begin; });
        return r != plan.deletes.begin() && k < std::prev(r)->end;
      };
      ops.erase(std::remove_if(ops.begin(), ops.end(), covered), ops.end());
    }
  }
  return plan;
}

// The number of operations etcd counts against --max-txn-ops for batch with reads and `guards`
// more compares (a guarded commit's: backend_with_write_guards): the larger of the Txn's
// operations and its compares. Errors: as plan_txn.
inline std::size_t txn_operation_count(const client& c, const write_batch& batch, const read_set* reads,
                                       const std::string& context, std::size_t guards = 0) {
  const txn_plan plan = plan_txn(c, limits_of(c.options()), batch, reads, context);
  return std::max(plan.operations(), plan.compares + guards);
}

// The Txn body for batch (and the compares and erase runs of reads, when not null, and the
// compares of guards); n_ops receives the number of operations it holds (distinct keys written, a
// merged run counting one). context prefixes the messages (names the caller).
// Errors (nothing is sent; the caller's state is unchanged):
//   limit_error: a key is empty and there is no key prefix; an operation exceeds lim's
//     max_key_bytes / max_entry_bytes; more operations than max_txn_ops; more compares than
//     max_txn_ops (a transaction that read too many keys); the request's bytes exceed
//     max_request_bytes. what() names the figure and the limit.
//   std::bad_alloc.
inline std::string txn_body(const client& c, const backend_limits& lim, const write_batch& batch,
                            const read_set* reads, const std::string& context, std::size_t& n_ops,
                            write_guards guards = {}) {
  const txn_plan plan = plan_txn(c, lim, batch, reads, context);
  const std::vector<write_batch::op>& ops = plan.ops;
  n_ops = plan.operations();
  const etcd_options& opt = c.options();
  if (n_ops > opt.max_txn_ops) {
    throw limit_error(context + ": a batch of " +
                      (plan.deletes.empty() ? std::to_string(ops.size()) + " distinct keys"
                                            : std::to_string(n_ops) + " operations (" + std::to_string(ops.size()) +
                                                  " distinct keys, " + std::to_string(plan.deletes.size()) +
                                                  " range deletes)") +
                      " exceeds the limit of " + std::to_string(opt.max_txn_ops) +
                      " operations per etcd transaction (etcd_options::max_txn_ops, the cluster's --max-txn-ops); "
                      "nothing was written");
  }
  std::string body;
  body.reserve(64 + (batch.byte_size() + ops.size() * (c.prefix().size() + 48)) * 4 / 3);
  body += '{';
  std::size_t txn_bytes = 0;
  if (plan.compares > 0) {
    const std::size_t n = plan.compares + guards.size();
    const std::size_t read_keys = reads->keys.size() + plan.extra.size();
    if (n > opt.max_txn_ops) {
      throw limit_error(context + ": the transaction read " + std::to_string(read_keys) + " keys and " +
                        std::to_string(plan.compares - read_keys) + " ranges, which its commit checks with " +
                        std::to_string(n) + " compares" +
                        (guards.empty() ? std::string() : " (" + std::to_string(guards.size()) + " of them guards)") +
                        ", more than the limit of " + std::to_string(opt.max_txn_ops) +
                        " per etcd transaction (etcd_options::max_txn_ops, the cluster's --max-txn-ops); nothing was "
                        "written: read fewer keys in one transaction");
    }
    txn_bytes += reads->append_compares(body, plan.extra);
    if (!guards.empty()) {
      body.pop_back();  // the closing ']' of the read compares: the guards' follow
      txn_bytes += append_guard_compares(c, body, guards, false);
      body += ']';
    }
    body += ',';
  } else if (!guards.empty()) {
    body += "\"compare\":[";
    txn_bytes += append_guard_compares(c, body, guards, true);
    body += "],";
  }
  const std::size_t prefix = c.prefix().size();
  for (const write_batch::op& o : ops) {
    const std::size_t key_field = field_size(prefix + o.key.size());
    const std::size_t inner = o.kind == write_batch::op_kind::put
                                  ? key_field + (o.value.empty() ? 0 : field_size(o.value.size()))
                                  : key_field;
    txn_bytes += field_size(field_size(inner));
  }
  for (const etcd_range& d : plan.deletes) txn_bytes += field_size(field_size(field_size(d.begin.size()) + field_size(d.end.size())));
  const std::size_t request_bytes = field_size(txn_bytes) + request_overhead_bytes;
  if (request_bytes > opt.max_request_bytes) {
    throw limit_error(context + ": a batch of " + std::to_string(n_ops) + " operations" +
                      (plan.compares + guards.size() > 0
                           ? " and " + std::to_string(plan.compares + guards.size()) + " compares"
                           : std::string()) +
                      " encodes to " + std::to_string(request_bytes) + " request bytes, more than the limit of " +
                      std::to_string(opt.max_request_bytes) +
                      " bytes (etcd_options::max_request_bytes, the cluster's --max-request-bytes); nothing was "
                      "written");
  }
  body += "\"success\":[";
  bool first = true;
  for (const etcd_range& d : plan.deletes) {
    if (!first) body += ',';
    first = false;
    body += "{\"request_delete_range\":{\"key\":\"";
    base64_append(body, d.begin);
    body += "\",\"range_end\":\"";
    base64_append(body, d.end);
    body += "\"}}";
  }
  for (const write_batch::op& o : ops) {
    if (!first) body += ',';
    first = false;
    const bool put = o.kind == write_batch::op_kind::put;
    body += put ? "{\"request_put\":{\"key\":\"" : "{\"request_delete_range\":{\"key\":\"";
    if (prefix == 0) base64_append(body, o.key);
    else base64_append(body, c.etcd_key(o.key));
    body += '"';
    if (put && !o.value.empty()) {
      body += ",\"value\":\"";
      base64_append(body, o.value);
      body += '"';
    }
    body += "}}";
  }
  body += "]}";
  return body;
}

}  // namespace etcd_detail
KEYSCHEMA_END_NAMESPACE
