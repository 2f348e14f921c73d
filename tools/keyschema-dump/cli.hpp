// tools/keyschema-dump/cli.hpp: the keyschema-dump command line: options, opening the
// database, exit statuses.
//
//   keyschema-dump [--backend leveldb|lmdb|rocksdb|sqlite] [--prefix TUPLE]... [--limit N] [--reverse]
//                  [--json] [--values auto|hex|none] DIRECTORY
//
// run() is the whole program (main() only forwards to it), so tests can drive it with string
// arguments and string streams. Exit statuses:
//   0  the listing is complete (also when some keys were flagged as not being tuples)
//   1  usage error: unknown option, bad argument, unparsable --prefix, a backend this build
//      lacks, a directory that holds the files of more than one engine; the message says which
//   2  the database could not be opened or read, or the output could not be written; the message
//      names the directory and the failing native call (e.g. [leveldb::DB::Open: 4], [mdb_env_open: 2])
//
// The database is opened for reading only. LMDB: MDB_RDONLY, so a writer process may keep
// running; the listing is one consistent snapshot. LevelDB and RocksDB have no read-only mode in
// their adapters: the directory is opened without create_if_missing, nothing is written through
// the handle, but the engine itself takes the LOCK file (a database held by a live process fails
// with "already open"/"lock") and may replay its write-ahead log into a new table file on open,
// as any open does. SQLite: keyschema.sqlite3 is opened without create_if_missing and only read;
// another process may keep writing (WAL mode), and the listing is one read transaction.
//
// KEYSCHEMA_DUMP_WITH_LEVELDB / _LMDB / _ROCKSDB / _SQLITE (1 or 0) select the backends compiled
// in; by default each is on when its adapter header is reachable.
//
// Thread-safety: run() uses only its arguments and the streams it is given.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/engine_probe.hpp>
#include <keyschema/error.hpp>

#include "dump.hpp"
#include "prefix.hpp"

#ifndef KEYSCHEMA_DUMP_WITH_LEVELDB
#if __has_include(<keyschema/leveldb.hpp>) && __has_include(<leveldb/db.h>)
#define KEYSCHEMA_DUMP_WITH_LEVELDB 1
#else
#define KEYSCHEMA_DUMP_WITH_LEVELDB 0
#endif
#endif
#ifndef KEYSCHEMA_DUMP_WITH_LMDB
#if __has_include(<keyschema/lmdb.hpp>) && __has_include(<lmdb.h>)
#define KEYSCHEMA_DUMP_WITH_LMDB 1
#else
#define KEYSCHEMA_DUMP_WITH_LMDB 0
#endif
#endif

#ifndef KEYSCHEMA_DUMP_WITH_ROCKSDB
#if __has_include(<keyschema/rocksdb.hpp>) && __has_include(<rocksdb/db.h>)
#define KEYSCHEMA_DUMP_WITH_ROCKSDB 1
#else
#define KEYSCHEMA_DUMP_WITH_ROCKSDB 0
#endif
#endif
#ifndef KEYSCHEMA_DUMP_WITH_SQLITE
#if __has_include(<keyschema/sqlite.hpp>) && __has_include(<sqlite3.h>)
#define KEYSCHEMA_DUMP_WITH_SQLITE 1
#else
#define KEYSCHEMA_DUMP_WITH_SQLITE 0
#endif
#endif

#if KEYSCHEMA_DUMP_WITH_LEVELDB
#include <keyschema/leveldb.hpp>
#endif
#if KEYSCHEMA_DUMP_WITH_ROCKSDB
#include <keyschema/rocksdb.hpp>
#endif
#if KEYSCHEMA_DUMP_WITH_SQLITE
#include <keyschema/sqlite.hpp>
#endif
#if KEYSCHEMA_DUMP_WITH_LMDB
#include <keyschema/lmdb.hpp>
#endif

#include <charconv>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace dump {

enum class backend_kind { automatic, leveldb, lmdb, rocksdb, sqlite };

// A parsed command line.
struct command {
  std::filesystem::path path;
  backend_kind backend = backend_kind::automatic;
  dump_options options;
  bool help = false;
  bool version = false;
};

