// tests/support/migration_race.hpp: a process that keeps a store open with the old schema while
// another process migrates the database (ks::migrate), on a backend several processes can open
// at once (LMDB, SQLite). Shared by the durability suite on LMDB and SQLite
// (tests/durability/cases/processes.cpp); each passes `make`, which opens its backend on the test's path.
//
// Schemas: v1 keys "item" by a text id, v2 by an integer id (the transform parses it); the other
// keyspaces (a counter, an expiry index over "msg", a chunked "blob") are carried over unchanged,
// so that every write path of a store has something to write.
//
//   old_writer_during_migration(make): a forked child opens a v1 store and writes items without
//     pause (puts, batches and transactions in turn), reporting each acknowledged id, while the
//     parent migrates v1 -> v2. Afterwards every id the child saw acknowledged must be readable
//     through v2, and the child must have been refused with schema_error.
//   every_write_path_refused(make): the parent holds a v1 store while a forked child begins a
//     migration (stopped after its first progress record) and later finishes it; between, and
//     after, each write path of the store (put, erase, add, batch, raw write, transaction,
//     erase_prefix, an indexed put, sweep, chunked put and erase, prepare, commit_prepared,
//     rollback_prepared) must throw schema_error naming what changed and write nothing.
//   second_migrator_refused(make): a migration whose progress record another migration advanced
//     meanwhile is refused at its next batch (schema_error), and the other one's result stands.
//
// Children are forked before the parent opens the database (engine handles must not cross
// fork()); they open their own. Thread-safety: call from the test's main thread only.
#pragma once

#include <keyschema/keyschema.hpp>
#include <keyschema/migrate.hpp>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace keyschema::testing::migration_race {

namespace ks = keyschema;

using item_v1 = ks::keyspace<"item", std::string, ks::lit<"ITEM">, ks::field<"id", std::string>>;
using item_v2 = ks::keyspace<"item", std::string, ks::lit<"ITEM">, ks::field<"id", std::uint64_t>>;
using counter = ks::keyspace<"counter", std::int64_t, ks::lit<"CNT">, ks::field<"name", std::string>>;
using msg = ks::keyspace<"msg", std::uint64_t, ks::lit<"MSG">, ks::field<"id", std::uint64_t>>;
struct by_expiry {
  std::optional<std::tuple<std::uint64_t, std::uint64_t>> operator()(const msg::key_type& k, const std::uint64_t& v) const {
    return std::tuple(v, std::get<0>(k));
  }
};
using expiry = ks::keyspace<"expiry", ks::index_of<msg, by_expiry>, ks::lit<"EXP">, ks::field<"at", std::uint64_t>,
                            ks::field<"id", std::uint64_t>>;
using blob = ks::keyspace<"blob", ks::bytes, ks::lit<"BLOB">, ks::field<"name", std::string>,
                          ks::field<"chunk", std::uint32_t>>;
using v1 = ks::schema<item_v1, counter, msg, expiry, blob>;
using v2 = ks::schema<item_v2, counter, msg, expiry, blob>;

// Migrates v1 -> v2; a step that throws on call number fail_at (counted from 1) stops it after
// the batches before (a crash of the migrating process).
template <class Backend>
ks::migrate_result migrate(Backend& b, std::size_t batch_entries, std::size_t fail_at = 0) {
  std::size_t calls = 0;
  return ks::migrate<v1, v2>(b, ks::migrate_options{.batch_entries = batch_entries},
                             ks::transform<item_v1>([&](const ks::entry<item_v1>& e, ks::migration_writer<v2>& out) {
                               if (++calls == fail_at) throw std::runtime_error("migration stopped");
                               out.put<item_v2>({std::stoull(e.get<"id">())}, e.value);
                             }));
}

// A pipe between the parent and one child.
struct channel {
  int fd[2] = {-1, -1};
  channel() { REQUIRE(::pipe(fd) == 0); }
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;
  ~channel() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close_read() { ::close(std::exchange(fd[0], -1)); }
  void close_write() { ::close(std::exchange(fd[1], -1)); }
  bool send(const void* p, std::size_t n) const { return ::write(fd[1], p, n) == static_cast<ssize_t>(n); }
  bool send(char c) const { return send(&c, 1); }
  // Reads exactly n bytes; false at end of file (the other side is gone).
  bool receive(void* p, std::size_t n) const {
    auto* out = static_cast<char*>(p);
    while (n > 0) {
      const ssize_t r = ::read(fd[0], out, n);
      if (r <= 0) return false;
      out += r;
      n -= static_cast<std::size_t>(r);
    }
    return true;
  }
  char receive() const {
    char c = 0;
    return receive(&c, 1) ? c : '\0';
  }
  void nonblocking_read() const { ::fcntl(fd[0], F_SETFL, ::fcntl(fd[0], F_GETFL) | O_NONBLOCK); }
  bool poll() const {
    char c = 0;
    return ::read(fd[0], &c, 1) == 1;
  }
};

