// keyschema/etcd/detail/http.hpp: the HTTP transport of the etcd adapter: JSON POSTs to the
// cluster's v3 gateway with libcurl, one deadline per call, failover across endpoints.
//
// transport::post sends one request to the endpoint that answered last. When it cannot connect
// there (refused, unreachable, no connection within connect_timeout: the request was not sent)
// it tries the next endpoint, in order, until each was tried once or the call's deadline has
// passed. A read (idempotent) also moves on when the member answers that it has no leader, or
// when the connection breaks or times out after the request was sent; a write does not (its
// outcome is unknown then: the error says so). Connections are kept alive in a small pool of
// libcurl easy handles.
//
// Thread-safety: post() may be called concurrently from any threads; each call uses an easy
// handle of its own (taken from the pool under a mutex). libcurl's global state is initialised
// once, in a function-local static, before the first handle is made.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/etcd/detail/status.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
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

class transport {
 public:
  // REQUIRES: !endpoints.empty(). Errors: backend_error "curl_global_init" when libcurl cannot be
  // initialised; std::bad_alloc.
  transport(std::vector<std::string> endpoints, std::chrono::milliseconds deadline,
            std::chrono::milliseconds connect_timeout)
      : endpoints_(std::move(endpoints)), deadline_(deadline), connect_timeout_(connect_timeout) {
    global_init();
    idle_.reserve(max_idle);  // release() then never allocates
    for (std::string& e : endpoints_) {
      while (!e.empty() && e.back() == '/') e.pop_back();
    }
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
    for (CURL* h : idle_) ::curl_easy_cleanup(h);
    ::curl_slist_free_all(headers_);
  }

  const std::vector<std::string>& endpoints() const noexcept { return endpoints_; }
  std::chrono::milliseconds deadline() const noexcept { return deadline_; }

  // POSTs body to <endpoint><path> ("/v3/kv/range") and returns the first answer that is final:
  // any HTTP status except, for reads, a member without a leader. context prefixes messages.
  // Errors (backend_error, native_call "etcd <path>", native_code the CURLcode):
  //   no endpoint could be connected to, or (reads) every one failed: what() lists each
  //     endpoint's failure;
  //   the deadline passed: what() names the endpoint, the deadline and, for a write sent before
  //     it passed, that its outcome is unknown (it may have been applied);
  //   (writes) the connection broke after the request was sent: the outcome is unknown.
  // std::bad_alloc.
  http_answer post(const std::string& context, std::string_view path, const std::string& body, bool idempotent) const {
    const std::string call = "etcd " + std::string(path);
    const auto start = std::chrono::steady_clock::now();
    const std::size_t n = endpoints_.size();
    const std::size_t first = current_.load(std::memory_order_relaxed) % n;
    std::string failures;
    CURLcode last_rc = CURLE_OK;
    http_answer last_unavailable;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t idx = (first + i) % n;
      const std::string& endpoint = endpoints_[idx];
      const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      const auto remaining = deadline_ - elapsed;
      if (remaining.count() <= 0) {
        throw backend_error(context + ": " + call + " passed its deadline of " + std::to_string(deadline_.count()) +
                                " ms before an endpoint answered (tried: " + failures + ")",
                            call, CURLE_OPERATION_TIMEDOUT);
      }
      handle h(*this);
      http_answer a;
      a.endpoint = endpoint;
      const std::string url = endpoint + std::string(path);
      ::curl_easy_reset(h.get());
      ::curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
      ::curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
      ::curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers_);
      ::curl_easy_setopt(h.get(), CURLOPT_POST, 1L);
      ::curl_easy_setopt(h.get(), CURLOPT_POSTFIELDS, body.data());
      ::curl_easy_setopt(h.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      ::curl_easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(remaining.count()));
      ::curl_easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT_MS,
                         static_cast<long>(std::min(remaining, connect_timeout_).count()));
      ::curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, &append_body);
      ::curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &a.body);
      char errbuf[CURL_ERROR_SIZE] = {};
      ::curl_easy_setopt(h.get(), CURLOPT_ERRORBUFFER, errbuf);
      const CURLcode rc = ::curl_easy_perform(h.get());
      if (rc == CURLE_OK) {
        ::curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &a.status);
        if (idempotent && is_unavailable(a.status, a.body)) {
          failures += (failures.empty() ? "" : "; ") + endpoint + ": HTTP " + std::to_string(a.status) + " " +
                      parse_error_body(a.body).message;
          last_unavailable = std::move(a);
          continue;
        }
        current_.store(idx, std::memory_order_relaxed);
        return a;
      }
      last_rc = rc;
      const std::string what = errbuf[0] != '\0' ? std::string(errbuf) : std::string(::curl_easy_strerror(rc));
      failures += (failures.empty() ? "" : "; ") + endpoint + ": " + what;
      // Whether any byte of the request went out: on a reused connection the connect time is 0
      // although the request was sent, so only the bytes sent tell (a write that was sent must
      // never be sent again to another member: it may have been applied).
      long request_bytes = 0;
      ::curl_easy_getinfo(h.get(), CURLINFO_REQUEST_SIZE, &request_bytes);
      const bool not_sent = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
                            (rc == CURLE_OPERATION_TIMEDOUT && request_bytes == 0);
      if (not_sent || idempotent) continue;
      if (rc == CURLE_OPERATION_TIMEDOUT) {
        throw backend_error(context + ": " + call + " at " + endpoint + " passed its deadline of " +
                                std::to_string(deadline_.count()) + " ms (" + what +
                                "); the outcome of the write is unknown: it may have been applied",
                            call, rc);
      }
      throw backend_error(context + ": " + call + " at " + endpoint + " lost its connection after the request was sent (" +
                              what + "); the outcome of the write is unknown: it may have been applied",
                          call, rc);
    }
    if (last_unavailable.status != 0) return last_unavailable;  // every member lacks a leader: say so
    const std::string within = last_rc == CURLE_OPERATION_TIMEDOUT
                                   ? " within its deadline of " + std::to_string(deadline_.count()) + " ms"
                                   : std::string();
    throw backend_error(context + ": " + call + ": no endpoint answered" + within + " (" + failures + ")", call,
                        last_rc);
  }

 private:
  // An easy handle borrowed from the pool for one call.
  class handle {
   public:
    explicit handle(const transport& t) : t_(t), h_(t.acquire()) {}
    handle(const handle&) = delete;
    handle& operator=(const handle&) = delete;
    ~handle() { t_.release(h_); }
    CURL* get() const noexcept { return h_; }

   private:
    const transport& t_;
    CURL* h_;
  };

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

  CURL* acquire() const {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        CURL* h = idle_.back();
        idle_.pop_back();
        return h;
      }
    }
    CURL* h = ::curl_easy_init();
    if (h == nullptr) throw std::bad_alloc();
    return h;
  }

  void release(CURL* h) const noexcept {
    const std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < max_idle) {
      try {
        idle_.push_back(h);
        return;
      } catch (...) {
      }
    }
    ::curl_easy_cleanup(h);
  }

  static constexpr std::size_t max_idle = 16;

  std::vector<std::string> endpoints_;
  std::chrono::milliseconds deadline_;
  std::chrono::milliseconds connect_timeout_;
  curl_slist* headers_ = nullptr;  // read-only after construction, shared by every handle
  mutable std::atomic<std::size_t> current_{0};
  mutable std::mutex mu_;
  mutable std::vector<CURL*> idle_;
};

}  // namespace etcd_detail
KEYSCHEMA_END_NAMESPACE
