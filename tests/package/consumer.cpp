// tests/package/consumer.cpp: a downstream program built against an installed keyschema (or one
// added with add_subdirectory). It checks that the targets carry the include paths, the C++20
// requirement and the database libraries: it includes the headers, links, and runs.
//
// TODO(lead): include <keyschema/keyschema.hpp> (the umbrella) once it exists.
#include <keyschema/error.hpp>

#if defined(CONSUMER_WITH_LEVELDB)
#include <leveldb/db.h>
#endif
#if defined(CONSUMER_WITH_LMDB)
#include <lmdb.h>
#endif

#include <cstdio>
#include <string>

int main() {
  int failures = 0;

  const keyschema::decode_error e("consumer: probe");
  if (std::string(e.what()) != "consumer: probe") {
    std::puts("FAIL: keyschema::decode_error::what()");
    ++failures;
  }
  std::printf("keyschema %d.%d.%d\n", KEYSCHEMA_VERSION_MAJOR, KEYSCHEMA_VERSION_MINOR,
              KEYSCHEMA_VERSION_PATCH);

#if defined(CONSUMER_WITH_LEVELDB)
  // Linking a LevelDB symbol proves keyschema::leveldb carries leveldb::leveldb.
  leveldb::Options options;
  if (options.create_if_missing) {
    std::puts("FAIL: leveldb::Options defaults");
    ++failures;
  }
  std::printf("leveldb %d.%d\n", leveldb::kMajorVersion, leveldb::kMinorVersion);
#endif
#if defined(CONSUMER_WITH_LMDB)
  int major = 0;
  int minor = 0;
  int patch = 0;
  const char* version = mdb_version(&major, &minor, &patch);
  if (version == nullptr || major != MDB_VERSION_MAJOR) {
    std::puts("FAIL: mdb_version");
    ++failures;
  }
  std::printf("lmdb %d.%d.%d\n", major, minor, patch);
#endif

  std::puts(failures == 0 ? "consumer: ok" : "consumer: FAILED");
  return failures == 0 ? 0 : 1;
}