inline constexpr std::string_view usage_text =
    "usage: keyschema-dump [OPTIONS] DIRECTORY\n"
    "\n"
    "Lists the keys of a keyschema LevelDB, LMDB, RocksDB or SQLite database in key order,\n"
    "one per line,\n"
    "each decoded as a FoundationDB tuple (no schema needed), with its value.\n"
    "\n"
    "Options:\n"
    "  --backend leveldb|lmdb|rocksdb|sqlite\n"
    "                          the kind of database (default: detected from its files:\n"
    "                          LevelDB's CURRENT, LMDB's data.mdb, RocksDB's OPTIONS-*\n"
    "                          or IDENTITY, SQLite's keyschema.sqlite3)\n"
    "  --prefix TUPLE          only keys starting with these elements, written like the\n"
    "                          output: '\"DESTINATION\",\"queue-1\"' or '(\"DESTINATION\", 7)'.\n"
    "                          Elements: \"text\", b\"bytes\", integers, floats (1.5, 1.5f),\n"
    "                          true, false, null; escapes \\\\ \\\" \\n \\r \\t \\0 \\xNN.\n"
    "                          Repeating --prefix appends elements.\n"
    "  --limit N               stop after N lines\n"
    "  --reverse               descending key order\n"
    "  --json                  JSON lines: {\"key\":[...],\"value\":...,\"valid_key\":true}\n"
    "  --values auto|hex|none  values decoded when they are tuples, else hex (auto, the\n"
    "                          default); always hex; or not shown\n"
    "  -h, --help              this text\n"
    "  --version               the keyschema version\n"
    "\n"
    "Text lines:  (\"DESTINATION\", \"queue-1\", 42)  =  x\"0a0b\"   a key and a hex value\n"
    "             !b\"legacy.key\"  =  (7,)                        a key that is not a tuple\n"
    "             # schema <fingerprint> <layout>                the store's schema record\n"
    "             # migration <progress>                         an unfinished ks::migrate\n"
    "Exit status: 0 done, 1 usage error, 2 the database could not be opened or read.\n"
    "LevelDB and RocksDB allow one process at a time: a database held by a running program\n"
    "cannot be listed (dump a copy of the directory). LMDB (opened read-only) and SQLite may\n"
    "be listed live.\n";

namespace detail {

// Matches "--name VALUE" and "--name=VALUE"; advances i past what it used.
inline bool option_value(const std::vector<std::string_view>& args, std::size_t& i, std::string_view name,
                         std::string_view& value) {
  const std::string_view a = args[i];
  if (a == name) {
    if (i + 1 >= args.size()) throw usage_error("option " + std::string(name) + " needs a value");
    value = args[++i];
    return true;
  }
  if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=') {
    value = a.substr(name.size() + 1);
    return true;
  }
  return false;
}

inline std::uint64_t parse_limit(std::string_view v) {
  std::uint64_t n = 0;
  const auto res = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || res.ec != std::errc() || res.ptr != v.data() + v.size())
    throw usage_error("--limit needs a non-negative integer, not '" + std::string(v) + "'");
  return n;
}

inline std::string_view backend_name(backend_kind k) noexcept {
  switch (k) {
    case backend_kind::leveldb: return "LevelDB";
    case backend_kind::lmdb: return "LMDB";
    case backend_kind::rocksdb: return "RocksDB";
    case backend_kind::sqlite: return "SQLite";
    case backend_kind::automatic: break;
  }
  return "automatic";
}

inline backend_kind backend_of(storage_engine e) noexcept {
  switch (e) {
    case storage_engine::leveldb: return backend_kind::leveldb;
    case storage_engine::lmdb: return backend_kind::lmdb;
    case storage_engine::rocksdb: return backend_kind::rocksdb;
    case storage_engine::sqlite: return backend_kind::sqlite;
  }
  return backend_kind::automatic;
}

inline storage_engine engine_of(backend_kind k) noexcept {
  switch (k) {
    case backend_kind::lmdb: return storage_engine::lmdb;
    case backend_kind::rocksdb: return storage_engine::rocksdb;
    case backend_kind::sqlite: return storage_engine::sqlite;
    default: return storage_engine::leveldb;
  }
}

// The exit status and message of an open or read failure.
struct failure {
  int status;
  std::string message;
};

// Detects the kind of database in `path`. Returns automatic with `fail` set when it cannot tell.
inline backend_kind detect_backend(const std::filesystem::path& path, failure& fail) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    const std::error_code why = ec ? ec : std::make_error_code(std::errc::no_such_file_or_directory);
    fail = {2, "cannot open '" + path.string() + "': " + why.message() + " [std::filesystem::status: " +
                   std::to_string(why.value()) + "]"};
    return backend_kind::automatic;
  }
  // One probe serves the adapters and this tool: <keyschema/engine_probe.hpp>.
  const std::vector<engine_evidence> found = probe_engines(path);
  if (!fs::is_directory(st)) {
    const std::string what = found.empty() ? std::string("not a directory")
                                           : "a " + std::string(engine_name(found.front().engine)) +
                                                 " database file, not a directory";
    fail = {2, "cannot open '" + path.string() + "': " + what +
                   " (keyschema's LevelDB, LMDB, RocksDB and SQLite databases are directories) "
                   "[std::filesystem::status: " +
                   std::to_string(static_cast<int>(std::errc::not_a_directory)) + "]"};
    return backend_kind::automatic;
  }
  backend_kind kind = backend_kind::automatic;
  bool mixed = false;
  std::string files;
  for (const engine_evidence& e : found) {
    files += (files.empty() ? "" : ", ") + std::string(engine_name(e.engine)) + " (" + e.file + ")";
    mixed = mixed || (kind != backend_kind::automatic && kind != backend_of(e.engine));
    kind = backend_of(e.engine);
  }
  if (mixed) {
    fail = {1, "'" + path.string() + "' holds the files of more than one engine: " + files + "; choose with --backend"};
    return backend_kind::automatic;
  }
  if (kind == backend_kind::automatic) {
    fail = {2, "cannot open '" + path.string() +
                   "': it holds no LevelDB database (no CURRENT file), LMDB environment (no data.mdb file), "
                   "RocksDB database (no OPTIONS-* or IDENTITY file) or SQLite database (no keyschema.sqlite3); "
                   "give --backend to see the database's own error"};
    return backend_kind::automatic;
  }
  return kind;
}

