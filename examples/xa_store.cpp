// xa_store: the WSO2 broker's DTX (XA) store on prepared transactions (keyschema/prepared.hpp).
//
//   xa_store [--backend memory|leveldb|lmdb] [--path DIR] [--chunk BYTES]
//
// The seed kept each XA branch by hand: enqueue records with copies of their content chunks,
// dequeue records with backups of the messages, eight erase calls across keyspaces to clear a
// branch, and a scan plus two point reads per branch to recover. Here a branch is one
// transaction: its enqueues (add_message: metadata, content, expiry, count) and dequeues
// (remove_message) are recorded by ks::prepare under the branch's xid without being applied;
// ks::commit_prepared applies them in one atomic write; ks::rollback_prepared drops them, so a
// dequeued message was never removed and needs no backup; ks::prepared lists the branches that
// survived a restart. The only DTX records left are the dequeue records (dtx_dequeue), written
// before prepare so that consumers skip a message a prepared branch dequeues, and erased by the
// branch's own commit; a rollback, or a prepare cut short, leaves them to recover(), which erases
// those whose xid is not prepared. The steps, each followed by the model comparison and the
// invariant checker (examples/broker/invariants.hpp, with the XA check below):
//   commit     a branch enqueues 5 messages (with content) and dequeues 5; prepared, nothing
//              changes; another client stores a message on another destination meanwhile;
//              committed, all of it applies;
//   rollback   a branch enqueues 3 and dequeues 3; rolled back: the dequeued messages are there;
//   restart    (leveldb, lmdb) two branches prepared, the store closed and reopened: both are
//              listed; one committed, one rolled back;
//   kill       (leveldb, lmdb) a child process prepares two branches, starts a third (its dequeue
//              records written, its transaction not prepared) and is killed with SIGKILL; the
//              parent finds exactly the two prepared branches, the checker reports the third's
//              orphan dequeue records until recover() erases them;
//   self-test  a dequeue record of an unknown xid is reported.
// Exit status 0 when everything held, 1 otherwise, 2 on bad arguments.
//
// Known limit, shown by --same-destination 1: prepare() records the branch's writes as they are,
// the declared count of 'orders' included as the value it had inside the transaction; a message
// another client stores on 'orders' between prepare and commit is then lost from the count by
// commit_prepared (count 40 for 41 records; the checker reports it). A declared count in a
// prepared branch would have to be recorded as a delta and resolved at commit_prepared.

#include "broker/invariants.hpp"
#include "broker/message_ops.hpp"
#include "support/example_backend.hpp"

#include <keyschema/prepared.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace wso2;
using example::expect;

const std::string orders = "orders";

// xa: every dequeue record belongs to a prepared branch and names a message that exists.
struct xa_check {
  template <class Store, class Snapshot>
  void operator()(const Store& db, const Snapshot& snap, std::vector<std::string>& bad) const {
    const std::vector<std::string> listed = ks::prepared(db);
    const std::set<std::string> live(listed.begin(), listed.end());
    for (const auto& e : snap.template scan<dtx_dequeue>().keys_only()) {
      const std::string xid(e.template get<"xid">().view());
      const std::uint64_t id = e.template get<"message_id">();
      if (!live.count(xid)) {
        bad.push_back("xa: dequeue record of message " + std::to_string(id) + " under xid '" + xid +
                      "', which is not prepared");
      }
      if (!snap.template contains<message_destination>({id})) {
        bad.push_back("xa: dequeue record of message " + std::to_string(id) + ", which does not exist");
      }
    }
  }
};

struct branch {
  std::string xid;
  std::vector<std::pair<std::uint64_t, message>> enqueue;
  std::vector<std::uint64_t> dequeue;
};

// Phase one of a branch. The dequeue records first (one atomic write: consumers skip these
// messages from now on), then the branch itself, prepared: its enqueues and dequeues, and the
// erase of its dequeue records, recorded under the xid and not applied.
template <class Store>
void prepare_branch(Store& db, const branch& b, std::size_t chunk) {
  {
    auto tx = db.transaction();
    for (const std::uint64_t id : b.dequeue) {
      const auto destination = tx.template get<message_destination>({id});
      if (!destination) throw std::runtime_error("xa_store: message " + std::to_string(id) + " does not exist");
      tx.template put<dtx_dequeue>({ks::bytes(b.xid), id}, *destination);
    }
    tx.commit();
  }
  auto tx = db.transaction();
  for (const auto& [id, m] : b.enqueue) add_message(tx, id, m, chunk);
  for (const std::uint64_t id : b.dequeue) {
    remove_message(tx, *tx.template get<dtx_dequeue>({ks::bytes(b.xid), id}), id);
    tx.template erase<dtx_dequeue>({ks::bytes(b.xid), id});
  }
  ks::prepare(tx, b.xid);
}

