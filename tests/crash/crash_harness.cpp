// tests/crash/crash_harness.cpp: kills a writer process at random moments and checks that the
// store it wrote is intact after every kill (see docs/reliability.md).
//
//   crash_harness --backend leveldb|lmdb|rocksdb|sqlite --dir <scratch> [--kills N] [--seed S] [--reset-every R]
//                 [--max-delay-ms D] [--fault split|early-ack]                          (driver)
//   crash_harness child --backend B --dir D --ack-fd FD --seed S [--commits K]          (writer)
//
// The writer commits, one after another, atomic batches and read-modify-write transactions over
// four keyspaces that must agree:
//   record  ("R", queue, id)  -> body (bytes, content and length derived from queue and id)
//   index   ("I", id, queue)  -> ()   one per record
//   counter ("C", queue)      -> i64  number of records of the queue, updated in the same commit
//   declared_count ("D", queue) -> i64 the same number, a count_of<record, 1> the store maintains
//   log     ("L", seq)        -> (queue, first id, inserted, erased ids, counter after)
// Commit seq inserts records seq*64 .. seq*64+inserted-1 of one queue and erases some older ones.
// Commits alternate between batch and transaction and between {.sync = true} and {.sync = false}
// (a SIGKILL must lose nothing acknowledged either way: the OS keeps the page cache). After
// commit() returns the writer acknowledges seq (and the LMDB map size) on a pipe.
//
// The driver starts the writer (posix_spawn of this program, so no engine state is shared by a
// fork), SIGKILLs it after a random delay (a fifth of them within the writer's measured start-up
// time: during exec, open and recovery; the others up to --max-delay-ms after it), and then
// reopens the store itself and checks:
//   - the log is exactly seq 1..N with N >= the last acknowledged commit, and at most one past
//     it or the previously verified log (a commit that returned but was not yet acknowledged):
//     every acknowledged commit is present;
//   - replaying the log gives exactly the records present (none partly applied, no lost or
//     extra record), each body intact, the index is a bijection with the records, every counter
//     and declared count equals its queue's record count, and each log entry's "counter after" matches the replay;
//   - the next writer makes progress: at the end a writer runs to completion for 50 commits,
//     all verified, and the run fails if 50 kills in a row saw no new commit.
// Every --reset-every kills the database is deleted and started again (so LMDB's map starts small
// and grows during the run again: the writer starts with a 64 KiB map). Closing line:
//   crash: backend=lmdb kills=200 acknowledged=12345 verified_commits=12400 map_growths=93 seconds=31.2
// KEYSCHEMA_CRASH_KILLS in the environment overrides --kills. Exit status 0 when every check held.
#include "crash_driver.hpp"

#include <keyschema/keyschema.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

const char crash_driver::harness_name[] = "crash_harness";

namespace crash {

using namespace crash_driver;

using record = ks::keyspace<"record", ks::bytes, ks::lit<"R">, ks::field<"queue", std::string>,
                            ks::field<"id", std::uint64_t>>;
using index_entry = ks::keyspace<"index", std::tuple<>, ks::lit<"I">, ks::field<"id", std::uint64_t>,
                                 ks::field<"queue", std::string>>;
using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"C">, ks::field<"queue", std::string>>;
// (queue, first inserted id, inserted count, erased ids as 8-byte big-endian each, counter after)
using log_value = std::tuple<std::string, std::uint64_t, std::uint64_t, ks::bytes, std::int64_t>;
using log_entry = ks::keyspace<"log", log_value, ks::lit<"L">, ks::field<"seq", std::uint64_t>>;
// The same count, declared: maintained by the store in the same atomic write as the records.
using declared_count = ks::keyspace<"declared_count", ks::count_of<record, 1>, ks::lit<"D">, ks::field<"queue", std::string>>;
using crash_schema = ks::schema<record, index_entry, counter, log_entry, declared_count>;

// Queue names include an empty one, a NUL and non-ASCII text.
const std::vector<std::string> queues = {"orders", "", std::string("a\0b", 3), "\xc3\xa9t\xc3\xa9"};
constexpr std::uint64_t ids_per_commit = 64;
constexpr std::size_t queue_soft_limit = 300;  // past it, commits erase more than they insert

std::uint64_t queue_hash(const std::string& q) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : q) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// The body of record (q, id): 16..2063 bytes, so the LMDB map has to grow.
ks::bytes body_of(const std::string& q, std::uint64_t id) {
  const std::uint64_t s = mix(queue_hash(q) ^ mix(id));
  return ks::bytes(random_bytes(16 + s % 2048, s));
}

// The driver's options; --fault names a deliberately broken writer, to show the checker catches
// it (the crash.self_test.* tests): "split" commits a batch's records and index in one write and
// its counter and log in a second; "early-ack" acknowledges before committing. Both pause 2 ms
// inside the broken window so that kills land in it often.
using options = driver_options;

template <class Store>
std::size_t map_size_of(Store& db) {
  if constexpr (requires { db.backend().map_size(); })
    return db.backend().map_size();
  else
    return 0;
}

// --- the writer ---------------------------------------------------------------------------------

