// keyschema/etcd/detail/http.hpp: the HTTP transport of the etcd adapter: JSON POSTs to the
// cluster's v3 gateway with libcurl, one deadline per call, failover across endpoints.
//
// transport::post sends one request to the endpoint that answered last (at first, one chosen at
// random unless etcd_options::random_first_endpoint is false). It tries the next endpoint, in
// order, until each was tried once or the call's deadline has passed, when it cannot connect
// there (refused, unreachable, no connection within connect_timeout: the request was not sent),
// and, for a read (idempotent), also when the member answers that it has no leader, when the
// connection breaks, or when the member does not answer within the attempt's timeout
// (etcd_options::attempt_timeout, doubled for each further attempt of the call). A write is
// given the whole deadline while its member is alive: after attempt_timeout / 2 without an
// answer, the member is asked GET /version on a second connection; a member that does not
// answer that within attempt_timeout / 2 is taken for hung and the write is abandoned. A write
// that was sent is never sent again (it may have been applied): its error says that its outcome
// is unknown, and the next call starts at the next endpoint.
//
// TLS (https:// endpoints): the CA file, client certificate and key of etcd_options are set on
// every request and probe. Authentication: with etcd_options::user, the transport gets a token
// (POST /v3/auth/authenticate), sends it in the Authorization header of every request, and gets
// a new one when etcd refuses a request for an invalid (expired) token, then sends that request
// again (it was refused, not applied).
//
// Every transfer runs on a libcurl multi handle of its own slot (a multi handle, the request's
// easy handle and the probe's), so that the probe can run beside the request and connections are
// kept alive in the slot's cache between calls. Slots are pooled.
//
// Thread-safety: post() may be called concurrently from any threads; each call uses a slot of
// its own (taken from the pool under a mutex, which is never held during a transfer). libcurl's
// global state is initialised once, in a function-local static, before the first handle is made.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/etcd/detail/status.hpp>
#include <keyschema/etcd/options.hpp>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace etcd_detail {

struct http_answer {
  long status = 0;
  std::string body;
  std::string endpoint;  // the endpoint that answered
};

// What a call does, which decides how it fails over (see the header comment).
enum class call_kind {
  read,        // idempotent and short: each attempt has a timeout of its own
  write,       // never sent twice: watched by probes, abandoned only when its member is hung
  repeatable,  // may run long, may be sent again (a compaction): watched, then sent elsewhere
};

class transport {
 public:
  // REQUIRES: !o.endpoints.empty(). Errors: backend_error "curl_global_init" when libcurl cannot
  // be initialised; std::bad_alloc.
  explicit transport(const etcd_options& o)
      : endpoints_(o.endpoints),
        deadline_(o.deadline),
        attempt_timeout_(std::max(o.attempt_timeout, std::chrono::milliseconds(2))),
        connect_timeout_(o.connect_timeout),
        ca_file_(o.ca_file),
        cert_file_(o.cert_file),
        key_file_(o.key_file),
        user_(o.user),
        password_(o.password) {
    global_init();
    idle_.reserve(max_idle);  // release() then never allocates
    for (std::string& e : endpoints_) {
      while (!e.empty() && e.back() == '/') e.pop_back();
    }
    if (o.random_first_endpoint) current_.store(random_index(endpoints_.size()), std::memory_order_relaxed);
    headers_ = ::curl_slist_append(nullptr, "Content-Type: application/json");
    if (headers_ != nullptr) {
      // No "Expect: 100-continue" round trip before bodies over 1 KiB.
      curl_slist* h = ::curl_slist_append(headers_, "Expect:");
      if (h != nullptr) headers_ = h;
    }
    if (headers_ == nullptr) throw std::bad_alloc();
  }

  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;

  ~transport() {
    for (const slot& s : idle_) destroy(s);
    ::curl_slist_free_all(headers_);
  }

  const std::vector<std::string>& endpoints() const noexcept { return endpoints_; }
  std::chrono::milliseconds deadline() const noexcept { return deadline_; }

