// tests/unit/etcd_backend_test.cpp: keyschema::etcd_backend on a real 3-member etcd cluster with
// etcd's default limits: batches beyond --max-txn-ops / --max-request-bytes are refused whole,
// a compacted snapshot says so, an endpoint that never answers is a deadline error, a member
// SIGKILLed during a stream of batched writes loses no acknowledged write and rejoins, a hung
// (SIGSTOPped) member delays the next read and write by about one attempt timeout, a store open
// with an old schema is refused once another client migrates (backend_with_write_guards), and many
// writers on one store (several groups in flight) lose nothing and keep counts exact.
//
// The program starts its own cluster (etcd_cluster.hpp) on first use, so that killing a member
// disturbs no other test, and stops it at exit. Each test case works under a key prefix of its own.
#include <keyschema/etcd.hpp>

#include <catch2/catch.hpp>
#include <support/migration_race.hpp>
#include <support/temp_dir.hpp>
#include <unit/etcd_cluster.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
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

// SIGSTOPs a member for the scope and SIGCONTs it at its end, also when a check failed.
class paused_member {
 public:
  paused_member(cluster& c, int member) : c_(c), member_(member) { c_.pause(member_); }
  paused_member(const paused_member&) = delete;
  paused_member& operator=(const paused_member&) = delete;
  ~paused_member() { c_.resume(member_); }

 private:
  cluster& c_;
  int member_;
};

// Runs op until it returns without a backend_error (giving up after 20 s); returns how long that
// took. The errors met go to failures.
template <class Op>
std::chrono::milliseconds until_success(Op&& op, std::vector<std::string>& failures) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    try {
      op();
      break;
    } catch (const keyschema::backend_error& e) {
      failures.emplace_back(e.what());
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) break;
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