// Runs body in a forked child (exit 0 when it returns, 1 with what() on stderr when it throws).
inline pid_t fork_child(const std::function<void()>& body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int rc = 0;
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      rc = 1;
    }
    std::fflush(stderr);
    ::_exit(rc);
  }
  return pid;
}

inline int wait_child(pid_t pid) {
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The message of the schema_error fn throws; "<no error>" when it returns, "<other: ...>" when it
// throws anything else.
inline std::string schema_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ks::schema_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<other: ") + e.what() + ">";
  }
  return "<no error>";
}

constexpr std::uint64_t child_first_id = 1000000;

// See the top of this file. initial: v1 items before the migration; batch_entries: its batches.
template <class Backend, class Make>
void old_writer_during_migration(Make make, std::uint64_t initial, std::size_t batch_entries) {
  std::signal(SIGPIPE, SIG_IGN);  // the child may be gone when the parent says it is done
  {
    ks::store<v1, Backend> db(make());
    auto b = db.batch();
    for (std::uint64_t i = 0; i < initial; ++i) b.template put<item_v1>({std::to_string(i)}, "initial");
    b.commit();
  }
  channel started, done, report;
  const pid_t child = fork_child([&] {
    started.close_read();
    done.close_write();
    report.close_read();
    done.nonblocking_read();
    ks::store<v1, Backend> db(make());
    std::uint64_t acknowledged = 0;
    std::string refusal;
    int after_done = -1;  // writes left once the parent said the migration is over
    // Bounded: without the guard the migration chases the child's new keys, and ends only once
    // the child stops.
    for (std::uint64_t i = 0; after_done != 0 && i < 20000; ++i) {
      const std::string id = std::to_string(child_first_id + i);
      try {
        switch (i % 3) {
          case 0:
            db.template put<item_v1>({id}, "child", {.sync = false});
            break;
          case 1: {
            auto b = db.batch();
            b.template put<item_v1>({id}, "child");
            b.commit({.sync = false});
            break;
          }
          default: {
            auto tx = db.transaction();
            tx.template put<item_v1>({id}, "child");
            tx.commit({.sync = false});
          }
        }
      } catch (const ks::schema_error& e) {
        refusal = e.what();
        break;
      }
      ++acknowledged;
      // A pause between writes, as a real writer has: without it this loop takes the write lock
      // again as soon as it lets go of it, and SQLite's busy handler (which sleeps and retries)
      // left the migrating parent waiting until the loop's 20,000 writes were done, so the child
      // was never refused (seen in 3 of 6 runs on a loaded machine).
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (acknowledged == 20) started.send('s');
      if (after_done < 0 && done.poll()) after_done = 200;
      if (after_done > 0) --after_done;
    }
    const std::uint64_t size = refusal.size();
    report.send(&acknowledged, sizeof acknowledged);
    report.send(&size, sizeof size);
    report.send(refusal.data(), refusal.size());
  });
  started.close_write();
  done.close_read();
  report.close_write();
  REQUIRE(started.receive() == 's');  // the child has written 20 items: it writes on
  {
    Backend b = make();
    const ks::migrate_result r = migrate(b, batch_entries);
    CHECK(r.entries >= initial);
  }
  done.send('d');
  std::uint64_t acknowledged = 0, size = 0;
  REQUIRE(report.receive(&acknowledged, sizeof acknowledged));
  REQUIRE(report.receive(&size, sizeof size));
  std::string refusal(size, '\0');
  REQUIRE(report.receive(refusal.data(), size));
  CHECK(wait_child(child) == 0);

  ks::store<v2, Backend> db(make());
  std::uint64_t unreadable = 0;
  for (std::uint64_t i = 0; i < acknowledged; ++i) {
    if (!db.template contains<item_v2>({child_first_id + i})) ++unreadable;
  }
  std::uint64_t initial_unreadable = 0;
  for (std::uint64_t i = 0; i < initial; ++i) {
    if (!db.template contains<item_v2>({i})) ++initial_unreadable;
  }
  INFO("the child's acknowledged writes: " << acknowledged << ", unreadable through v2: " << unreadable
                                           << "; refusal: " << refusal);
  CHECK(unreadable == 0);
  CHECK(initial_unreadable == 0);
  CHECK_THAT(refusal, Catch::Contains("changed schema since this store opened it") &&
                          Catch::Contains("Reopen the store with the database's current schema"));
  // Nothing but v2's keys and the schema record is left.
  std::size_t foreign = 0;
  for (auto c = db.backend().cursor(ks::key_range{}, nullptr); c.valid(); c.next()) {
    if (c.key() != ks::schema_key && !ks::detail::key_of_schema<v2>(c.key())) ++foreign;
  }
  CHECK(foreign == 0);
}

