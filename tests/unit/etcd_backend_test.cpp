// tests/unit/etcd_backend_test.cpp: keyschema::etcd_backend on a real 3-member etcd cluster with
// etcd's default limits: batches beyond --max-txn-ops / --max-request-bytes are refused whole,
// a compacted snapshot says so, an endpoint that never answers is a deadline error, and a member
// SIGKILLed during a stream of batched writes loses no acknowledged write and rejoins.
//
// The program starts its own cluster (etcd_cluster.hpp) on first use, so that killing a member
// disturbs no other test, and stops it at exit. Each test case works under a key prefix of its own.
#include <keyschema/etcd.hpp>

#include <catch2/catch.hpp>
#include <unit/etcd_cluster.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using keyschema::testing::cluster;
using keyschema::testing::options;
using keyschema::testing::run;
using keyschema::testing::shared_cluster;

// A socket listening on a free loopback port, and its URL ("http://127.0.0.1:<port>").
std::pair<int, std::string> listen_loopback() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 8) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  return {fd, "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port))};
}

// Reads one HTTP request (headers and Content-Length body) from fd; false when the peer closed.
bool read_request(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {
    const std::size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::size_t length = 0;
      if (const std::size_t cl = in.find("Content-Length: "); cl != std::string::npos) {
        length = std::stoul(in.substr(cl + 16));
      }
      if (in.size() >= end + 4 + length) return true;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in.append(buf, static_cast<std::size_t>(n));
  }
}

std::string key_of(int batch, int i) { return "b" + std::to_string(100000 + batch) + "/" + std::to_string(i); }

// A batch of n puts of distinct keys with value_bytes bytes each.
keyschema::write_batch puts(int n, std::size_t value_bytes = 1) {
  keyschema::write_batch wb;
  for (int i = 0; i < n; ++i) wb.put("k" + std::to_string(10000 + i), std::string(value_bytes, 'v'));
  return wb;
}

std::size_t count_keys(const keyschema::etcd_backend& db) {
  std::size_t n = 0;
  for (auto c = db.cursor({}, nullptr); c.valid(); c.next()) ++n;
  return n;
}

}  // namespace

TEST_CASE("etcd: options it cannot work with are a usage_error, before any connection", "[etcd][error]") {
  keyschema::etcd_options none;
  none.endpoints.clear();
  CHECK_THROWS_MATCHES(keyschema::etcd_backend(none), keyschema::usage_error,
                       Catch::Message("keyschema::etcd_backend: etcd_options::endpoints is empty; name at least one "
                                      "member's client URL (http://host:2379)"));
  keyschema::etcd_options no_ops;
  no_ops.endpoints = {"http://127.0.0.1:1"};
  no_ops.max_txn_ops = 0;
  CHECK_THROWS_AS(keyschema::etcd_backend(no_ops), keyschema::usage_error);
}

TEST_CASE("etcd: a batch beyond etcd's limits is refused whole, naming both figures", "[etcd][limits]") {
  keyschema::etcd_backend db(options("limits/"));
  db.erase_range({}, {});
  const keyschema::backend_limits l = db.limits();
  CHECK(l.max_ops_per_write == 128);
  CHECK(l.max_bytes_per_write < keyschema::etcd_default_max_request_bytes);

  db.write(puts(128), {});  // --max-txn-ops exactly
  CHECK(count_keys(db) == 128);
  try {
    db.write(puts(129), {});
    FAIL("a batch of 129 keys was accepted");
  } catch (const keyschema::limit_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("129") && Catch::Contains("128"));
  }
  // Operations on one key count once, and the last one wins (etcd refuses a key twice in a Txn).
  keyschema::write_batch twice = puts(128);
  twice.put("k10000", "last");
  twice.erase("k10001");
  db.write(twice, {});
  std::string v;
  CHECK(db.get("k10000", v, nullptr));
  CHECK(v == "last");
  CHECK_FALSE(db.get("k10001", v, nullptr));

  // --max-request-bytes: three entries at the entry limit do not fit one request; two do.
  try {
    db.write(puts(3, l.max_entry_bytes - 6), {});
    FAIL("a request over 1.5 MiB was accepted");
  } catch (const keyschema::limit_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("1572864") && Catch::Contains("max_request_bytes"));
  }
  try {
    db.write(puts(1, l.max_entry_bytes - 5), {});
    FAIL("an entry over max_entry_bytes was accepted");
  } catch (const keyschema::limit_error& e) {
    CHECK_THAT(e.what(), Catch::Contains(std::to_string(l.max_entry_bytes)));
  }
  db.write(puts(2, l.max_entry_bytes - 6), {});  // the largest entries limits() promises fit ("k10000")

  // Options that claim more than the cluster allows: the server's refusal is a limit_error too.
  keyschema::etcd_options more = options("limits/");
  more.max_txn_ops = 200;
  keyschema::etcd_backend optimistic(more);
  try {
    optimistic.write(puts(129), {});
    FAIL("the cluster accepted 129 operations");
  } catch (const keyschema::limit_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("etcd /v3/kv/txn") && Catch::Contains("too many operations"));
  }
  CHECK(count_keys(db) == 128);  // k10001 came back with the two large entries
}

