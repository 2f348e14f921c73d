// tests/unit/read_only_directory_test.cpp: a database on a read-only file system is an error that
// names the path, on every file backend, and loses nothing.
//
// Running as root, a directory without write permission is still writable, so the test mounts a
// small tmpfs (needs root or CAP_SYS_ADMIN), creates a database in it, remounts it read-only and
// opens the database again: each backend must throw an error naming the database path and saying
// that the file system is read-only (never open an empty store, never crash). After remounting read-write, every record is still there.
// Where no tmpfs can be mounted it prints "KEYSCHEMA-SKIP: ..." and CTest reports it skipped.
#include <keyschema/keyschema.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>
#include <keyschema/sqlite.hpp>
#include <support/scratch_tmpfs.hpp>

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace read_only_directory_test {

namespace ks = keyschema;
using ks::testing::scratch_tmpfs;

namespace {

using record = ks::keyspace<"record", std::string, ks::lit<"R">, ks::field<"id", std::uint64_t>>;
using ro_schema = ks::schema<record>;

template <class Backend>
void fill(const std::filesystem::path& p) {
  ks::store<ro_schema, Backend> db{p};
  auto b = db.batch();
  for (std::uint64_t i = 0; i < 100; ++i) b.template put<record>({i}, "value " + std::to_string(i));
  b.commit();
}

template <class Backend>
void check_all_present(const std::filesystem::path& p) {
  ks::store<ro_schema, Backend> db{p};
  for (std::uint64_t i = 0; i < 100; ++i) {
    INFO("record " << i);
    REQUIRE(db.template get<record>({i}) == "value " + std::to_string(i));
  }
}

template <class Backend>
void check_read_only_refused(const char* engine) {
  scratch_tmpfs fs("16m");
  if (!fs.mounted()) {
    std::printf("KEYSCHEMA-SKIP: cannot mount a tmpfs (%s; needs root or CAP_SYS_ADMIN); read-only file systems "
                "were not checked\n",
                fs.why().c_str());
    WARN("no tmpfs: not checked");
    return;
  }
  const auto existing = fs.path() / "existing";
  const auto fresh = fs.path() / "fresh";
  fill<Backend>(existing);
  REQUIRE(fs.set_read_only(true));

  SECTION(std::string(engine) + ": an existing database") {
    try {
      ks::store<ro_schema, Backend> db{existing};
      FAIL("opened a database on a read-only file system without an error");
    } catch (const ks::error& e) {
      INFO(e.what());
      CHECK_THAT(e.what(), Catch::Contains(existing.string()) && Catch::Contains("Read-only file system"));
    }
  }
  SECTION(std::string(engine) + ": a database to create") {
    try {
      ks::store<ro_schema, Backend> db{fresh};
      FAIL("created a database on a read-only file system without an error");
    } catch (const ks::error& e) {
      INFO(e.what());
      CHECK_THAT(e.what(), Catch::Contains(fresh.string()) && Catch::Contains("Read-only file system"));
    }
    CHECK_FALSE(std::filesystem::exists(fresh));
  }

  REQUIRE(fs.set_read_only(false));
  check_all_present<Backend>(existing);
}

}  // namespace

TEST_CASE("leveldb: a database on a read-only file system is an error naming it", "[leveldb][readonly]") {
  check_read_only_refused<ks::leveldb_backend>("leveldb");
}

TEST_CASE("lmdb: a database on a read-only file system is an error naming it", "[lmdb][readonly]") {
  check_read_only_refused<ks::lmdb_backend>("lmdb");
}

TEST_CASE("sqlite: a database on a read-only file system is an error naming it", "[sqlite][readonly]") {
  check_read_only_refused<ks::sqlite_backend>("sqlite");
}

}  // namespace read_only_directory_test
