// tests/crash/broker_crash_harness.cpp: the broker crash harness. Kills a message-broker writer
// process at random moments and checks, after every kill, that the broker store it wrote is intact
// (see docs/reliability.md, "Broker crash harness").
//
//   broker_crash_harness --backend leveldb|lmdb|rocksdb|sqlite --dir <scratch> [--kills N] [--seed S]
//                        [--reset-every R] [--max-delay-ms D] [--fault F]                         (driver)
//   broker_crash_harness child --backend B --dir D --ack-fd FD --seed S [--commits K] [--hint 1|2] (writer)
//     (--hint: the schema version to try opening first, the one the driver last verified)
//
// The store is a broker's (examples/broker/wso2_schema.hpp), in two schema versions the writer
// migrates between (ks::migrate) every few dozen operations, back and forth:
//   metadata    ("DESTINATION", dest, "MESSAGE_METADATA", id) -> {header, content_length}; in v2
//               also {priority} (id % 7: the transform derives it, the migration back drops it)
//   count       ("MESSAGE_COUNT", dest): count_of<metadata, 1>, maintained by the store
//   content     ("MESSAGE", id, chunk, "MESSAGE_CONTENT"): a chunked value (put_chunked,
//               read_chunked, erase_chunked), 0 to 3,100 bytes in chunks of 16 to 128 bytes
//   destination ("MESSAGE", id, "DESTINATION_NAME") -> dest; dead-letter flag ("MESSAGE", id, "DLC_STATUS")
//   expiration  ("DESTINATION", dest, "MESSAGE_EXPIRATION_TIME", id) -> time, and its index
//               ("EXPIRY", time, dest, id): index_of, swept by ks::sweep (a migration derives it again)
//   last_id     ("LAST_ID") -> u64: the id sequence, taken with add
//   dtx_dequeue ("XID", xid, "DEQUEUE", id) -> dest: a message a prepared XA branch dequeues
//   xa_done     ("XDONE", xid): written by a branch's own (prepared) writes, so present once it committed
//   log         ("LOG", op, part) -> what operation op did, written in the same commit as its effects
// Operations (each one logged; a log entry is committed atomically with what it describes):
//   publish     1-3 messages in one transaction: ids by add to last_id, metadata, content, expiry
//   ack         a message removed whole (metadata, content by erase_chunked, expiry and index entry)
//   rewrite     a message's content replaced (longer or shorter, another chunk size), its metadata too
//   dead        a message moved to the dead-letter channel (expiry and index entry dropped)
//   sweep       ks::sweep of the expiry index, in batches of 3; its callback removes each message
//               and logs it through the batch's transaction
//   XA begin    one transaction reserves the branch's ids (add) and writes its dequeue records (the
//               log entry holds the branch's plan); then the branch (enqueues, dequeues, the erase
//               of its dequeue records, its xa_done flag) is ks::prepare'd under xid "xa-<op>"
//   XA commit   ks::commit_prepared, then a marker op erases xa_done (so a commit is placed in
//               the log, and a second application would show as xa_done back)
//   XA rollback ks::rollback_prepared, then a clean op erases the branch's dequeue records
//   migrate     all branches finished first, the store closed, ks::migrate on the backend in
//               batches of 8 entries, the store reopened with the other schema
// At start a writer finds the schema (opening v1, then v2; when both refuse the database as an
// unfinished migration, it resumes it: migrate<v1, v2>, and migrate<v2, v1> when that one refuses),
// then recovers: a marker for a committed branch without one, a clean op for the dequeue records
// of branches not prepared (ks::prepared lists them). After each commit the writer acknowledges it
// on a pipe (also prepare, commit_prepared, rollback_prepared and migrate, with an intent message
// before the rollback and the migration).
//
// The driver (posix_spawn of this program) SIGKILLs the writer after a random delay (a fifth
// within its measured start-up time, the others up to --max-delay-ms after it), then opens the
// store itself and checks:
//   - schema: the store opens with the version of the last acknowledged migration, or, while a
//     migration was announced, with its old or new version; when neither opens it, both must
//     refuse it as an unfinished migration that was announced (never half visible), and the
//     next writer must resume it;
//   - log: ops 1..N without a hole, parts of an op from 0 without a hole, N >= the last
//     acknowledged op, at most one op past it or the previously verified log; its replay is
//     valid (an ack, sweep or dead-lettering of an existing message, none a prepared branch
//     dequeues; a sweep only of due messages and, once complete, none due left; ids handed out
//     1, 2, 3 ... each once);
//   - records: exactly the replay's messages, each with its metadata (header, length, priority in
//     v2), destination, dead-letter flag iff in the dead-letter channel, content readable whole
//     by read_chunked and byte-exact, expiration and index entry iff it has an expiry; no chunk,
//     destination, flag, expiration or index entry of a message that does not exist; each count
//     equal to its destination's messages (none for an empty one); last_id equal to the last id
//     handed out; the dequeue records exactly the replay's (at most one branch's left over for
//     recovery);
//   - XA: every acknowledged prepare listed by ks::prepared or committed or being rolled back;
//     every acknowledged commit applied; every acknowledged rollback neither listed nor applied;
//     a listed branch not applied; a committed branch applied exactly once (its xa_done flag and
//     its marker never both); at most one committed branch without its marker;
//   - progress: 50 kills in a row without a new op fail the run; at the end a writer runs 50 ops
//     to completion, all verified.
// Every --reset-every kills the database is deleted and started again. Closing line (ops
// acknowledged and verified by replay; migrations acknowledged; checks that found the database
// mid-migration; XA commits and rollbacks acknowledged; prepared branches, and committed ones
// without their marker, found by the checks and left to the next writer's recovery):
//   broker_crash: backend=lmdb kills=60 early_kills=... resets=... acknowledged_ops=... verified_ops=...
//     migrations=... checks_mid_migration=... xa_commits=... xa_rollbacks=... prepared_found=...
//     committed_unmarked_found=... messages_at_end=... startup_ms=... seconds=...
// KEYSCHEMA_CRASH_KILLS in the environment overrides --kills. Exit status 0 when every check held.
//
// --fault (the broker_crash.self_test.* tests; each pauses 2 ms inside the broken window):
//   split      a publish commits its metadata and log entry, then its content in a second commit;
//   orphan     an ack removes the message, then its content chunks in a second commit;
//   early-ack  every op is acknowledged before it is committed (sweeps excepted);
//   prepare-early-ack  a branch's prepare is acknowledged before ks::prepare;
//   migrate-early-ack  a migration is acknowledged as done before ks::migrate runs.
// Each must make the run fail (the checker can fail on the records, the log, XA and migrations).
#include "crash_driver.hpp"

