// keyschema/engine_probe.hpp: which storage engine's files are in a directory.
//
// probe_engines(path) looks at the names of the files in a directory (and at the first 16 bytes
// of files no engine below claims by name) and reports every storage engine whose files it finds,
// each with the file that gave it away. It needs no database library and opens nothing as a
// database, so every adapter calls it before its engine creates anything, and keyschema-dump uses
// it to pick the adapter:
//
//   keyschema::require_engine(dir, keyschema::storage_engine::lmdb, "keyschema::lmdb_backend");
//   // throws wrong_engine_error: "... /srv/db holds a LevelDB database (CURRENT), not an LMDB one; ..."
//   for (const keyschema::engine_evidence& e : keyschema::probe_engines(dir)) ...   // e.engine, e.file
//
// What counts as evidence:
//   LMDB     data.mdb or lock.mdb
//   RocksDB  an OPTIONS-* file, or IDENTITY together with CURRENT or a MANIFEST-* (RocksDB writes
//            IDENTITY first when it creates a database; LevelDB never writes IDENTITY or OPTIONS-*)
//   LevelDB  CURRENT, a MANIFEST-* or a *.ldb file, when the directory is not RocksDB's
//   SQLite   a regular file starting with the 16 bytes "SQLite format 3\0" (also `path` itself
//            when it is such a file; SQLite databases are single files)
// Files that are only what a failed open leaves behind (LevelDB's LOCK and LOG) are no evidence.
//
// Thread-safety: a pure function of the file system; safe from any thread.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>

#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

// POSIX directory and file calls rather than <filesystem> and <fstream>: this header is part of
// <keyschema/keyschema.hpp> and of every adapter, and those two standard headers were a large part
// of what including them cost. The functions take the path as a std::string; a
// std::filesystem::path converts to it implicitly.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

KEYSCHEMA_BEGIN_NAMESPACE

// The storage engines keyschema recognises on disk (those with an adapter and those planned).
enum class storage_engine { leveldb, lmdb, rocksdb, sqlite };

// "LevelDB", "LMDB", "RocksDB", "SQLite".
constexpr std::string_view engine_name(storage_engine e) noexcept {
  switch (e) {
    case storage_engine::leveldb: return "LevelDB";
    case storage_engine::lmdb: return "LMDB";
    case storage_engine::rocksdb: return "RocksDB";
    case storage_engine::sqlite: return "SQLite";
  }
  return "?";
}

// One engine found, with the file (a name inside the probed directory, or the probed path itself
// when it is a file) that shows it.
struct engine_evidence {
  storage_engine engine;
  std::string file;
};

// The path holds another storage engine's database than the adapter opening it (a LevelDB
// directory given to lmdb_backend, a RocksDB or SQLite database given to either). found() is the
// engine seen; what() names it, the file that shows it and the path. Nothing was opened or
// created. Remedy: open the path with the adapter of that engine, or choose another path.
class wrong_engine_error : public backend_error {
 public:
  wrong_engine_error(const std::string& message, storage_engine found)
      : backend_error(message, "keyschema::probe_engines", 0), found_(found) {}
  storage_engine found() const noexcept { return found_; }

 private:
  storage_engine found_;
};

