// keyschema/etcd/detail/client.hpp: the state of one etcd_backend (its transport, options and
// key prefix) and the two calls everything is built on: a range read (POST /v3/kv/range) and a
// transaction (POST /v3/kv/txn), with their JSON bodies (keys and values base64) and answers.
//
// Key translation: a store key k is the etcd key prefix + k. A range [lower, upper) of store keys
// is the etcd range [prefix + lower, prefix + upper), or [prefix + lower, end of the prefix) when
// upper is empty; without a prefix an empty lower becomes "\0" (etcd refuses the empty key, and no
// key sorts between the two) and an empty upper becomes etcd's "\0" (no upper bound).
//
// Thread-safety: every member function is const and may be called concurrently (the transport
// is thread-safe; the rest is immutable after construction).
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/etcd/detail/base64.hpp>
#include <keyschema/etcd/detail/http.hpp>
#include <keyschema/etcd/detail/status.hpp>
#include <keyschema/etcd/options.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace etcd_detail {

struct kv_pair {
  std::string key;  // the store's key (prefix stripped)
  std::string value;
  std::int64_t mod_revision = 0;  // the revision of the key's last modification
};

// What etcd answered to a Txn: the revision it was applied at (the latest one when it was not),
// and whether its compares held (a Txn without compares always succeeds).
struct txn_result {
  std::int64_t revision = 0;
  bool succeeded = false;
};

struct range_page {
  std::int64_t revision = 0;  // the revision the page was read at (the answer's header)
  std::vector<kv_pair> kvs;
  bool more = false;  // the range holds keys beyond the page's limit
};

// An etcd key range [begin, end) in etcd's own terms (end "\0": no upper bound).
struct etcd_range {
  std::string begin;
  std::string end;
  // True when no key can lie in it.
  bool empty() const noexcept { return end != std::string_view("\0", 1) && !(begin < end); }
};

// The smallest key greater than every key starting with p ("\0", etcd's "no upper bound", when p
// is empty or all 0xFF bytes).
inline std::string prefix_end(std::string p) {
  while (!p.empty() && static_cast<unsigned char>(p.back()) == 0xFF) p.pop_back();
  if (p.empty()) return std::string(1, '\0');
  p.back() = static_cast<char>(static_cast<unsigned char>(p.back()) + 1);
  return p;
}

// Parses etcd's int64 fields, which the gateway writes as JSON strings.
inline std::int64_t json_int64(const nlohmann::json& j) {
  if (j.is_string()) return std::stoll(j.get<std::string>());
  if (j.is_number_integer()) return j.get<std::int64_t>();
  throw std::invalid_argument("not an integer");
}

class client {
 public:
  // Errors: as transport's constructor; std::bad_alloc.
  explicit client(const etcd_options& o)
      : options_(o), transport_(o) {
    if (options_.page_size == 0) options_.page_size = 1;
  }

  const etcd_options& options() const noexcept { return options_; }
  const std::string& prefix() const noexcept { return options_.key_prefix; }
  const transport& net() const noexcept { return transport_; }

  // The etcd key of store key k.
  std::string etcd_key(std::string_view k) const { return options_.key_prefix + std::string(k); }

  // The etcd range of store keys [lower, upper) (upper empty: unbounded).
  etcd_range to_etcd(std::string_view lower, std::string_view upper) const {
    etcd_range r;
    r.begin = etcd_key(lower);
    if (r.begin.empty()) r.begin.assign(1, '\0');
    if (!upper.empty()) r.end = etcd_key(upper);
    else r.end = prefix_end(options_.key_prefix);
    return r;
  }

  // Compacts the cluster's history up to revision (etcd /v3/kv/compaction, physical: returns once
  // every member removed it). A revision compacted before is no error: the history up to it is
  // gone either way. context prefixes error messages.
  // Errors: backend_error (see transport::post and throw_etcd_error; a revision above the
  // cluster's current one is "future revision"), native_call "etcd /v3/kv/compaction";
  // std::bad_alloc.
  void compact(const std::string& context, std::int64_t revision) const {
    const std::string body = "{\"revision\":\"" + std::to_string(revision) + "\",\"physical\":true}";
    const http_answer a = transport_.post(context, "/v3/kv/compaction", body, call_kind::repeatable);
    if (a.status == 200) return;
    if (parse_error_body(a.body).message.find("required revision has been compacted") != std::string::npos) return;
    throw_etcd_error(context, "etcd /v3/kv/compaction", a.endpoint, a.status, a.body);
  }