// Phase two. commit_prepared applies the branch, dequeue records' erase included, in one write.
template <class Store>
bool commit_branch(Store& db, const std::string& xid) {
  return ks::commit_prepared(db, xid);
}
template <class Store>
bool rollback_branch(Store& db, const std::string& xid) {
  const bool was = ks::rollback_prepared(db, xid);
  db.template erase_prefix<dtx_dequeue>(ks::bytes(xid));  // a crash before this: recover() does it
  return was;
}

// After a restart: erases the dequeue records of branches that are not prepared (rolled back,
// or cut short before prepare), and returns the prepared branches for the coordinator to decide.
template <class Store>
std::vector<std::string> recover(Store& db) {
  const std::vector<std::string> live = ks::prepared(db);
  std::set<std::string> orphans;
  for (const auto& e : db.template scan<dtx_dequeue>().keys_only()) {
    std::string xid(e.template get<"xid">().view());
    if (!std::binary_search(live.begin(), live.end(), xid)) orphans.insert(std::move(xid));
  }
  for (const auto& xid : orphans) db.template erase_prefix<dtx_dequeue>(ks::bytes(xid));
  return live;
}

branch make_branch(std::string xid, std::uint64_t first_new, std::size_t enqueues, std::vector<std::uint64_t> dequeue,
                   std::size_t chunk) {
  branch b{std::move(xid), {}, std::move(dequeue)};
  for (std::uint64_t id = first_new; id < first_new + enqueues; ++id) {
    message m{orders, "xa-body-" + std::to_string(id) + std::string(id % 2 ? chunk + 5 : 10, 'y'), std::nullopt};
    if (id % 3 == 0) m.expires = epoch + std::chrono::hours(1);
    b.enqueue.emplace_back(id, std::move(m));
  }
  return b;
}

void apply(model& m, const branch& b) {
  for (const auto& [id, msg] : b.enqueue) m[id] = msg;
  for (const std::uint64_t id : b.dequeue) m.erase(id);
}

template <class Store>
bool step_ok(const Store& db, const model& m, const char* step, bool quiet_invariants = false) {
  const int before = example::failure_count();
  std::vector<std::uint64_t> ids, want;
  for (const auto& e : db.template scan<message_metadata>(orders).keys_only()) ids.push_back(e.template get<"message_id">());
  for (const auto& [id, msg] : m) want.push_back(id);
  expect(ids == want, std::string(step) + ": 'orders' holds exactly the model's messages");
  expect(db.template get<message_count>({orders}).value_or(0) == static_cast<std::int64_t>(m.size()),
         std::string(step) + ": the count of 'orders'");
  for (const auto& [id, msg] : m) {
    expect(read_content(db, id) == std::optional<std::string>(msg.body), std::string(step) + ": content of " + std::to_string(id));
  }
  const bool held = quiet_invariants ? check_invariants(db, xa_check{}).empty() : invariants_hold(db, step, xa_check{});
  expect(held, std::string(step) + ": invariants");
  const bool ok = example::failure_count() == before;
  std::printf("  %-10s %s (%zu messages, %zu prepared)\n", step, ok ? "ok" : "FAILED", m.size(), ks::prepared(db).size());
  return ok;
}

