// tests/durability/cases/power_loss.cpp: durability cases: a power loss.
//
// What holds on every file engine: a synced commit that returned survives a power loss, whole; an
// unsynced one waits for no disk, and what makes it durable later (a clean close, a synced
// commit) does. Two ways to cut the power, one per model (durability.hpp):
//   simulated (LevelDB, RocksDB: traits::simulated_power_loss): the engine's files go
//     through a fault-injecting Env that drops everything not synced at a cut
//     (power_loss_check.hpp: a stream of synced and unsynced commits, cut at random points, half
//     of them right after the first synced commit that follows a log switch; the reopened
//     database must hold exactly commits 0..k-1, each batch whole, k covering every synced one);
//   traced (LMDB, SQLite): what a SIGKILL cannot show, whether a commit reached stable storage
//     before write() returned, is read from the system calls of a probe (a hidden case of this
//     program) run under strace (strace_probe.hpp): the engine's traits classify the calls and
//     state the order a synced commit needs (its pages written, then flushed) and that an
//     unsynced one flushes nothing. Without strace the topic prints "KEYSCHEMA-SKIP: ..." and
//     CTest reports it skipped, not passed.
//
// Compiled once per engine, into its unit_group_<engine> (see durability.hpp).
#include <durability/durability.hpp>

#include <durability/power_loss_check.hpp>
#include <durability/strace_probe.hpp>

#include <cstdlib>
#include <string>
#include <vector>

namespace keyschema::durability::power_loss {

namespace probe = keyschema::testing::strace_probe;

// The probe's commits, each between markers: "sync" (write_options{}) and "nosync"
// ({.sync = false}) after a synced warm-up commit (the engine's files exist from there on), then
// the engine's own (probe_more).
template <class E>
void run_probe() {
  const char* dir = std::getenv(probe::probe_env);
  REQUIRE(dir != nullptr);
  typename E::backend db(dir);
  write_batch b;
  b.put("warm-up", "v");
  db.write(b, {});
  b.clear();
  for (int i = 0; i < 50; ++i) b.put("key-" + std::to_string(i), std::string(300, 'v'));
  probe::marker("sync-begin");
  db.write(b, {});
  probe::marker("sync-end");
  b.clear();
  for (int i = 0; i < 50; ++i) b.put("other-" + std::to_string(i), std::string(300, 'w'));
  probe::marker("nosync-begin");
  db.write(b, {.sync = false});
  probe::marker("nosync-end");
  E::probe_more(db, dir);
}

template <class E>
void synced_commits_survive() {
  if constexpr (E::simulated_power_loss) {
    keyschema::testing::check_power_loss_prefix<typename E::backend, typename E::power_loss_env>(
        std::string(E::name), E::power_loss_options, E::power_loss_crash_points());
  } else {
    if (!probe::has_strace("the commit order of a synced commit")) return;
    temp_dir dir(std::string(E::name) + "-power");
    E::check_synced(probe::trace_probe<E>(dir.path()));
  }
}

template <class E>
void unsynced_commits_wait_for_no_disk() {
  if constexpr (E::simulated_power_loss) {
    keyschema::testing::check_close_makes_durable<typename E::backend, typename E::power_loss_env>(
        std::string(E::name), E::power_loss_options);
  } else {
    if (!probe::has_strace("the commit order of an unsynced commit")) return;
    temp_dir dir(std::string(E::name) + "-power");
    E::check_unsynced(probe::trace_probe<E>(dir.path()));
  }
}

template <class E>
void probe_case() {
  if constexpr (E::simulated_power_loss) {
    FAIL("the probe is for the engines whose power loss is traced, not simulated");
  } else {
    run_probe<E>();
  }
}

// The probe: run only under strace, by the traced cases (hidden tag).
TEST_CASE("durability power-loss probe", "[.durability_probe]") { probe_case<engine>(); }

TEST_CASE("power loss: every synced commit that returned survives, whole", "[power_loss]") {
  synced_commits_survive<engine>();
}

TEST_CASE("power loss: an unsynced commit waits for no disk; a clean close or a later synced commit makes it durable",
          "[power_loss]") {
  unsynced_commits_wait_for_no_disk<engine>();
}

}  // namespace keyschema::durability::power_loss
