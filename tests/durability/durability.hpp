// tests/durability/durability.hpp: the durability suite, common part: the engine's traits and the
// helpers its topic files share.
//
// What holds on every file engine is written once, in one file per topic under cases/:
//   power_loss.cpp     every synced commit that returned survives a power loss, whole; an
//                      unsynced one waits for no disk, and a clean close makes it durable
//   damaged_files.cpp  a damaged or missing file is refused at open with an error naming the
//                      database, and nothing is repaired or dropped; what is not damage (an
//                      intact file, a log a crash cut inside its last record) opens whole
//   processes.cpp      several processes on one database: their writes all land and no update
//                      is lost, or the second process is refused with locked_error
//   disk_full.cpp      a full disk fails the write with a clear error and loses nothing committed
// and compiled for each file engine into that engine's unit test group, unit_group_<engine> (one
// object with the adapter's unit tests, which instantiate the adapter and the store once for
// both). Each engine contributes only its injection mechanism, through the small traits header
// <engine>_traits.hpp (a fault-injecting Env, a probe under strace, which file to damage and how,
// which options fill the disk differently), and keeps the checks that have no counterpart in
// another engine in <engine>.cpp. tests/CMakeLists.txt registers an engine with
//
//   keyschema_add_durability_test(lmdb TRAITS keyschema::durability::lmdb_traits GROUP unit_group_lmdb)
//
// which defines KEYSCHEMA_DURABILITY_TRAITS and KEYSCHEMA_DURABILITY_TRAITS_HEADER
// (<durability/<engine>_traits.hpp>) and adds one CTest test per topic,
// durability_<engine>.<topic> (power_loss, damaged_files, processes, disk_full), running the
// cases tagged [<topic>] (shared and engine-specific alike): a topic whose tool is missing
// (strace, a tmpfs to fill) is reported skipped on its own.
//
// The traits (a struct of static members; see leveldb_traits.hpp for a full one):
//   using backend; using options;           backend(path, options) opens or creates a database
//   static constexpr std::string_view name;  for messages and scratch directories
// power loss, one of two models, chosen by static constexpr bool simulated_power_loss:
//   true (LevelDB, RocksDB): using power_loss_env (power_loss_check.hpp says what it provides);
//     static options power_loss_options(power_loss_env&); static std::uint64_t power_loss_crash_points();
//   false (LMDB, SQLite: they write through the page cache with their own fsyncs): a probe run under
//     strace (strace_probe.hpp): struct event {kind, text} with kind `marker`;
//     static std::string traced_calls(); static std::vector<event> classify(traced calls);
//     static void probe_more(backend&, const std::string& dir) (further marked commits of the
//     engine's own cases); static void check_synced(trace), check_unsynced(trace)
// damaged files:
//   static std::vector<damage> damages(); static std::vector<not_damage> not_damaged()
// several processes, one of two models, chosen by the macro KEYSCHEMA_DURABILITY_SHARED_BY_PROCESSES
// that the traits header defines (the two models have different cases):
//   1 (LMDB, SQLite): static options shared_options() (for contention: a long busy timeout);
//     static constexpr process_load load (processes and commits of each case)
//   0 (LevelDB, RocksDB: one process at a time): static constexpr std::string_view open_call,
//     the native call that reports the engine's lock held (locked_error)
// a full disk:
//   static std::vector<disk_full_configuration<options>> disk_full_configurations()
//
// Thread-safety: test helpers for one thread.
#pragma once

#if !defined(KEYSCHEMA_DURABILITY_TRAITS) || !defined(KEYSCHEMA_DURABILITY_TRAITS_HEADER)
#error "durability.hpp: compile with KEYSCHEMA_DURABILITY_TRAITS and _TRAITS_HEADER defined (keyschema_add_durability_test)"
#endif

#include <support/child_process.hpp>
#include <support/temp_dir.hpp>
#include <support/thrown.hpp>

#include <keyschema/backend.hpp>
#include <keyschema/error.hpp>
#include <keyschema/write_batch.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyschema::durability {

namespace fs = std::filesystem;
using keyschema::testing::contains;
using keyschema::testing::temp_dir;
using keyschema::testing::thrown;

// --- records -------------------------------------------------------------------------------------

// Record i: key "r%05d", value "value-<i>" and `pad` bytes 'x'.
inline std::string record_key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "r%05d", i);
  return buf;
}
inline std::string record_value(int i, std::size_t pad = 60) { return "value-" + std::to_string(i) + std::string(pad, 'x'); }

// Writes records [from, to) into db, one commit each with `sync`, or all in one batch when
// one_batch.
template <class Backend>
void write_records(Backend& db, int from, int to, bool sync, bool one_batch = false, std::size_t pad = 60) {
  write_batch wb;
  for (int i = from; i < to; ++i) {
    wb.put(record_key(i), record_value(i, pad));
    if (!one_batch) {
      db.write(wb, write_options{.sync = sync});
      wb.clear();
    }
  }
  if (one_batch) db.write(wb, write_options{.sync = sync});
}

// The indexes of the records present, after checking each one's key and value.
template <class Backend>
std::vector<int> present(const Backend& db, std::size_t pad = 60) {
  std::vector<int> out;
  for (auto c = db.cursor(key_range{}, nullptr); c.valid(); c.next()) {
    const int i = std::stoi(std::string(c.key().substr(1)));
    REQUIRE(c.key() == record_key(i));
    REQUIRE(c.value() == record_value(i, pad));
    out.push_back(i);
  }
  return out;
}

