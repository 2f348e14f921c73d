// etcd_cluster.hpp (keyschema-bench): the etcd cluster the benchmark measures.
//
// local_etcd_cluster starts a 3-member cluster on loopback ports with scripts/etcd-cluster.sh
// (`start <dir> <base-port>`) and stops it, removing its data (`stop <dir>`), when it is
// destroyed, and from a SIGINT / SIGTERM / SIGHUP handler (which runs the stop script, then lets
// the signal end the process). etcd_admin speaks to a cluster's v3 JSON gateway for what the
// benchmark needs besides the store: the members' database sizes (maintenance/status; the
// compaction is the adapter's, etcd_backend::compact_history). Both use libcurl, which
// keyschema::etcd links.
//
// Thread-safety: one local_etcd_cluster per process (the signal handler knows one); create and
// destroy it from the main thread. etcd_admin's functions may be called from any one thread at a
// time.
//
// Errors: std::runtime_error naming the script or the call and what it answered.
#pragma once

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

namespace keyschema_bench {

// "a,b,c" -> {"a", "b", "c"}.
inline std::vector<std::string> split_endpoints(const std::string& s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from <= s.size()) {
    const std::size_t comma = s.find(',', from);
    const std::string item = s.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

namespace detail {
// What the signal handler needs, prepared before it can run (no allocation in the handler).
inline std::string stop_script, stop_dir;
inline volatile std::sig_atomic_t cluster_running = 0;

inline void run_stop_script() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    char* const argv[] = {const_cast<char*>("bash"), const_cast<char*>(stop_script.c_str()), const_cast<char*>("stop"),
                          const_cast<char*>(stop_dir.c_str()), nullptr};
    ::execv("/bin/bash", argv);
    ::_exit(127);
  }
  if (pid > 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

extern "C" inline void on_signal(int sig) {
  if (cluster_running != 0) {
    cluster_running = 0;
    static const char msg[] = "\nkeyschema-bench: interrupted; stopping the etcd cluster\n";
    [[maybe_unused]] const auto w = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    run_stop_script();
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// True when something accepts TCP connections on 127.0.0.1:port.
inline bool port_in_use(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool used = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return used;
}

// True when the process whose pid is in `file` is alive.
inline bool pid_file_alive(const std::filesystem::path& file) {
  std::ifstream f(file);
  long pid = 0;
  return (f >> pid) && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0;
}

// Runs `command` with /bin/sh; returns its exit status and output (stdout and stderr).
inline int run(const std::string& command, std::string& output) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) throw std::runtime_error("popen " + command + " failed");
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) output.append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}
}  // namespace detail

class local_etcd_cluster {
 public:
  // Starts the cluster in `dir` (created; members' data in dir/m0..m2) on ports base_port ..
  // base_port + 5, with `extra_flags` for every member (ETCD_EXTRA_FLAGS of the script).
  // Throws std::runtime_error when one of the ports is in use already (another cluster there
  // would answer in its place), or with the script's output when it fails (etcd missing), or
  // when a member is not running after the start.
  local_etcd_cluster(std::filesystem::path script, std::filesystem::path dir, int base_port,
                     const std::string& extra_flags = "")
      : script_(std::move(script)), dir_(std::move(dir)) {
    if (!std::filesystem::exists(script_))
      throw std::runtime_error("the etcd cluster script " + script_.string() +
                               " does not exist; pass --etcd-script PATH (scripts/etcd-cluster.sh of the source tree) "
                               "or --etcd-endpoints URL,... of a running cluster");
    for (int port = base_port; port < base_port + 6; ++port) {
      if (detail::port_in_use(port))
        throw std::runtime_error("port " + std::to_string(port) + " of 127.0.0.1 is in use (the cluster takes " +
                                 std::to_string(base_port) + ".." + std::to_string(base_port + 5) +
                                 "); choose other ports with --etcd-port N, or use a running cluster with --etcd-endpoints");
    }
    std::filesystem::create_directories(dir_);
    detail::stop_script = script_.string();
    detail::stop_dir = dir_.string();
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, detail::on_signal);
    detail::cluster_running = 1;
    std::string out;
    const std::string cmd = "ETCD_EXTRA_FLAGS=" + detail::shell_quote(extra_flags) + " bash " +
                            detail::shell_quote(script_.string()) + " start " + detail::shell_quote(dir_.string()) +
                            " " + std::to_string(base_port);
    if (detail::run(cmd, out) != 0) {
      stop();
      throw std::runtime_error("" + cmd + " failed:\n" + out);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    endpoints_ = split_endpoints(out.substr(out.find_last_of('\n') == std::string::npos ? 0 : out.find_last_of('\n') + 1));
    if (endpoints_.empty()) {
      stop();
      throw std::runtime_error("" + cmd + " printed no endpoints:\n" + out);
    }
    for (int i = 0; i < 3; ++i) {
      const std::filesystem::path pid = dir_ / ("m" + std::to_string(i) + ".pid");
      if (!detail::pid_file_alive(pid)) {
        std::ifstream log(dir_ / ("m" + std::to_string(i) + ".log"));
        std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        if (text.size() > 2000) text = text.substr(text.size() - 2000);
        stop();
        throw std::runtime_error("etcd member " + std::to_string(i) + " of " + dir_.string() +
                                 " is not running after the start; the end of its log:\n" + text);
      }
    }
  }
  local_etcd_cluster(const local_etcd_cluster&) = delete;
  local_etcd_cluster& operator=(const local_etcd_cluster&) = delete;
  ~local_etcd_cluster() { stop(); }