// LevelDB's and RocksDB's DB::Open create the directory, its LOCK file and a new info LOG before
// they notice that CURRENT is missing: checked first, so that a mistyped path leaves nothing
// behind. Returns false after writing the message to err.
inline bool has_current_file(const command& cmd, std::ostream& err) {
  std::error_code ec;
  if (std::filesystem::exists(cmd.path / "CURRENT", ec)) return true;
  const std::string_view name = backend_name(cmd.backend);
  err << "keyschema-dump: cannot open '" << cmd.path.string() << "' (" << name << "): no " << name
      << " database there (no CURRENT file); nothing was opened or created [std::filesystem::exists: "
      << (ec ? ec.value() : static_cast<int>(std::errc::no_such_file_or_directory)) << "]\n";
  return false;
}

// Opens `path` with Backend, lists it, and turns errors into a failure. Returns 0 or fills fail.
template <class Open>
int open_and_dump(const command& cmd, std::ostream& out, failure& fail, Open&& open) {
  const std::string where = "'" + cmd.path.string() + "' (" + std::string(backend_name(cmd.backend)) + ")";
  dump_stats stats;
  bool opened = false;
  try {
    auto db = open();
    opened = true;
    use_stored_long_keys(db);  // keys of keyschema::long_keys keyspaces listed in full (LMDB)
    dump_entries(db, cmd.options, out, stats);
  } catch (const locked_error& e) {
    fail = {2, "cannot open " + where + ": " + e.what() +
                   (cmd.backend == backend_kind::leveldb
                        ? "; a running program holds it: stop it, or list a copy of the directory"
                        : "")};
    return 2;
  } catch (const std::exception& e) {
    if (!opened) {
      fail = {2, "cannot open " + where + ": " + e.what()};
    } else {
      out.flush();
      fail = {2, "reading " + where + " failed after " + std::to_string(stats.entries) + " lines: " + e.what()};
    }
    return 2;
  }
  return 0;
}

}  // namespace detail

// Parses the arguments after the program name.
// Errors: usage_error (unknown option, missing or malformed value, not exactly one DIRECTORY
// unless --help or --version is given).
inline command parse_command_line(const std::vector<std::string_view>& args) {
  command cmd;
  std::vector<std::string_view> positional;
  bool options_done = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    std::string_view v;
    if (options_done || a.empty() || a.front() != '-' || a == "-") {
      positional.push_back(a);
    } else if (a == "--") {
      options_done = true;
    } else if (a == "-h" || a == "--help") {
      cmd.help = true;
    } else if (a == "--version") {
      cmd.version = true;
    } else if (a == "--json") {
      cmd.options.json = true;
    } else if (a == "--reverse") {
      cmd.options.reverse = true;
    } else if (detail::option_value(args, i, "--backend", v)) {
      if (v == "leveldb") cmd.backend = backend_kind::leveldb;
      else if (v == "lmdb") cmd.backend = backend_kind::lmdb;
      else if (v == "rocksdb") cmd.backend = backend_kind::rocksdb;
      else if (v == "sqlite") cmd.backend = backend_kind::sqlite;
      else throw usage_error("--backend must be leveldb, lmdb, rocksdb or sqlite, not '" + std::string(v) + "'");
    } else if (detail::option_value(args, i, "--prefix", v)) {
      cmd.options.prefix += parse_prefix(v);
    } else if (detail::option_value(args, i, "--limit", v)) {
      cmd.options.limit = detail::parse_limit(v);
    } else if (detail::option_value(args, i, "--values", v)) {
      if (v == "auto") cmd.options.values = value_format::automatic;
      else if (v == "hex") cmd.options.values = value_format::hex;
      else if (v == "none") cmd.options.values = value_format::none;
      else throw usage_error("--values must be auto, hex or none, not '" + std::string(v) + "'");
    } else {
      throw usage_error("unknown option '" + std::string(a) + "'");
    }
  }
  if (cmd.help || cmd.version) return cmd;
  if (positional.empty()) throw usage_error("no database DIRECTORY given");
  if (positional.size() > 1) throw usage_error("one DIRECTORY expected, got " + std::to_string(positional.size()));
  cmd.path = std::filesystem::path(std::string(positional.front()));
  return cmd;
}