TEST_CASE("etcd: a snapshot reads one revision until it is compacted, then says so", "[etcd][snapshot]") {
  keyschema::etcd_backend db(options("compact/"));
  db.erase_range({}, {});
  db.write(puts(3), {});
  const keyschema::etcd_snapshot snap = db.snapshot();
  db.write(puts(5, 2), {});
  std::string v;
  REQUIRE(db.get("k10000", v, &snap));
  CHECK(v == "v");
  std::size_t n = 0;
  for (auto c = db.cursor({}, &snap); c.valid(); c.next()) ++n;
  CHECK(n == 3);

  run("ETCDCTL_API=3 etcdctl --endpoints " + shared_cluster().endpoints()[0] + " compact " +
      std::to_string(snap.revision() + 1));
  try {
    db.get("k10000", v, &snap);
    FAIL("a read at a compacted revision succeeded");
  } catch (const keyschema::backend_error& e) {
    CHECK(e.native_call() == "etcd /v3/kv/range");
    CHECK(e.native_code() == 11);
    CHECK_THAT(e.what(), Catch::Contains("compacted") && Catch::Contains("take a new snapshot"));
  }
}

TEST_CASE("etcd: compact_history removes the history before the current revision; twice is no error",
          "[etcd][snapshot]") {
  keyschema::etcd_backend db(options("compact_history/"));
  db.erase_range({}, {});
  db.write(puts(3), {});
  const keyschema::etcd_snapshot old = db.snapshot();
  db.write(puts(5, 2), {});
  std::string v;
  REQUIRE(db.get("k10000", v, &old));  // readable before the compaction

  db.compact_history();
  db.compact_history();  // nothing written since: the revision is compacted already, no error
  try {
    db.get("k10000", v, &old);
    FAIL("a read at a revision compact_history removed succeeded");
  } catch (const keyschema::backend_error& e) {
    CHECK(e.native_call() == "etcd /v3/kv/range");
    CHECK_THAT(e.what(), Catch::Contains("compacted"));
  }
  // The current state is intact, and a snapshot taken now reads it.
  const keyschema::etcd_snapshot now = db.snapshot();
  std::size_t n = 0;
  for (auto c = db.cursor({}, &now); c.valid(); c.next()) ++n;
  CHECK(n == 5);
}

