// tests/durability/sqlite_traits.hpp: the durability suite's traits for keyschema::sqlite_backend
// (durability.hpp says what traits provide).
//
// Power loss: traced. In WAL mode a commit appends its pages as frames to keyschema.sqlite3-wal,
// the last one marked as the commit frame; SQLite's recovery keeps exactly the frames up to the
// last intact commit frame. A commit made with write_options{} (synced, the default; PRAGMA
// synchronous = FULL), before its end marker: its frames are written to the -wal file, then that
// descriptor is flushed (fdatasync or fsync), with no frame written after it. An unsynced one
// ({.sync = false}, synchronous = NORMAL): frames are written and nothing is flushed; a following
// empty batch with {.sync = true} flushes the -wal file once, which makes it durable too. The
// probe's further commits (probe_more: write transactions begun unsynced, a store's add) are
// checked by sqlite.cpp. Damage: SQLite keeps no checksums of its pages, so what is detected is
// structural damage, refused at open by PRAGMA quick_check (files up to quick_check_max_bytes):
// a truncated file, an overwritten page, a damaged header. Processes: shared (BEGIN IMMEDIATE
// serializes writers across processes; a long busy timeout, since contention, not the timeout, is
// under test). A full disk: the defaults.
// Thread-safety: stateless.
#pragma once

#include <durability/strace_probe.hpp>

#include <keyschema/counters.hpp>
#include <keyschema/sqlite.hpp>
#include <keyschema/store.hpp>

#include <sqlite3.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#define KEYSCHEMA_DURABILITY_SHARED_BY_PROCESSES 1

namespace keyschema::durability {

// One system call on the -wal file (or a marker).
struct sqlite_event {
  enum kind_t { marker, wal_write, wal_flush, other_flush } kind;
  std::string text;
};

// The segment's -wal calls are a synced commit's: frames written, then flushed after the last one.
inline void sqlite_check_flushed_after_frames(const std::vector<sqlite_event>& s) {
  INFO("-wal calls of the synced commit:\n" << testing::strace_probe::describe(s));
  std::size_t last_write = 0, last_flush = s.size();
  bool any_write = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].kind == sqlite_event::wal_write) {
      any_write = true;
      last_write = i;
    }
    if (s[i].kind == sqlite_event::wal_flush) last_flush = i;
  }
  REQUIRE(any_write);              // 1. frames written
  REQUIRE(last_flush < s.size());  // 2. flushed
  CHECK(last_write < last_flush);  //    after the last frame
}

// The segment's calls are an unsynced commit's: frames written, nothing flushed.
inline void sqlite_check_no_flush(const std::vector<sqlite_event>& s) {
  testing::strace_probe::check_unflushed(s, {sqlite_event::wal_flush, sqlite_event::other_flush},
                                         sqlite_event::wal_write, 1, "calls of the unsynced commit");
}

// A closed database at path (checkpointed into the main file, no -wal left) of 3000 records of
// about 200 bytes (about 200 pages of 4 KiB) in one commit; returns its main file.
inline constexpr int sqlite_records = 3000;
inline constexpr std::size_t sqlite_pad = 194;
inline fs::path sqlite_fill(const fs::path& path) {
  sqlite_backend db(path);
  write_records(db, 0, sqlite_records, true, true, sqlite_pad);
  return path / sqlite_file_name;
}

// The refusal says the file is damaged or not a database (SQLITE_CORRUPT, SQLITE_NOTADB).
inline void sqlite_check_damaged(const refusal& r, const fs::path&) {
  const int code = r.code & 0xff;
  CHECK((code == SQLITE_CORRUPT || code == SQLITE_NOTADB));
  CHECK((contains(r.what, "damaged") || contains(r.what, "not a database")));
}

struct sqlite_traits {
  using backend = sqlite_backend;
  using options = sqlite_options;
  static constexpr std::string_view name = "sqlite";

