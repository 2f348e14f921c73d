// leveldb_publish_bench: publishing messages with {.sync = false} through keyschema's LevelDB
// store against plain LevelDB, in one run, by wall time.
//
// Each side publishes `messages` messages of a 1 KiB body in atomic batches of 100, each into a
// fresh database directory of its own: keyschema through store<schema, leveldb_backend> with the
// backend's default options (its syncing Env included) and store_batch::commit({.sync = false}),
// plain LevelDB through a leveldb::DB opened with LevelDB's default options (create_if_missing
// only) and DB::Write of a leveldb::WriteBatch with WriteOptions::sync = false. Both sides write
// the same key bytes (the broker's message metadata key: "DESTINATION", queue, "MESSAGE_METADATA",
// message id, tuple-encoded; the native side encodes them by hand) and values. Only the publishing
// loop is timed, not the open or the close. With a 4 MiB write buffer LevelDB switches logs every
// ~4,000 messages, so the run covers many switches (a wait at each switch shows up in wall time,
// not in CPU time, which is printed beside it: the publishing thread's and the whole process's,
// which includes LevelDB's background flushes and compactions).
//
// Rounds alternate which side runs first; the ratio per round is native wall time / keyschema
// wall time (1.00 is parity, higher is keyschema faster).
//
// Run: build/bench/bench/leveldb_publish_bench [messages] [rounds]   (100000 and 3 by default;
// databases go to $TMPDIR or /tmp and are removed after each run). Instructions per message of
// each side, by callgrind: bench/callgrind_publish.sh build/bench/bench/leveldb_publish_bench.
// Round 0's first side (keyschema) also pays for the process's heap growing (page faults, in
// the publishing thread's CPU time): compare later rounds when the gap is small.
#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>

#include <leveldb/db.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

#include <ctime>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

namespace ks = keyschema;

using metadata = ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                              ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
using schema = ks::schema<metadata>;

constexpr std::uint64_t kBatch = 100;
constexpr std::uint64_t kFirstId = 1'000'000'000'007ull;  // realistic ids: 5-6 significant bytes
const std::string kBody(1024, 'b');
constexpr char kQueue[] = "orders";

// The tuple encoding of the metadata key of kQueue and id. REQUIRES: id > 0.
void native_key(std::string& out, std::uint64_t id) {
  out.assign("\x02" "DESTINATION\0", 13);
  out.push_back('\x02');
  out.append(kQueue);
  out.push_back('\0');
  out.append("\x02" "MESSAGE_METADATA\0", 18);
  int n = 0;  // significant bytes
  for (std::uint64_t v = id; v != 0; v >>= 8) ++n;
  out.push_back(static_cast<char>(0x14 + n));
  for (int shift = 8 * (n - 1); shift >= 0; shift -= 8) out.push_back(static_cast<char>((id >> shift) & 0xFF));
}

struct timing {
  double wall = 0;    // seconds
  double writer = 0;  // CPU seconds of the publishing thread
  double cpu = 0;     // CPU seconds of the process (all threads: LevelDB's background work too)
};

double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

template <class F>
timing timed(F&& f) {
  const double cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  const double writer0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  const auto t0 = std::chrono::steady_clock::now();
  f();
  timing t;
  t.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.writer = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - writer0;
  t.cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  return t;
}

std::filesystem::path fresh_dir(const char* tag) {
  static int counter = 0;
  auto p = std::filesystem::temp_directory_path() /
           ("leveldb_publish_bench-" + std::to_string(::getpid()) + "-" + tag + "-" + std::to_string(counter++));
  std::filesystem::remove_all(p);
  return p;
}

// The timed publishing loops, each a function of its own (not inlined) so that callgrind can
// collect inside them only: bench/callgrind_publish.sh.
[[gnu::noinline]] void publish_keyschema(ks::store<schema, ks::leveldb_backend>& db, const ks::bytes& body,
                                         std::uint64_t messages) {
  auto b = db.batch();
  for (std::uint64_t id = kFirstId; id < kFirstId + messages;) {
    for (std::uint64_t i = 0; i < kBatch && id < kFirstId + messages; ++i) b.put<metadata>({kQueue, id++}, body);
    b.commit({.sync = false});
  }
}

[[gnu::noinline]] void publish_native(leveldb::DB& db, const leveldb::WriteOptions& wo, std::uint64_t messages) {
  leveldb::WriteBatch b;
  std::string k;
  for (std::uint64_t id = kFirstId; id < kFirstId + messages;) {
    b.Clear();
    for (std::uint64_t i = 0; i < kBatch && id < kFirstId + messages; ++i) {
      native_key(k, id++);
      b.Put(k, kBody);
    }
    const leveldb::Status w = db.Write(wo, &b);
    if (!w.ok()) throw std::runtime_error("native side: " + w.ToString());
  }
}

timing run_keyschema(std::uint64_t messages) {
  const auto dir = fresh_dir("keyschema");
  timing t;
  {
    ks::store<schema, ks::leveldb_backend> db(dir);
    const ks::bytes body(kBody);
    t = timed([&] { publish_keyschema(db, body, messages); });
    std::uint64_t n = 0;
    for (const auto& e : db.scan<metadata>(kQueue).keys_only()) n += e.get<"message_id">() >= kFirstId ? 1 : 0;
    if (n != messages) throw std::runtime_error("keyschema side: " + std::to_string(n) + " messages present");
  }
  std::filesystem::remove_all(dir);
  return t;
}

timing run_native(std::uint64_t messages) {
  const auto dir = fresh_dir("native");
  timing t;
  {
    leveldb::Options o;
    o.create_if_missing = true;
    leveldb::DB* p = nullptr;
    const leveldb::Status s = leveldb::DB::Open(o, dir.string(), &p);
    if (!s.ok()) throw std::runtime_error("native side: " + s.ToString());
    std::unique_ptr<leveldb::DB> db(p);
    leveldb::WriteOptions wo;
    wo.sync = false;
    t = timed([&] { publish_native(*db, wo, messages); });
  }
  std::filesystem::remove_all(dir);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t messages = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  if (messages == 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: %s [messages > 0] [rounds > 0]\n", argv[0]);
    return 2;
  }
  // The key bytes of both sides must be the same.
  {
    std::string k;
    native_key(k, kFirstId + messages - 1);
    if (k != ks::tuple::pack("DESTINATION", kQueue, "MESSAGE_METADATA", kFirstId + messages - 1)) {
      std::fprintf(stderr, "native key encoding differs from keyschema's\n");
      return 1;
    }
  }
  std::printf("%llu messages, 1 KiB bodies, batches of %llu, sync off\n", static_cast<unsigned long long>(messages),
              static_cast<unsigned long long>(kBatch));
  std::printf("seconds: wall / CPU of the publishing thread / CPU of the process\n");
  std::printf("round  first      keyschema                native                   native/keyschema (wall)\n");
  for (int r = 0; r < rounds; ++r) {
    timing k, n;
    if (r % 2 == 0) {
      k = run_keyschema(messages);
      n = run_native(messages);
    } else {
      n = run_native(messages);
      k = run_keyschema(messages);
    }
    std::printf("%5d  %-9s  %7.3f / %6.3f / %6.3f  %7.3f / %6.3f / %6.3f  %.2f\n", r,
                r % 2 == 0 ? "keyschema" : "native", k.wall, k.writer, k.cpu, n.wall, n.writer, n.cpu, n.wall / k.wall);
    std::fflush(stdout);
  }
  return 0;
}