inline std::vector<int> first_n(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

// --- files -----------------------------------------------------------------------------------------

// The entries of dir whose name starts with prefix and, unless ext is empty, whose extension is ext.
inline std::vector<fs::path> files_with(const fs::path& dir, std::string_view prefix, std::string_view ext) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) == 0 && (ext.empty() || e.path().extension() == ext)) {
      out.push_back(e.path());
    }
  }
  return out;
}

inline std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The file's bytes, or nullopt when it does not exist.
inline std::optional<std::string> contents(const fs::path& p) {
  if (!fs::exists(p)) return std::nullopt;
  return read_all(p);
}

// Writes bytes over the file at offset. REQUIRES: the file exists.
inline void overwrite(const fs::path& p, std::uint64_t offset, std::string_view bytes) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f);
}

// --- damaged files ---------------------------------------------------------------------------------

// How an open was refused: the backend_error's native_call(), native_code() and what().
struct refusal {
  std::string call;
  int code = 0;
  std::string what;
};

// One kind of damage an engine must refuse at open (cases/damaged_files.cpp).
struct damage {
  std::string name;
  // Makes a closed database at path and damages it; returns the file damaged (or removed).
  std::function<fs::path(const fs::path& path)> make;
  // The engine's own expectations of the refusal (its native call and code, the figures its
  // message names), beyond the shared ones; may be empty.
  std::function<void(const refusal&, const fs::path& path)> check;
};

// What an engine must not take for damage: make() leaves a closed database at path and returns
// the records (0..n-1, present() layout with pad) that must read back.
struct not_damage {
  std::string name;
  std::function<int(const fs::path& path)> make;
  std::size_t pad = 60;
};

// Opens Backend(path) in a forked child (a crash, a SIGBUS or an abort fails the test instead of
// ending the runner) and requires that it throws backend_error; returns what it said.
template <class Backend>
refusal open_refused(const fs::path& path) {
  const keyschema::testing::outcome o = keyschema::testing::in_child([&] {
    try {
      Backend db(path);
    } catch (const backend_error& e) {
      std::fprintf(stderr, "backend_error %s|%d|%s\n", e.native_call().c_str(), e.native_code(), e.what());
      std::fflush(stderr);
      ::_exit(2);
    }
  });
  INFO("child stderr: " << o.err);
  CHECK(o.signal == 0);  // no SIGBUS, no abort
  CHECK(o.exited);
  REQUIRE(o.code == 2);  // a backend_error, not success
  refusal r;
  const std::string_view prefix = "backend_error ";
  const std::size_t at = o.err.find(prefix);
  REQUIRE(at != std::string::npos);
  const std::size_t bar1 = o.err.find('|', at), bar2 = o.err.find('|', bar1 + 1);
  REQUIRE(bar2 != std::string::npos);
  r.call = o.err.substr(at + prefix.size(), bar1 - at - prefix.size());
  r.code = std::atoi(o.err.substr(bar1 + 1, bar2 - bar1 - 1).c_str());
  r.what = o.err.substr(bar2 + 1);
  while (!r.what.empty() && r.what.back() == '\n') r.what.pop_back();
  return r;
}

// What a crash while appending leaves: the log make_log(path) fills and returns (records
// 0..count-1, one commit each) cut inside its last record; every record but that one must read back.
inline not_damage torn_log(std::function<fs::path(const fs::path& path)> make_log, int count) {
  return {"a log that ends inside its last record (a crash while appending)", [=](const fs::path& path) {
            const fs::path log = make_log(path);
            fs::resize_file(log, fs::file_size(log) - 10);  // the last record is cut
            return count - 1;                                // exactly the cut, never acknowledged, record is missing
          }};
}

// --- several processes -----------------------------------------------------------------------------

// How much each case of cases/processes.cpp writes on an engine that several processes share.
struct process_load {
  int transaction_processes, transaction_increments;  // read-modify-write transactions
  int add_processes, add_batches;                      // batches with an add
  int put_processes;                                   // puts and batches
  std::uint32_t puts_per_process;
};

// --- a full disk -----------------------------------------------------------------------------------

// One configuration cases/disk_full.cpp fills the disk with: a label and the options.
template <class Options>
struct disk_full_configuration {
  std::string label;
  Options options;
};

// An LSM engine's configurations: its defaults, and 64 KiB memtables, so that the disk can run out
// in a background flush or compaction (`where`) instead of the log.
template <class Options>
std::vector<disk_full_configuration<Options>> lsm_disk_full_configurations(const std::string& engine,
                                                                           const std::string& where) {
  Options small;
  small.write_buffer_bytes = std::size_t{64} << 10;
  return {{engine, Options{}}, {engine + ", 64 KiB memtables (the disk fills in " + where + ")", small}};
}

}  // namespace keyschema::durability

#include KEYSCHEMA_DURABILITY_TRAITS_HEADER

namespace keyschema::durability {
using engine = KEYSCHEMA_DURABILITY_TRAITS;
using backend_type = engine::backend;
}  // namespace keyschema::durability
