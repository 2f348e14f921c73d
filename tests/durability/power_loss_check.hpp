// tests/durability/power_loss_check.hpp: the commit stream and prefix check of the power-loss
// simulations of the durability suite (cases/power_loss.cpp and the engines' own cases in
// leveldb.cpp, rocksdb.cpp).
//
// check_power_loss_prefix<Backend, Env>(engine, options_for) runs the simulation on one backend:
// a writer commits a stream of batches, a random mix of synced and unsynced, into a database with
// a small write buffer (so the engine switches write-ahead logs every few dozen commits). At random
// points the power is cut (Env drops everything not synced), the database is reopened and checked:
// the commits present are exactly 0..k-1 (a prefix of the stream, each batch whole and with its
// own contents), and k covers every commit up to the last synced one that returned. Half of the
// crash points are aimed at the dangerous moment: right after the first synced commit that
// follows a switch of log files. Ten crash points per database, then a fresh one.
//
// Env is the engine's fault-injecting environment, default-constructible, with
//   std::atomic<int> logs_created;  // write-ahead log files created so far
//   void cut_power();               // from now on nothing reaches the "disk"
//   void restore_power();           // drop what was not durable; REQUIRES: no database open
// and optionally, for an Env that models directory entries (figures printed at the end),
//   std::atomic<int> directory_syncs, unsynced_entries_dropped;
// and options_for(Env&) returns the Backend's options that route its files through that Env.
// Backend is constructed as Backend(path, options_for(env)).
//
// check_close_makes_durable<Backend, Env>(engine, options_for): a clean close makes unsynced
// commits durable (the same Env and options_for).
//
// Crash points: 250 by default, 60 under AddressSanitizer (a test may pass fewer);
// KEYSCHEMA_POWER_LOSS_CRASHES=<n> sets another count (the long mode) and KEYSCHEMA_POWER_LOSS_SEED=<n> the random seed. The figures
// are printed at the end ("<engine> power loss: seed ..., <n> crash points ...").
//
// Thread-safety: test helpers for one thread.
#pragma once

#include <catch2/catch.hpp>

#include <keyschema/backend.hpp>
#include <keyschema/write_batch.hpp>

#include <support/temp_dir.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace keyschema::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr int power_loss_default_crash_points = 60;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr int power_loss_default_crash_points = 60;
#else
inline constexpr int power_loss_default_crash_points = 250;
#endif
#else
inline constexpr int power_loss_default_crash_points = 250;
#endif

inline std::uint64_t power_loss_env_number(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

inline std::string power_loss_key(char tag, std::uint64_t i) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%c%010llu", tag, static_cast<unsigned long long>(i));
  return buf;
}

// Commit i's value: its index, then filler of a length that varies with i (100..1499 bytes).
inline std::string power_loss_value(std::uint64_t i) {
  return std::to_string(i) + ":" + std::string(100 + (i * 7919) % 1400, static_cast<char>('a' + i % 26));
}

// Commit i: a batch of two entries, both present or both absent after any crash.
template <class Backend>
void power_loss_commit(Backend& db, std::uint64_t i, bool sync) {
  write_batch wb;
  wb.put(power_loss_key('c', i), power_loss_value(i));
  wb.put(power_loss_key('m', i), std::to_string(i));
  db.write(wb, write_options{.sync = sync});
}

// The number k of commits present, after checking that they are exactly commits 0..k-1, whole.
template <class Backend>
std::uint64_t power_loss_present_prefix(const Backend& db) {
  std::uint64_t k = 0;
  for (auto c = db.cursor(key_range{"c", "d"}, nullptr); c.valid(); c.next(), ++k) {
    INFO("commit " << k << " of the prefix");
    REQUIRE(c.key() == power_loss_key('c', k));  // a gap: a later commit survived an earlier one
    REQUIRE(c.value() == power_loss_value(k));
  }
  std::uint64_t m = 0;
  for (auto c = db.cursor(key_range{"m", "n"}, nullptr); c.valid(); c.next(), ++m) {
    REQUIRE(c.key() == power_loss_key('m', m));
    REQUIRE(c.value() == std::to_string(m));
  }
  REQUIRE(m == k);  // every batch whole
  return k;
}