// Makes, with the openssl CLI, in dir: a CA (ca.pem), a certificate for 127.0.0.1 signed by it
// (server.pem, server.key; also good for client authentication: etcd's JSON gateway presents it
// to the member's own gRPC server) and a client certificate (client.pem, client.key, CN client).
void make_certificates(const std::string& dir) {
  run("mkdir -p '" + dir + "' && cd '" + dir + "' && " +
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem "
      "-days 2 -subj '/CN=keyschema test CA' 2>&1 && "
      "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > server.ext && "
      "printf 'extendedKeyUsage=clientAuth\\n' > client.ext && "
      "for n in server client; do "
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $n.key -out $n.csr "
      "-subj /CN=$n 2>&1 && "
      "openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $n.pem -days 2 "
      "-extfile $n.ext 2>&1 || exit 1; done");
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
  keyschema::etcd_options no_writes;
  no_writes.endpoints = {"http://127.0.0.1:1"};
  no_writes.writes_in_flight = 0;
  CHECK_THROWS_MATCHES(keyschema::etcd_backend(no_writes), keyschema::usage_error,
                       Catch::Message("keyschema::etcd_backend: etcd_options::writes_in_flight is 0; at least one "
                                      "write must be in flight (1: one Txn at a time, as a single-writer engine)"));
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
  o.random_first_endpoint = false;
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
  std::thread member([&, fd = fd] {
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

TEST_CASE("etcd: a hung member (SIGSTOP) costs the next read and write about one attempt timeout, not the deadline",
          "[etcd][failover]") {
  cluster& c = shared_cluster();
  // Default options, except that the first two clients start at member 0, the one that hangs:
  // the worst case; client 0 reads first, client 1 writes first. The other three start where the
  // default puts them (at random) and read first.
  keyschema::etcd_options worst = options("hung/");
  worst.random_first_endpoint = false;
  struct figures {
    std::chrono::milliseconds to_read{}, to_write{}, after{};
    std::vector<std::string> read_failures, write_failures;
  };
  int attempt = 0;
  // One round: five fresh clients, member 0 paused, each client's next read and write timed.
  const auto round = [&] {
    c.not_leader(0);  // a hung follower: the cluster keeps its leader (a hung leader adds etcd's own election)
    keyschema::etcd_backend setup(options("hung/"));
    setup.erase_range({}, {});
    setup.write(puts(1), {});
    std::vector<std::unique_ptr<keyschema::etcd_backend>> clients;
    for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<keyschema::etcd_backend>(options("hung/")));
    std::string v;
    for (const auto& db : clients) REQUIRE(db->get("k10000", v, nullptr));  // connected where they start
    // The worst-case clients last, right before the pause: each one's only call so far is its
    // constructor's, answered by member 0.
    clients.insert(clients.begin(), std::make_unique<keyschema::etcd_backend>(worst));
    clients.insert(clients.begin(), std::make_unique<keyschema::etcd_backend>(worst));
    std::vector<figures> f(clients.size());
    const paused_member hung(c, 0);
    for (std::size_t i = 0; i < clients.size(); ++i) {
      keyschema::etcd_backend& db = *clients[i];
      const auto read = [&] {
        f[i].to_read = until_success(
            [&] {
              if (!db.get("k10000", v, nullptr)) throw std::logic_error("k10000 is missing");
            },
            f[i].read_failures);
      };
      const auto write = [&] {
        f[i].to_write = until_success(
            [&] {
              keyschema::write_batch wb;  // a key per attempt: an abandoned one may still be applied
              wb.put("attempt" + std::to_string(attempt++), "x");
              db.write(wb, {});
            },
            f[i].write_failures);
      };
      if (i == 1) {
        write();
        read();
      } else {
        read();
        write();
      }
      // The client moved on: its next calls do not wait for the hung member again.
      const auto start = std::chrono::steady_clock::now();
      CHECK(db.get("k10000", v, nullptr));
      db.write(puts(1), {});
      f[i].after = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    }
    return f;
  };
  // The worst cases must meet the hung member: client 0 with its read, client 1 with its write. On
  // a loaded machine a worst-case client's constructor can take longer than an attempt and fail
  // over to the next member, so that it no longer starts at member 0 (seen in CI runs: client 0
  // read in 1 ms); such a round shows no worst case, so up to three rounds run. The bounds are
  // checked in every round, for every client.
  bool worst_met = false;
  for (int r = 0; r < 3 && !worst_met; ++r) {
    const std::vector<figures> f = round();
    for (std::size_t i = 0; i < f.size(); ++i) {
      INFO("round " << r << ", client " << i << (i < 2 ? " (starts at the hung member)" : " (default start)") << ": next read after "
                    << f[i].to_read.count() << " ms, next write after " << f[i].to_write.count() << " ms ("
                    << f[i].write_failures.size() << " failed), a read and a write after that " << f[i].after.count()
                    << " ms" << (f[i].write_failures.empty() ? std::string() : "; " + f[i].write_failures.front()));
      // Measured here: about 1.0 s for each when the client starts at the hung member (one attempt
      // timeout; a write sent there fails once, saying its outcome is unknown), a few ms otherwise.
      CHECK(f[i].to_read < std::chrono::seconds(2));
      CHECK(f[i].to_write < std::chrono::seconds(2));
      CHECK(f[i].after < std::chrono::seconds(1));
      CHECK(f[i].read_failures.empty());  // a read fails over within the call
      CHECK(f[i].write_failures.size() <= 1);
      for (const std::string& e : f[i].write_failures) {
        // Sent to the hung member: it may be applied when the member resumes, so never sent twice.
        CHECK_THAT(e, Catch::Contains("the outcome of the write is unknown") && Catch::Contains(worst.endpoints[0]) &&
                          Catch::Contains("hung"));
      }
    }
    worst_met = f[0].to_read >= std::chrono::milliseconds(500) && f[1].write_failures.size() == 1;
  }
  CHECK(worst_met);

  // Member 0 resumes and serves the same data alone.
  keyschema::etcd_options alone = options("hung/");
  alone.endpoints = {c.endpoints()[0]};
  const keyschema::etcd_backend member0(alone);
  std::string v;
  CHECK(member0.get("k10000", v, nullptr));
}

TEST_CASE("etcd: a TLS cluster with --client-cert-auth is reached with the CA file, client certificate and key",
          "[etcd][tls]") {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    WARN("openssl is not installed: the TLS cluster is not tested");
    return;
  }
  const keyschema::testing::temp_dir dir("etcd-tls");
  const std::string certs = dir / "certs";
  make_certificates(certs);
  const std::string ca = certs + "/ca.pem", cert = certs + "/client.pem", key = certs + "/client.key";
  cluster tls(dir / "cluster", 23810,
              "ETCD_CLIENT_SCHEME=https ETCD_EXTRA_FLAGS='--cert-file " + certs + "/server.pem --key-file " + certs +
                  "/server.key --trusted-ca-file " + ca + " --client-cert-auth' ETCDCTL_CACERT=" + ca +
                  " ETCDCTL_CERT=" + cert + " ETCDCTL_KEY=" + key);
  REQUIRE(tls.endpoints().front().rfind("https://", 0) == 0);

  keyschema::etcd_options o;
  o.endpoints = tls.endpoints();
  o.key_prefix = "tls/";
  o.ca_file = ca;
  o.cert_file = cert;
  o.key_file = key;
  keyschema::etcd_backend db(o);
  db.write(puts(3), {});
  CHECK(count_keys(db) == 3);
  keyschema::etcd_write_transaction t = db.begin_write();
  std::string v;
  CHECK(t.get("k10000", v));
  keyschema::write_batch wb;
  wb.put("k10000", "tls");
  t.commit(wb, {});
  CHECK(db.get("k10000", v, nullptr));
  CHECK(v == "tls");

  const auto refused = [&](const keyschema::etcd_options& bad, const char* says) {
    try {
      keyschema::etcd_backend x(bad);
      FAIL("connected without " << says);
    } catch (const keyschema::backend_error& e) {
      CHECK(e.native_call() == "etcd /v3/kv/range");
      CHECK_THAT(e.what(), Catch::Contains(o.endpoints[0]) && Catch::Contains("no endpoint answered"));
      WARN("without " << says << ": " << e.what());
    }
  };
  // The cluster refuses a client without a certificate; the client refuses members whose
  // certificate it cannot verify.
  keyschema::etcd_options no_cert = o;
  no_cert.cert_file.clear();
  no_cert.key_file.clear();
  refused(no_cert, "a client certificate");
  keyschema::etcd_options no_ca = o;
  no_ca.ca_file.clear();
  refused(no_ca, "the CA file");
  keyschema::etcd_options half = o;
  half.key_file.clear();
  CHECK_THROWS_AS(keyschema::etcd_backend(half), keyschema::usage_error);
}

TEST_CASE("etcd: with authentication enabled, a user and password get a token, and a new one once it expired",
          "[etcd][auth]") {
  const keyschema::testing::temp_dir dir("etcd-auth");
  cluster c(dir / "cluster", 23820, "ETCD_EXTRA_FLAGS='--auth-token-ttl 2'");  // tokens unused for 2 s expire
  const std::string ctl = "ETCDCTL_API=3 etcdctl --endpoints " + c.endpoints()[0];
  run(ctl + " user add root:pw && " + ctl + " auth enable");

  keyschema::etcd_options o;
  o.endpoints = c.endpoints();
  o.key_prefix = "auth/";
  o.user = "root";
  o.password = "pw";
  keyschema::etcd_backend db(o);
  db.write(puts(2), {});
  CHECK(count_keys(db) == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));  // the token expired
  db.write(puts(3), {});  // refused for the token, sent again with a new one
  CHECK(count_keys(db) == 3);

  keyschema::etcd_options anonymous = o;
  anonymous.user.clear();
  anonymous.password.clear();
  try {
    keyschema::etcd_backend x(anonymous);
    FAIL("read without a user on a cluster with authentication");
  } catch (const keyschema::backend_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("user name is empty"));
  }
  keyschema::etcd_options wrong = o;
  wrong.password = "not the password";
  try {
    keyschema::etcd_backend x(wrong);
    FAIL("authenticated with a wrong password");
  } catch (const keyschema::backend_error& e) {
    CHECK(e.native_call() == "etcd /v3/auth/authenticate");
    CHECK_THAT(e.what(), Catch::Contains("'root'") && Catch::Contains("authentication failed"));
    CHECK_THAT(e.what(), !Catch::Contains("not the password"));
  }
}