  const std::vector<std::string>& endpoints() const noexcept { return endpoints_; }
  const std::filesystem::path& dir() const noexcept { return dir_; }

  // Stops the members and removes their data, logs and the directory (idempotent).
  void stop() noexcept {
    if (detail::cluster_running == 0) return;
    detail::cluster_running = 0;
    detail::run_stop_script();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  std::filesystem::path script_, dir_;
  std::vector<std::string> endpoints_;
};

// Calls of etcd's v3 JSON gateway that the store does not make.
class etcd_admin {
 public:
  explicit etcd_admin(std::vector<std::string> endpoints) : endpoints_(std::move(endpoints)) {}

  // The sum over the members of the bytes their database holds in use (dbSizeInUse, etcd 3.4):
  // keys, values and the history not yet compacted, on every replica. Throws on failure.
  std::uint64_t db_bytes_in_use() const {
    std::uint64_t total = 0;
    for (const std::string& e : endpoints_) {
      const nlohmann::json j = nlohmann::json::parse(post(e, "/v3/maintenance/status", "{}"));
      total += number(j.value("dbSizeInUse", nlohmann::json(j.value("dbSize", nlohmann::json("0")))));
    }
    return total;
  }

  // POSTs `body` to endpoint + path; returns the answer of HTTP 200, throws otherwise.
  static std::string post(const std::string& endpoint, const std::string& path, const std::string& body) {
    CURL* h = ::curl_easy_init();
    if (h == nullptr) throw std::runtime_error("curl_easy_init failed");
    std::string out;
    curl_slist* headers = ::curl_slist_append(nullptr, "Content-Type: application/json");
    const std::string url = endpoint + path;
    ::curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    ::curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    ::curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    ::curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
    ::curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    ::curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, +[](char* p, std::size_t s, std::size_t n, void* o) {
      static_cast<std::string*>(o)->append(p, s * n);
      return s * n;
    });
    ::curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    const CURLcode rc = ::curl_easy_perform(h);
    long status = 0;
    ::curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    ::curl_slist_free_all(headers);
    ::curl_easy_cleanup(h);
    if (rc != CURLE_OK || status != 200)
      throw std::runtime_error("POST " + url + " failed: " +
                               (rc != CURLE_OK ? std::string(::curl_easy_strerror(rc)) : "HTTP " + std::to_string(status)) +
                               " " + out);
    return out;
  }

 private:
  static std::uint64_t number(const nlohmann::json& j) {
    if (j.is_string()) return std::stoull(j.get<std::string>());
    if (j.is_number_unsigned() || j.is_number_integer()) return j.get<std::uint64_t>();
    return 0;
  }

  std::vector<std::string> endpoints_;
};

}  // namespace keyschema_bench
