// tests/unit/etcd_cluster.hpp: the real 3-member etcd cluster the etcd unit tests run against.
//
// The program starts its own cluster (scripts/etcd-cluster.sh, loopback ports 23800..23805, under
// its scratch directory) on first use, and stops it (removing its data) at exit.
// KEYSCHEMA_ETCD_SCRIPT names the script (set by tests/CMakeLists.txt).
#pragma once

#include <keyschema/etcd.hpp>

#include <catch2/catch.hpp>
#include <support/temp_dir.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyschema::testing {

// Runs cmd in a shell; REQUIREs it to succeed; returns its stdout.
inline std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = ::pclose(p);
  INFO(cmd << "\n" << out);
  REQUIRE(rc == 0);
  return out;
}

// Starts the cluster in the constructor, stops it (and removes its data) in the destructor.
class cluster {
 public:
  // base_port: the first of its six loopback ports; env: variable assignments for the script
  // ("ETCD_CLIENT_SCHEME=https ETCD_EXTRA_FLAGS='...'"), see scripts/etcd-cluster.sh.
  explicit cluster(std::string dir, int base_port = 23800, std::string env = {})
      : script_(env.empty() ? script() : env + " " + script()), dir_(std::move(dir)) {
    const std::string out = run(script_ + " start " + dir_ + " " + std::to_string(base_port));
    std::string last = out.substr(0, out.find_last_not_of('\n') + 1);
    last = last.substr(last.find_last_of('\n') + 1);
    std::string_view s(last);
    while (!s.empty()) {
      const std::size_t comma = s.find(',');
      endpoints_.emplace_back(s.substr(0, comma));
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
    REQUIRE(endpoints_.size() == 3);
  }
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;
  ~cluster() { static_cast<void>(std::system((script_ + " stop " + dir_ + " >/dev/null 2>&1").c_str())); }

  const std::vector<std::string>& endpoints() const { return endpoints_; }
  void kill(int member) { run(script_ + " kill " + dir_ + " " + std::to_string(member)); }
  void restart(int member) { run(script_ + " restart " + dir_ + " " + std::to_string(member)); }
  // SIGSTOP / SIGCONT one member: hung, its sockets still accept connections.
  void pause(int member) { run(script_ + " pause " + dir_ + " " + std::to_string(member)); }
  void resume(int member) { run(script_ + " resume " + dir_ + " " + std::to_string(member)); }
  // Hands the leadership on when member leads.
  void not_leader(int member) { run(script_ + " not-leader " + dir_ + " " + std::to_string(member)); }

 private:
  static std::string script() {
    const char* s = std::getenv("KEYSCHEMA_ETCD_SCRIPT");
    REQUIRE(s != nullptr);
    return s;
  }
  std::string script_;
  std::string dir_;
  std::vector<std::string> endpoints_;
};

// The program's cluster, started on first use and stopped at exit.
inline cluster& shared_cluster() {
  static keyschema::testing::temp_dir dir("etcd-cluster");
  static cluster c(dir / "cluster");
  return c;
}

inline keyschema::etcd_options options(const std::string& prefix) {
  keyschema::etcd_options o;
  o.endpoints = shared_cluster().endpoints();
  o.key_prefix = prefix;
  return o;
}

}  // namespace keyschema::testing