// The whole program: parses args (without the program name), opens the database, writes the
// listing to `out` and messages to `err`. Returns the exit status (see the top of this file).
// Errors: none thrown; every failure is a message on `err` and a status.
inline int run(const std::vector<std::string_view>& args, std::ostream& out, std::ostream& err) {
  command cmd;
  try {
    cmd = parse_command_line(args);
  } catch (const usage_error& e) {
    err << "keyschema-dump: " << e.what() << "\nTry 'keyschema-dump --help'.\n";
    return 1;
  }
  if (cmd.help) {
    out << usage_text;
    return out.flush() ? 0 : 2;
  }
  if (cmd.version) {
    out << "keyschema-dump " << KEYSCHEMA_VERSION_MAJOR << '.' << KEYSCHEMA_VERSION_MINOR << '.'
        << KEYSCHEMA_VERSION_PATCH << '\n';
    return out.flush() ? 0 : 2;
  }

  detail::failure fail{0, {}};
  if (cmd.backend == backend_kind::automatic) {
    cmd.backend = detail::detect_backend(cmd.path, fail);
    if (fail.status != 0) {
      err << "keyschema-dump: " << fail.message << '\n';
      return fail.status;
    }
  }

  // A --backend that does not match the files: named before the engine opens (and creates) anything.
  try {
    require_engine(cmd.path, detail::engine_of(cmd.backend), "keyschema-dump");
  } catch (const wrong_engine_error& e) {
    err << "keyschema-dump: cannot open '" << cmd.path.string() << "' (" << detail::backend_name(cmd.backend)
        << "): " << e.what() << '\n';
    return 2;
  }

  int status = 0;
  if (cmd.backend == backend_kind::leveldb) {
#if KEYSCHEMA_DUMP_WITH_LEVELDB
    if (!detail::has_current_file(cmd, err)) return 2;
    status = detail::open_and_dump(cmd, out, fail, [&] {
      leveldb_options o;
      o.create_if_missing = false;
      o.bloom_bits_per_key = 0;  // reads only: a filter policy would only be used for new tables
      return leveldb_backend(cmd.path, o);
    });
#else
    err << "keyschema-dump: this build has no LevelDB support (rebuild with KEYSCHEMA_WITH_LEVELDB=ON)\n";
    return 1;
#endif
  } else if (cmd.backend == backend_kind::lmdb) {
#if KEYSCHEMA_DUMP_WITH_LMDB
    status = detail::open_and_dump(cmd, out, fail, [&] {
      lmdb_options o;
      o.read_only = true;
      o.create_if_missing = false;
      return lmdb_backend(cmd.path, o);
    });
#else
    err << "keyschema-dump: this build has no LMDB support (rebuild with KEYSCHEMA_WITH_LMDB=ON)\n";
    return 1;
#endif
  } else if (cmd.backend == backend_kind::rocksdb) {
#if KEYSCHEMA_DUMP_WITH_ROCKSDB
    if (!detail::has_current_file(cmd, err)) return 2;
    status = detail::open_and_dump(cmd, out, fail, [&] {
      rocksdb_options o;
      o.create_if_missing = false;
      return rocksdb_backend(cmd.path, o);
    });
#else
    err << "keyschema-dump: this build has no RocksDB support (rebuild with KEYSCHEMA_WITH_ROCKSDB=ON)\n";
    return 1;
#endif
  } else {
#if KEYSCHEMA_DUMP_WITH_SQLITE
    status = detail::open_and_dump(cmd, out, fail, [&] {
      sqlite_options o;
      o.create_if_missing = false;
      return sqlite_backend(cmd.path, o);
    });
#else
    err << "keyschema-dump: this build has no SQLite support (rebuild with KEYSCHEMA_WITH_SQLITE=ON)\n";
    return 1;
#endif
  }
  if (status != 0) {
    err << "keyschema-dump: " << fail.message << '\n';
    return status;
  }
  if (!out.flush()) {
    err << "keyschema-dump: writing the listing failed\n";
    return 2;
  }
  return 0;
}

// As above, for main()'s argc/argv (argv[0] is skipped).
inline int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return run(args, out, err);
}

}  // namespace dump
KEYSCHEMA_END_NAMESPACE