// Every write path of a v1 store; each must throw schema_error containing `expected` (and
// nothing else).
template <class Backend>
void check_every_write_refused(ks::store<v1, Backend>& db, const std::string& expected) {
  const std::vector<std::pair<const char*, std::function<void()>>> writes{
      {"put", [&] { db.template put<item_v1>({"77"}, "refused"); }},
      {"erase", [&] { db.template erase<item_v1>({"1"}); }},
      {"add", [&] { db.template add<counter>({"c"}, 1); }},
      {"batch", [&] {
         auto b = db.batch();
         b.template put<item_v1>({"78"}, "refused");
         b.commit();
       }},
      {"batch with an add", [&] {
         auto b = db.batch();
         b.template add<counter>({"c"}, 1);
         b.commit();
       }},
      {"raw write", [&] {
         ks::write_batch w;
         w.put("other", "refused");
         db.write(w);
       }},
      {"transaction", [&] {
         auto tx = db.transaction();
         tx.template put<item_v1>({"79"}, "refused");
         tx.commit();
       }},
      {"erase_prefix", [&] { db.template erase_prefix<counter>(); }},
      {"indexed put", [&] { db.template put<msg>({9}, 9); }},
      {"sweep", [&] { ks::sweep<expiry>(db, std::uint64_t{100}, 10, [](const auto&, const auto&) {}); }},
      {"put_chunked", [&] { ks::put_chunked<blob>(db, {"b"}, "new content", 4); }},
      {"erase_chunked", [&] { ks::erase_chunked<blob>(db, {"b"}); }},
      {"prepare", [&] {
         auto tx = db.transaction();
         tx.template put<item_v1>({"80"}, "refused");
         ks::prepare(tx, "x9");
       }},
      {"commit_prepared", [&] { ks::commit_prepared(db, "x1"); }},
      {"rollback_prepared", [&] { ks::rollback_prepared(db, "x1"); }},
  };
  for (const auto& [name, write] : writes) {
    const std::string e = schema_error_of(write);
    INFO(name << ": " << e);
    CHECK_THAT(e, Catch::Contains("changed schema since this store opened it") && Catch::Contains(expected) &&
                      Catch::Contains("nothing was written") &&
                      Catch::Contains("Reopen the store with the database's current schema"));
  }
}

// What every write path of check_every_write_refused needs to find (so that each reaches its
// write): items, a counter, a due record of the expiry index, a chunked value.
template <class Backend>
void fill_v1(ks::store<v1, Backend>& db) {
  for (int i = 0; i < 5; ++i) db.template put<item_v1>({std::to_string(i)}, "initial");
  db.template put<counter>({"c"}, 10);
  db.template put<msg>({1}, 50);  // due at 100
  ks::put_chunked<blob>(db, {"b"}, "chunked content", 4);
}

// Writes a prepared branch's record (one put of item "82") under xid_key, with the bare backend.
template <class Backend>
void record_prepared(Backend& b, const std::string& xid_key) {
  ks::write_batch ops;
  std::string key;
  ks::detail::key_codec<item_v1>::encode(key, item_v1::key_type{"82"});
  ops.put(key, "prepared");
  ks::write_batch w;
  w.put(xid_key, ks::detail::encode_prepared(ops));
  b.write(w, {});
}

template <class Backend>
void check_nothing_landed(ks::store<v2, Backend>& db);