#include <keyschema/chunked.hpp>
#include <keyschema/keyschema.hpp>
#include <keyschema/migrate.hpp>
#include <keyschema/prepared.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

const char crash_driver::harness_name[] = "broker_crash_harness";

namespace bcrash {

namespace ks = keyschema;
using millis = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;

struct metadata_v1 {
  ks::bytes header;
  std::uint64_t content_length = 0;
};
struct metadata_v2 {
  ks::bytes header;
  std::uint64_t content_length = 0;
  std::uint32_t priority = 0;
};

}  // namespace bcrash

template <>
struct keyschema::value_fields<bcrash::metadata_v1>
    : keyschema::members<keyschema::member<"header", &bcrash::metadata_v1::header>,
                         keyschema::member<"content_length", &bcrash::metadata_v1::content_length>> {};
template <>
struct keyschema::value_fields<bcrash::metadata_v2>
    : keyschema::members<keyschema::member<"header", &bcrash::metadata_v2::header>,
                         keyschema::member<"content_length", &bcrash::metadata_v2::content_length>,
                         keyschema::member<"priority", &bcrash::metadata_v2::priority>> {};

namespace bcrash {

using namespace crash_driver;

// --- the schemas ----------------------------------------------------------------------------------

using content = ks::keyspace<"message_content", ks::bytes, ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>,
                             ks::field<"offset", std::uint32_t>, ks::lit<"MESSAGE_CONTENT">>;
using destination = ks::keyspace<"message_destination", std::string, ks::lit<"MESSAGE">,
                                 ks::field<"message_id", std::uint64_t>, ks::lit<"DESTINATION_NAME">>;
using dlc_status = ks::keyspace<"message_dlc_status", bool, ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>,
                                ks::lit<"DLC_STATUS">>;
template <class Meta>
using metadata_ks = ks::keyspace<"message_metadata", Meta, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                                 ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
template <class Meta>
using count_ks = ks::keyspace<"message_count", ks::count_of<metadata_ks<Meta>, 1>, ks::lit<"MESSAGE_COUNT">,
                              ks::field<"destination", std::string>>;
using expiration = ks::keyspace<"message_expiration", millis, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                                ks::lit<"MESSAGE_EXPIRATION_TIME">, ks::field<"message_id", std::uint64_t>>;
struct by_expiry {
  std::optional<std::tuple<millis, std::string, std::uint64_t>> operator()(const expiration::key_type& k,
                                                                           const millis& at) const {
    return std::tuple<millis, std::string, std::uint64_t>(at, std::get<0>(k), std::get<1>(k));
  }
};
using index_ks = ks::keyspace<"expiry_index", ks::index_of<expiration, by_expiry>, ks::lit<"EXPIRY">,
                              ks::field<"at", millis>, ks::field<"destination", std::string>,
                              ks::field<"message_id", std::uint64_t>>;
using last_id = ks::keyspace<"last_id", std::uint64_t, ks::lit<"LAST_ID">>;
using dtx_dequeue = ks::keyspace<"dtx_dequeue", std::string, ks::lit<"XID">, ks::field<"xid", ks::bytes>, ks::lit<"DEQUEUE">,
                                 ks::field<"message_id", std::uint64_t>>;
using xa_done = ks::keyspace<"xa_done", std::tuple<>, ks::lit<"XDONE">, ks::field<"xid", std::uint64_t>>;
// (kind, a, b, c, extra): see op_kind.
using log_value = std::tuple<std::uint8_t, std::uint64_t, std::uint64_t, std::uint64_t, ks::bytes>;
using oplog = ks::keyspace<"oplog", log_value, ks::lit<"LOG">, ks::field<"op", std::uint64_t>, ks::field<"part", std::uint32_t>>;

template <int V>
struct version;
template <>
struct version<1> {
  using meta = metadata_v1;
  using index = index_ks;
  static meta make(ks::bytes header, std::uint64_t length, std::uint64_t) { return {std::move(header), length}; }
};
template <>
struct version<2> {
  using meta = metadata_v2;
  using index = index_ks;
  static meta make(ks::bytes header, std::uint64_t length, std::uint64_t id) {
    return {std::move(header), length, static_cast<std::uint32_t>(id % 7)};
  }
};
template <int V>
using meta_ks = metadata_ks<typename version<V>::meta>;
template <int V>
using schema_of = ks::schema<content, destination, dlc_status, meta_ks<V>, count_ks<typename version<V>::meta>, expiration,
                             typename version<V>::index, last_id, dtx_dequeue, xa_done, oplog>;

enum op_kind : std::uint8_t {
  k_publish = 1,  // a = id, b = destination index, c = expiry (ms after epoch, 0: none)
  k_ack = 2,      // a = id
  k_rewrite = 3,  // a = id, b = the new content version
  k_dead = 4,     // a = id
  k_sweep = 5,    // a = id, b = now (ms after epoch)
  k_reserve = 6,  // a = first id, b = ids reserved; extra: the branch's plan (xid = this op)
  k_marker = 7,   // a = xid: the branch committed just before
  k_clean = 8,    // a = xid: its dequeue records erased
};

const std::vector<std::string> destinations = {"orders", "", std::string("a\0b", 3), "\xc3\xa9t\xc3\xa9",
                                               "DeadLetterChannel"};
constexpr std::uint64_t dead_letter = 4;
const millis epoch{std::chrono::milliseconds(1'700'000'000'000)};
constexpr std::size_t soft_limit = 120;  // past it, publishes give way to acks

// The content of message id at version v: empty, short, or long enough for dozens of chunks.
std::string body_of(std::uint64_t id, std::uint64_t v) {
  const std::uint64_t s = mix(id * 1000003 + v);
  return random_bytes(s % 8 == 0 ? 0 : s % 8 == 1 ? 700 + (s >> 8) % 2400 : (s >> 8) % 400, s);
}
std::size_t chunk_of(std::uint64_t id, std::uint64_t v) { return std::size_t{16} << (mix(id ^ (v << 40)) % 4); }
std::string header_of(std::uint64_t id, std::uint64_t v) { return "hdr-" + std::to_string(id) + "-" + std::to_string(v); }
std::string xid_text(std::uint64_t xid) { return "xa-" + std::to_string(xid); }
std::optional<std::uint64_t> xid_number(std::string_view s) {
  if (s.size() < 4 || s.substr(0, 3) != "xa-") return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s.substr(3)) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

// A branch's plan, as its reserve op logs it: enqueues (id, destination, expiry), dequeues (id).
struct plan {
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> enqueue;
  std::vector<std::uint64_t> dequeue;
};
std::string pack_plan(const plan& p) {
  std::vector<std::uint64_t> v{p.enqueue.size()};
  for (const auto& [id, d, e] : p.enqueue) v.insert(v.end(), {id, d, e});
  v.push_back(p.dequeue.size());
  v.insert(v.end(), p.dequeue.begin(), p.dequeue.end());
  return pack_u64s(v);
}
plan unpack_plan(std::string_view s) {
  const std::vector<std::uint64_t> v = unpack_u64s(s, "a packed list");
  plan p;
  std::size_t i = 0;
  auto next = [&] {
    if (i >= v.size()) die("a reserve op's plan is cut short");
    return v[i++];
  };
  for (std::uint64_t n = next(); n > 0; --n) {
    const std::uint64_t id = next(), d = next(), e = next();
    p.enqueue.emplace_back(id, d, e);
  }
  for (std::uint64_t n = next(); n > 0; --n) p.dequeue.push_back(next());
  if (i != v.size()) die("a reserve op's plan has trailing values");
  return p;
}

// The driver's options and the writer's schema hint; --fault: see the top of this file.
struct options : driver_options {
  int hint = 1;  // child: the schema version to try first
};

// fn(store) with the store of schema version V opened on o.dir.
template <int V, class Fn>
auto with_store(const options& o, Fn&& fn) {
  return crash_driver::with_store<schema_of<V>>(o, fn);
}

// ks::migrate<From, To> on the backend of o.dir (no store open), in batches of 8 entries.
template <int From, int To>
ks::migrate_result migrate_db(const options& o) {
  using old_meta = meta_ks<From>;
  using new_meta = meta_ks<To>;
  auto step = ks::transform<old_meta>([](const ks::entry<old_meta>& e, ks::migration_writer<schema_of<To>>& out) {
    const std::uint64_t id = e.template get<"message_id">();
    out.template put<new_meta>({e.template get<"destination">(), id},
                               version<To>::make(e.value.header, e.value.content_length, id));
  });
  const ks::migrate_options mo{.batch_entries = 8};
  return with_engine(o, [&]<class Backend>(const auto&... engine_options) {
    Backend b(o.dir, engine_options...);
    return ks::migrate<schema_of<From>, schema_of<To>>(b, mo, step);
  });
}

// --- acknowledgements -------------------------------------------------------------------------------

enum ack_kind : std::uint32_t {
  a_op = 1,           // a = op committed
  a_prepared = 2,     // a = xid
  a_committed = 3,    // a = xid (commit_prepared returned true)
  a_rb_intent = 4,    // a = xid (rollback_prepared is about to be called)
  a_rolled_back = 5,  // a = xid
  a_mig_intent = 6,   // a = the version migrated to (ks::migrate is about to be called)
  a_migrated = 7,     // a = the version migrated to (ks::migrate returned)
  a_recovered = 8,    // a = the last op in the log after the writer's recovery
};
struct ack {
  std::uint32_t kind;
  std::uint32_t pad;
  std::uint64_t a;
};

void send(const options& o, ack_kind k, std::uint64_t a) {
  send_ack(o.ack_fd, ack{k, 0, a});
}

// --- the writer -------------------------------------------------------------------------------------

// Message operations into a transaction (examples/broker/message_ops.hpp, with erase_chunked).
template <int V, class Tx>
void add_message(Tx& tx, std::uint64_t id, std::uint64_t dest, std::uint64_t ver, std::uint64_t expiry) {
  const std::string& d = destinations[dest];
  const std::string body = body_of(id, ver);
  tx.template put<meta_ks<V>>({d, id}, version<V>::make(ks::bytes(header_of(id, ver)), body.size(), id));
  tx.template put<destination>({id}, d);
  ks::put_chunked<content>(tx, {id}, body, chunk_of(id, ver));
  if (expiry != 0) tx.template put<expiration>({d, id}, epoch + std::chrono::milliseconds(expiry));
}
template <int V, class Tx>
void remove_message(Tx& tx, const std::string& d, std::uint64_t id, bool with_content = true) {
  tx.template erase<expiration>({d, id});  // and its index entry
  tx.template erase<meta_ks<V>>({d, id});  // and its count
  if (with_content) ks::erase_chunked<content>(tx, {id});
  tx.template erase<destination>({id});
  tx.template erase<dlc_status>({id});
}

template <int V, class Store>
struct writer {
  Store& db;
  const options& o;
  std::mt19937_64& rng;
  std::uint64_t next_op = 1;
  std::vector<std::uint64_t> listed;  // prepared branches