struct ack {
  std::uint64_t seq;
  std::uint64_t map_size;
};

template <class Store>
void send_ack(const options& o, std::uint64_t seq, Store& db) {
  crash_driver::send_ack(o.ack_fd, ack{seq, map_size_of(db)});
}

template <class Store>
void run_writer(Store& db, const options& o) {
  std::mt19937_64 rng(o.seed);
  std::uint64_t seq = 0;
  for (const auto& e : db.template scan<log_entry>().reverse().limit(1)) seq = std::get<0>(e.key);
  for (std::uint64_t done = 0; o.commits == 0 || done < o.commits; ++done) {
    ++seq;
    const std::string& q = queues[rng() % queues.size()];
    const std::uint64_t first = seq * ids_per_commit;
    const std::uint64_t inserted = 1 + rng() % 6;
    const bool as_transaction = seq % 2 == 0;
    const ks::write_options wo{.sync = (seq / 2) % 2 == 0};
    auto plan = [&](auto& reader, std::int64_t current) {
      std::size_t erase_n = rng() % 3;
      if (current > static_cast<std::int64_t>(queue_soft_limit)) erase_n += inserted + 2;
      std::vector<std::uint64_t> erased;
      for (const auto& e : reader.template scan<record>(q).limit(erase_n)) erased.push_back(std::get<1>(e.key));
      return erased;
    };
    auto write_all = [&](auto& w, std::int64_t current, const std::vector<std::uint64_t>& erased) {
      for (std::uint64_t k = 0; k < inserted; ++k) {
        w.template put<record>({q, first + k}, body_of(q, first + k));
        w.template put<index_entry>({first + k, q}, {});
      }
      for (const std::uint64_t id : erased) {
        w.template erase<record>({q, id});
        w.template erase<index_entry>({id, q});
      }
      const std::int64_t after = current + static_cast<std::int64_t>(inserted) - static_cast<std::int64_t>(erased.size());
      w.template put<counter>({q}, after);
      w.template put<log_entry>({seq}, log_value{q, first, inserted, ks::bytes(pack_u64s(erased)), after});
    };
    if (as_transaction) {
      auto tx = db.transaction();
      const std::int64_t current = tx.template get<counter>({q}).value_or(0);
      const auto erased = plan(tx, current);
      write_all(tx, current, erased);
      tx.commit(wo);
    } else if (o.fault == "split") {
      const std::int64_t current = db.template get<counter>({q}).value_or(0);
      auto b = db.batch();
      write_all(b, current, {});
      auto first_half = db.batch();
      for (std::uint64_t k = 0; k < inserted; ++k) first_half.template put<record>({q, first + k}, body_of(q, first + k));
      first_half.commit(wo);
      ::usleep(2000);  // widen the window, so that the self-test fails fast
      b.commit(wo);
    } else {
      // A batch reads outside itself: this process is the only writer, so nothing changes between.
      const std::int64_t current = db.template get<counter>({q}).value_or(0);
      const auto erased = plan(db, current);
      auto b = db.batch();
      write_all(b, current, erased);
      if (o.fault == "early-ack") {
        send_ack(o, seq, db);
        ::usleep(2000);  // widen the window, so that the self-test fails fast
      }
      b.commit(wo);
      if (o.fault == "early-ack") continue;
    }
    send_ack(o, seq, db);
  }
}

int child_main(const options& o) {
  try {
    with_store<crash_schema>(o, [&](auto& db) {
      run_writer(db, o);
      return 0;
    });
  } catch (const std::exception& e) {
    die(std::string("writer: ") + e.what());
  }
  return 0;
}

// --- the checker --------------------------------------------------------------------------------

// The driver's replay of the log: what the database must hold after commit `seq`.
struct model {
  std::uint64_t seq = 0;
  std::map<std::string, std::set<std::uint64_t>> records;  // queue -> ids
};

struct check_result {
  std::uint64_t last_seq = 0;
  std::size_t records = 0;
};