namespace detail {

// Whether the file `name` (relative to the directory `dir_fd`, or a path when dir_fd is AT_FDCWD)
// starts with the 16 bytes of SQLite's header. A file that cannot be opened or read is not one.
template <class = void>
inline bool starts_with_sqlite_header(int dir_fd, const char* name) {
  static constexpr char header[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
  int fd;
  do fd = ::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return false;
  char buf[sizeof header];
  std::size_t got = 0;
  while (got < sizeof buf) {
    const ::ssize_t n = ::read(fd, buf + got, sizeof buf - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return got == sizeof buf && std::string_view(buf, sizeof buf) == std::string_view(header, sizeof header);
}

// Names no engine's header check needs to read: the engines' own files.
template <class = void>
inline bool engine_file_name(std::string_view n) noexcept {
  auto ends = [&](std::string_view s) { return n.size() >= s.size() && n.substr(n.size() - s.size()) == s; };
  auto starts = [&](std::string_view s) { return n.substr(0, s.size()) == s; };
  return n == "CURRENT" || n == "LOCK" || n == "LOG" || n == "LOG.old" || n == "IDENTITY" || n == "data.mdb" ||
         n == "lock.mdb" || starts("MANIFEST-") || starts("OPTIONS-") || starts("LOG.old.") || ends(".ldb") ||
         ends(".log") || ends(".sst") || ends(".dbtmp") || ends("-wal") || ends("-shm") || ends("-journal");
}

}  // namespace detail

// The engines whose files are in the directory `path`, in the order LevelDB, LMDB, RocksDB,
// SQLite, each once (with the file that shows it: CURRENT for LevelDB when present, else the
// first file seen). When `path` is a regular file, only the SQLite check applies to it. Empty
// when `path` does not exist, is an empty directory, or holds only files of no engine above.
// The SQLite header (16 bytes) is read from every regular file whose name no engine above uses,
// however many there are: an SQLite database among thousands of other files is still found.
// Errors: none thrown; unreadable entries are skipped (the engine's own open reports them).
// Lifetime: the result owns its strings.
template <class = void>
inline std::vector<engine_evidence> probe_engines(const std::string& path) {
  std::vector<engine_evidence> found;
  struct ::stat st {};
  if (::stat(path.c_str(), &st) != 0) return found;
  if (S_ISREG(st.st_mode)) {
    if (detail::starts_with_sqlite_header(AT_FDCWD, path.c_str())) found.push_back({storage_engine::sqlite, path});
    return found;
  }
  if (!S_ISDIR(st.st_mode)) return found;
  ::DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return found;
  struct dir_closer {
    ::DIR* d;
    ~dir_closer() { ::closedir(d); }
  } closer{dir};

  std::string leveldb, lmdb, rocksdb, sqlite;
  bool current = false, identity = false, manifest = false;
  while (const ::dirent* ent = ::readdir(dir)) {  // an error ends the listing, as its end does
    const std::string_view n = ent->d_name;
    if (n == "." || n == "..") continue;
    const std::string name(n);
    auto first = [&](std::string& slot) {
      if (slot.empty()) slot = name;
    };
    if (n == "data.mdb" || n == "lock.mdb") first(lmdb);
    if (n.substr(0, 8) == "OPTIONS-") first(rocksdb);
    if (n == "CURRENT") current = true;
    if (n == "IDENTITY") identity = true;
    if (n.substr(0, 9) == "MANIFEST-") manifest = true;
    if (n == "CURRENT") leveldb = name;  // the file LevelDB itself looks for: the clearest evidence
    if (n.substr(0, 9) == "MANIFEST-" || (n.size() > 4 && n.substr(n.size() - 4) == ".ldb")) first(leveldb);
    struct ::stat fst {};  // follows symbolic links, as the check of `path` itself does
    if (sqlite.empty() && !detail::engine_file_name(n) && ::fstatat(::dirfd(dir), ent->d_name, &fst, 0) == 0 &&
        S_ISREG(fst.st_mode)) {
      if (detail::starts_with_sqlite_header(::dirfd(dir), ent->d_name)) sqlite = name;
    }
  }
  if (rocksdb.empty() && identity && (current || manifest)) rocksdb = "IDENTITY";
  if (!rocksdb.empty()) leveldb.clear();  // RocksDB's CURRENT and MANIFEST-* are its own
  if (!leveldb.empty()) found.push_back({storage_engine::leveldb, leveldb});
  if (!lmdb.empty()) found.push_back({storage_engine::lmdb, lmdb});
  if (!rocksdb.empty()) found.push_back({storage_engine::rocksdb, rocksdb});
  if (!sqlite.empty()) found.push_back({storage_engine::sqlite, sqlite});
  return found;
}

// Refuses a directory (or file) that holds another engine's files; called by each adapter before
// its engine opens, and possibly creates, anything in `path`. `who` names the caller in the
// message ("keyschema::lmdb_backend").
// Errors: wrong_engine_error (native_call "keyschema::probe_engines") naming the engine found,
// the file that shows it and the path, e.g. "keyschema::lmdb_backend: /srv/db holds a LevelDB
// database (CURRENT), not an LMDB one; open it with keyschema::leveldb_backend". Nothing was
// created or modified. Remedy: open it with the matching adapter, or choose another path.
template <class = void>
inline void require_engine(const std::string& path, storage_engine own, std::string_view who) {
  for (const engine_evidence& e : probe_engines(path)) {
    if (e.engine == own) continue;
    std::string remedy;
    if (e.engine == storage_engine::leveldb) remedy = "open it with keyschema::leveldb_backend";
    else if (e.engine == storage_engine::lmdb) remedy = "open it with keyschema::lmdb_backend";
    else if (e.engine == storage_engine::rocksdb) remedy = "open it with keyschema::rocksdb_backend";
    else if (e.engine == storage_engine::sqlite) remedy = "open it with keyschema::sqlite_backend";
    else remedy = "keyschema has no " + std::string(engine_name(e.engine)) + " adapter yet; choose another path";
    throw wrong_engine_error(std::string(who) + ": " + path + " holds " +
                                 (e.engine == storage_engine::lmdb ? "an " : "a ") + std::string(engine_name(e.engine)) +
                                 " database (" + e.file + "), not " + (own == storage_engine::lmdb ? "an " : "a ") +
                                 std::string(engine_name(own)) + " one; " + remedy + ". Nothing was opened or created",
                             e.engine);
  }
}

KEYSCHEMA_END_NAMESPACE