  ks::write_options wo() const { return {.sync = (next_op / 2) % 2 == 0}; }

  // Acknowledges op next_op (after commit, or before it with --fault early-ack) and moves on.
  template <class Commit>
  void commit_op(Commit&& commit) {
    if (o.fault == "early-ack") {
      send(o, a_op, next_op);
      ::usleep(2000);
      commit();
    } else {
      commit();
      send(o, a_op, next_op);
    }
    ++next_op;
  }

  std::set<std::uint64_t> dequeued(auto& tx) {
    std::set<std::uint64_t> ids;
    for (const auto& e : tx.template scan<dtx_dequeue>().keys_only()) ids.insert(e.template get<"message_id">());
    return ids;
  }

  // A message of a random destination that no branch dequeues (and, if asked, without expiry or
  // outside the dead-letter channel): (destination, id), or nothing.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> pick(auto& tx, bool no_expiry, bool not_dead) {
    const std::set<std::uint64_t> busy = dequeued(tx);
    const std::uint64_t start = rng() % destinations.size();
    for (std::uint64_t k = 0; k < destinations.size(); ++k) {
      const std::uint64_t d = (start + k) % destinations.size();
      if (not_dead && d == dead_letter) continue;
      std::vector<std::uint64_t> ids;
      for (const auto& e : tx.template scan<meta_ks<V>>(destinations[d]).keys_only().limit(6)) {
        const std::uint64_t id = e.template get<"message_id">();
        if (busy.contains(id)) continue;
        if (no_expiry && tx.template contains<expiration>({destinations[d], id})) continue;
        ids.push_back(id);
      }
      if (!ids.empty()) return std::pair{d, ids[rng() % ids.size()]};
    }
    return std::nullopt;
  }

  std::int64_t total() {
    std::int64_t n = 0;
    for (const auto& e : db.template scan<count_ks<typename version<V>::meta>>()) n += e.value;
    return n;
  }