TEST_CASE("etcd: serializable reads are answered by a member cut off from the others; linearizable ones are not",
          "[etcd][serializable]") {
  cluster& c = shared_cluster();
  keyschema::etcd_backend w(options("serializable/"));
  w.erase_range({}, {});
  w.write(puts(3), {});
  keyschema::etcd_options lin = options("serializable/");
  lin.endpoints = {c.endpoints()[2]};
  lin.deadline = std::chrono::milliseconds(2000);
  keyschema::etcd_options ser = lin;
  ser.serializable_reads = true;
  const keyschema::etcd_backend linearizable(lin), serializable(ser);
  REQUIRE(count_keys(linearizable) == 3);  // member 2 has applied the writes
  {
    const paused_member p0(c, 0), p1(c, 1);  // member 2 alone: no majority
    std::string v;
    CHECK(serializable.get("k10000", v, nullptr));
    CHECK(count_keys(serializable) == 3);
    // A linearizable read needs the majority: refused. Asked up to three times; a linearizable
    // read served without the majority would be answered every time.
    int refused = 0;
    for (int attempt = 0; attempt < 3 && refused == 0; ++attempt) {
      try {
        static_cast<void>(linearizable.get("k10000", v, nullptr));
      } catch (const keyschema::backend_error&) {
        ++refused;
      }
    }
    // A read that raced the SIGSTOPs was once answered in CI: the pause returned when the signal
    // was sent, before every thread of the member had stopped. scripts/etcd-cluster.sh pause now
    // returns only when every thread of the member is stopped (state T in /proc).
    CHECK(refused > 0);
  }
  keyschema::etcd_options after = options("serializable/");
  after.deadline = std::chrono::seconds(30);  // until the cluster has a leader again
  const keyschema::etcd_backend recovered(after);
  CHECK(count_keys(recovered) == 3);
}

