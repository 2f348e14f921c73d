// tests/durability/strace_probe.hpp: the system-call probe of the power-loss cases of the engines
// that write through the kernel's page cache with their own fsyncs (LMDB, SQLite:
// cases/power_loss.cpp, sqlite.cpp).
//
// What a SIGKILL cannot show: whether a commit reached stable storage before write() returned.
// Such a test runs a probe (a hidden test case of its own executable, tagged probe_tag) under
//   strace -f -qq -e trace=openat,close,<calls>
// and reads the system calls between the probe's markers:
//   marker("sync-begin"); db.write(...); marker("sync-end");
// run_under_strace() runs the probe, read_trace() returns the markers and the calls in order, each
// call with the file its descriptor was opened as (empty when the trace did not show it opened),
// and segment() the calls between one pair of markers. The engine's traits classify the calls
// (which file is the log, which descriptor is O_DSYNC) and state the order they require;
// trace_probe<Traits>(dir) runs the probe and returns the classified calls.
// Without strace, has_strace() prints "KEYSCHEMA-SKIP: ..." (CTest reports the test skipped, not
// passed) and returns false.
//
// Thread-safety: test helpers for one thread.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyschema::testing::strace_probe {

// The calls a probe traces besides openat and close.
inline constexpr const char* write_and_sync_calls = "pwrite64,pwritev,pwritev2,writev,write,fdatasync,fsync";

// Writes the marker `text` to stderr, where the trace shows it as a write(2, "@@probe <text>\n").
inline void marker(std::string_view text) {
  const std::string line = "@@probe " + std::string(text) + "\n";
  (void)!::write(2, line.data(), line.size());
}

// True when strace is installed; otherwise prints the skip line naming what was not checked.
inline bool has_strace(const char* what) {
  if (std::system("strace -V > /dev/null 2>&1") == 0) return true;
  std::printf("KEYSCHEMA-SKIP: strace is not installed (apt-get install strace); %s was not checked\n", what);
  WARN("strace missing: not checked");
  return false;
}

// Runs this executable's hidden test case `tag` under strace, tracing openat, close and `calls`,
// with the environment variable `env_name` set to `env_value`; the trace goes to `trace`, the
// probe's output to `output`. LeakSanitizer cannot run under ptrace: off for the probe.
inline void run_under_strace(const std::string& tag, const char* env_name, const std::string& env_value,
                             const std::string& calls, const std::string& trace, const std::string& output) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options = std::string(asan != nullptr ? asan : "") + ":detect_leaks=0";
  const std::string cmd = "ASAN_OPTIONS='" + asan_options + "' " + std::string(env_name) + "='" + env_value +
                          "' strace -f -qq -o '" + trace + "' -e trace=openat,close," + calls + " '" + self +
                          "' '" + tag + "' > '" + output + "' 2>&1";
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
}

// The durability suite's probe: a hidden test case with this tag (cases/power_loss.cpp), told its
// database directory through the environment variable probe_env.
inline constexpr const char* probe_tag = "[.durability_probe]";
inline constexpr const char* probe_env = "KEYSCHEMA_DURABILITY_PROBE_DIR";

// One line of the trace: a marker, or a write or sync call.
struct traced {
  bool is_marker = false;
  std::string text;   // the marker's name, or the whole line
  std::string call;   // "pwrite64", "fsync", ...
  std::string path;   // the file the call's descriptor was opened as; empty when not seen
  std::string flags;  // its open flags ("O_RDWR|O_CREAT|O_DSYNC")
};

inline std::vector<traced> read_trace(const std::string& file) {
  std::ifstream in(file);
  const std::regex open_re(R"re(^\d+ +openat\([^"]*"([^"]*)", ([A-Z_|]+).*\) = (\d+))re");
  const std::regex call_re(R"re(^\d+ +(pwrite64|pwritev2?|writev|write|fdatasync|fsync|msync)\((\d+)[,)])re");
  const std::regex marker_re(R"re(^\d+ +write\(2, "@@probe ([a-z-]+)\\n")re");
  const std::regex close_re(R"re(^\d+ +close\((\d+)\))re");
  std::map<int, std::pair<std::string, std::string>> open_fds;  // fd -> path, flags
  std::vector<traced> out;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, marker_re)) {
      out.push_back({true, m[1], "", "", ""});
    } else if (std::regex_search(line, m, open_re)) {
      open_fds[std::stoi(m[3])] = {m[1], m[2]};
    } else if (std::regex_search(line, m, close_re)) {
      open_fds.erase(std::stoi(m[1]));
    } else if (std::regex_search(line, m, call_re)) {
      const auto it = open_fds.find(std::stoi(m[2]));
      traced t{false, line, m[1], "", ""};
      if (it != open_fds.end()) {
        t.path = it->second.first;
        t.flags = it->second.second;
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

// The events strictly between the markers `<name>-begin` and `<name>-end` (Event: an engine's
// classified call, with `kind`, `text` and Event::marker).
template <class Event>
std::vector<Event> segment(const std::vector<Event>& all, const std::string& name) {
  std::vector<Event> out;
  bool in = false;
  for (const Event& e : all) {
    if (e.kind == Event::marker) {
      if (e.text == name + "-begin") in = true;
      if (e.text == name + "-end") return out;
      continue;
    }
    if (in) out.push_back(e);
  }
  FAIL("marker " << name << "-end not found in the trace");
  return out;
}

// The trace's markers as Event{Event::marker, name}, and each call as what of_call returns for it
// (std::optional<Event>: nullopt drops the call). Event: an engine's classified call, with `kind`
// and `text`.
template <class Event, class OfCall>
std::vector<Event> classify(const std::vector<traced>& calls, OfCall of_call) {
  std::vector<Event> out;
  for (const traced& t : calls) {
    if (t.is_marker) {
      out.push_back({Event::marker, t.text});
    } else if (std::optional<Event> e = of_call(t)) {
      out.push_back(std::move(*e));
    }
  }
  return out;
}

// Runs the probe under strace with its database in dir/db and returns the trace's calls as Traits
// classifies them (Traits::traced_calls(), Traits::classify, Traits::event).
template <class Traits>
std::vector<typename Traits::event> trace_probe(const std::filesystem::path& dir) {
  const std::string trace = (dir / "trace.txt").string();
  run_under_strace(probe_tag, probe_env, (dir / "db").string(), Traits::traced_calls(), trace,
                   (dir / "probe.out").string());
  return Traits::classify(read_trace(trace));
}

template <class Event>
std::string describe(const std::vector<Event>& s);

// The segment s is an unsynced commit's (`what` names it in the failure): no event of the kinds
// `forbidden` (a flush, a write that waits for the disk), and at least min_writes of kind `write`.
template <class Event>
void check_unflushed(const std::vector<Event>& s, std::initializer_list<typename Event::kind_t> forbidden,
                     typename Event::kind_t write, std::size_t min_writes, const std::string& what) {
  INFO(what << ":\n" << describe(s));
  std::size_t writes = 0;
  for (const Event& e : s) {
    for (const typename Event::kind_t k : forbidden) CHECK(e.kind != k);
    if (e.kind == write) ++writes;
  }
  CHECK(writes >= min_writes);
}

template <class Event>
std::string describe(const std::vector<Event>& s) {
  std::ostringstream o;
  for (const Event& e : s) o << e.text << "\n";
  return o.str();
}

}  // namespace keyschema::testing::strace_probe