  void marker(std::uint64_t xid) {
    auto tx = db.transaction();
    tx.template erase<xa_done>({xid});
    tx.template put<oplog>({next_op, 0}, log_value{k_marker, xid, 0, 0, {}});
    commit_op([&] { tx.commit(wo()); });
  }
  void clean(std::uint64_t xid) {
    auto tx = db.transaction();
    tx.template erase_prefix<dtx_dequeue>(ks::bytes(xid_text(xid)));
    tx.template put<oplog>({next_op, 0}, log_value{k_clean, xid, 0, 0, {}});
    commit_op([&] { tx.commit(wo()); });
  }

  // After a start or a migration: the marker of a committed branch without one, the dequeue
  // records of branches that are not prepared erased, the prepared branches listed.
  void recover() {
    for (const auto& e : db.template scan<oplog>().reverse().limit(1)) next_op = std::get<0>(e.key) + 1;
    std::vector<std::uint64_t> done;
    for (const auto& e : db.template scan<xa_done>().keys_only()) done.push_back(e.template get<"xid">());
    for (const std::uint64_t xid : done) marker(xid);
    listed.clear();
    for (const std::string& x : ks::prepared(db)) {
      const auto n = xid_number(x);
      if (!n) die("writer: ks::prepared lists xid '" + x + "', which this writer never uses");
      listed.push_back(*n);
    }
    std::set<std::uint64_t> orphans;
    for (const auto& e : db.template scan<dtx_dequeue>().keys_only()) {
      const auto n = xid_number(e.template get<"xid">().view());
      if (!n) die("writer: a dequeue record of an xid this writer never uses");
      if (std::find(listed.begin(), listed.end(), *n) == listed.end()) orphans.insert(*n);
    }
    for (const std::uint64_t xid : orphans) clean(xid);
    send(o, a_recovered, next_op - 1);
  }

  void publish() {
    const std::uint64_t k = 1 + rng() % 3;
    auto tx = db.transaction();
    tx.template add<last_id>({}, static_cast<std::int64_t>(k));
    const std::uint64_t last = tx.template get<last_id>({}).value_or(0);
    for (std::uint64_t i = 0; i < k; ++i) {
      const std::uint64_t id = last - k + 1 + i, d = rng() % dead_letter;
      const std::uint64_t expiry = rng() % 3 == 0 ? 0 : next_op * 10 + 50 + rng() % 1500;
      if (o.fault == "split") {  // the content in a second commit: a message without content meanwhile
        const std::string& dn = destinations[d];
        const std::string body = body_of(id, 0);
        tx.template put<meta_ks<V>>({dn, id}, version<V>::make(ks::bytes(header_of(id, 0)), body.size(), id));
        tx.template put<destination>({id}, dn);
        if (expiry != 0) tx.template put<expiration>({dn, id}, epoch + std::chrono::milliseconds(expiry));
      } else {
        add_message<V>(tx, id, d, 0, expiry);
      }
      tx.template put<oplog>({next_op, static_cast<std::uint32_t>(i)}, log_value{k_publish, id, d, expiry, {}});
    }
    commit_op([&] {
      tx.commit(wo());
      if (o.fault == "split") {
        ::usleep(2000);
        auto tx2 = db.transaction();
        for (std::uint64_t i = 0; i < k; ++i) ks::put_chunked<content>(tx2, {last - k + 1 + i}, body_of(last - k + 1 + i, 0), 64);
        tx2.commit(wo());
      }
    });
  }

  bool acknowledge() {
    auto tx = db.transaction();
    const auto p = pick(tx, false, false);
    if (!p) return false;
    const auto [d, id] = *p;
    remove_message<V>(tx, destinations[d], id, o.fault != "orphan");
    tx.template put<oplog>({next_op, 0}, log_value{k_ack, id, 0, 0, {}});
    commit_op([&, id = id] {
      tx.commit(wo());
      if (o.fault == "orphan") {  // the content in a second commit: orphan chunks meanwhile
        ::usleep(2000);
        ks::erase_chunked<content>(db, {id});
      }
    });
    return true;
  }

  bool rewrite() {
    auto tx = db.transaction();
    const auto p = pick(tx, false, false);
    if (!p) return false;
    const auto [d, id] = *p;
    const auto m = tx.template get<meta_ks<V>>({destinations[d], id});
    const std::string h(m->header.view());
    const std::uint64_t ver = std::stoull(h.substr(h.rfind('-') + 1)) + 1;
    const std::string body = body_of(id, ver);
    tx.template put<meta_ks<V>>({destinations[d], id}, version<V>::make(ks::bytes(header_of(id, ver)), body.size(), id));
    ks::put_chunked<content>(tx, {id}, body, chunk_of(id, ver));
    tx.template put<oplog>({next_op, 0}, log_value{k_rewrite, id, ver, 0, {}});
    commit_op([&] { tx.commit(wo()); });
    return true;
  }

  bool dead() {
    auto tx = db.transaction();
    const auto p = pick(tx, false, true);
    if (!p) return false;
    const auto [d, id] = *p;
    const auto m = tx.template get<meta_ks<V>>({destinations[d], id});
    tx.template erase<expiration>({destinations[d], id});
    tx.template erase<meta_ks<V>>({destinations[d], id});
    tx.template put<meta_ks<V>>({destinations[dead_letter], id}, *m);
    tx.template put<destination>({id}, destinations[dead_letter]);
    tx.template put<dlc_status>({id}, true);
    tx.template put<oplog>({next_op, 0}, log_value{k_dead, id, 0, 0, {}});
    commit_op([&] { tx.commit(wo()); });
    return true;
  }

  bool sweep() {
    const std::uint64_t now = next_op * 10;
    std::uint32_t part = 0;
    const std::uint64_t op = next_op;
    auto run = [&] {
      ks::sweep<typename version<V>::index>(
          db, epoch + std::chrono::milliseconds(now), 3,
          [&](auto& tx, const expiration::key_type& k, const millis&) {
            remove_message<V>(tx, std::get<0>(k), std::get<1>(k));
            tx.template put<oplog>({op, part++}, log_value{k_sweep, std::get<1>(k), now, 0, {}});
          },
          wo());
    };
    run();  // acknowledged after it ran, also with --fault early-ack (an empty sweep logs nothing)
    if (part == 0) return false;
    send(o, a_op, next_op);
    ++next_op;
    return true;
  }