// See the top of this file.
template <class Backend, class Make>
void every_write_path_refused(Make make) {
  std::signal(SIGPIPE, SIG_IGN);
  {
    ks::store<v1, Backend> db(make());
    fill_v1(db);
  }
  channel command, reply;
  const pid_t child = fork_child([&] {
    command.close_write();
    reply.close_read();
    for (char c; (c = command.receive()) != '\0';) {
      Backend b = make();
      const std::string xid_key = ks::detail::prepared_key("x1");
      if (c == 'b') {
        // Begins the migration and stops it after its first progress record; then records a
        // prepared branch, as if prepared before (commit_prepared must have a record to commit).
        try {
          migrate(b, 2, 1);
        } catch (const std::runtime_error&) {
        }
        record_prepared(b, xid_key);
      } else {
        // Finishes it (the prepared branch is set aside meanwhile, and recorded again after).
        ks::write_batch w;
        w.erase(xid_key);
        b.write(w, {});
        const ks::migrate_result r = migrate(b, 2);
        if (!r.resumed) throw std::runtime_error("the migration did not resume");
        record_prepared(b, xid_key);
      }
      reply.send('k');
    }
  });
  command.close_read();
  reply.close_write();
  {
    ks::store<v1, Backend> db(make());  // opened before the migration begins
    command.send('b');
    REQUIRE(reply.receive() == 'k');
    check_every_write_refused(db, "a ks::migrate is converting it (from layout " +
                                      ks::fingerprint_text(ks::layout<v1>::fingerprint) + " to " +
                                      ks::fingerprint_text(ks::layout<v2>::fingerprint));
    command.send('f');
    REQUIRE(reply.receive() == 'k');
    check_every_write_refused(db, "it was migrated or extended to schema layout " +
                                      ks::fingerprint_text(ks::layout<v2>::fingerprint));
  }
  command.close_write();
  CHECK(wait_child(child) == 0);

  ks::store<v2, Backend> db(make());
  check_nothing_landed(db);
}

// Nothing of the writes check_every_write_refused tried landed, in db (v2, after the migration
// of what fill_v1 wrote); rolls back the prepared branch "x1" the test recorded again.
template <class Backend>
void check_nothing_landed(ks::store<v2, Backend>& db) {
  std::vector<std::uint64_t> ids;
  for (const auto& e : db.template scan<item_v2>()) ids.push_back(e.template get<"id">());
  CHECK(ids == std::vector<std::uint64_t>{0, 1, 2, 3, 4});
  CHECK(db.template get<counter>({"c"}) == std::optional<std::int64_t>(10));
  CHECK(db.template get<msg>({1}) == std::optional<std::uint64_t>(50));
  CHECK_FALSE(db.template contains<msg>({9}));
  CHECK(ks::read_chunked<blob>(db, {"b"}) == std::optional<ks::bytes>(ks::bytes("chunked content")));
  CHECK(ks::prepared(db) == std::vector<std::string>{"x1"});  // recorded again after the migration
  CHECK(ks::rollback_prepared(db, "x1"));
  std::size_t foreign = 0;
  for (auto c = db.backend().cursor(ks::key_range{}, nullptr); c.valid(); c.next()) {
    if (c.key() != ks::schema_key && !ks::detail::key_of_schema<v2>(c.key())) ++foreign;
  }
  CHECK(foreign == 0);
}

// See the top of this file: the child migrates while the parent's migration is stopped inside a
// step (after its first batch), so the parent's next batch finds another progress record.
template <class Backend, class Make>
void second_migrator_refused(Make make) {
  std::signal(SIGPIPE, SIG_IGN);
  {
    ks::store<v1, Backend> db(make());
    for (int i = 0; i < 20; ++i) db.template put<item_v1>({std::to_string(i)}, "initial");
  }
  channel command, reply;
  const pid_t child = fork_child([&] {
    command.close_write();
    reply.close_read();
    if (command.receive() != 'm') return;
    Backend b = make();
    const ks::migrate_result r = migrate(b, 3);
    reply.send(r.resumed ? 'k' : 'n');
  });
  command.close_read();
  reply.close_write();
  std::string e;
  {
    Backend b = make();
    std::size_t calls = 0;
    e = schema_error_of([&] {
      ks::migrate<v1, v2>(b, ks::migrate_options{.batch_entries = 5},
                          ks::transform<item_v1>([&](const ks::entry<item_v1>& en, ks::migration_writer<v2>& out) {
                            if (++calls == 6) {  // inside the second batch: the other migration runs now
                              command.send('m');
                              REQUIRE(reply.receive() == 'k');
                            }
                            out.put<item_v2>({std::stoull(en.get<"id">())}, en.value);
                          }));
    });
  }
  CHECK(wait_child(child) == 0);
  INFO(e);
  CHECK_THAT(e, Catch::Contains("keyschema::migrate: the database was changed by another process while this "
                                "ks::migrate ran") &&
                    Catch::Contains("nothing of this batch was written") && Catch::Contains("Run ks::migrate again"));
  ks::store<v2, Backend> db(make());
  std::vector<std::uint64_t> ids;
  for (const auto& en : db.template scan<item_v2>()) ids.push_back(en.template get<"id">());
  std::vector<std::uint64_t> expected;
  for (std::uint64_t i = 0; i < 20; ++i) expected.push_back(i);
  CHECK(ids == expected);
  std::string progress;
  CHECK_FALSE(db.backend().get(ks::migration_key, progress, nullptr));
}

}  // namespace keyschema::testing::migration_race