  // One range read of [r.begin, r.end) at revision (0: the latest, linearizable unless
  // etcd_options::serializable_reads), at most limit keys (0: all), ascending or descending by key.
  // context prefixes error messages.
  // Errors: backend_error (see transport::post and throw_etcd_error; a compacted revision says
  // so), native_call "etcd /v3/kv/range"; std::bad_alloc.
  range_page range(const std::string& context, const etcd_range& r, std::size_t limit, std::int64_t revision,
                   bool descend) const {
    std::string body = "{\"key\":\"";
    base64_append(body, r.begin);
    body += '"';
    if (!r.end.empty()) {
      body += ",\"range_end\":\"";
      base64_append(body, r.end);
      body += '"';
    }
    if (limit != 0) body += ",\"limit\":\"" + std::to_string(limit) + '"';
    if (revision != 0) body += ",\"revision\":\"" + std::to_string(revision) + '"';
    if (descend) body += ",\"sort_order\":\"DESCEND\",\"sort_target\":\"KEY\"";
    if (revision == 0) {
      if (options_.serializable_reads) body += ",\"serializable\":true";
      body += '}';
      return parse_range(context, call("/v3/kv/range", context, body, call_kind::read));
    }
    // A revision that was read from the cluster is committed: a member that has applied it
    // answers from its own state (serializable, no round trip to the leader). One that lags
    // behind answers "future revision"; the read is then made linearizable, which waits for it.
    std::string fast = body + ",\"serializable\":true}";
    http_answer a = transport_.post(context, "/v3/kv/range", fast, call_kind::read);
    if (a.status != 200 && parse_error_body(a.body).message.find("future revision") != std::string::npos) {
      body += '}';
      a = transport_.post(context, "/v3/kv/range", body, call_kind::read);
    }
    if (a.status != 200) throw_etcd_error(context, "etcd /v3/kv/range", a.endpoint, a.status, a.body);
    return parse_range(context, a);
  }

  // The point read of etcd key k at revision (0: latest). Returns the page (0 or 1 kvs).
  range_page get(const std::string& context, std::string_view k, std::int64_t revision) const {
    etcd_range r;
    r.begin.assign(k);
    return range(context, r, 1, revision, false);
  }

  // The cluster's current revision (a point read of one key: linearizable, or serializable with
  // etcd_options::serializable_reads).
  std::int64_t current_revision(const std::string& context) const {
    etcd_range r;
    r.begin = options_.key_prefix.empty() ? std::string(1, '\0') : options_.key_prefix;
    return range(context, r, 1, 0, false).revision;
  }

  // Sends a prepared TxnRequest body; returns the revision and whether its compares held (the
  // gateway leaves "succeeded" out when it is false).
  // Errors: backend_error / limit_error (see transport::post and throw_etcd_error),
  // native_call "etcd /v3/kv/txn"; std::bad_alloc.
  txn_result txn(const std::string& context, const std::string& body) const {
    const http_answer a = call("/v3/kv/txn", context, body, call_kind::write);
    try {
      const nlohmann::json j = nlohmann::json::parse(a.body);
      txn_result r;
      r.revision = json_int64(j.at("header").at("revision"));
      if (const auto s = j.find("succeeded"); s != j.end()) r.succeeded = s->get<bool>();
      return r;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      throw backend_error(context + ": etcd /v3/kv/txn at " + a.endpoint + " answered what is not a TxnResponse (" +
                              e.what() + "): " + a.body.substr(0, 300),
                          "etcd /v3/kv/txn");
    }
  }

 private:
  http_answer call(std::string_view path, const std::string& context, const std::string& body, call_kind kind) const {
    http_answer a = transport_.post(context, path, body, kind);
    if (a.status != 200) throw_etcd_error(context, "etcd " + std::string(path), a.endpoint, a.status, a.body);
    return a;
  }

  range_page parse_range(const std::string& context, const http_answer& a) const {
    range_page p;
    try {
      const nlohmann::json j = nlohmann::json::parse(a.body);
      p.revision = json_int64(j.at("header").at("revision"));
      if (const auto more = j.find("more"); more != j.end()) p.more = more->get<bool>();
      if (const auto kvs = j.find("kvs"); kvs != j.end()) {
        p.kvs.reserve(kvs->size());
        std::string key;
        for (const nlohmann::json& kv : *kvs) {
          kv_pair out;
          if (!base64_decode(kv.at("key").get<std::string>(), key)) throw std::invalid_argument("a key is not base64");
          if (key.compare(0, prefix().size(), prefix()) != 0) {
            throw std::invalid_argument("a key outside the key prefix");
          }
          out.key.assign(key, prefix().size());
          if (const auto v = kv.find("value"); v != kv.end()) {  // an empty value is left out
            if (!base64_decode(v->get<std::string>(), out.value)) throw std::invalid_argument("a value is not base64");
          }
          if (const auto m = kv.find("mod_revision"); m != kv.end()) out.mod_revision = json_int64(*m);
          p.kvs.push_back(std::move(out));
        }
      }
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      throw backend_error(context + ": etcd /v3/kv/range at " + a.endpoint +
                              " answered what is not a RangeResponse (" + e.what() + "): " + a.body.substr(0, 300),
                          "etcd /v3/kv/range");
    }
    return p;
  }

  etcd_options options_;
  transport transport_;
};

}  // namespace etcd_detail
KEYSCHEMA_END_NAMESPACE