  bool xa_begin() {
    const std::uint64_t xid = next_op;
    const std::string xs = xid_text(xid);
    plan pl;
    auto tx = db.transaction();
    const std::uint64_t k = rng() % 3;
    std::uint64_t first = 0;
    if (k > 0) {
      tx.template add<last_id>({}, static_cast<std::int64_t>(k));
      first = tx.template get<last_id>({}).value_or(0) - k + 1;
      for (std::uint64_t i = 0; i < k; ++i) {
        const std::uint64_t expiry = rng() % 2 == 0 ? 0 : next_op * 10 + 50 + rng() % 1500;
        pl.enqueue.emplace_back(first + i, rng() % dead_letter, expiry);
      }
    }
    for (std::uint64_t n = rng() % 3; n > 0; --n) {
      const auto p = pick(tx, true, false);
      if (!p || std::find(pl.dequeue.begin(), pl.dequeue.end(), p->second) != pl.dequeue.end()) continue;
      pl.dequeue.push_back(p->second);
      tx.template put<dtx_dequeue>({ks::bytes(xs), p->second}, destinations[p->first]);
    }
    if (pl.enqueue.empty() && pl.dequeue.empty()) return false;
    tx.template put<oplog>({next_op, 0}, log_value{k_reserve, first, k, 0, ks::bytes(pack_plan(pl))});
    commit_op([&] { tx.commit(wo()); });
    // The branch: its enqueues and dequeues, the erase of its dequeue records and its flag, prepared.
    auto b = db.transaction();
    for (const auto& [id, d, e] : pl.enqueue) add_message<V>(b, id, d, 0, e);
    for (const std::uint64_t id : pl.dequeue) {
      remove_message<V>(b, *b.template get<dtx_dequeue>({ks::bytes(xs), id}), id);
      b.template erase<dtx_dequeue>({ks::bytes(xs), id});
    }
    b.template put<xa_done>({xid}, {});
    if (o.fault == "prepare-early-ack") {
      send(o, a_prepared, xid);
      ::usleep(2000);
      ks::prepare(b, xs, wo());
    } else {
      ks::prepare(b, xs, wo());
      send(o, a_prepared, xid);
    }
    listed.push_back(xid);
    return true;
  }

  void xa_finish(std::size_t which, bool commit) {
    const std::uint64_t xid = listed[which];
    listed.erase(listed.begin() + static_cast<std::ptrdiff_t>(which));
    if (commit) {
      if (!ks::commit_prepared(db, xid_text(xid), wo())) die("writer: commit_prepared found no branch " + xid_text(xid));
      send(o, a_committed, xid);
      marker(xid);
    } else {
      send(o, a_rb_intent, xid);
      if (!ks::rollback_prepared(db, xid_text(xid), wo())) die("writer: rollback_prepared found no branch " + xid_text(xid));
      send(o, a_rolled_back, xid);
      clean(xid);
    }
  }

  // Runs ops until `left` reaches 0 (returns false) or a migration is due (returns true, with
  // every branch finished).
  bool run(std::uint64_t& left, bool counted) {
    recover();
    for (;;) {
      if (counted && left == 0) return false;
      const std::uint64_t r = rng() % 100;
      bool did = false;
      if (r < 3) {
        while (!listed.empty()) xa_finish(0, rng() % 3 != 0);
        return true;
      } else if (r < 33) {
        if (total() > static_cast<std::int64_t>(soft_limit)) did = acknowledge();
        else {
          publish();
          did = true;
        }
      } else if (r < 48) {
        did = acknowledge();
      } else if (r < 56) {
        did = rewrite();
      } else if (r < 61) {
        did = dead();
      } else if (r < 73) {
        did = sweep();
      } else if (r < 83 && listed.size() < 2) {
        did = xa_begin();
      } else if (!listed.empty()) {
        xa_finish(rng() % listed.size(), rng() % 3 != 0);
        did = true;
      }
      if (did && counted) --left;
    }
  }
};

template <int V>
bool run_version(const options& o, std::mt19937_64& rng, std::uint64_t& left) {
  return with_store<V>(o, [&](auto& db) {
    writer<V, std::remove_reference_t<decltype(db)>> w{db, o, rng, 1, {}};
    return w.run(left, o.commits != 0);
  });
}

// The schema the database has: 1 or 2; 0 when both refuse it (an unfinished migration). Tries
// `first` first (the driver's hint: the version it last verified, so that an open is not wasted;
// 1 after a reset, as a fresh directory becomes a database of the schema tried first).
int open_version(const options& o, int first, std::string* why) {
  auto try_open = [&](int v) {
    if (v == 1) with_store<1>(o, [](auto&) { return 0; });
    else with_store<2>(o, [](auto&) { return 0; });
  };
  try {
    try_open(first);
    return first;
  } catch (const ks::schema_error& e1) {
    try {
      try_open(3 - first);
      return 3 - first;
    } catch (const ks::schema_error& e2) {
      if (why) *why = std::string(e1.what()) + " | " + e2.what();
      return 0;
    }
  }
}

int child_main(const options& o) {
  try {
    std::mt19937_64 rng(o.seed);
    int v = open_version(o, o.hint, nullptr);
    if (v == 0) {  // resume the unfinished migration, whichever direction it goes
      try {
        migrate_db<1, 2>(o);
        v = 2;
      } catch (const ks::schema_error&) {
        migrate_db<2, 1>(o);
        v = 1;
      }
      send(o, a_migrated, static_cast<std::uint64_t>(v));
    }
    std::uint64_t left = o.commits;
    for (;;) {
      const bool migrate = v == 1 ? run_version<1>(o, rng, left) : run_version<2>(o, rng, left);
      if (!migrate) break;
      const int to = 3 - v;
      send(o, a_mig_intent, static_cast<std::uint64_t>(to));
      if (o.fault == "migrate-early-ack") {
        send(o, a_migrated, static_cast<std::uint64_t>(to));
        ::usleep(2000);
      }
      if (to == 2) migrate_db<1, 2>(o);
      else migrate_db<2, 1>(o);
      if (o.fault != "migrate-early-ack") send(o, a_migrated, static_cast<std::uint64_t>(to));
      v = to;
    }
  } catch (const std::exception& e) {
    die(std::string("writer: ") + e.what());
  }
  return 0;
}

// --- the checker ------------------------------------------------------------------------------------

// What the driver learnt from the acknowledgements since the last reset.
struct ack_state {
  std::uint64_t acked_op = 0;
  std::set<std::uint64_t> acked;  // every acknowledged op (a sweep is complete once acknowledged)
  std::uint64_t acks = 0;  // op acknowledgements in total
  std::set<std::uint64_t> prepared, committed, rb_intent, rolled_back;
  int version = 1;          // the schema of the last acknowledged (or verified) migration
  int pending = 0;          // an announced migration's target, until verified or acknowledged
  std::uint64_t migrations = 0, xa_commits = 0, xa_rollbacks = 0;
};

struct message {
  std::uint64_t dest = 0;
  std::uint64_t ver = 0;
  std::uint64_t expiry = 0;
};

