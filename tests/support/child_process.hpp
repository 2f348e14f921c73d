// tests/support/child_process.hpp: running a piece of a test in a forked child, so that an abort,
// a SIGBUS or a SIGSEGV fails (or is checked by) the test instead of killing the test runner.
//
// keyschema::testing::in_child(body) forks, runs body in the child with its stderr captured and the
// default handlers for fatal signals (not Catch2's), and returns how the child ended: exit code 0
// when body returned, 3 when it threw (what() is written to stderr), or the signal that ended it.
//
// Thread-safety: call from the test's main thread only (fork copies only the calling thread).
#pragma once

#include <catch2/catch.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>

namespace keyschema::testing {

// How a child ended: exit code or signal, and what it wrote to stderr.
struct outcome {
  bool exited = false;
  int code = -1;
  int signal = 0;
  std::string err;
};

// Runs body in a forked child with stderr captured; the child exits 0 when body returns.
inline outcome in_child(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], 2);
    for (const int sig : {SIGABRT, SIGBUS, SIGSEGV, SIGILL, SIGFPE}) std::signal(sig, SIG_DFL);  // not Catch2's
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "exception: %s\n", e.what());
      std::fflush(stderr);
      ::_exit(3);
    }
    std::fflush(stderr);
    ::_exit(0);
  }
  ::close(fds[1]);
  outcome o;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) o.err.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  o.exited = WIFEXITED(status);
  if (o.exited) o.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  return o;
}

}  // namespace keyschema::testing
