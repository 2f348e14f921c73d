// message_store: WSO2 Message Broker's MessageStore on the fixed schema of
// examples/broker/wso2_schema.hpp, with its invariants checked after every step.
//
//   message_store [--backend memory|leveldb|lmdb] [--path DIR] [--messages N] [--chunk BYTES]
//
// The seed's store wrote each message to five keyspaces and kept the counts by hand (read the
// count, put count + n: wrong under two consumers), split, numbered and reassembled the content
// by hand, and kept no expiry index. Here the count is declared (count_of) and the expiry index
// too (index_of), both written by the store with their records; the content is a chunked value
// (put_chunked/read_chunked); a message's keyspaces that share its id are erased by one
// erase_prefix_all; a destination is read by one grouped scan; and every operation is one
// transaction, so a crash leaves each message whole or absent. The steps:
//   store      N messages (default 300) over three queues, in transactions of 50: metadata (a
//              struct value), content in chunks of --chunk bytes (default 64 KiB; some bodies span
//              several), an expiration time for every third;
//   read       every message's content, compared with what was stored;
//   browse     a queue by id range (scan bounds) and page by page (after + limit);
//   dead-letter  move every 11th message to the dead-letter channel;
//   ack        acknowledge (remove) every 5th message;
//   expire     sweep the messages due by a time, reading only the due part of the expiry index;
//   reopen     (leveldb, lmdb) close and reopen: counts and content intact;
//   purge      empty a queue in bounded transactions; remove another queue entirely;
//   self-test  for each invariant, write a record that breaks it with a raw write (bypassing the
//              operations above), check the checker reports it, and remove it again.
// After every step the program compares the store with its own model (counts, ids, content) and
// runs check_invariants (examples/broker/invariants.hpp). Exit status 0 when everything held, 1
// otherwise, 2 on bad arguments.
#include "broker/invariants.hpp"
#include "broker/message_ops.hpp"
#include "broker/wso2_schema.hpp"
#include "support/example_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace wso2;
using example::expect;

// ---- checks against the model ----
template <class Store>
bool agrees(const Store& db, const model& m, const std::string& step) {
  const int before = example::failure_count();
  std::map<std::string, std::vector<std::uint64_t>> ids;
  for (const auto& [id, msg] : m) ids[msg.destination].push_back(id);
  for (auto&& g : db.template scan<message_metadata>().template group_by<"destination">()) {
    const std::string& d = g.template get<"destination">();
    std::vector<std::uint64_t> listed;
    for (const auto& e : g) listed.push_back(e.template get<"message_id">());
    expect(listed == ids[d], step + ": destination '" + d + "' lists the model's messages in id order");
    expect(db.template get<message_count>({d}).value_or(0) == static_cast<std::int64_t>(ids[d].size()),
           step + ": count of '" + d + "'");
  }
  for (const auto& [d, v] : ids) expect(db.template contains<message_count>({d}), step + ": '" + d + "' has a count");
  for (const auto& [id, msg] : m) {
    if (id % 13 != 0) continue;  // a sample
    expect(read_content(db, id) == std::optional<std::string>(msg.body), step + ": content of " + std::to_string(id));
  }
  return example::failure_count() == before;
}

template <class Store>
bool step_ok(const Store& db, const model& m, const std::string& step) {
  const bool a = agrees(db, m, step);
  const bool b = invariants_hold(db, step.c_str());
  if (!b) ++example::failure_count();
  std::printf("  %-12s %s (%zu messages)\n", step.c_str(), a && b ? "ok" : "FAILED", m.size());
  return a && b;
}

// A raw write of Mirror's key (and value): Mirror has the keyspace's layout with a plain value.
// Written through unsafe_backend() (store::write refuses a count's or index's key), it bypasses
// everything the store maintains, as another program's write would: the damage the checker must
// find.
template <class Mirror>
ks::write_batch raw(bool put, const typename Mirror::key_type& k, const typename Mirror::value_type& v = {}) {
  ks::store<ks::schema<Mirror>, ks::memory_backend> scratch;
  auto b = scratch.batch();
  b.template put<Mirror>(k, v);
  ks::write_batch out;
  if (put) {
    out.put(b.operations()[0].key, b.operations()[0].value);
  } else {
    out.erase(b.operations()[0].key);
  }
  return out;
}
using count_mirror = ks::keyspace<"message_count", std::int64_t, ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
using index_mirror = ks::keyspace<"expiry_index", std::tuple<>, ks::lit<"EXPIRY">, ks::field<"at", millis>,
                                  ks::field<"destination", std::string>, ks::field<"message_id", std::uint64_t>>;