  // POSTs body to <endpoint><path> ("/v3/kv/range") and returns the first answer that is final:
  // any HTTP status except, for reads, a member without a leader. context prefixes messages.
  // Errors (backend_error, native_call "etcd <path>", native_code the CURLcode):
  //   no endpoint could be connected to, or (reads) every one failed or did not answer in time:
  //     what() lists each endpoint's failure;
  //   the deadline passed: what() names the endpoint, the deadline and, for a write sent before
  //     it passed, that its outcome is unknown (it may have been applied);
  //   (writes) the connection broke after the request was sent, or the member was taken for hung
  //     (no answer, and no answer to GET /version either): the outcome is unknown.
  //   libcurl's multi interface failed (native_code its CURLMcode).
  //   (authentication) the user and password were refused: backend_error, native_call
  //     "etcd /v3/auth/authenticate", naming the user.
  // std::bad_alloc.
  // With a user (etcd_options::user), every request carries the backend's token; a request etcd
  // refuses for an invalid token (expired) was not applied: it is sent again with a new one.
  http_answer post(const std::string& context, std::string_view path, const std::string& body, call_kind kind) const {
    if (user_.empty()) return post_with(context, path, body, kind, std::string());
    std::string token;
    {
      const std::lock_guard<std::mutex> lock(token_mu_);
      token = token_;
    }
    if (token.empty()) token = authenticate(context);
    http_answer a = post_with(context, path, body, kind, token);
    if (a.status != 200 && parse_error_body(a.body).message.find("invalid auth token") != std::string::npos) {
      a = post_with(context, path, body, kind, authenticate(context));
    }
    return a;
  }

  // Gets a token for etcd_options::user (POST /v3/auth/authenticate) and keeps it for the
  // requests that follow; returns it. Errors: as post; backend_error naming the user when etcd
  // refuses the user or password.
  std::string authenticate(const std::string& context) const {
    const std::string call = "etcd /v3/auth/authenticate";
    const nlohmann::json request = {{"name", user_}, {"password", password_}};
    const http_answer a = post_with(context, "/v3/auth/authenticate", request.dump(), call_kind::read, std::string());
    if (a.status != 200) {
      const error_body e = parse_error_body(a.body);
      throw backend_error(context + ": " + call + " at " + a.endpoint + " refused user '" + user_ + "': HTTP " +
                              std::to_string(a.status) + ": " + e.message +
                              "; check etcd_options::user and password (the cluster has authentication enabled)",
                          call, e.code >= 0 ? e.code : static_cast<int>(a.status));
    }
    std::string token;
    const nlohmann::json j = nlohmann::json::parse(a.body, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      if (const auto t = j.find("token"); t != j.end() && t->is_string()) token = t->get<std::string>();
    }
    if (token.empty()) {
      throw backend_error(context + ": " + call + " at " + a.endpoint + " answered no token for user '" + user_ +
                              "' (is authentication enabled on the cluster? etcdctl auth enable): " +
                              a.body.substr(0, 300),
                          call);
    }
    const std::lock_guard<std::mutex> lock(token_mu_);
    token_ = token;
    return token;
  }

