// tests/unit/lmdb_damaged_file_test.cpp: a damaged data.mdb is an error, never a crash.
//
// A truncated file, a garbage meta page, a file of another format and impossible option figures
// must each be refused at open with a clear error naming the file and the figures, instead of a
// SIGBUS once LMDB maps the file. Every open runs in a forked child, so that a crash fails the
// test instead of killing the test runner. A damaged page header that only LMDB's own
// assertions can catch must abort with a message naming the database (checked in a child).
#include <keyschema/keyschema.hpp>
#include <keyschema/lmdb.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

namespace ks = keyschema;
namespace fs = std::filesystem;
using ks::testing::temp_dir;

namespace {

using record = ks::keyspace<"record", std::string, ks::lit<"R">, ks::field<"n", std::uint32_t>>;
using schema = ks::schema<record>;
using lmdb_store = ks::store<schema, ks::lmdb_backend>;

// How a child ended: exit code or signal, and what it wrote to stderr.
struct outcome {
  bool exited = false;
  int code = -1;
  int signal = 0;
  std::string err;
};

// Runs body in a forked child with stderr captured; the child exits 0 when body returns.
outcome in_child(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], 2);
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "exception: %s\n", e.what());
      std::fflush(stderr);
      ::_exit(3);
    }
    std::fflush(stderr);
    ::_exit(0);
  }
  ::close(fds[1]);
  outcome o;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) o.err.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  o.exited = WIFEXITED(status);
  if (o.exited) o.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  return o;
}

// A database of `count` records of 100 bytes (several pages).
void fill(const fs::path& env, std::uint32_t count) {
  lmdb_store db(env);
  auto b = db.batch();
  for (std::uint32_t i = 0; i < count; ++i) b.put<record>({i}, std::string(100, static_cast<char>('a' + i % 26)));
  b.commit();
}

// Opens env in a child and returns what it printed: "backend_error <native_call>|<code>|<what>".
// Fails the test when the child crashes or the open succeeds.
std::string open_fails(const fs::path& env) {
  const outcome o = in_child([&] {
    try {
      lmdb_store db(env);
    } catch (const ks::backend_error& e) {
      std::fprintf(stderr, "backend_error %s|%d|%s\n", e.native_call().c_str(), e.native_code(), e.what());
      std::fflush(stderr);
      ::_exit(2);
    }
  });
  INFO("child stderr: " << o.err);
  CHECK(o.signal == 0);  // no SIGBUS, no abort
  CHECK(o.exited);
  CHECK(o.code == 2);  // a backend_error, not success
  return o.err;
}

std::uintmax_t file_size(const fs::path& p) { return fs::file_size(p); }

void truncate_to(const fs::path& p, std::uintmax_t size) { fs::resize_file(p, size); }

void overwrite(const fs::path& p, std::uintmax_t offset, const std::string& bytes) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("lmdb: a truncated data.mdb is an error at open, not a crash", "[lmdb][damaged]") {
  temp_dir dir("lmdb-trunc");
  const fs::path env = dir.path() / "env";
  fill(env, 2000);  // about 60 pages
  const fs::path data = env / "data.mdb";
  const std::uintmax_t full = file_size(data);
  REQUIRE(full > 100000);
  // Control: the intact file opens and reads back.
  const outcome intact = in_child([&] {
    lmdb_store db(env);
    if (db.get<record>({1999}) != std::string(100, static_cast<char>('a' + 1999 % 26))) ::_exit(4);
  });
  INFO("child stderr: " << intact.err);
  REQUIRE((intact.exited && intact.code == 0));

  for (const std::uintmax_t size : {std::uintmax_t{0}, std::uintmax_t{100}, std::uintmax_t{4096},
                                    std::uintmax_t{8192}, std::uintmax_t{40000}, full / 2, full - 4096}) {
    DYNAMIC_SECTION("truncated to " << size << " bytes of " << full) {
      truncate_to(data, size);
      const std::string err = open_fails(env);
      CHECK_THAT(err, Catch::Contains(data.string()));
      CHECK_THAT(err, Catch::Contains("mdb_env_open"));
      if (size >= 8192) {
        CHECK_THAT(err, Catch::Contains(std::to_string(size) + " bytes"));  // both figures
        CHECK_THAT(err, Catch::Contains("truncated"));
      }
      if (size == 0) CHECK_THAT(err, Catch::Contains("empty"));
    }
  }
}

TEST_CASE("lmdb: a garbage or foreign data.mdb is an error at open", "[lmdb][damaged]") {
  temp_dir dir("lmdb-garbage");
  const fs::path env = dir.path() / "env";
  fill(env, 200);
  const fs::path data = env / "data.mdb";
  const std::size_t page = 4096;  // Debian's LMDB on x86-64: the system page size

  SECTION("garbage over meta page 0") {
    overwrite(data, 0, std::string(200, '\x5a'));
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("not an LMDB data file"));
    CHECK_THAT(err, Catch::Contains("meta page 0"));
    CHECK_THAT(err, Catch::Contains(data.string()));
  }
  SECTION("garbage over meta page 1") {
    overwrite(data, page, std::string(200, '\x5a'));
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("meta page 1"));
  }
  SECTION("an impossible page size in meta page 0") {
    overwrite(data, 16 + 24, std::string("\x00\x30\x00\x00", 4));  // 0x3000: not a power of two
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("page size of 12288"));
  }
  SECTION("an impossible last page in both meta pages") {
    // mm_last_pg far beyond the file: the truncation check names both figures.
    const std::string huge("\xff\xff\xff\x00\x00\x00\x00\x00", 8);
    overwrite(data, 16 + 136, huge);
    overwrite(data, page + 16 + 136, huge);
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("pages 0 to 16777215"));
    CHECK_THAT(err, Catch::Contains(std::to_string(file_size(data)) + " bytes"));
  }
  SECTION("another LMDB data format version") {
    overwrite(data, 16 + 4, std::string("\x02\x00\x00\x00", 4));
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("|" + std::to_string(MDB_VERSION_MISMATCH) + "|"));
    CHECK_THAT(err, Catch::Contains("version 2"));
  }
  SECTION("a file of another format") {
    fs::remove(data);
    std::ofstream(data, std::ios::binary) << std::string("SQLite format 3\0", 16) << std::string(20000, '\x01');
    const std::string err = open_fails(env);
    CHECK_THAT(err, Catch::Contains("|" + std::to_string(MDB_INVALID) + "|"));
    CHECK_THAT(err, Catch::Contains("not an LMDB data file"));
  }
}

TEST_CASE("lmdb: max_map_size below map_size is refused at open", "[lmdb][damaged]") {
  temp_dir dir("lmdb-maxmap");
  ks::lmdb_options o;
  o.map_size = std::size_t{8} << 20;
  o.max_map_size = std::size_t{4} << 20;
  try {
    ks::lmdb_backend db(dir.path() / "env", o);
    FAIL("opened with max_map_size < map_size");
  } catch (const ks::backend_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("max_map_size (4194304 bytes)"));
    CHECK_THAT(e.what(), Catch::Contains("map_size (8388608 bytes)"));
    CHECK(e.native_code() == EINVAL);
  }
  CHECK_FALSE(fs::exists(dir.path() / "env"));  // nothing created
}
