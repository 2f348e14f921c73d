// tests/durability/lmdb_traits.hpp: the durability suite's traits for keyschema::lmdb_backend
// (durability.hpp says what traits provide).
//
// Power loss: traced. The probe's commits are read from the calls on data.mdb; LMDB opens it twice,
// once with O_DSYNC (or O_SYNC) for the meta page. A synced commit, all before its end marker:
//   1. its data pages are written (LMDB 0.9.24: lseek + writev; pwrite64 / pwritev count too) on
//      LMDB's read-write descriptor,
//   2. that descriptor is flushed (fdatasync, or fsync),
//   3. the meta page is written through the O_DSYNC descriptor (the write returns only once it is
//      on stable storage), and nothing is written to data.mdb after it.
// An unsynced commit: data and meta pages are written, nothing is flushed, and the meta page does
// not go through the O_DSYNC descriptor.
// Damage: data.mdb truncated to several sizes, garbage over either meta page, impossible figures
// in the meta pages (page size, last page, format version), a file of another format; each must
// be refused at open instead of a SIGBUS once LMDB maps the file. Processes: shared (LMDB's write
// transaction serializes writers across processes). A full disk: the defaults.
// Thread-safety: stateless.
#pragma once

#include <durability/strace_probe.hpp>

#include <keyschema/lmdb.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#define KEYSCHEMA_DURABILITY_SHARED_BY_PROCESSES 1

namespace keyschema::durability {

// A closed environment at path with `count` records in one commit; returns its data.mdb.
inline fs::path lmdb_fill(const fs::path& path, int count) {
  lmdb_backend db(path);
  write_records(db, 0, count, true, true);
  return path / "data.mdb";
}

// The refusal names data.mdb and, in the native call or the message, mdb_env_open.
inline void lmdb_names_data_file(const refusal& r, const fs::path& path) {
  CHECK(contains(r.what, (path / "data.mdb").string()));
  CHECK(contains(r.call + "|" + r.what, "mdb_env_open"));
}

struct lmdb_traits {
  using backend = lmdb_backend;
  using options = lmdb_options;
  static constexpr std::string_view name = "lmdb";