 private:
  http_answer post_with(const std::string& context, std::string_view path, const std::string& body, call_kind kind,
                        const std::string& token) const {
    const std::string call = "etcd " + std::string(path);
    const bool idempotent = kind != call_kind::write;
    const auto start = std::chrono::steady_clock::now();
    const std::size_t n = endpoints_.size();
    const std::size_t first = current_.load(std::memory_order_relaxed) % n;
    std::string failures;
    CURLcode last_rc = CURLE_OK;
    http_answer last_unavailable;
    std::chrono::milliseconds attempt = attempt_timeout_;
    for (std::size_t i = 0; i < n; ++i, attempt = attempt < deadline_ ? attempt * 2 : attempt) {
      const std::size_t idx = (first + i) % n;
      const std::string& endpoint = endpoints_[idx];
      const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      const auto remaining = deadline_ - elapsed;
      if (remaining.count() <= 0) {
        throw backend_error(context + ": " + call + " passed its deadline of " + std::to_string(deadline_.count()) +
                                " ms before an endpoint answered (tried: " + failures + ")",
                            call, CURLE_OPERATION_TIMEDOUT);
      }
      const std::chrono::milliseconds limit = kind == call_kind::read ? std::min(remaining, attempt) : remaining;
      slot_lease lease(*this);
      http_answer a;
      a.endpoint = endpoint;
      const transfer t = perform(context, call, lease.get(), endpoint + std::string(path), body, limit,
                                 kind != call_kind::read, token, a.body);
      if (t.rc == CURLE_OK) {
        a.status = t.status;
        if (idempotent && is_unavailable(a.status, a.body)) {
          failures += (failures.empty() ? "" : "; ") + endpoint + ": HTTP " + std::to_string(a.status) + " " +
                      parse_error_body(a.body).message;
          last_unavailable = std::move(a);
          continue;
        }
        current_.store(idx, std::memory_order_relaxed);
        return a;
      }
      last_rc = t.rc;
      std::string what = t.hung ? "no answer within " + std::to_string(t.waited.count()) +
                                      " ms, and no answer to GET /version within " +
                                      std::to_string(probe_timeout().count()) + " ms: the member is taken for hung"
                                : t.error;
      if (kind == call_kind::read && t.rc == CURLE_OPERATION_TIMEDOUT && limit < remaining) {
        what += " (attempt timeout " + std::to_string(limit.count()) + " ms, etcd_options::attempt_timeout)";
      }
      failures += (failures.empty() ? "" : "; ") + endpoint + ": " + what;
      // Whether any byte of the request went out: on a reused connection the connect time is 0
      // although the request was sent, so only the bytes sent tell (a write that was sent must
      // never be sent again to another member: it may have been applied).
      const bool not_sent =
          t.rc == CURLE_COULDNT_CONNECT || t.rc == CURLE_COULDNT_RESOLVE_HOST || t.request_bytes == 0;
      if (not_sent || idempotent) continue;
      // The write is lost with this member or stuck in it: later calls start at the next one.
      std::size_t expected = idx;
      current_.compare_exchange_strong(expected, (idx + 1) % n, std::memory_order_relaxed);
      if (t.hung) {
        throw backend_error(context + ": " + call + " at " + endpoint + ": " + what +
                                "; the outcome of the write is unknown: it may have been applied (the next call goes "
                                "to " + endpoints_[(idx + 1) % n] + ")",
                            call, CURLE_OPERATION_TIMEDOUT);
      }
      if (t.rc == CURLE_OPERATION_TIMEDOUT) {
        throw backend_error(context + ": " + call + " at " + endpoint + " passed its deadline of " +
                                std::to_string(deadline_.count()) + " ms (" + what +
                                "); the outcome of the write is unknown: it may have been applied",
                            call, t.rc);
      }
      throw backend_error(context + ": " + call + " at " + endpoint + " lost its connection after the request was sent (" +
                              what + "); the outcome of the write is unknown: it may have been applied",
                          call, t.rc);
    }
    if (last_unavailable.status != 0) return last_unavailable;  // every member lacks a leader: say so
    const std::string within = last_rc == CURLE_OPERATION_TIMEDOUT
                                   ? " within its deadline of " + std::to_string(deadline_.count()) + " ms"
                                   : std::string();
    throw backend_error(context + ": " + call + ": no endpoint answered" + within + " (" + failures + ")", call,
                        last_rc);
  }

  // A multi handle with the easy handles of a request and of its probe. The multi handle holds
  // the connection cache, so connections are kept alive between the slot's calls.
  struct slot {
    CURLM* multi = nullptr;
    CURL* request = nullptr;
    CURL* probe = nullptr;
  };

  // A slot borrowed from the pool for one attempt.
  class slot_lease {
   public:
    explicit slot_lease(const transport& t) : t_(t), s_(t.acquire()) {}
    slot_lease(const slot_lease&) = delete;
    slot_lease& operator=(const slot_lease&) = delete;
    ~slot_lease() { t_.release(s_); }
    const slot& get() const noexcept { return s_; }

   private:
    const transport& t_;
    slot s_;
  };

  struct transfer {
    CURLcode rc = CURLE_OK;
    long status = 0;
    long request_bytes = 0;
    bool hung = false;  // abandoned: no answer, and none to the probe either
    std::chrono::milliseconds waited{0};
    std::string error;
  };

  std::chrono::milliseconds probe_timeout() const noexcept {
    return std::max(attempt_timeout_ / 2, std::chrono::milliseconds(1));
  }

