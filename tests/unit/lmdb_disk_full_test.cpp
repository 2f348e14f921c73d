// tests/unit/lmdb_disk_full_test.cpp: a full disk is reported as "disk full" and loses nothing.
//
// LMDB reports a disk that fills up during a commit as EIO (a short pwrite), so the error has to
// look at the file system to name the cause. The test mounts a 1 MiB tmpfs (needs root, or
// CAP_SYS_ADMIN), fills it with synced commits until one fails, and checks the error, that every
// acknowledged commit is readable after reopening, and that nothing of the failed one is. Where
// no tmpfs can be mounted it prints "KEYSCHEMA-SKIP: ..." and CTest reports it skipped.
#include <keyschema/lmdb.hpp>
#include <support/scratch_tmpfs.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace lmdb_disk_full_test {

namespace ks = keyschema;
using ks::testing::scratch_tmpfs;
using ks::testing::temp_dir;

namespace {

std::string key_of(int i) { return "k" + std::to_string(100000 + i); }

}  // namespace

TEST_CASE("lmdb: a full disk says so; acknowledged commits survive, the failed one left nothing", "[lmdb][diskfull]") {
  scratch_tmpfs fs("1m");
  if (!fs.mounted()) {
    std::printf("KEYSCHEMA-SKIP: cannot mount a tmpfs to fill (%s; needs root or CAP_SYS_ADMIN); disk-full "
                "reporting was not checked\n",
                fs.why().c_str());
    WARN("no tmpfs: not checked");
    return;
  }
  const auto env = fs.path() / "env";
  const std::string value(20000, 'v');
  int acknowledged = 0;
  std::optional<ks::backend_error> failure;
  {
    ks::lmdb_options o;
    o.map_size = std::size_t{4} << 20;  // address space, far more than the disk
    ks::lmdb_backend db(env, o);
    for (int i = 0; i < 1000; ++i) {
      ks::write_batch b;
      b.put(key_of(i), value);
      try {
        db.write(b, {});
      } catch (const ks::backend_error& e) {
        failure = e;
        break;
      }
      acknowledged = i + 1;
    }
    REQUIRE(failure.has_value());
    INFO(failure->what());
    CHECK_THAT(failure->what(), Catch::Contains("disk full"));
    CHECK_THAT(failure->what(), Catch::Contains("bytes free on the file system of " + env.string()));
    CHECK_THAT(failure->what(), Catch::Contains("nothing was written"));
    CHECK((failure->native_code() == EIO || failure->native_code() == ENOSPC));
    CHECK(failure->native_call() == "mdb_txn_commit");
    CHECK(acknowledged > 10);
  }
  ks::lmdb_backend db(env);
  std::string v;
  for (int i = 0; i < acknowledged; ++i) {
    INFO("acknowledged commit " << i);
    REQUIRE(db.get(key_of(i), v, nullptr));
    CHECK(v == value);
  }
  CHECK_FALSE(db.get(key_of(acknowledged), v, nullptr));
}

}  // namespace lmdb_disk_full_test