template <class Open>
int run(Open open, const std::string& backend, std::size_t chunk, bool same_destination) {
  std::printf("xa_store on %s: %zu-byte chunks\n", backend.c_str(), chunk);
  model m;
  auto db = open();
  db->template put<queue>({orders}, {});
  {
    auto tx = db->transaction();
    for (std::uint64_t id = 1; id <= 40; ++id) {
      message msg{orders, "body-" + std::to_string(id) + std::string(id % 7 == 0 ? chunk * 2 : id, 'x'), std::nullopt};
      if (id % 4 == 0) msg.expires = epoch + std::chrono::seconds(id);
      add_message(tx, id, msg, chunk);
      m.emplace(id, std::move(msg));
    }
    tx.commit();
  }
  bool ok = step_ok(*db, m, "store");

  // commit
  const branch c = make_branch("xid-commit", 101, 5, {1, 2, 3, 4, 5}, chunk);
  prepare_branch(*db, c, chunk);
  expect(ks::prepared(*db) == std::vector<std::string>{"xid-commit"}, "commit: the branch is listed");
  expect(!db->template contains<message_destination>({101}), "commit: a prepared enqueue is invisible");
  ok &= step_ok(*db, m, "prepared");
  {  // another client, meanwhile: on another destination, or (--same-destination 1) on orders,
     // whose count the branch also changes; see the top of this file
    auto tx = db->transaction();
    const message other{same_destination ? orders : std::string("audit"), "not-in-the-branch", std::nullopt};
    add_message(tx, 200, other, chunk);
    tx.commit();
    if (same_destination) m.emplace(200, other);
  }
  expect(commit_branch(*db, c.xid), "commit: commit_prepared found the branch");
  expect(!commit_branch(*db, c.xid), "commit: a second commit finds nothing");
  apply(m, c);
  ok &= step_ok(*db, m, "commit");

  // rollback
  const branch r = make_branch("xid-rollback", 111, 3, {6, 7, 8}, chunk);
  prepare_branch(*db, r, chunk);
  expect(rollback_branch(*db, r.xid), "rollback: rollback_prepared found the branch");
  ok &= step_ok(*db, m, "rollback");

  if (backend == "memory") {
    std::printf("  restart and kill: skipped (the memory store does not outlive its process)\n");
  } else {
    // restart
    const branch r1 = make_branch("xid-r1", 121, 2, {9}, chunk);
    const branch r2 = make_branch("xid-r2", 123, 2, {10}, chunk);
    prepare_branch(*db, r1, chunk);
    prepare_branch(*db, r2, chunk);
    db.reset();
    db = open();
    expect(recover(*db) == std::vector<std::string>{"xid-r1", "xid-r2"}, "restart: both branches survived");
    expect(commit_branch(*db, r1.xid) && rollback_branch(*db, r2.xid), "restart: commit one, roll back the other");
    apply(m, r1);
    ok &= step_ok(*db, m, "restart");

    // kill: a child prepares k1 and k2, cuts k3 short, and is killed.
    const branch k1 = make_branch("xid-k1", 131, 2, {11, 12}, chunk);
    const branch k2 = make_branch("xid-k2", 133, 1, {13}, chunk);
    const branch k3 = make_branch("xid-k3", 135, 1, {14}, chunk);
    db.reset();
    int ready[2];
    if (::pipe(ready) != 0) throw std::runtime_error("xa_store: pipe failed");
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("xa_store: fork failed");
    if (pid == 0) {
      ::close(ready[0]);
      try {
        auto child = open();
        prepare_branch(*child, k1, chunk);
        prepare_branch(*child, k2, chunk);
        {  // k3: its dequeue records, then its transaction, never prepared
          auto tx = child->transaction();
          for (const std::uint64_t id : k3.dequeue) tx.template put<dtx_dequeue>({ks::bytes(k3.xid), id}, orders);
          tx.commit();
        }
        auto tx = child->transaction();
        for (const auto& [id, msg] : k3.enqueue) add_message(tx, id, msg, chunk);
        (void)!::write(ready[1], "r", 1);
        for (;;) ::pause();  // killed here, holding k3's transaction
      } catch (const std::exception& e) {
        std::fprintf(stderr, "xa_store child: %s\n", e.what());
        ::_exit(3);
      }
    }
    ::close(ready[1]);
    char byte = 0;
    const bool signalled = ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    expect(signalled && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "kill: the child was killed between prepare and commit");
    db = open();
    expect(ks::prepared(*db) == std::vector<std::string>{"xid-k1", "xid-k2"}, "kill: exactly the prepared branches survived");
    const auto bad = check_invariants(*db, xa_check{});
    expect(std::any_of(bad.begin(), bad.end(), [](const std::string& l) { return l.find("'xid-k3'") != std::string::npos; }),
           "kill: the checker reports the cut-short branch's dequeue records");
    expect(recover(*db) == std::vector<std::string>{"xid-k1", "xid-k2"}, "kill: recover lists the prepared branches");
    expect(!db->template contains<message_destination>({135}), "kill: the unprepared branch left nothing");
    ok &= step_ok(*db, m, "kill");
    expect(commit_branch(*db, k1.xid) && rollback_branch(*db, k2.xid), "kill: commit k1, roll back k2");
    apply(m, k1);
    ok &= step_ok(*db, m, "recovered");
  }

  // self-test: a dequeue record of an unknown xid
  db->template put<dtx_dequeue>({ks::bytes("xid-ghost"), 15}, orders);
  const auto bad = check_invariants(*db, xa_check{});
  const auto hit = std::find_if(bad.begin(), bad.end(), [](const std::string& l) { return l.rfind("xa:", 0) == 0; });
  expect(hit != bad.end(), "self-test: the checker reports a dequeue record of an unknown xid");
  if (hit != bad.end()) std::printf("    orphan XA record reported: %s\n", hit->c_str());
  db->template erase<dtx_dequeue>({ks::bytes("xid-ghost"), 15});
  ok &= step_ok(*db, m, "self-test");
  return ok && example::failure_count() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const example::options cli = example::parse_options(argc, argv);
  const std::size_t chunk = cli.number("chunk", 64 * 1024);
  if (chunk == 0) {
    std::fprintf(stderr, "xa_store: --chunk must be positive\n");
    return 2;
  }
  return example::with_backend<broker>(cli, [&](auto open, const std::filesystem::path&) {
    return run(open, cli.backend, chunk, cli.number("same-destination", 0) != 0);
  });
}