  // One attempt: POSTs body to url within limit (CURLOPT_TIMEOUT_MS); the answer's body goes to
  // out. watched: the member is probed (GET <endpoint>/version) every attempt_timeout / 2 while
  // the request goes unanswered, and the request is abandoned when a probe gets no answer within
  // attempt_timeout / 2 (transfer::hung).
  transfer perform(const std::string& context, const std::string& call, const slot& s, const std::string& url,
                   const std::string& body, std::chrono::milliseconds limit, bool watched, const std::string& token,
                   std::string& out) const {
    using clock = std::chrono::steady_clock;
    transfer t;
    CURL* const h = s.request;
    // With a token: the shared headers and its Authorization header, for this request only.
    struct header_list {
      curl_slist* list = nullptr;
      ~header_list() { ::curl_slist_free_all(list); }
    } with_token;
    if (!token.empty()) {
      for (const char* line : {"Content-Type: application/json", "Expect:"}) {
        curl_slist* l = ::curl_slist_append(with_token.list, line);
        if (l == nullptr) throw std::bad_alloc();
        with_token.list = l;
      }
      const std::string auth = "Authorization: " + token;
      curl_slist* l = ::curl_slist_append(with_token.list, auth.c_str());
      if (l == nullptr) throw std::bad_alloc();
      with_token.list = l;
    }
    ::curl_easy_reset(h);
    ::curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    ::curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    ::curl_easy_setopt(h, CURLOPT_HTTPHEADER, token.empty() ? headers_ : with_token.list);
    set_tls(h);
    ::curl_easy_setopt(h, CURLOPT_POST, 1L);
    ::curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    ::curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    ::curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(limit.count()));
    ::curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(limit, connect_timeout_).count()));
    ::curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &append_body);
    ::curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    char errbuf[CURL_ERROR_SIZE] = {};
    ::curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);

    std::string probe_url, probe_body;
    const std::chrono::milliseconds half = probe_timeout();
    const auto started = clock::now();
    auto next_probe = started + half;
    bool probing = false;
    bool done = false;
    const auto fail_multi = [&](CURLMcode mc) {
      ::curl_multi_remove_handle(s.multi, s.probe);
      ::curl_multi_remove_handle(s.multi, h);
      throw backend_error(context + ": " + call + ": libcurl's multi interface failed: " + ::curl_multi_strerror(mc),
                          call, static_cast<int>(mc));
    };
    if (const CURLMcode mc = ::curl_multi_add_handle(s.multi, h); mc != CURLM_OK) fail_multi(mc);
    while (!done && !t.hung) {
      int running = 0;
      if (const CURLMcode mc = ::curl_multi_perform(s.multi, &running); mc != CURLM_OK) fail_multi(mc);
      int queued = 0;
      while (CURLMsg* m = ::curl_multi_info_read(s.multi, &queued)) {
        if (m->msg != CURLMSG_DONE) continue;
        if (m->easy_handle == h) {
          t.rc = m->data.result;
          done = true;
        } else if (probing && m->easy_handle == s.probe) {
          long status = 0;
          ::curl_easy_getinfo(s.probe, CURLINFO_RESPONSE_CODE, &status);
          const bool alive = m->data.result == CURLE_OK && status == 200;
          ::curl_multi_remove_handle(s.multi, s.probe);
          probing = false;
          if (!alive) t.hung = true;
          next_probe = clock::now() + half;
        }
      }
      if (done || t.hung) break;
      const auto now = clock::now();
      if (watched && !probing && now >= next_probe) {
        probe_url.assign(url, 0, url.size() - url_path_size(url));
        probe_url += "/version";
        probe_body.clear();
        ::curl_easy_reset(s.probe);
        ::curl_easy_setopt(s.probe, CURLOPT_URL, probe_url.c_str());
        ::curl_easy_setopt(s.probe, CURLOPT_NOSIGNAL, 1L);
        ::curl_easy_setopt(s.probe, CURLOPT_HTTPGET, 1L);
        set_tls(s.probe);
        ::curl_easy_setopt(s.probe, CURLOPT_TIMEOUT_MS, static_cast<long>(half.count()));
        ::curl_easy_setopt(s.probe, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(half.count()));
        ::curl_easy_setopt(s.probe, CURLOPT_WRITEFUNCTION, &append_body);
        ::curl_easy_setopt(s.probe, CURLOPT_WRITEDATA, &probe_body);
        if (const CURLMcode mc = ::curl_multi_add_handle(s.multi, s.probe); mc != CURLM_OK) fail_multi(mc);
        probing = true;
        continue;
      }
      // Waits for activity, for libcurl's next timeout, or until the next probe is due.
      long wait_ms = 1000;
      if (watched && !probing) {
        wait_ms = std::clamp<long>(
            static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(next_probe - now).count()) + 1, 1,
            1000);
      }
      if (const CURLMcode mc = ::curl_multi_poll(s.multi, nullptr, 0, static_cast<int>(wait_ms), nullptr);
          mc != CURLM_OK) {
        fail_multi(mc);
      }
    }
    t.waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - started);
    ::curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &t.request_bytes);
    if (t.hung) {
      t.rc = CURLE_OPERATION_TIMEDOUT;
    } else if (t.rc == CURLE_OK) {
      ::curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t.status);
    } else {
      t.error = errbuf[0] != '\0' ? std::string(errbuf) : std::string(::curl_easy_strerror(t.rc));
    }
    if (probing) ::curl_multi_remove_handle(s.multi, s.probe);
    ::curl_multi_remove_handle(s.multi, h);
    return t;
  }

  // The TLS files of the options (etcd_options::ca_file, cert_file, key_file) on h.
  void set_tls(CURL* h) const noexcept {
    if (!ca_file_.empty()) ::curl_easy_setopt(h, CURLOPT_CAINFO, ca_file_.c_str());
    if (!cert_file_.empty()) ::curl_easy_setopt(h, CURLOPT_SSLCERT, cert_file_.c_str());
    if (!key_file_.empty()) ::curl_easy_setopt(h, CURLOPT_SSLKEY, key_file_.c_str());
  }

  // The length of url's path ("/v3/kv/range"): what follows scheme://authority.
  static std::size_t url_path_size(const std::string& url) {
    const std::size_t scheme = url.find("://");
    const std::size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    return path == std::string::npos ? 0 : url.size() - path;
  }

  // An index below n that differs between backends made at the same time (a process-wide
  // counter mixed with the clock; splitmix64).
  static std::size_t random_index(std::size_t n) noexcept {
    static std::atomic<std::uint64_t> counter{0};
    std::uint64_t x = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) +
                      0x9E3779B97F4A7C15ull * (counter.fetch_add(1, std::memory_order_relaxed) + 1);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return static_cast<std::size_t>(x % n);
  }

  static void global_init() {
    static const CURLcode rc = ::curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
      throw backend_error(std::string("keyschema::etcd_backend: cannot initialise libcurl: ") + ::curl_easy_strerror(rc),
                          "curl_global_init", rc);
    }
  }

  static std::size_t append_body(char* data, std::size_t size, std::size_t count, void* out) {
    static_cast<std::string*>(out)->append(data, size * count);
    return size * count;
  }

  static void destroy(const slot& s) noexcept {
    if (s.request != nullptr) ::curl_easy_cleanup(s.request);
    if (s.probe != nullptr) ::curl_easy_cleanup(s.probe);
    if (s.multi != nullptr) ::curl_multi_cleanup(s.multi);
  }

  slot acquire() const {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        const slot s = idle_.back();
        idle_.pop_back();
        return s;
      }
    }
    slot s;
    s.multi = ::curl_multi_init();
    s.request = ::curl_easy_init();
    s.probe = ::curl_easy_init();
    if (s.multi == nullptr || s.request == nullptr || s.probe == nullptr) {
      destroy(s);
      throw std::bad_alloc();
    }
    return s;
  }

  void release(const slot& s) const noexcept {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (idle_.size() < max_idle) {
        idle_.push_back(s);  // reserved: does not allocate
        return;
      }
    }
    destroy(s);  // closes its connections: outside the lock
  }

  static constexpr std::size_t max_idle = 16;

  std::vector<std::string> endpoints_;
  std::chrono::milliseconds deadline_;
  std::chrono::milliseconds attempt_timeout_;
  std::chrono::milliseconds connect_timeout_;
  std::string ca_file_, cert_file_, key_file_;
  std::string user_, password_;
  mutable std::mutex token_mu_;  // guards token_ (copied out: never held during a request)
  mutable std::string token_;    // the current authentication token ("": none yet)
  curl_slist* headers_ = nullptr;  // read-only after construction, shared by every handle
  mutable std::atomic<std::size_t> current_{0};
  mutable std::mutex mu_;
  mutable std::vector<slot> idle_;
};

}  // namespace etcd_detail
KEYSCHEMA_END_NAMESPACE