struct check_result {
  std::uint64_t last_op = 0;
  std::size_t messages = 0;
  bool verified = false;  // false: the database was mid-migration
  std::size_t listed = 0;    // prepared branches found (left to the next writer's recovery)
  std::size_t unmarked = 0;  // committed branches found without their marker
};

template <int V, class Store>
check_result check_store(Store& db, const ack_state& st, std::uint64_t prev_verified) {
  using M = meta_ks<V>;
  const auto snap = db.snapshot();
  std::map<std::uint64_t, message> msgs;
  std::map<std::uint64_t, plan> plans;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> dtx;  // (xid, id) -> destination
  std::set<std::uint64_t> marked, cleaned;
  std::uint64_t max_id = 0;
  const auto at = [](std::uint64_t op) { return "op " + std::to_string(op) + ": "; };
  auto protected_id = [&](std::uint64_t id) {
    for (const auto& [k, d] : dtx)
      if (k.second == id) return true;
    return false;
  };
  auto need = [&](std::uint64_t op, std::uint64_t id) -> message& {
    const auto it = msgs.find(id);
    if (it == msgs.end()) die(at(op) + "message " + std::to_string(id) + " does not exist in the replay");
    return it->second;
  };
  auto take_id = [&](std::uint64_t op, std::uint64_t id) {
    if (id != max_id + 1)
      die(at(op) + "id " + std::to_string(id) + " handed out after " + std::to_string(max_id) + " (not the next one)");
    max_id = id;
  };
  auto apply_branch = [&](std::uint64_t xid) {
    const auto it = plans.find(xid);
    if (it == plans.end()) die("branch " + xid_text(xid) + " committed without its reserve op");
    for (const auto& [id, d, e] : it->second.enqueue) msgs[id] = message{d, 0, e};
    for (const std::uint64_t id : it->second.dequeue) {
      need(xid, id);
      msgs.erase(id);
    }
    std::erase_if(dtx, [&](const auto& kv) { return kv.first.first == xid; });
  };
  // A complete (acknowledged) sweep leaves no due message; a sweep killed between its batches
  // leaves the later ones.
  auto check_swept = [&](std::uint64_t op, std::uint64_t now) {
    if (!st.acked.contains(op)) return;
    for (const auto& [id, m] : msgs)
      if (m.expiry != 0 && m.expiry < now)
        die(at(op) + "the sweep at " + std::to_string(now) + " left message " + std::to_string(id) + " due at " +
            std::to_string(m.expiry));
  };

  // The log: ops 1..N, parts from 0, replayed.
  std::uint64_t op = 0, part = 0, sweep_now = 0;
  for (const auto& e : snap.template scan<oplog>()) {
    const auto [o, p] = e.key;
    if (o == op && p == part + 1) {
      part = p;
    } else if (o == op + 1 && p == 0) {
      if (sweep_now != 0) check_swept(op, sweep_now);
      sweep_now = 0;
      op = o;
      part = 0;
    } else {
      die("the log holds (op " + std::to_string(o) + ", part " + std::to_string(p) + ") after (op " + std::to_string(op) +
          ", part " + std::to_string(part) + ")");
    }
    const auto& [kind, a, b, c, extra] = e.value;
    switch (kind) {
      case k_publish:
        take_id(o, a);
        if (b >= dead_letter) die(at(o) + "a publish to destination " + std::to_string(b));
        msgs[a] = message{b, 0, c};
        break;
      case k_ack:
        need(o, a);
        if (protected_id(a)) die(at(o) + "acknowledged message " + std::to_string(a) + ", which a branch dequeues");
        msgs.erase(a);
        break;
      case k_rewrite: {
        message& m = need(o, a);
        if (b != m.ver + 1) die(at(o) + "content version " + std::to_string(b) + " after " + std::to_string(m.ver));
        m.ver = b;
        break;
      }
      case k_dead: {
        message& m = need(o, a);
        if (protected_id(a) || m.dest == dead_letter) die(at(o) + "dead-lettered message " + std::to_string(a) + " wrongly");
        m.dest = dead_letter;
        m.expiry = 0;
        break;
      }
      case k_sweep: {
        const message& m = need(o, a);
        if (m.expiry == 0 || m.expiry >= b || protected_id(a))
          die(at(o) + "swept message " + std::to_string(a) + " (expiry " + std::to_string(m.expiry) + ") at " +
              std::to_string(b));
        if (p > 0 && b != sweep_now) die(at(o) + "a sweep with two times");
        sweep_now = b;
        msgs.erase(a);
        break;
      }
      case k_reserve: {
        plan pl = unpack_plan(extra.view());
        if (pl.enqueue.size() != b) die(at(o) + "reserved " + std::to_string(b) + " ids for " + std::to_string(pl.enqueue.size()));
        for (std::uint64_t i = 0; i < b; ++i) {
          take_id(o, a + i);
          if (std::get<0>(pl.enqueue[i]) != a + i) die(at(o) + "a branch enqueues an id it did not reserve");
        }
        for (const std::uint64_t id : pl.dequeue) {
          const message& m = need(o, id);
          if (m.expiry != 0 || protected_id(id)) die(at(o) + "a branch dequeues message " + std::to_string(id) + " wrongly");
          dtx[{o, id}] = m.dest;
        }
        plans[o] = std::move(pl);
        break;
      }
      case k_marker:
        if (!plans.contains(a) || marked.contains(a) || cleaned.contains(a))
          die(at(o) + "marker of branch " + xid_text(a) + ", unknown, marked or cleaned before");
        marked.insert(a);
        apply_branch(a);
        break;
      case k_clean:
        if (!plans.contains(a) || marked.contains(a)) die(at(o) + "clean of branch " + xid_text(a) + ", unknown or committed");
        cleaned.insert(a);
        std::erase_if(dtx, [&a = a](const auto& kv) { return kv.first.first == a; });
        break;
      default:
        die(at(o) + "unknown log kind " + std::to_string(kind));
    }
  }
  const std::uint64_t n = op;
  if (sweep_now != 0) check_swept(n, sweep_now);
  if (n < st.acked_op) die("acknowledged op " + std::to_string(st.acked_op) + " is missing: the log ends at " + std::to_string(n));
  if (n < prev_verified) die("the log ends at " + std::to_string(n) + ", below the verified " + std::to_string(prev_verified));
  if (n > std::max(st.acked_op, prev_verified) + 1)
    die("the log ends at " + std::to_string(n) + ", more than one op past " + std::to_string(std::max(st.acked_op, prev_verified)));

  // XA: prepared, committed (xa_done or marker), rolled back.
  std::set<std::uint64_t> listed;
  for (const std::string& x : ks::prepared(db)) {
    const auto xid = xid_number(x);
    if (!xid || !plans.contains(*xid)) die("ks::prepared lists '" + x + "', no branch of the log");
    if (marked.contains(*xid) || cleaned.contains(*xid)) die("branch " + x + " is listed after its commit or clean");
    listed.insert(*xid);
  }
  std::vector<std::uint64_t> unmarked;
  for (const auto& e : snap.template scan<xa_done>().keys_only()) {
    const std::uint64_t xid = e.template get<"xid">();
    if (marked.contains(xid)) die("branch " + xid_text(xid) + " applied twice: its flag is back after its marker");
    if (listed.contains(xid)) die("branch " + xid_text(xid) + " applied and still listed");
    unmarked.push_back(xid);
  }
  if (unmarked.size() > 1) die(std::to_string(unmarked.size()) + " committed branches without their marker");
  for (const std::uint64_t xid : unmarked) apply_branch(xid);
  auto committed = [&](std::uint64_t xid) {
    return marked.contains(xid) || std::find(unmarked.begin(), unmarked.end(), xid) != unmarked.end();
  };
  for (const std::uint64_t xid : st.prepared)
    if (!listed.contains(xid) && !committed(xid) && !st.rb_intent.contains(xid))
      die("acknowledged prepared branch " + xid_text(xid) + " is neither listed, committed nor being rolled back");
  for (const std::uint64_t xid : st.committed)
    if (!committed(xid)) die("acknowledged commit of branch " + xid_text(xid) + " is not applied");
  for (const std::uint64_t xid : st.rolled_back)
    if (listed.contains(xid) || committed(xid)) die("rolled-back branch " + xid_text(xid) + " is listed or applied");
  for (const std::uint64_t xid : listed)
    for (const std::uint64_t id : plans[xid].dequeue)
      if (!dtx.contains({xid, id})) die("listed branch " + xid_text(xid) + " lost its dequeue record of " + std::to_string(id));

  // The records against the replay.
  const auto idt = [](std::uint64_t id) { return "message " + std::to_string(id); };
  std::map<std::uint64_t, std::int64_t> per_dest;
  for (const auto& [id, m] : msgs) ++per_dest[m.dest];
  std::size_t seen = 0;
  for (const auto& e : snap.template scan<M>()) {
    const std::string& d = e.template get<"destination">();
    const std::uint64_t id = e.template get<"message_id">();
    const auto it = msgs.find(id);
    if (it == msgs.end() || destinations[it->second.dest] != d) die(idt(id) + " in '" + d + "' is not in the replay");
    const std::string body = body_of(id, it->second.ver);
    if (e.value.header.view() != header_of(id, it->second.ver) || e.value.content_length != body.size())
      die(idt(id) + "'s metadata is not its version " + std::to_string(it->second.ver) + "'s");
    if constexpr (V == 2) {
      if (e.value.priority != id % 7) die(idt(id) + "'s priority is " + std::to_string(e.value.priority));
    }
    std::optional<ks::bytes> got;
    try {
      got = ks::read_chunked<content>(snap, {id});
    } catch (const ks::decode_error& damaged) {
      die(idt(id) + "'s content is damaged: " + damaged.what());
    }
    if (!got) die(idt(id) + " has no content");
    if (got->view() != body) die(idt(id) + "'s content differs from its version " + std::to_string(it->second.ver));
    if (snap.template get<destination>({id}) != std::optional<std::string>(d)) die(idt(id) + "'s destination record is wrong");
    if (snap.template get<dlc_status>({id}).value_or(false) != (it->second.dest == dead_letter))
      die(idt(id) + "'s dead-letter flag is wrong");
    const auto ex = snap.template get<expiration>({d, id});
    const std::optional<millis> want_ex =
        it->second.expiry ? std::optional<millis>(epoch + std::chrono::milliseconds(it->second.expiry)) : std::nullopt;
    if (ex != want_ex) die(idt(id) + "'s expiration is " + (ex ? "present" : "absent") + " or wrong");
    if (want_ex && !snap.template contains<typename version<V>::index>({*want_ex, d, id})) die(idt(id) + " has no index entry");
    ++seen;
  }
  if (seen != msgs.size()) die(std::to_string(msgs.size()) + " messages in the replay, " + std::to_string(seen) + " stored");
  for (const auto& e : snap.template scan<content>().keys_only())
    if (!msgs.contains(e.template get<"message_id">())) die("orphan content chunk of " + idt(e.template get<"message_id">()));
  for (const auto& e : snap.template scan<destination>().keys_only())
    if (!msgs.contains(e.template get<"message_id">())) die("orphan destination record of " + idt(e.template get<"message_id">()));
  for (const auto& e : snap.template scan<dlc_status>().keys_only())
    if (!msgs.contains(e.template get<"message_id">())) die("orphan dead-letter flag of " + idt(e.template get<"message_id">()));
  for (const auto& e : snap.template scan<expiration>().keys_only())
    if (!msgs.contains(e.template get<"message_id">())) die("orphan expiration of " + idt(e.template get<"message_id">()));
  std::size_t indexed = 0;
  for (const auto& e : snap.template scan<typename version<V>::index>().keys_only()) {
    const std::uint64_t id = e.template get<"message_id">();
    const auto it = msgs.find(id);
    if (it == msgs.end() || it->second.expiry == 0) die("orphan index entry of " + idt(id));
    ++indexed;
  }
  std::size_t with_expiry = 0;
  for (const auto& [id, m] : msgs) with_expiry += m.expiry != 0;
  if (indexed != with_expiry) die(std::to_string(indexed) + " index entries for " + std::to_string(with_expiry) + " expiring messages");
  for (std::uint64_t d = 0; d < destinations.size(); ++d) {
    const auto c = snap.template get<count_ks<typename version<V>::meta>>({destinations[d]});
    const std::int64_t want = per_dest.contains(d) ? per_dest[d] : 0;
    if (c.value_or(0) != want || (c && *c == 0))
      die("the count of '" + destinations[d] + "' is " + (c ? std::to_string(*c) : "absent") + ", it holds " + std::to_string(want));
  }
  std::size_t counts = 0;
  for (const auto& e : snap.template scan<count_ks<typename version<V>::meta>>().keys_only()) {
    (void)e;
    ++counts;
  }
  if (counts != per_dest.size()) die(std::to_string(counts) + " counts for " + std::to_string(per_dest.size()) + " destinations");
  const std::uint64_t last = snap.template get<last_id>({}).value_or(0);
  if (last != max_id) die("last_id is " + std::to_string(last) + ", the ids handed out end at " + std::to_string(max_id));

  // Dequeue records: exactly the replay's; at most one branch's left for recovery.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> stored;
  for (const auto& e : snap.template scan<dtx_dequeue>()) {
    const auto xid = xid_number(e.template get<"xid">().view());
    if (!xid) die("a dequeue record of an unknown xid");
    const auto d = std::find(destinations.begin(), destinations.end(), e.value);
    stored[{*xid, e.template get<"message_id">()}] = static_cast<std::uint64_t>(d - destinations.begin());
  }
  if (stored != dtx) die("the dequeue records differ from the replay's (" + std::to_string(stored.size()) + " stored, " +
                         std::to_string(dtx.size()) + " replayed)");
  std::set<std::uint64_t> orphan_xids;
  for (const auto& [k, d] : dtx) {
    if (!msgs.contains(k.second)) die("a dequeue record of " + idt(k.second) + ", which does not exist");
    if (!listed.contains(k.first)) orphan_xids.insert(k.first);
  }
  if (orphan_xids.size() > 1) die(std::to_string(orphan_xids.size()) + " branches' dequeue records left for recovery");
  return {n, msgs.size(), true, listed.size(), unmarked.size()};
}