// Issue 30 case 3 on etcd, whose cluster every client shares: a store's writes carry compares of
// its schema record and of the absence of a migration record (backend_with_write_guards), so a
// client open with the old schema is refused while another client migrates, and after.
TEST_CASE("etcd store: every write path of a client open with the old schema is refused during and after "
          "another client's migration",
          "[etcd][migrate]") {
  namespace ks = keyschema;
  namespace mr = keyschema::testing::migration_race;
  const ks::etcd_options o = options("migrate/");
  const std::string xid_key = ks::detail::prepared_key("x1");
  {
    ks::store<mr::v1, ks::etcd_backend> db(o);
    mr::fill_v1(db);
    ks::etcd_backend other(o);
    CHECK_THROWS_WITH(mr::migrate(other, 2, 1), "migration stopped");  // after its first progress record
    mr::record_prepared(other, xid_key);
    mr::check_every_write_refused(db, "a ks::migrate is converting it (from layout " +
                                          ks::fingerprint_text(ks::layout<mr::v1>::fingerprint) + " to " +
                                          ks::fingerprint_text(ks::layout<mr::v2>::fingerprint));
    ks::write_batch w;
    w.erase(xid_key);
    other.write(w, {});
    CHECK(mr::migrate(other, 2).resumed);
    mr::record_prepared(other, xid_key);
    mr::check_every_write_refused(db, "it was migrated or extended to schema layout " +
                                          ks::fingerprint_text(ks::layout<mr::v2>::fingerprint));
  }
  ks::store<mr::v2, ks::etcd_backend> db(o);
  mr::check_nothing_landed(db);
}

TEST_CASE("etcd: a ks::migrate whose progress another client's migration advanced is refused at its next batch",
          "[etcd][migrate]") {
  namespace ks = keyschema;
  namespace mr = keyschema::testing::migration_race;
  const ks::etcd_options o = options("migrate-two/");
  {
    ks::store<mr::v1, ks::etcd_backend> db(o);
    for (int i = 0; i < 20; ++i) db.put<mr::item_v1>({std::to_string(i)}, "initial");
  }
  ks::etcd_backend first(o), second(o);
  std::size_t calls = 0;
  const std::string e = mr::schema_error_of([&] {
    ks::migrate<mr::v1, mr::v2>(first, ks::migrate_options{.batch_entries = 5},
                                ks::transform<mr::item_v1>([&](const ks::entry<mr::item_v1>& en,
                                                               ks::migration_writer<mr::v2>& out) {
                                  if (++calls == 6) CHECK(mr::migrate(second, 3).resumed);  // inside the 2nd batch
                                  out.put<mr::item_v2>({std::stoull(en.get<"id">())}, en.value);
                                }));
  });
  INFO(e);
  CHECK_THAT(e, Catch::Contains("changed by another process while this ks::migrate ran") &&
                    Catch::Contains("nothing of this batch was written"));
  ks::store<mr::v2, ks::etcd_backend> db(o);
  std::size_t n = 0;
  for (const auto& en : db.scan<mr::item_v2>()) n += en.get<"id">() < 20 ? 1 : 0;
  CHECK(n == 20);
  std::string progress;
  CHECK_FALSE(db.backend().get(ks::migration_key, progress, nullptr));
}