  static constexpr bool simulated_power_loss = false;
  // One system call of the trace that concerns data.mdb (or a marker).
  struct event {
    enum kind_t { marker, data_write, meta_write, flush } kind;
    std::string text;  // the marker, or the line
  };
  static std::string traced_calls() { return std::string(testing::strace_probe::write_and_sync_calls) + ",msync"; }
  // The markers and the calls on descriptors of data.mdb; the O_DSYNC (or O_SYNC) descriptor's
  // writes are the meta page's.
  static std::vector<event> classify(const std::vector<testing::strace_probe::traced>& calls) {
    return testing::strace_probe::classify<event>(calls, [](const testing::strace_probe::traced& t) -> std::optional<event> {
      if (!t.path.ends_with("/data.mdb")) return std::nullopt;
      const bool dsync = t.flags.find("O_DSYNC") != std::string::npos || t.flags.find("O_SYNC") != std::string::npos;
      if (t.call.find("write") != std::string::npos) return event{dsync ? event::meta_write : event::data_write, t.text};
      return event{event::flush, t.text};
    });
  }
  static void probe_more(backend&, const std::string&) {}
  static void check_synced(const std::vector<event>& all) {
    const std::vector<event> s = testing::strace_probe::segment(all, "sync");
    INFO("data.mdb calls of the synced commit:\n" << testing::strace_probe::describe(s));
    std::size_t first_flush = s.size(), last_data = 0, meta = s.size();
    bool any_data = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i].kind == event::flush && first_flush == s.size()) first_flush = i;
      if (s[i].kind == event::data_write) {
        any_data = true;
        last_data = i;
      }
      if (s[i].kind == event::meta_write) meta = i;
    }
    REQUIRE(any_data);                // 1. data pages written
    REQUIRE(first_flush < s.size());  // 2. flushed
    CHECK(last_data < first_flush);   //    after every data page
    REQUIRE(meta < s.size());         // 3. the meta page through the O_DSYNC descriptor
    CHECK(first_flush < meta);        //    after the flush
    CHECK(meta == s.size() - 1);      //    and nothing of data.mdb after it
  }
  static void check_unsynced(const std::vector<event>& all) {
    // Data pages and the meta page written, unflushed.
    testing::strace_probe::check_unflushed(testing::strace_probe::segment(all, "nosync"),
                                           {event::flush, event::meta_write}, event::data_write, 2,
                                           "data.mdb calls of the unsynced commit");
  }

  static std::vector<damage> damages() {
    constexpr std::size_t page = 4096;  // Debian's LMDB on x86-64: the system page size
    std::vector<damage> out;
    // Truncated (2000 records are about 60 pages): to a size, given the full size.
    using cut = std::uintmax_t (*)(std::uintmax_t full);
    const std::vector<std::pair<std::string, cut>> cuts = {
        {"0 bytes", [](std::uintmax_t) -> std::uintmax_t { return 0; }},
        {"100 bytes", [](std::uintmax_t) -> std::uintmax_t { return 100; }},
        {"4096 bytes", [](std::uintmax_t) -> std::uintmax_t { return 4096; }},
        {"8192 bytes", [](std::uintmax_t) -> std::uintmax_t { return 8192; }},
        {"40000 bytes", [](std::uintmax_t) -> std::uintmax_t { return 40000; }},
        {"half its size", [](std::uintmax_t full) { return full / 2; }},
        {"its size less one page", [](std::uintmax_t full) { return full - page; }}};
    for (const auto& [to, size_of] : cuts) {
      out.push_back({"data.mdb truncated to " + to,
                     [size_of = size_of](const fs::path& path) {
                       const fs::path data = lmdb_fill(path, 2000);
                       const std::uintmax_t full = fs::file_size(data);
                       REQUIRE(full > 100000);
                       fs::resize_file(data, size_of(full));
                       return data;
                     },
                     [](const refusal& r, const fs::path& path) {
                       lmdb_names_data_file(r, path);
                       const std::uintmax_t now = fs::file_size(path / "data.mdb");
                       if (now >= 8192) {
                         CHECK(contains(r.what, std::to_string(now) + " bytes"));  // both figures
                         CHECK(contains(r.what, "truncated"));
                       }
                       if (now == 0) CHECK(contains(r.what, "empty"));
                     }});
    }
    out.push_back({"garbage over meta page 0",
                   [](const fs::path& path) {
                     const fs::path data = lmdb_fill(path, 200);
                     overwrite(data, 0, std::string(200, '\x5a'));
                     return data;
                   },
                   [](const refusal& r, const fs::path& path) {
                     CHECK(contains(r.what, "not an LMDB data file"));
                     CHECK(contains(r.what, "meta page 0"));
                     CHECK(contains(r.what, (path / "data.mdb").string()));
                   }});
    out.push_back({"garbage over meta page 1",
                   [](const fs::path& path) {
                     const fs::path data = lmdb_fill(path, 200);
                     overwrite(data, page, std::string(200, '\x5a'));
                     return data;
                   },
                   [](const refusal& r, const fs::path&) { CHECK(contains(r.what, "meta page 1")); }});
    out.push_back({"an impossible page size in meta page 0",
                   [](const fs::path& path) {
                     const fs::path data = lmdb_fill(path, 200);
                     overwrite(data, 16 + 24, std::string("\x00\x30\x00\x00", 4));  // 0x3000: not a power of two
                     return data;
                   },
                   [](const refusal& r, const fs::path&) { CHECK(contains(r.what, "page size of 12288")); }});
    out.push_back({"an impossible last page in both meta pages",
                   [](const fs::path& path) {
                     // mm_last_pg far beyond the file: the truncation check names both figures.
                     const fs::path data = lmdb_fill(path, 200);
                     const std::string huge("\xff\xff\xff\x00\x00\x00\x00\x00", 8);
                     overwrite(data, 16 + 120, huge);  // mm_last_pg
                     overwrite(data, page + 16 + 120, huge);
                     return data;
                   },
                   [](const refusal& r, const fs::path& path) {
                     CHECK(contains(r.what, "pages 0 to 16777215"));
                     CHECK(contains(r.what, std::to_string(fs::file_size(path / "data.mdb")) + " bytes"));
                   }});
    out.push_back({"another LMDB data format version",
                   [](const fs::path& path) {
                     const fs::path data = lmdb_fill(path, 200);
                     overwrite(data, 16 + 4, std::string("\x02\x00\x00\x00", 4));
                     return data;
                   },
                   [](const refusal& r, const fs::path&) {
                     CHECK(r.code == MDB_VERSION_MISMATCH);
                     CHECK(contains(r.what, "version 2"));
                   }});
    out.push_back({"a file of another format",
                   [](const fs::path& path) {
                     const fs::path data = lmdb_fill(path, 200);
                     fs::remove(data);
                     std::ofstream(data, std::ios::binary) << std::string("SQLite format 3\0", 16)
                                                           << std::string(20000, '\x01');
                     return data;
                   },
                   [](const refusal& r, const fs::path&) {
                     CHECK(r.code == MDB_INVALID);
                     CHECK(contains(r.what, "not an LMDB data file"));
                   }});
    return out;
  }

  static std::vector<not_damage> not_damaged() {
    return {{"an intact data.mdb", [](const fs::path& path) {
               lmdb_fill(path, 2000);
               return 2000;
             }}};
  }

  static options shared_options() { return {}; }
  static constexpr process_load load{.transaction_processes = 3,
                                     .transaction_increments = 3000,
                                     .add_processes = 2,
                                     .add_batches = 1000,
                                     .put_processes = 3,
                                     .puts_per_process = 600};

  static std::vector<disk_full_configuration<options>> disk_full_configurations() { return {{"lmdb", options{}}}; }
};

}  // namespace keyschema::durability