// --- the driver -------------------------------------------------------------------------------------

void absorb(const ack& m, ack_state& st) {
  switch (m.kind) {
    case a_op:
      if (m.a <= st.acked_op) die("op acknowledgements out of order");
      st.acked_op = m.a;
      st.acked.insert(m.a);
      ++st.acks;
      break;
    case a_prepared: st.prepared.insert(m.a); break;
    case a_committed:
      st.committed.insert(m.a);
      ++st.xa_commits;
      break;
    case a_rb_intent: st.rb_intent.insert(m.a); break;
    case a_rolled_back:
      st.rolled_back.insert(m.a);
      ++st.xa_rollbacks;
      break;
    case a_mig_intent: st.pending = static_cast<int>(m.a); break;
    case a_migrated:
      if (st.pending != static_cast<int>(m.a)) die("a migration to v" + std::to_string(m.a) + " that was not announced");
      st.version = static_cast<int>(m.a);
      st.pending = 0;
      ++st.migrations;
      break;
    case a_recovered: break;
    default: die("unknown acknowledgement " + std::to_string(m.kind));
  }
}

// What the driver learnt from the acknowledgements and the checks (kill_run's harness state).
struct driver_state {
  using ack = bcrash::ack;
  static constexpr const char* unit = "op";

  explicit driver_state(const options& opts) : o(opts) {}

