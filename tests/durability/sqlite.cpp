// tests/durability/sqlite.cpp: the durability checks of keyschema::sqlite_backend that have no
// counterpart in another engine (the shared ones: cases/, through sqlite_traits.hpp).
//
// Power loss: a read-modify-write with {.sync = false} waits for no disk (it did: SQLite's write
// transactions always committed at synchronous = FULL), and a transaction begun unsynced but
// committed synced flushes the log after its frames (the probe's further commits,
// sqlite_traits::probe_more). Damaged files: without the check at open (files above
// quick_check_max_bytes), a read that reaches an overwritten page throws backend_error
// (SQLITE_CORRUPT) instead of returning fewer entries; nothing is repaired or dropped.
//
// Compiled with the cases into unit_group_sqlite (see durability.hpp).
#include <durability/durability.hpp>

#include <keyschema/sqlite.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace keyschema::durability::sqlite_only {

namespace probe = keyschema::testing::strace_probe;

TEST_CASE("sqlite: a write transaction begun unsynced flushes nothing unless committed synced", "[power_loss]") {
  if (!probe::has_strace("the SQLite commit order")) return;
  temp_dir dir("sqlite-power");
  const std::vector<sqlite_event> all = probe::trace_probe<sqlite_traits>(dir.path());
  SECTION("a write transaction begun for an unsynced commit, and a store's add with {.sync = false}, flush nothing") {
    for (const char* name : {"txn-nosync", "store-add-nosync"}) {
      INFO(name);
      sqlite_check_no_flush(probe::segment(all, name));
    }
  }
  SECTION("a write transaction begun unsynced and committed synced flushes after its last frame") {
    sqlite_check_flushed_after_frames(probe::segment(all, "txn-late-sync"));
  }
}

// Counts the entries a full scan returns; throws what the cursor throws.
inline int scan_all(sqlite_backend& db) {
  int n = 0;
  for (auto c = db.cursor(key_range{}, nullptr); c.valid(); c.next()) ++n;
  return n;
}

// With the check at open (the default for files up to 64 MiB) the open refuses such a file:
// cases/damaged_files.cpp.
TEST_CASE("sqlite: without the check at open, a full scan over an overwritten page throws instead of returning "
          "fewer entries",
          "[damaged_files]") {
  temp_dir dir("sqlite-overwritten");
  const fs::path path = dir.path() / "db";
  const fs::path file = sqlite_fill(path);
  const auto size = fs::file_size(file);
  const std::string filler = GENERATE(std::string(4096, '\0'), std::string(4096, '\x5a'));
  overwrite(file, (size / 4096 / 2) * 4096, filler);  // a page in the middle of the table
  sqlite_options o;
  o.quick_check_max_bytes = 0;
  sqlite_backend db(path, o);
  try {
    const int n = scan_all(db);
    FAIL("a full scan of a damaged table returned " << n << " entries of " << sqlite_records);
  } catch (const backend_error& e) {
    INFO(e.what());
    sqlite_check_damaged(refusal{e.native_call(), e.native_code(), e.what()}, path);
  }
}

}  // namespace keyschema::durability::sqlite_only