// Each invariant must be able to fail: break it, expect the checker's category, repair it.
template <class Store>
bool self_test(Store& db, const model& m) {
  const int before = example::failure_count();
  const auto expect_reported = [&](const char* what, const char* category, const auto& breaks, const auto& repairs) {
    breaks();
    const auto bad = check_invariants(db);
    const auto hit = std::find_if(bad.begin(), bad.end(), [&](const std::string& l) { return l.rfind(category, 0) == 0; });
    const bool found = hit != bad.end();
    expect(found, std::string("self-test: the checker reports ") + what);
    if (found) std::printf("    %-44s reported: %s\n", what, hit->c_str());
    repairs();
    expect(check_invariants(db).empty(), std::string("self-test: repaired ") + what);
  };
  const auto live = std::find_if(m.begin(), m.end(), [](const auto& p) { return p.second.destination != dead_letter_channel; });
  if (live == m.end()) {
    expect(false, "self-test: the model has a message outside the dead-letter channel");
    return false;
  }
  const std::string d = live->second.destination;
  const std::uint64_t id = live->first;
  const std::int64_t n = db.template get<message_count>({d}).value_or(0);
  expect_reported("a count that differs from its records", "count:",
                  [&] { db.unsafe_backend().write(raw<count_mirror>(true, {d}, n + 1), ks::write_options{}); },
                  [&] { db.unsafe_backend().write(raw<count_mirror>(true, {d}, n), ks::write_options{}); });
  expect_reported("a count of a destination without records", "count:",
                  [&] { db.unsafe_backend().write(raw<count_mirror>(true, {"ghost"}, 2), ks::write_options{}); },
                  [&] { db.unsafe_backend().write(raw<count_mirror>(false, {"ghost"}), ks::write_options{}); });
  expect_reported("a message without its destination record", "message:",
                  [&] { db.template erase<message_destination>({id}); },
                  [&] { db.template put<message_destination>({id}, d); });
  expect_reported("a dead-letter flag outside the channel", "message:",
                  [&] { db.template put<message_dlc_status>({id}, true); },
                  [&] { db.template erase<message_dlc_status>({id}); });
  const std::string body = read_content(db, id).value_or("");
  expect_reported("a message without its content", "message:",
                  [&] { db.template erase_prefix<message_content>(id); },
                  [&] { ks::put_chunked<message_content>(db, {id}, body, 64 * 1024); });
  expect_reported("orphan content chunks", "content:",
                  [&] { db.template put<message_content>({999'999, 0}, ks::bytes("stray")); },
                  [&] { db.template erase_prefix<message_content>(999'999); });
  const millis at = epoch + std::chrono::hours(1000);
  expect_reported("an index entry without its expiration time", "expiry:",
                  [&] { db.unsafe_backend().write(raw<index_mirror>(true, {at, d, id}), ks::write_options{}); },
                  [&] { db.unsafe_backend().write(raw<index_mirror>(false, {at, d, id}), ks::write_options{}); });
  // An expiring message: erase its index entry behind the store's back.
  const auto expiring = std::find_if(m.begin(), m.end(), [](const auto& p) { return p.second.expires.has_value(); });
  if (expiring != m.end()) {
    const auto& [eid, em] = *expiring;
    expect_reported("an expiration time without its index entry", "expiry:",
                    [&] { db.unsafe_backend().write(raw<index_mirror>(false, {*em.expires, em.destination, eid}), ks::write_options{}); },
                    [&] { db.unsafe_backend().write(raw<index_mirror>(true, {*em.expires, em.destination, eid}), ks::write_options{}); });
  } else {
    expect(false, "self-test: the model has an expiring message");
  }
  return example::failure_count() == before;
}

struct run_options {
  std::string backend;
  std::uint64_t messages = 300;
  std::size_t chunk = 64 * 1024;
};

template <class Open>
int run(Open open, const run_options& o) {
  const std::vector<std::string> queues = {"orders", "MESSAGE_COUNT", "eu.orders"};
  model m;
  std::printf("message_store on %s: %llu messages, %zu-byte chunks\n", o.backend.c_str(),
              static_cast<unsigned long long>(o.messages), o.chunk);
  auto db = open();
  bool ok = true;

  // store
  for (const auto& q : queues) db->template put<queue>({q}, {});
  for (std::uint64_t first = 1; first <= o.messages; first += 50) {
    auto tx = db->transaction();
    for (std::uint64_t id = first; id < first + 50 && id <= o.messages; ++id) {
      message msg{queues[id % queues.size()], std::string(), std::nullopt};
      // mostly small bodies; every 25th spans several chunks (and ends mid-chunk)
      msg.body = "body-" + std::to_string(id) + std::string(id % 25 == 0 ? 2 * o.chunk + 17 : id * 3, 'x');
      if (id % 3 == 0) msg.expires = epoch + std::chrono::seconds(id);
      add_message(tx, id, msg, o.chunk);
      m.emplace(id, std::move(msg));
    }
    tx.commit();
  }
  ok &= step_ok(*db, m, "store");

  // read
  for (const auto& [id, msg] : m) expect(read_content(*db, id) == std::optional<std::string>(msg.body), "read " + std::to_string(id));
  expect(!read_content(*db, o.messages + 1), "read of a message that does not exist");
  ok &= step_ok(*db, m, "read");

  // browse by id range and page by page
  {
    std::vector<std::uint64_t> want, got;
    for (const auto& [id, msg] : m) {
      if (msg.destination == "orders" && id >= 10 && id <= 40) want.push_back(id);
    }
    for (const auto& e : db->template scan<message_metadata>("orders").from(10).through(40)) got.push_back(e.template get<"message_id">());
    expect(got == want, "browse 'orders' ids 10..40");
    std::vector<std::uint64_t> paged;
    std::size_t pages = 0;
    for (;;) {
      const std::uint64_t last = paged.empty() ? 0 : paged.back();
      const std::size_t was = paged.size();
      for (const auto& e : db->template scan<message_metadata>("orders").after(last).limit(7)) {
        paged.push_back(e.template get<"message_id">());
      }
      if (paged.size() == was) break;
      ++pages;
    }
    expect(static_cast<std::int64_t>(paged.size()) == db->template get<message_count>({"orders"}).value_or(-1),
           "browse 'orders' 7 at a time lists its count");
    expect(std::is_sorted(paged.begin(), paged.end()), "pages in id order");
    std::printf("    browse: 'orders' ids 10..40: %zu messages; %zu in %zu pages of at most 7\n", got.size(), paged.size(), pages);
  }
  ok &= step_ok(*db, m, "browse");

  // dead-letter
  std::size_t moved = 0;
  for (auto& [id, msg] : m) {
    if (id % 11 != 0) continue;
    moved += move_to_dead_letter(*db, id);
    msg.destination = dead_letter_channel;
    msg.expires.reset();
  }
  std::printf("    dead-letter: %zu moved\n", moved);
  ok &= step_ok(*db, m, "dead-letter");

  // ack
  std::size_t acked = 0;
  for (auto it = m.begin(); it != m.end();) {
    if (it->first % 5 == 0 && it->second.destination != dead_letter_channel) {
      acked += acknowledge(*db, it->first);
      it = m.erase(it);
    } else {
      ++it;
    }
  }
  expect(!acknowledge(*db, o.messages + 1), "ack of a message that does not exist");
  std::printf("    ack: %zu acknowledged\n", acked);
  ok &= step_ok(*db, m, "ack");

  // expire: everything due by the middle of the ids' times
  const millis now = epoch + std::chrono::seconds(o.messages / 2);
  const std::size_t swept = sweep_expired(*db, now, 16);
  std::size_t due = 0;
  std::erase_if(m, [&](const auto& p) { return p.second.expires && *p.second.expires < now && ++due; });
  expect(swept == due, "the sweep removed exactly the due messages");
  std::printf("    expire: %zu swept (batches of 16)\n", swept);
  ok &= step_ok(*db, m, "expire");

  // reopen
  if (o.backend != "memory") {
    db.reset();
    db = open();
    ok &= step_ok(*db, m, "reopen");
  }

  // purge one queue, remove another
  const std::size_t purged = purge(*db, "eu.orders", 16);
  const std::size_t removed = remove_destination(*db, "MESSAGE_COUNT", 16);
  std::size_t want_purged = 0, want_removed = 0;
  std::erase_if(m, [&](const auto& p) {
    if (p.second.destination == "eu.orders") return ++want_purged > 0;
    if (p.second.destination == "MESSAGE_COUNT") return ++want_removed > 0;
    return false;
  });
  expect(purged == want_purged && removed == want_removed, "purge and remove counted their messages");
  expect(db->template contains<queue>({"eu.orders"}) && !db->template contains<queue>({"MESSAGE_COUNT"}),
         "a purged queue stays declared, a removed one does not");
  std::printf("    purge: %zu purged from 'eu.orders', %zu removed with 'MESSAGE_COUNT'\n", purged, removed);
  ok &= step_ok(*db, m, "purge");

  ok &= self_test(*db, m);
  std::printf("  %-12s %s\n", "self-test", ok ? "ok" : "FAILED");
  return ok && example::failure_count() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const example::options cli = example::parse_options(argc, argv);
  run_options o;
  o.backend = cli.backend;
  o.messages = cli.number("messages", o.messages);
  o.chunk = cli.number("chunk", o.chunk);
  if (o.messages < 30 || o.chunk == 0) {
    std::fprintf(stderr, "message_store: --messages must be at least 30 and --chunk positive\n");
    return 2;
  }
  return example::with_backend<broker>(cli, [&](auto open, const std::filesystem::path&) { return run(open, o); });
}