// default_crash_points: the count when KEYSCHEMA_POWER_LOSS_CRASHES is not set.
// A clean close makes unsynced commits durable: ten unsynced commits, the backend destroyed, the
// power cut; the reopened database holds all ten. engine names the scratch directory.
template <class Backend, class Env, class OptionsFor>
void check_close_makes_durable(const std::string& engine, OptionsFor options_for) {
  keyschema::testing::temp_dir dir(engine + "-power");
  const auto path = dir.path() / "db";
  Env env;
  {
    Backend db(path, options_for(env));
    for (std::uint64_t i = 0; i < 10; ++i) power_loss_commit(db, i, false);
  }  // a clean close
  env.cut_power();
  env.restore_power();
  Backend db(path, options_for(env));
  CHECK(power_loss_present_prefix(db) == 10);
}

template <class Backend, class Env, class OptionsFor>
void check_power_loss_prefix(const std::string& engine, OptionsFor options_for,
                             std::uint64_t default_crash_points = power_loss_default_crash_points) {
  const std::uint64_t crash_points = power_loss_env_number("KEYSCHEMA_POWER_LOSS_CRASHES", default_crash_points);
  const std::uint64_t seed = power_loss_env_number("KEYSCHEMA_POWER_LOSS_SEED", 20261201);
  std::mt19937_64 rng(seed);
  constexpr int crashes_per_database = 10;

  std::uint64_t crashes = 0, aimed = 0, commits = 0, synced = 0, checked = 0, lost = 0, log_switches = 0;
  std::uint64_t entries_dropped = 0, directory_syncs = 0;  // for an Env that models directory entries
  const auto start = std::chrono::steady_clock::now();
  while (crashes < crash_points) {
    temp_dir dir(engine + "-power");
    const auto path = dir.path() / "db";
    Env env;
    std::uint64_t next = 0;      // commits issued in the history that survived
    std::uint64_t required = 0;  // commits that must survive the next crash
    for (int round = 0;; ++round) {
      env.restore_power();
      Backend db(path, options_for(env));
      if (round > 0) {
        INFO("seed " << seed << ", crash point " << crashes << ": " << next << " commits issued, the first "
                     << required << " must be present");
        const std::uint64_t k = power_loss_present_prefix(db);
        REQUIRE(k >= required);
        REQUIRE(k <= next);
        ++crashes;
        checked += k;
        lost += next - k;
        next = required = k;  // recovery wrote what it found to synced table files
      }
      if (round == crashes_per_database || crashes >= crash_points) break;

      // 0: crash after a random number of commits; 1: right after the first synced commit that
      // follows a switch of log files.
      const bool aim = rng() % 2 == 1;
      const std::uint64_t n = aim ? 2000 : rng() % 300;
      const int logs_before = env.logs_created;
      for (std::uint64_t j = 0; j < n; ++j) {
        const bool switched = env.logs_created != logs_before;
        const bool sync = (aim && switched) || rng() % 5 == 0;
        power_loss_commit(db, next, sync);
        ++commits;
        ++next;
        if (sync) {
          ++synced;
          required = next;
        }
        if (aim && switched && sync) break;
      }
      if (aim) ++aimed;
      log_switches += static_cast<std::uint64_t>(env.logs_created - logs_before);
      env.cut_power();
    }
    if constexpr (requires { env.unsynced_entries_dropped; }) {
      entries_dropped += static_cast<std::uint64_t>(env.unsynced_entries_dropped);
      directory_syncs += static_cast<std::uint64_t>(env.directory_syncs);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%s power loss: seed %llu, %llu crash points (%llu aimed after a log switch), %llu commits "
      "(%llu synced), %llu log switches, %llu commits verified present, %llu unsynced commits lost, %.2f s\n",
      engine.c_str(), static_cast<unsigned long long>(seed), static_cast<unsigned long long>(crashes),
      static_cast<unsigned long long>(aimed), static_cast<unsigned long long>(commits),
      static_cast<unsigned long long>(synced), static_cast<unsigned long long>(log_switches),
      static_cast<unsigned long long>(checked), static_cast<unsigned long long>(lost), seconds);
  if constexpr (requires(Env& e) { e.unsynced_entries_dropped; }) {
    std::printf("%s power loss: %llu directory fsyncs, %llu files deleted at a power cut because their "
                "directory was not fsynced after they were created\n",
                engine.c_str(), static_cast<unsigned long long>(directory_syncs),
                static_cast<unsigned long long>(entries_dropped));
  }
  // The simulation must actually drop data, or it proves nothing.
  CHECK(lost > 0);
  CHECK(log_switches > 0);
}

}  // namespace keyschema::testing
