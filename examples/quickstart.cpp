// quickstart: a small broker message store on keyschema.
//
// It declares the seeds' broker schema as keyspaces, publishes messages (metadata, content
// chunks and the queue's message count in one atomic transaction), reads a queue in id order,
// acknowledges messages (reading and updating the count in one transaction, so that two
// consumers running at once never lose an update), and reads a consistent snapshot while writes
// go on. It runs
// on the in-memory backend; changing the one `using backend = ...` line moves it to LevelDB or
// LMDB. The program checks what it prints and exits non-zero when anything is off.
#include <keyschema/keyschema.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

namespace ks = keyschema;

// MESSAGE.$message_id.$offset.MESSAGE_CONTENT -> content chunk
using message_content = ks::keyspace<"message_content", ks::bytes,  //
    ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>, ks::field<"offset", std::uint32_t>,
    ks::lit<"MESSAGE_CONTENT">>;
// DESTINATION.$destination.MESSAGE_METADATA.$message_id -> metadata
using message_metadata = ks::keyspace<"message_metadata", ks::bytes,  //
    ks::lit<"DESTINATION">, ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">,
    ks::field<"message_id", std::uint64_t>>;
// MESSAGE_COUNT.$destination -> count. (The seed's DESTINATION.MESSAGE_COUNT.$destination
// collides with the metadata keys of a queue named "MESSAGE_COUNT": keyschema rejects that
// schema at compile time, so the count gets a leading literal of its own.)
using message_count = ks::keyspace<"message_count", std::int64_t,  //
    ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;

using broker = ks::schema<message_content, message_metadata, message_count>;
using backend = ks::memory_backend;  // or ks::leveldb_backend / ks::lmdb_backend with a path
using store = ks::store<broker, backend>;

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("UNEXPECTED: %s\n", what);
    ++failures;
  }
}

// Publishes one message: its chunks, its metadata and the queue's count, atomically.
void publish(store& db, const std::string& queue, std::uint64_t id, const std::string& body) {
  auto tx = db.transaction();
  const std::uint32_t chunk = 8;
  for (std::uint32_t off = 0; off * chunk < body.size(); ++off) {
    tx.put<message_content>({id, off}, ks::bytes(std::string_view(body).substr(off * chunk, chunk)));
  }
  tx.put<message_metadata>({queue, id}, ks::bytes("meta:" + std::to_string(body.size())));
  tx.put<message_count>({queue}, tx.get<message_count>({queue}).value_or(0) + 1);
  tx.commit();
}

// Acknowledges (erases) the `n` oldest messages of `queue`, their chunks and their share of the
// count, in one transaction, and returns how many it found. Everything it reads (which messages
// are oldest, the count) is read inside the transaction that writes the result: the transaction
// holds the store's writer lock from its creation to its commit, so another consumer or publisher
// cannot change those keys in between. Reading the count with db.get() and writing it back in a
// db.batch() would not: two consumers could both read the same count (and pick the same oldest
// message), and one update would be lost.
std::int64_t acknowledge(store& db, const std::string& queue, std::size_t n) {
  auto tx = db.transaction();
  std::int64_t acked = 0;
  for (const auto& m : tx.scan<message_metadata>(queue).limit(n)) {
    const std::uint64_t id = m.get<"message_id">();
    tx.erase<message_metadata>({queue, id});
    for (const auto& c : tx.scan<message_content>(id)) tx.erase<message_content>(c.key);
    ++acked;
  }
  tx.put<message_count>({queue}, tx.get<message_count>({queue}).value_or(0) - acked);
  tx.commit({.sync = true});
  return acked;
}

std::string read_body(const store& db, std::uint64_t id) {
  std::string body;
  for (const auto& chunk : db.scan<message_content>(id)) body += chunk.value.view();
  return body;
}

}  // namespace

int main() {
  store db;

  // Ids 9, 10 and 100: as decimal text "10" < "100" < "9"; as tuple integers they sort right.
  publish(db, "orders", 100, "a message long enough for several chunks");
  publish(db, "orders", 9, "nine");
  publish(db, "orders", 10, "ten");
  publish(db, "MESSAGE_COUNT", 1, "a queue named like a literal is just a queue");

  std::printf("orders, in id order:\n");
  std::string order;
  for (const auto& m : db.scan<message_metadata>("orders")) {
    const std::uint64_t id = m.get<"message_id">();
    std::printf("  id %3llu  %-12s  body \"%s\"\n", static_cast<unsigned long long>(id),
                std::string(m.value.view()).c_str(), read_body(db, id).c_str());
    order += std::to_string(id) + " ";
  }
  expect(order == "9 10 100 ", "ids in numeric order");
  expect(read_body(db, 100) == "a message long enough for several chunks", "chunks reassemble");
  expect(db.get<message_count>({"orders"}) == 3, "orders count is 3");
  expect(db.get<message_count>({"MESSAGE_COUNT"}) == 1, "the queue named MESSAGE_COUNT is separate");

  // A snapshot keeps seeing the queue as it is now while messages are acknowledged.
  auto before = db.snapshot();

  // Acknowledge messages 9 and 10 (the two oldest), with their chunks and the count, atomically.
  const std::int64_t acked = acknowledge(db, "orders", 2);

  std::printf("after acknowledging %lld messages: count %lld, snapshot still sees %lld\n",
              static_cast<long long>(acked), static_cast<long long>(*db.get<message_count>({"orders"})),
              static_cast<long long>(ranges::distance(before.scan<message_metadata>("orders"))));
  expect(acked == 2, "two messages acknowledged");
  expect(db.get<message_count>({"orders"}) == 1, "count follows the data");
  expect(ranges::distance(before.scan<message_metadata>("orders")) == 3, "snapshot unchanged");
  expect(!db.contains<message_content>({9, 0}), "chunks erased with the message");

  // The newest message first, and the layout the database records.
  for (const auto& m : db.scan<message_metadata>("orders").reverse().limit(1)) {
    std::printf("newest in orders: %llu\n", static_cast<unsigned long long>(m.get<"message_id">()));
  }
  std::printf("schema fingerprint %016llx\n", static_cast<unsigned long long>(ks::layout<broker>::fingerprint));

  // Two consumers at once: each acknowledges the oldest message of "jobs", one at a time. Since
  // each acknowledgement reads and writes in one transaction, no message is taken twice and the
  // count stays equal to the number of messages left.
  constexpr int jobs = 400;
  for (int i = 0; i < jobs; ++i) publish(db, "jobs", static_cast<std::uint64_t>(1000 + i), "job");
  std::atomic<std::int64_t> taken{0};
  {
    auto consume = [&] {
      for (int i = 0; i < jobs / 2; ++i) taken += acknowledge(db, "jobs", 1);
    };
    std::thread a(consume), b(consume);
    a.join();
    b.join();
  }
  const auto left = ranges::distance(db.scan<message_metadata>("jobs"));
  std::printf("two consumers took %lld of %d jobs; %lld left, count %lld\n", static_cast<long long>(taken.load()),
              jobs, static_cast<long long>(left), static_cast<long long>(db.get<message_count>({"jobs"}).value_or(-1)));
  expect(taken == jobs && left == 0, "every job taken exactly once");
  expect(db.get<message_count>({"jobs"}) == 0, "the count follows the data under two consumers");

  if (failures != 0) return 1;
  std::printf("quickstart: all checks passed\n");
  return 0;
}