  const options& o;
  ack_state st;
  std::uint64_t prev = 0;  // the last op verified since the last reset
  std::uint64_t verified_ops = 0, mid_migration = 0, total_acks = 0, migrations = 0, xa_commits = 0,
                xa_rollbacks = 0, branches_found = 0, unmarked_found = 0;

  void absorb(const ack& m) { bcrash::absorb(m, st); }
  std::vector<std::string> child_args() const { return {"--hint", std::to_string(st.version)}; }
  void reset() {
    verified_ops += prev;
    total_acks += st.acks;
    migrations += st.migrations;
    xa_commits += st.xa_commits;
    xa_rollbacks += st.xa_rollbacks;
    st = ack_state{};
    prev = 0;
  }
  std::uint64_t progress() const { return prev; }
  bool progressed(std::uint64_t before) const { return prev > before || st.pending != 0; }

  // Opens the store with the schema it has, checks it; a database mid-migration is checked to
  // be refused by both schemas as an announced migration (its data is checked after the resume).
  check_result verify() {
    std::string why;
    const int v = open_version(o, st.version, &why);
    check_result r;
    if (v == 0) {
      if (st.pending == 0) die("the database is refused by both schemas, and no migration was announced: " + why);
      if (why.find("unfinished ks::migrate") == std::string::npos) die("the database is refused by both schemas: " + why);
      ++mid_migration;
      return r;
    }
    if (st.pending != 0 ? (v != st.pending && v != 3 - st.pending) : v != st.version)
      die("the database has schema v" + std::to_string(v) + ", the acknowledgements say v" + std::to_string(st.version));
    st.version = v;
    st.pending = 0;
    r = v == 1 ? with_store<1>(o, [&](auto& db) { return check_store<1>(db, st, prev); })
               : with_store<2>(o, [&](auto& db) { return check_store<2>(db, st, prev); });
    prev = r.last_op;
    branches_found += r.listed;
    unmarked_found += r.unmarked;
    return r;
  }
};

int driver_main(options o) {
  kill_run run(o, "broker_crash");
  driver_state d(o);
  run.kill_writers(d);

  // The next writer makes progress: 50 ops, run to completion.
  run.run_final_writer(d, 50);
  const std::uint64_t before_final = d.prev;
  const check_result r = d.verify();
  if (!r.verified) die("the final writer left the database mid-migration");
  if (r.last_op < before_final + 50) die("the final writer's 50 ops end at op " + std::to_string(r.last_op));
  if (r.last_op != d.st.acked_op)
    die("the log ends at " + std::to_string(r.last_op) + ", the last acknowledged op is " + std::to_string(d.st.acked_op));
  d.reset();

  run.print_closing("acknowledged_ops=" + std::to_string(d.total_acks) + " verified_ops=" + std::to_string(d.verified_ops) +
                    " migrations=" + std::to_string(d.migrations) + " checks_mid_migration=" + std::to_string(d.mid_migration) +
                    " xa_commits=" + std::to_string(d.xa_commits) + " xa_rollbacks=" + std::to_string(d.xa_rollbacks) +
                    " prepared_found=" + std::to_string(d.branches_found) +
                    " committed_unmarked_found=" + std::to_string(d.unmarked_found) + " messages_at_end=" + std::to_string(r.messages));
  return 0;
}

options parse(int argc, char** argv, bool& child) {
  options o;
  o.kills = 60;
  child = parse_options(argc, argv, o, [&](std::string_view a, const std::string& v) {
    if (a != "--hint") return false;
    o.hint = v == "2" ? 2 : 1;
    return true;
  });
  if (!o.fault.empty() && o.fault != "split" && o.fault != "orphan" && o.fault != "early-ack" &&
      o.fault != "prepare-early-ack" && o.fault != "migrate-early-ack")
    die("unknown --fault '" + o.fault + "' (split, orphan, early-ack, prepare-early-ack or migrate-early-ack)");
  return o;
}

}  // namespace bcrash

int main(int argc, char** argv) {
  return crash_driver::run_main(argc, argv, bcrash::parse, bcrash::child_main, bcrash::driver_main);
}