  static constexpr bool simulated_power_loss = false;
  using event = sqlite_event;
  static std::string traced_calls() { return testing::strace_probe::write_and_sync_calls; }
  // The markers, the writes and flushes of the -wal file, and flushes of any other descriptor.
  static std::vector<event> classify(const std::vector<testing::strace_probe::traced>& calls) {
    return testing::strace_probe::classify<event>(calls, [](const testing::strace_probe::traced& t) -> std::optional<event> {
      const bool wal = t.path.ends_with("-wal");
      const bool flush = t.call.find("sync") != std::string::npos;
      if (wal) return event{flush ? event::wal_flush : event::wal_write, t.text};
      if (flush) return event{event::other_flush, t.text};
      return std::nullopt;
    });
  }
  // After the shared commits: an empty synced batch ("flush"); a write transaction begun for an
  // unsynced commit (what keyschema::store does for its read-modify-writes: adds, counts,
  // indexes), "txn-nosync"; one begun unsynced but committed synced, "txn-late-sync"; through a
  // store, an add (resolved in a write transaction) with {.sync = false}, "store-add-nosync".
  static void probe_more(backend& db, const std::string& dir) {
    namespace probe = testing::strace_probe;
    probe::marker("flush-begin");
    db.write(write_batch{}, {.sync = true});
    probe::marker("flush-end");
    write_batch b;
    b.put("txn-nosync", std::string(300, 't'));
    probe::marker("txn-nosync-begin");
    {
      auto t = db.begin_write(write_options{.sync = false});
      std::string v;
      (void)t.get("warm-up", v);
      t.commit(b, {.sync = false});
    }
    probe::marker("txn-nosync-end");
    b.clear();
    b.put("txn-late-sync", std::string(300, 'u'));
    probe::marker("txn-late-sync-begin");
    {
      auto t = db.begin_write(write_options{.sync = false});
      t.commit(b, {.sync = true});
    }
    probe::marker("txn-late-sync-end");
    using hits = keyspace<"hits", std::int64_t, lit<"HITS">>;
    store<schema<hits>, backend> s(dir + "-store");
    s.add<hits>({}, 1);  // its -wal file exists from here on
    probe::marker("store-add-nosync-begin");
    s.add<hits>({}, 1, {.sync = false});
    probe::marker("store-add-nosync-end");
  }
  static void check_synced(const std::vector<event>& all) {
    sqlite_check_flushed_after_frames(testing::strace_probe::segment(all, "sync"));
  }
  static void check_unsynced(const std::vector<event>& all) {
    sqlite_check_no_flush(testing::strace_probe::segment(all, "nosync"));
    const std::vector<event> f = testing::strace_probe::segment(all, "flush");
    INFO("calls of the empty synced batch:\n" << testing::strace_probe::describe(f));
    std::size_t flushes = 0;
    for (const event& e : f) flushes += e.kind == event::wal_flush ? 1 : 0;
    CHECK(flushes == 1);
  }

  static std::vector<damage> damages() {
    const auto overwritten_page = [](char filler) {
      return [filler](const fs::path& path) {
        const fs::path file = sqlite_fill(path);
        const auto size = fs::file_size(file);
        overwrite(file, (size / 4096 / 2) * 4096, std::string(4096, filler));  // a page in the middle of the table
        return file;
      };
    };
    const auto quick_check = [](const refusal& r, const fs::path& path) {
      sqlite_check_damaged(r, path);
      CHECK(r.call == "sqlite3_step");
    };
    return {
        {"a truncated database file",
         [](const fs::path& path) {
           const fs::path file = sqlite_fill(path);
           const auto size = fs::file_size(file);
           REQUIRE(size > 100 * 4096);
           fs::resize_file(file, size / 2);
           return file;
         },
         sqlite_check_damaged},
        {"a page overwritten with zeros (quick_check at open)", overwritten_page('\0'), quick_check},
        {"a page overwritten with garbage (quick_check at open)", overwritten_page('\x5a'), quick_check},
        {"a damaged header",
         [](const fs::path& path) {
           const fs::path file = sqlite_fill(path);
           overwrite(file, 0, std::string(16, '\x01'));
           return file;
         },
         sqlite_check_damaged},
    };
  }

  static std::vector<not_damage> not_damaged() {
    return {{"an intact database passes quick_check",
             [](const fs::path& path) {
               sqlite_fill(path);
               return sqlite_records;
             },
             sqlite_pad}};
  }

  static options shared_options() {
    options o;
    o.busy_timeout = std::chrono::milliseconds(60000);  // contention, not the timeout, is under test
    return o;
  }
  static constexpr process_load load{.transaction_processes = 4,
                                     .transaction_increments = 250,
                                     .add_processes = 2,
                                     .add_batches = 250,
                                     .put_processes = 3,
                                     .puts_per_process = 300};

  static std::vector<disk_full_configuration<options>> disk_full_configurations() {
    return {{"sqlite", options{}}};
  }
};

}  // namespace keyschema::durability
