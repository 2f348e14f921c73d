// snapshot_recovery: recovering per-topic snapshots with one grouped scan instead of one scan per
// topic (Pulsar's one reader per namespace).
//
// A broker keeps, per topic, a few snapshots (cursor positions by ledger) in ONE keyspace
// ("SNAPSHOT", topic, ledger). At start it must hand each topic's snapshots to that topic's
// recovery. The per-topic way lists the topics (a keyspace of topic names) and scans each
// topic's prefix: one engine cursor (a seek) per topic. The grouped way is one pass over the
// snapshot keyspace, db.scan<snapshot>().group_by<"topic">(), handing each group to its topic.
// The program writes --topics topics (default 10,000) with --per-topic snapshots each (default
// 3), recovers both ways, checks they agree, and prints keys read, cursors opened and time.
//
//   snapshot_recovery [--backend memory|leveldb|lmdb] [--path DIR] [--topics N] [--per-topic M]
//
// (the command line of examples/support/example_backend.hpp: DIR defaults to a fresh temporary
// directory). Exit status 0 when both recoveries found every snapshot, 1 otherwise, 2 on bad
// arguments.
#include "support/example_backend.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>

namespace ks = keyschema;

// SNAPSHOT.$topic.$ledger -> the cursor position stored for that ledger
using snapshot = ks::keyspace<"snapshot", std::uint64_t,  //
    ks::lit<"SNAPSHOT">, ks::field<"topic", std::string>, ks::field<"ledger", std::uint64_t>>;
// TOPIC.$topic -> () : the topics, as the per-topic recovery needs them listed
using topic = ks::keyspace<"topic", std::tuple<>, ks::lit<"TOPIC">, ks::field<"topic", std::string>>;
using broker = ks::schema<snapshot, topic>;

namespace {

struct options {
  std::string backend;
  std::size_t topics = 10000;
  std::size_t per_topic = 3;
};

struct recovery {
  std::size_t keys_read = 0;   // entries the engine handed over
  std::size_t cursors = 0;     // scans begun (one seek each)
  std::size_t topics = 0;      // topics recovered
  std::uint64_t checksum = 0;  // of every (topic, ledger, position) seen
  double seconds = 0;
};

std::string topic_name(std::size_t i) { return "persistent://tenant/ns/topic-" + std::to_string(i); }

std::uint64_t mix(std::uint64_t h, std::string_view topic_name, std::uint64_t ledger, std::uint64_t position) {
  for (char c : topic_name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return (h ^ ledger) * 1099511628211ull + position;
}

template <class Store>
void fill(Store& db, const options& o) {
  auto b = db.batch();
  for (std::size_t t = 0; t < o.topics; ++t) {
    const std::string name = topic_name(t);
    b.template put<topic>({name}, {});
    for (std::uint64_t l = 0; l < o.per_topic; ++l) b.template put<snapshot>({name, 100 + l}, t * 1000 + l);
    if (b.size() >= 10000) b.commit();
  }
  b.commit();
}

// One grouped scan: each topic's snapshots arrive as one group.
template <class Store>
recovery grouped(const Store& db) {
  recovery r;
  const auto start = std::chrono::steady_clock::now();
  ++r.cursors;
  for (auto&& g : db.template scan<snapshot>().template group_by<"topic">()) {
    const std::string& name = g.template get<"topic">();
    std::uint64_t h = 0;
    for (const auto& e : g) {
      ++r.keys_read;
      h = mix(h, name, e.template get<"ledger">(), e.value);
    }
    r.checksum += h;
    ++r.topics;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// One scan per topic, after listing the topics.
template <class Store>
recovery per_topic(const Store& db) {
  recovery r;
  const auto start = std::chrono::steady_clock::now();
  ++r.cursors;
  for (const auto& t : db.template scan<topic>().keys_only()) {
    ++r.keys_read;
    const std::string& name = t.template get<"topic">();
    std::uint64_t h = 0;
    ++r.cursors;
    for (const auto& e : db.template scan<snapshot>(name)) {
      ++r.keys_read;
      h = mix(h, name, e.template get<"ledger">(), e.value);
    }
    r.checksum += h;
    ++r.topics;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

void print(const char* how, const recovery& r) {
  std::printf("  %-26s topics %zu, keys read %zu, cursors opened %zu, %.3f ms\n", how, r.topics, r.keys_read,
              r.cursors, r.seconds * 1e3);
}

template <class Store>
int run(Store& db, const options& o) {
  fill(db, o);
  const recovery a = per_topic(db);
  const recovery b = grouped(db);
  std::printf("snapshot_recovery on %s: %zu topics x %zu snapshots\n", o.backend.c_str(), o.topics, o.per_topic);
  print("one scan per topic:", a);
  print("one grouped scan:", b);
  if (b.seconds > 0) std::printf("  per-topic / grouped time: %.2f\n", a.seconds / b.seconds);
  const std::size_t snapshots = o.topics * o.per_topic;
  if (a.topics != o.topics || b.topics != o.topics || b.keys_read != snapshots ||
      a.keys_read != snapshots + o.topics || a.checksum != b.checksum) {
    std::fprintf(stderr, "snapshot_recovery: the two recoveries disagree or missed snapshots\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const example::options cli = example::parse_options(argc, argv);
  options o;
  o.backend = cli.backend;
  o.topics = cli.number("topics", o.topics);
  o.per_topic = cli.number("per-topic", o.per_topic);
  return example::with_backend<broker>(cli, [&](auto open, const std::filesystem::path&) { return run(*open(), o); });
}
