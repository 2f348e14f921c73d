// codec_bench: the tuple codec against the fairest hand-written code for the same broker key
// ("DESTINATION", queue, "MESSAGE_METADATA", message id).
//
// The hand-written side is what a careful engineer writes for one fixed key layout: memcpy of
// the pre-encoded literal parts, the queue name framed as 0x02 name 0x00 without scanning it for
// NULs or validating UTF-8, and the id as 0x1c plus 8 big-endian bytes; decoding checks the
// literal parts with memcmp and loads the id directly. The keyschema side uses the generic API
// (pack_into / pack / unpack / tuple::reader), which also escapes NULs, validates UTF-8 and
// picks the shortest integer form.
//
// One more pair, unpack_id_same, decodes the id alone with the hand-written side reading
// keyschema's bytes (the shortest integer form) instead of its own fixed-width layout: the two
// unpack_id pairs tell the cost of the encoding from the cost of the code.
//
// Every pair is registered as <operation>/keyschema and <operation>/hand; after the run a summary
// prints the CPU-time ratio keyschema/hand per operation (target: <= 1.20), from the medians when
// run with --benchmark_repetitions (docs/performance.md, "The tuple codec", gives the command).
// Instruction counts, which the machine's load does not move: bench/callgrind_pairs.sh
// build/bench/bench/codec_bench . (KEYSCHEMA_BENCH_ITERATIONS, bench/fixed_iterations.hpp).
#include <benchmark/benchmark.h>
#include "fixed_iterations.hpp"
#include <keyschema/tuple.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace tuple = keyschema::tuple;

const std::string kQueue = "queue-7";
constexpr std::uint64_t kFirstId = 1'000'000'000'007ull;  // realistic message ids: 5-6 significant bytes

// --- hand-written code for the one layout ---------------------------------------------------------

const std::string kHandDestination = std::string("\x02" "DESTINATION", 12) + '\0';
const std::string kHandMetadata = std::string("\x02" "MESSAGE_METADATA", 17) + '\0';

inline void hand_pack_into(std::string& out, std::string_view queue, std::uint64_t id) {
  char idbuf[9];
  idbuf[0] = '\x1c';
  for (int i = 0; i < 8; ++i) idbuf[1 + i] = static_cast<char>(id >> (56 - 8 * i));
  out.append(kHandDestination);
  out.push_back('\x02');
  out.append(queue);
  out.push_back('\0');
  out.append(kHandMetadata);
  out.append(idbuf, 9);
}

struct hand_key {
  std::string destination;
  std::string queue;
  std::string kind;
  std::uint64_t id = 0;
};

// Decodes all four fields; false when the bytes are not this layout.
inline bool hand_unpack(std::string_view k, hand_key& out) {
  if (k.size() < kHandDestination.size() || std::memcmp(k.data(), kHandDestination.data(), kHandDestination.size()) != 0)
    return false;
  out.destination.assign(k.data() + 1, kHandDestination.size() - 2);
  k.remove_prefix(kHandDestination.size());
  if (k.empty() || k[0] != '\x02') return false;
  const void* end = std::memchr(k.data() + 1, 0, k.size() - 1);
  if (end == nullptr) return false;
  const std::size_t n = static_cast<std::size_t>(static_cast<const char*>(end) - k.data());
  out.queue.assign(k.data() + 1, n - 1);
  k.remove_prefix(n + 1);
  if (k.size() != kHandMetadata.size() + 9 || std::memcmp(k.data(), kHandMetadata.data(), kHandMetadata.size()) != 0)
    return false;
  out.kind.assign(k.data() + 1, kHandMetadata.size() - 2);
  k.remove_prefix(kHandMetadata.size());
  if (k[0] != '\x1c') return false;
  std::uint64_t id = 0;
  for (int i = 1; i <= 8; ++i) id = (id << 8) | static_cast<unsigned char>(k[i]);
  out.id = id;
  return true;
}

// Decodes only the variable fields (queue and id), as a schema layer does.
inline bool hand_unpack_fields(std::string_view k, std::string& queue, std::uint64_t& id) {
  if (k.size() < kHandDestination.size() + 2 || std::memcmp(k.data(), kHandDestination.data(), kHandDestination.size()) != 0)
    return false;
  k.remove_prefix(kHandDestination.size());
  if (k[0] != '\x02') return false;
  const void* end = std::memchr(k.data() + 1, 0, k.size() - 1);
  if (end == nullptr) return false;
  const std::size_t n = static_cast<std::size_t>(static_cast<const char*>(end) - k.data());
  queue.assign(k.data() + 1, n - 1);
  k.remove_prefix(n + 1);
  if (k.size() != kHandMetadata.size() + 9 || std::memcmp(k.data(), kHandMetadata.data(), kHandMetadata.size()) != 0)
    return false;
  k.remove_prefix(kHandMetadata.size());
  if (k[0] != '\x1c') return false;
  std::uint64_t v = 0;
  for (int i = 1; i <= 8; ++i) v = (v << 8) | static_cast<unsigned char>(k[i]);
  id = v;
  return true;
}