// Issue 31 item 4: several commit groups in flight on one store. 64 writers each commit messages
// of two puts (so the queue fills more than one Txn of 128 operations and groups go out together)
// and, in another run, messages with a declared count (groups that resolve: one at a time), while
// a transaction loop reads and rewrites a sequence. Every acknowledged write must be there, the
// count must equal the records, and no transaction may see a commit of this process between its
// reads and its commit.
namespace etcd_in_flight {
namespace ks = keyschema;
using message = ks::keyspace<"message", std::string, ks::lit<"MSG">, ks::field<"writer", std::uint32_t>,
                             ks::field<"id", std::uint32_t>>;
using body = ks::keyspace<"body", std::string, ks::lit<"BODY">, ks::field<"writer", std::uint32_t>,
                          ks::field<"id", std::uint32_t>>;
using counted = ks::keyspace<"counted", std::string, ks::lit<"CNT">, ks::field<"writer", std::uint32_t>,
                             ks::field<"id", std::uint32_t>>;
using counted_total = ks::keyspace<"counted_total", ks::count_of<counted, 0>, ks::lit<"TOTAL">>;
using sequence = ks::keyspace<"sequence", std::int64_t, ks::lit<"SEQ">>;
using schema = ks::schema<message, body, counted, counted_total, sequence>;
}  // namespace etcd_in_flight

TEST_CASE("etcd store: many writers on one store, several groups in flight, lose nothing and leave counts exact",
          "[etcd][concurrency]") {
  namespace ks = keyschema;
  using namespace etcd_in_flight;
  ks::etcd_options o = options("in-flight/");
  o.writes_in_flight = 4;
  ks::store<schema, ks::etcd_backend> db(o);
  db.put<sequence>({}, 0);
  constexpr std::uint32_t writers = 64, per_writer = 12;
  std::atomic<bool> stop{false};
  std::atomic<int> unchanged{0}, transactions{0};
  std::thread tx_loop([&] {
    while (!stop.load()) {
      auto tx = db.transaction();
      const std::int64_t n = tx.get<sequence>({}).value_or(0);
      if (db.snapshot().get<sequence>({}).value_or(0) == n) ++unchanged;
      tx.put<sequence>({}, n + 1);
      tx.commit();
      ++transactions;
    }
  });
  std::vector<std::thread> ts;
  for (std::uint32_t w = 0; w < writers; ++w) {
    ts.emplace_back([&, w] {
      for (std::uint32_t i = 0; i < per_writer; ++i) {
        auto b = db.batch();
        b.put<message>({w, i}, "m");
        b.put<body>({w, i}, "b");
        b.commit();
        db.put<counted>({w, i}, "c");
      }
    });
  }
  for (auto& t : ts) t.join();
  stop.store(true);
  tx_loop.join();
  std::size_t messages = 0, bodies = 0, counts = 0;
  for (const auto& e : db.scan<message>()) {
    (void)e;
    ++messages;
  }
  for (const auto& e : db.scan<body>()) {
    (void)e;
    ++bodies;
  }
  for (const auto& e : db.scan<counted>()) {
    (void)e;
    ++counts;
  }
  CHECK(messages == writers * per_writer);
  CHECK(bodies == writers * per_writer);
  CHECK(counts == writers * per_writer);
  CHECK(db.get<counted_total>({}) == std::optional<std::int64_t>(writers * per_writer));
  CHECK(transactions.load() > 0);
  CHECK(unchanged.load() == transactions.load());
  CHECK(db.get<sequence>({}) == std::optional<std::int64_t>(transactions.load()));
}