template <class Store>
check_result check_store(Store& db, model& m, std::uint64_t acked) {
  // The log: 1..N, contiguous; entries past the model's seq are replayed into it. Each writer
  // may leave one commit that returned but was not acknowledged, so N is at most one past the
  // larger of the last acknowledged commit and the log verified before this writer started.
  const std::uint64_t base = std::max(acked, m.seq);
  std::uint64_t expect = 1;
  for (const auto& e : db.template scan<log_entry>()) {
    const std::uint64_t seq = std::get<0>(e.key);
    if (seq != expect) die("log holds seq " + std::to_string(seq) + " where " + std::to_string(expect) + " was expected");
    ++expect;
    if (seq <= m.seq) continue;
    const auto& [q, first, inserted, erased_raw, after] = e.value;
    auto& ids = m.records[q];
    for (std::uint64_t k = 0; k < inserted; ++k)
      if (!ids.insert(first + k).second) die("commit " + std::to_string(seq) + " inserts an id twice");
    for (const std::uint64_t id : unpack_u64s(erased_raw.view(), "erased ids"))
      if (ids.erase(id) != 1) die("commit " + std::to_string(seq) + " erases a record that did not exist");
    if (static_cast<std::int64_t>(ids.size()) != after)
      die("commit " + std::to_string(seq) + " logged counter " + std::to_string(after) + " but the replay has " +
          std::to_string(ids.size()));
    m.seq = seq;
  }
  const std::uint64_t n = expect - 1;
  if (n < acked) die("acknowledged commit " + std::to_string(acked) + " is missing: the log ends at " + std::to_string(n));
  if (n > base + 1)
    die("the log ends at " + std::to_string(n) + ", more than one commit past " + std::to_string(base) +
        " (the last acknowledged or previously verified commit)");
  if (m.seq != n) die("the log shrank below an already verified commit");

  // Records: exactly the replay, bodies intact.
  std::map<std::string, std::set<std::uint64_t>> seen;
  std::size_t total = 0;
  for (const auto& e : db.template scan<record>()) {
    const auto& [q, id] = e.key;
    if (!(e.value == body_of(q, id))) die("record (" + q + ", " + std::to_string(id) + ") has a damaged body");
    if (id / ids_per_commit > n) die("record " + std::to_string(id) + " of a commit not in the log (partly applied)");
    seen[q].insert(id);
    ++total;
  }
  for (const auto& [q, ids] : m.records) {
    if (ids.empty()) continue;
    const auto it = seen.find(q);
    if (it == seen.end() || it->second != ids)
      die("records of queue '" + q + "' differ from the log's replay (a commit partly applied or lost)");
  }
  for (const auto& [q, ids] : seen)
    if (m.records[q] != ids) die("queue '" + q + "' holds records the log does not explain");

  // Index: a bijection with the records.
  std::size_t index_count = 0;
  for (const auto& e : db.template scan<index_entry>()) {
    const auto& [id, q] = e.key;
    if (!m.records[q].contains(id)) die("index entry " + std::to_string(id) + " without its record");
    ++index_count;
  }
  if (index_count != total)
    die(std::to_string(total) + " records but " + std::to_string(index_count) + " index entries");

  // Counters: each equals its queue's record count.
  for (const auto& q : queues) {
    const auto c = db.template get<counter>({q});
    const auto want = static_cast<std::int64_t>(m.records[q].size());
    if (c.value_or(0) != want)
      die("counter of queue '" + q + "' is " + (c ? std::to_string(*c) : "absent") + ", it holds " + std::to_string(want));
    // The declared count (count_of): equal too, and erased rather than 0.
    const auto d = db.template get<declared_count>({q});
    if (d.value_or(0) != want || (d && *d == 0))
      die("declared count of queue '" + q + "' is " + (d ? std::to_string(*d) : "absent") + ", it holds " +
          std::to_string(want));
  }
  return {n, total};
}

// --- the driver ---------------------------------------------------------------------------------

// What the driver learnt from the acknowledgements and the checks (kill_run's harness state).
struct driver_state {
  using ack = crash::ack;
  static constexpr const char* unit = "commit";

  explicit driver_state(const options& opts) : o(opts) {}

  const options& o;
  std::uint64_t acked = 0;  // highest acknowledged seq since the last reset
  std::uint64_t acks = 0;   // acknowledgements received in total
  std::size_t map_size = 0;
  std::uint64_t map_growths = 0;
  model m;
  std::uint64_t verified = 0;  // commits verified before the last reset

  void absorb(const ack& a) {
    if (a.seq <= acked) die("acknowledgements out of order");
    acked = a.seq;
    ++acks;
    if (map_size != 0 && a.map_size > map_size) ++map_growths;
    map_size = a.map_size;
  }
  std::vector<std::string> child_args() const { return {}; }
  void reset() {
    verified += m.seq;
    m = model{};
    acked = 0;
    map_size = 0;
  }
  std::uint64_t progress() const { return m.seq; }
  bool progressed(std::uint64_t before) const { return m.seq > before; }
  check_result verify() {
    return with_store<crash_schema>(o, [&](auto& db) { return check_store(db, m, acked); });
  }
};

int driver_main(options o) {
  kill_run run(o, "crash");
  driver_state st{o};
  run.kill_writers(st);

  // The next writer makes progress: 50 commits, run to completion.
  const std::uint64_t target = st.m.seq + 50;
  run.run_final_writer(st, 50);
  if (st.acked != target) die("the final writer acknowledged up to " + std::to_string(st.acked) + ", not " + std::to_string(target));
  const check_result r = st.verify();
  if (r.last_seq != target) die("after the final writer the log ends at " + std::to_string(r.last_seq));
  st.verified += st.m.seq;

  run.print_closing("acknowledged=" + std::to_string(st.acks) + " verified_commits=" + std::to_string(st.verified) +
                    " map_growths=" + std::to_string(st.map_growths) + " records_at_end=" + std::to_string(r.records));
  return 0;
}

options parse(int argc, char** argv, bool& child) {
  options o;
  o.kills = 200;
  child = parse_options(argc, argv, o, [](std::string_view, const std::string&) { return false; });
  return o;
}

}  // namespace crash

int main(int argc, char** argv) {
  return crash_driver::run_main(argc, argv, crash::parse, crash::child_main, crash::driver_main);
}
