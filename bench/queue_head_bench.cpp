// queue_head_bench: the "first message" lookup of a queue drained from its head, on LevelDB.
//
// A broker queue is a key prefix ("QUEUE", queue, message id) whose consumers erase messages
// from the head. On LevelDB an erase is a tombstone: until a compaction drops it, every cursor
// positioned at the queue's prefix steps over all of them before it finds the first live message
// (or the end of the prefix). This program writes --messages messages (default 1,000,000; 100
// byte bodies) to one queue, erases them all from the head in batches of 100 as consumers would
// (writes without sync: the figures are about reads), and then times, side by side in this one
// run, the lookup of the queue's first message (db.scan<queue>(name).limit(1); the queue is
// empty, so the lookup walks the whole prefix):
//
//   after the drain           the lookup steps over every tombstone
//   with the head tracked     scan(name).from(head): the consumer remembers the next id, so the
//                             cursor is positioned after the erased ids (no tombstone stepped over)
//   after compact_prefix      db.compact_prefix<queue>(name) (LevelDB CompactRange of the prefix)
//                             dropped the tombstones; its own duration is printed too
//
// Each lookup figure is the first lookup and the median of --lookups (default 20) lookups; each
// opens a fresh cursor. A message in a neighbouring queue ("queue-b") is present throughout.
// Target: under 1 ms after compaction with 1M messages drained.
//
// Usage: queue_head_bench [--messages N] [--lookups L] [--path DIR]  (DIR is replaced; default
// $TMPDIR/queue_head_bench or /tmp/queue_head_bench). Exit status 1 when a lookup finds a message.
#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ks = keyschema;

using queue = ks::keyspace<"queue", ks::bytes, ks::lit<"QUEUE">, ks::field<"queue", std::string>,
                           ks::field<"message_id", std::uint64_t>>;
using broker = ks::schema<queue>;
using store_type = ks::store<broker, ks::leveldb_backend>;

namespace {

struct figures {
  double first_ms = 0;
  double median_ms = 0;
};

template <class Lookup>
figures time_lookups(std::size_t lookups, Lookup&& lookup, bool& found) {
  std::vector<double> ms;
  for (std::size_t i = 0; i < std::max<std::size_t>(lookups, 1); ++i) {
    const auto start = std::chrono::steady_clock::now();
    found = lookup() || found;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  figures f;
  f.first_ms = ms.front();
  std::sort(ms.begin(), ms.end());
  f.median_ms = ms[ms.size() / 2];
  return f;
}

void print(const char* what, const figures& f) {
  std::printf("  %-34s first %10.3f ms   median %10.3f ms\n", what, f.first_ms, f.median_ms);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t messages = 1000000, lookups = 20;
  const char* tmp = std::getenv("TMPDIR");
  std::filesystem::path path = std::filesystem::path(tmp != nullptr ? tmp : "/tmp") / "queue_head_bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view a = argv[i];
    if (a == "--messages")
      messages = std::stoul(argv[i + 1]);
    else if (a == "--lookups")
      lookups = std::stoul(argv[i + 1]);
    else if (a == "--path")
      path = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: queue_head_bench [--messages N] [--lookups L] [--path DIR]\n");
      return 2;
    }
  }
  try {
    std::filesystem::remove_all(path);
    store_type db{path};
    const std::string name = "queue-a";
    const ks::bytes body(std::string(100, 'm'));
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t first = 0; first < messages; first += 10000) {
      auto b = db.batch();
      for (std::uint64_t id = first; id < std::min<std::uint64_t>(first + 10000, messages); ++id)
        b.put<queue>({name, id}, body);
      b.commit({.sync = false});
    }
    db.put<queue>({"queue-b", 0}, body);
    const auto t1 = std::chrono::steady_clock::now();
    for (std::uint64_t first = 0; first < messages; first += 100) {  // consumers ack from the head
      auto b = db.batch();
      for (std::uint64_t id = first; id < std::min<std::uint64_t>(first + 100, messages); ++id)
        b.erase<queue>({name, id});
      b.commit({.sync = false});
    }
    const auto t2 = std::chrono::steady_clock::now();
    std::printf("queue_head_bench (LevelDB): %zu messages written in %.2f s, drained from the head in %.2f s\n",
                messages, std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count());

    bool found = false;
    const auto first_message = [&] {
      for (const auto& e : db.scan<queue>(name).keys_only().limit(1)) return (void)e, true;
      return false;
    };
    const std::uint64_t head = messages;  // the next id the consumer expects
    const auto first_from_head = [&] {
      for (const auto& e : db.scan<queue>(name).from(head).keys_only().limit(1)) return (void)e, true;
      return false;
    };
    const figures tracked = time_lookups(lookups, first_from_head, found);
    const figures drained = time_lookups(lookups, first_message, found);
    const auto c0 = std::chrono::steady_clock::now();
    const bool compacted = db.compact_prefix<queue>(name);
    const double compact_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    const figures after = time_lookups(lookups, first_message, found);

    std::printf("first-message lookup of the drained queue (%zu lookups each):\n", lookups);
    print("after the drain:", drained);
    print("with the head tracked (from(head)):", tracked);
    print("after compact_prefix:", after);
    std::printf("  compact_prefix took %.3f s (%s)\n", compact_s, compacted ? "compacted" : "no-op");
    if (after.median_ms > 0)
      std::printf("  median lookup, drained / compacted: %.0fx; first lookup: %.0fx\n",
                  drained.median_ms / after.median_ms, drained.first_ms / after.first_ms);
    std::printf("  target (< 1 ms after compaction): %s\n", after.median_ms < 1.0 ? "met" : "NOT met");
    if (found) {
      std::fprintf(stderr, "queue_head_bench: a lookup found a message in the drained queue\n");
      return 1;
    }
    if (!db.contains<queue>({"queue-b", 0})) {
      std::fprintf(stderr, "queue_head_bench: the neighbouring queue lost its message\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "queue_head_bench: %s\n", e.what());
    return 1;
  }
  std::filesystem::remove_all(path);
  return 0;
}