// --- keyschema -----------------------------------------------------------------------------------

const std::string kDestination = tuple::pack("DESTINATION");
const std::string kMetadata = tuple::pack("MESSAGE_METADATA");

inline void expect_literal(tuple::reader& in, const std::string& literal) {
  if (!in.remaining().starts_with(literal)) in.fail_unexpected(literal);
  in.skip(literal.size());
}

std::vector<std::string> keys(bool hand) {
  std::vector<std::string> ks;
  for (std::uint64_t i = 0; i < 1024; ++i) {
    std::string k;
    if (hand)
      hand_pack_into(k, kQueue, kFirstId + i);
    else
      tuple::pack_into(k, "DESTINATION", kQueue, "MESSAGE_METADATA", kFirstId + i);
    ks.push_back(std::move(k));
  }
  return ks;
}

// --- benchmarks ------------------------------------------------------------------------------------

void pack_into_keyschema(benchmark::State& state) {
  std::string out;
  std::uint64_t id = kFirstId;
  for (auto _ : state) {
    out.clear();
    tuple::pack_into(out, "DESTINATION", kQueue, "MESSAGE_METADATA", id++);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
}

void pack_into_hand(benchmark::State& state) {
  std::string out;
  std::uint64_t id = kFirstId;
  for (auto _ : state) {
    out.clear();
    hand_pack_into(out, kQueue, id++);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
}

void pack_keyschema(benchmark::State& state) {  // a fresh string per key
  std::uint64_t id = kFirstId;
  for (auto _ : state) {
    std::string k = tuple::pack("DESTINATION", kQueue, "MESSAGE_METADATA", id++);
    benchmark::DoNotOptimize(k.data());
  }
}

void pack_hand(benchmark::State& state) {
  std::uint64_t id = kFirstId;
  for (auto _ : state) {
    std::string k;
    hand_pack_into(k, kQueue, id++);
    benchmark::DoNotOptimize(k.data());
  }
}

void unpack_keyschema(benchmark::State& state) {  // all four fields
  const auto ks = keys(false);
  std::size_t i = 0;
  for (auto _ : state) {
    auto t = tuple::unpack<std::string, std::string, std::string, std::uint64_t>(ks[i++ & 1023]);
    benchmark::DoNotOptimize(t);
  }
}

void unpack_hand(benchmark::State& state) {  // a fresh result per key, like unpack
  const auto ks = keys(true);
  std::size_t i = 0;
  for (auto _ : state) {
    hand_key k;
    if (!hand_unpack(ks[i++ & 1023], k)) state.SkipWithError("hand_unpack");
    benchmark::DoNotOptimize(k);
  }
}

void unpack_fields_keyschema(benchmark::State& state) {  // literals checked, queue and id decoded
  const auto ks = keys(false);
  std::size_t i = 0;
  for (auto _ : state) {
    tuple::reader in(ks[i++ & 1023]);
    expect_literal(in, kDestination);
    const std::string queue = keyschema::codec_traits<std::string>::decode(in);
    expect_literal(in, kMetadata);
    const std::uint64_t id = keyschema::codec_traits<std::uint64_t>::decode(in);
    if (!in.at_end()) in.fail("trailing bytes");
    benchmark::DoNotOptimize(queue.data());
    benchmark::DoNotOptimize(id);
  }
}

void unpack_fields_hand(benchmark::State& state) {
  const auto ks = keys(true);
  std::size_t i = 0;
  for (auto _ : state) {
    std::string queue;  // a fresh string per key, like codec_traits<std::string>::decode
    std::uint64_t id = 0;
    if (!hand_unpack_fields(ks[i++ & 1023], queue, id)) state.SkipWithError("hand_unpack_fields");
    benchmark::DoNotOptimize(queue.data());
    benchmark::DoNotOptimize(id);
  }
}

void unpack_id_keyschema(benchmark::State& state) {  // the integer hot path alone
  std::vector<std::string> ks;
  for (std::uint64_t i = 0; i < 1024; ++i) ks.push_back(tuple::pack(kFirstId + i * 7919));
  std::size_t i = 0;
  for (auto _ : state) {
    tuple::reader in(ks[i++ & 1023]);
    benchmark::DoNotOptimize(keyschema::codec_traits<std::uint64_t>::decode(in));
  }
}

void unpack_id_hand(benchmark::State& state) {
  std::vector<std::string> ks;
  for (std::uint64_t i = 0; i < 1024; ++i) {
    std::string k = "\x1c";
    for (int b = 0; b < 8; ++b) k.push_back(static_cast<char>((kFirstId + i * 7919) >> (56 - 8 * b)));
    ks.push_back(k);
  }
  std::size_t i = 0;
  for (auto _ : state) {
    const std::string& k = ks[i++ & 1023];
    if (k.size() != 9 || k[0] != '\x1c') state.SkipWithError("hand id");
    std::uint64_t v = 0;
    for (int b = 1; b <= 8; ++b) v = (v << 8) | static_cast<unsigned char>(k[b]);
    benchmark::DoNotOptimize(v);
  }
}

// The id alone again, the hand-written side decoding keyschema's own bytes (the shortest form:
// the type code gives the length, 6 bytes for these ids) instead of its fixed 8-byte layout: what
// the shortest form costs any decoder, apart from the code that reads it. The hand side checks the
// type code and the length, not the shortest form (keyschema refuses other forms).
void unpack_id_same_hand(benchmark::State& state) {
  std::vector<std::string> ks;
  for (std::uint64_t i = 0; i < 1024; ++i) ks.push_back(tuple::pack(kFirstId + i * 7919));
  std::size_t i = 0;
  for (auto _ : state) {
    const std::string& k = ks[i++ & 1023];
    const std::size_t n = k.empty() ? 9 : static_cast<unsigned char>(k[0]) - std::size_t{0x14};  // wraps below 0x14
    if (n > 8 || k.size() != n + 1) {
      state.SkipWithError("hand id");
      break;
    }
    std::uint64_t v = 0;
    for (std::size_t b = 1; b <= n; ++b) v = (v << 8) | static_cast<unsigned char>(k[b]);
    benchmark::DoNotOptimize(v);
  }
}

using keyschema_bench::fixed_iterations;  // KEYSCHEMA_BENCH_ITERATIONS (bench/fixed_iterations.hpp)
BENCHMARK(pack_into_keyschema)->Name("pack_into/keyschema")->Apply(fixed_iterations);
BENCHMARK(pack_into_hand)->Name("pack_into/hand")->Apply(fixed_iterations);
BENCHMARK(pack_keyschema)->Name("pack/keyschema")->Apply(fixed_iterations);
BENCHMARK(pack_hand)->Name("pack/hand")->Apply(fixed_iterations);
BENCHMARK(unpack_keyschema)->Name("unpack_all/keyschema")->Apply(fixed_iterations);
BENCHMARK(unpack_hand)->Name("unpack_all/hand")->Apply(fixed_iterations);
BENCHMARK(unpack_fields_keyschema)->Name("unpack_fields/keyschema")->Apply(fixed_iterations);
BENCHMARK(unpack_fields_hand)->Name("unpack_fields/hand")->Apply(fixed_iterations);
BENCHMARK(unpack_id_keyschema)->Name("unpack_id/keyschema")->Apply(fixed_iterations);
BENCHMARK(unpack_id_hand)->Name("unpack_id/hand")->Apply(fixed_iterations);
BENCHMARK(unpack_id_keyschema)->Name("unpack_id_same/keyschema")->Apply(fixed_iterations);
BENCHMARK(unpack_id_same_hand)->Name("unpack_id_same/hand")->Apply(fixed_iterations);

// Prints the normal console output and remembers each run's CPU time for the summary.
class summary_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {  // single runs, or the median when repetitions are aggregated
      if (r.error_occurred) continue;
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      const std::string name = r.run_name.str();
      const auto slash = name.find('/');
      if (slash == std::string::npos) continue;
      times_[name.substr(0, slash)][name.substr(slash + 1)] = r.GetAdjustedCPUTime();
    }
  }

  void print_summary() const {
    std::printf("\nsummary (CPU time per key, keyschema / hand-written; target <= 1.20):\n");
    for (const auto& [op, sides] : times_) {
      const auto ks = sides.find("keyschema");
      const auto hand = sides.find("hand");
      if (ks == sides.end() || hand == sides.end() || hand->second <= 0) continue;
      std::printf("  %-14s keyschema %8.2f ns   hand %8.2f ns   ratio %.2f\n", op.c_str(), ks->second, hand->second,
                  ks->second / hand->second);
    }
  }

 private:
  std::map<std::string, std::map<std::string, double>> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  summary_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_summary();
  benchmark::Shutdown();
  return 0;
}