TEST_CASE("etcd: an endpoint that never answers is a deadline error, not a hang", "[etcd][deadline]") {
  // A listening socket that never accepts: the TCP connection completes, no answer ever comes.
  const auto [fd, silent] = listen_loopback();

  keyschema::etcd_options o;
  o.endpoints = {silent};
  o.deadline = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  try {
    keyschema::etcd_backend db(o);
    FAIL("connected to an endpoint that never answers");
  } catch (const keyschema::backend_error& e) {
    CHECK(e.native_call() == "etcd /v3/kv/range");
    CHECK_THAT(e.what(), Catch::Contains(silent) && Catch::Contains("300 ms"));
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  ::close(fd);

  // A member that is not there (connection refused) is skipped for the next endpoint.
  keyschema::etcd_options skip = options("deadline/");
  skip.endpoints.insert(skip.endpoints.begin(), "http://127.0.0.1:1");
  keyschema::etcd_backend db(skip);
  db.write(puts(1), {});
  CHECK(count_keys(db) == 1);
}

TEST_CASE("etcd: a member SIGKILLed mid-stream loses no acknowledged write and rejoins", "[etcd][reliability]") {
  cluster& c = shared_cluster();
  keyschema::etcd_options o = options("kill/");  // member 0 first: the backend talks to it until it dies
  o.deadline = std::chrono::milliseconds(10000);
  keyschema::etcd_backend db(o);
  db.erase_range({}, {});

  constexpr int batches = 240, per_batch = 16, kill_at = 80;
  std::vector<int> acked;
  std::vector<std::string> failures;
  for (int b = 0; b < batches; ++b) {
    if (b == kill_at) c.kill(0);
    keyschema::write_batch wb;
    for (int i = 0; i < per_batch; ++i) wb.put(key_of(b, i), "value " + std::to_string(b * per_batch + i));
    try {
      db.write(wb, {});
      acked.push_back(b);
    } catch (const keyschema::backend_error& e) {
      // Documented: the call is named; the request was lost with the member, or the cluster was
      // electing a leader. Nothing else may fail.
      CHECK(e.native_call() == "etcd /v3/kv/txn");
      failures.push_back(e.what());
    }
  }
  WARN(failures.size() << " of " << batches << " batches failed after member 0 was killed"
                        << (failures.empty() ? std::string() : "; first: " + failures.front()));
  // Writes continued: every batch after the election is acknowledged; the few around the kill may
  // fail (1 of 240 in the runs measured here). The bound, a tenth of the batches after the kill,
  // leaves room for a slow election on a loaded machine and still fails when writing stopped.
  CHECK(failures.size() <= static_cast<std::size_t>((batches - kill_at) / 10));
  REQUIRE(acked.size() + failures.size() == static_cast<std::size_t>(batches));
  CHECK(acked.back() == batches - 1);

  const auto check_all = [&](const keyschema::etcd_backend& reader) {
    std::map<std::string, std::string> seen;
    for (auto cur = reader.cursor({}, nullptr); cur.valid(); cur.next()) seen.emplace(cur.key(), cur.value());
    std::size_t missing = 0;
    for (const int b : acked) {
      for (int i = 0; i < per_batch; ++i) {
        const auto it = seen.find(key_of(b, i));
        if (it == seen.end() || it->second != "value " + std::to_string(b * per_batch + i)) ++missing;
      }
    }
    CHECK(missing == 0);
    // A failed batch is all there or not at all (one Txn).
    for (int b = 0; b < batches; ++b) {
      int present = 0;
      for (int i = 0; i < per_batch; ++i) present += seen.count(key_of(b, i)) != 0 ? 1 : 0;
      CHECK((present == 0 || present == per_batch));
    }
  };
  check_all(db);

  // The killed member comes back, catches up from the others and serves the same data alone.
  c.restart(0);
  keyschema::etcd_options alone = o;
  alone.endpoints = {c.endpoints()[0]};
  const keyschema::etcd_backend member0(alone);
  check_all(member0);
}

TEST_CASE("etcd: a write sent on a reused connection that then times out says its outcome is unknown",
          "[etcd][deadline]") {
  // A member that answers the first request (the backend's connecting read), keeps the
  // connection, reads the next request (a write) and never answers it. The connection is reused,
  // so curl reports no connect time for the write: only the bytes sent tell that it went out.
  const auto [fd, url] = listen_loopback();
  int requests = 0;
  std::thread member([&] {
    const int c = ::accept(fd, nullptr, nullptr);
    if (c < 0) return;
    if (read_request(c)) {
      ++requests;
      const std::string body = R"({"header":{"revision":"5"},"count":"0"})";
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                 std::to_string(body.size()) + "\r\n\r\n" + body;
      static_cast<void>(::send(c, answer.data(), answer.size(), MSG_NOSIGNAL));
      if (read_request(c)) ++requests;  // the write: never answered
      char b;
      static_cast<void>(::recv(c, &b, 1, 0));  // until the client gives up and closes
    }
    ::close(c);
  });
  {
    keyschema::etcd_options o;
    o.endpoints = {url};
    o.deadline = std::chrono::milliseconds(500);
    keyschema::etcd_backend db(o);
    try {
      db.write(puts(1), {});
      FAIL("a write that was never answered succeeded");
    } catch (const keyschema::backend_error& e) {
      CHECK(e.native_call() == "etcd /v3/kv/txn");
      // Not "before an endpoint answered": the write went out and may have been applied.
      CHECK_THAT(e.what(), Catch::Contains("the outcome of the write is unknown"));
    }
  }
  ::shutdown(fd, SHUT_RDWR);
  member.join();
  ::close(fd);
  CHECK(requests == 2);
}
