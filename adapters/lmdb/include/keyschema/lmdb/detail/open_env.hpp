// keyschema/lmdb/detail/open_env.hpp: lmdb_detail::open_env(), opening an LMDB environment for
// lmdb_backend.
//
// open_env() checks the options and the directory (creating it when allowed), refuses another
// engine's database (engine_probe.hpp), a second open in this process (open_registry.hpp) and a
// damaged data.mdb (data_file.hpp), then opens the environment with MDB_NOTLS, keeps a larger map
// recorded in the file, opens the unnamed main database and sizes the read-transaction pool and
// the number of threads' readers. The errors it raises are those documented at the lmdb_backend
// constructor.
//
// Thread-safety: may be called from any thread; two threads opening one path race for its
// registration and one of them gets locked_error.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/engine_probe.hpp>
#include <keyschema/error.hpp>
#include <keyschema/lmdb/detail/data_file.hpp>
#include <keyschema/lmdb/detail/env_state.hpp>
#include <keyschema/detail/backend/open_registry.hpp>
#include <keyschema/lmdb/detail/status.hpp>
#include <keyschema/lmdb/options.hpp>

#include <lmdb.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>
#include <string_view>
#include <system_error>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

inline std::size_t round_up(std::size_t n, std::size_t page) noexcept {
  const std::size_t r = n % page;
  return r == 0 ? n : n + (page - r);
}

// Opens the named database of every placement the main database lists (keys starting with
// placement_db_prefix) in txn, adding each to s.router. Errors: backend_error "mdb_dbi_open"
// (what() names the entry: a key in the reserved range that is no named database).
inline void open_placements(env_state& s, MDB_txn* txn, const std::string& where) {
  s.dbis[0] = s.dbi;
  MDB_cursor* cur = nullptr;
  if (const int rc = ::mdb_cursor_open(txn, s.dbi, &cur); rc != MDB_SUCCESS)
    lmdb_detail::throw_status(where + "cannot list the placements of " + s.path, "mdb_cursor_open", rc);
  std::vector<std::string> names;
  MDB_val k{placement_db_prefix.size(), const_cast<char*>(placement_db_prefix.data())};
  MDB_val v{0, nullptr};
  for (int rc = ::mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == MDB_SUCCESS;
       rc = ::mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    const std::string_view key(static_cast<const char*>(k.mv_data), k.mv_size);
    if (!key.starts_with(placement_db_prefix)) break;
    names.emplace_back(key);
  }
  ::mdb_cursor_close(cur);
  for (const std::string& full : names) {
    MDB_dbi dbi = 0;
    if (const int rc = ::mdb_dbi_open(txn, full.c_str(), 0, &dbi); rc != MDB_SUCCESS) {
      lmdb_detail::throw_status(where + "cannot open the named database of placement '" +
                                    full.substr(placement_db_prefix.size()) + "' in " + s.path,
                                "mdb_dbi_open", rc);
    }
    s.add_placement(std::string_view(full).substr(placement_db_prefix.size()), dbi, true);
  }
}

inline std::unique_ptr<env_state> open_env(const std::filesystem::path& path, const lmdb_options& options) {
  namespace fs = std::filesystem;
  const std::string where = "keyschema::lmdb_backend: ";
  require_engine(path, storage_engine::lmdb, "keyschema::lmdb_backend");  // before LMDB creates anything
  if (options.max_map_size < options.map_size) {
    throw backend_error(where + "lmdb_options::max_map_size (" + std::to_string(options.max_map_size) +
                            " bytes) is below lmdb_options::map_size (" + std::to_string(options.map_size) +
                            " bytes) for " + path.string() + "; raise max_map_size or lower map_size",
                        "mdb_env_set_mapsize", EINVAL);
  }
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (fs::exists(path, ec)) {
      throw backend_error(where + path.string() + " exists and is not a directory", "mdb_env_open", ENOTDIR);
    }
    if (options.read_only || !options.create_if_missing) {
      throw backend_error(where + path.string() + " does not exist (" +
                              (options.read_only ? "opened read-only" : "lmdb_options::create_if_missing is false") + ")",
                          "mdb_env_open", ENOENT);
    }
    fs::create_directories(path, ec);
    if (ec) {
      throw backend_error(where + "cannot create the directory " + path.string() + ": " + ec.message(),
                          "std::filesystem::create_directories", ec.value());
    }
  } else if ((options.read_only || !options.create_if_missing) && !fs::exists(path / "data.mdb", ec)) {
    throw backend_error(where + path.string() + " holds no LMDB database (data.mdb) and " +
                            (options.read_only ? "it was opened read-only" : "lmdb_options::create_if_missing is false"),
                        "mdb_env_open", ENOENT);
  }
  const fs::path canonical = fs::canonical(path, ec);
  if (ec) {
    throw backend_error(where + "cannot resolve " + path.string() + ": " + ec.message(), "std::filesystem::canonical",
                        ec.value());
  }

  auto registration = detail::open_registration::acquire(canonical.string());
  if (!registration) {
    throw locked_error(where + canonical.string() +
                           " is already open in this process; LMDB forbids a second handle on one "
                           "environment (its locks belong to the process): share the open backend or "
                           "destroy it first",
                       "mdb_env_open", 0);
  }

  auto s = std::make_unique<env_state>(options.resize_wait);
  s->registration = std::move(*registration);
  s->path = canonical.string();
  s->read_only = options.read_only;

  // A truncated or impossible data.mdb would crash the process once mapped: refuse it first.
  lmdb_detail::check_data_file(s->path);

  int rc = ::mdb_env_create(&s->env);
  if (rc != MDB_SUCCESS) {
    s->env = nullptr;
    lmdb_detail::throw_status(where + "cannot create an LMDB environment handle", "mdb_env_create", rc);
  }
  ::mdb_env_set_assert(s->env, &lmdb_detail::report_assert);
  if (rc = ::mdb_env_set_maxreaders(s->env, options.max_readers); rc != MDB_SUCCESS) {
    lmdb_detail::throw_status(where + "invalid lmdb_options::max_readers " + std::to_string(options.max_readers),
                         "mdb_env_set_maxreaders", rc);
  }
  if (rc = ::mdb_env_set_maxdbs(s->env, options.max_placements); rc != MDB_SUCCESS) {
    lmdb_detail::throw_status(where + "invalid lmdb_options::max_placements " + std::to_string(options.max_placements),
                         "mdb_env_set_maxdbs", rc);
  }
  const std::size_t wanted = round_up(options.map_size, default_page);
  if (rc = options.map_size == 0 ? EINVAL : ::mdb_env_set_mapsize(s->env, wanted); rc != MDB_SUCCESS) {
    lmdb_detail::throw_status(where + "invalid lmdb_options::map_size " + std::to_string(options.map_size),
                         "mdb_env_set_mapsize", rc);
  }
  const unsigned flags = MDB_NOTLS | (options.read_only ? MDB_RDONLY : 0u);
  rc = ::mdb_env_open(s->env, s->path.c_str(), flags, static_cast<mdb_mode_t>(options.mode));
  if (rc != MDB_SUCCESS) {
    ::mdb_env_close(s->env);  // required after a failed mdb_env_open
    s->env = nullptr;
    if (rc == EAGAIN || rc == EBUSY) {
      throw locked_error(lmdb_detail::lmdb_message(where + "the LMDB environment " + s->path + " is locked", rc),
                         "mdb_env_open", rc);
    }
    lmdb_detail::throw_status(where + "cannot open the LMDB environment " + s->path, "mdb_env_open", rc);
  }

  int dead = 0;
  ::mdb_reader_check(s->env, &dead);  // frees reader slots of crashed processes
  MDB_stat stat;
  if (rc = ::mdb_env_stat(s->env, &stat); rc != MDB_SUCCESS) {
    lmdb_detail::throw_status(where + "cannot read the environment of " + s->path, "mdb_env_stat", rc);
  }
  s->page = stat.ms_psize != 0 ? stat.ms_psize : default_page;

  // Keep a larger map recorded in the file (another process or an earlier run grew it); LMDB
  // would otherwise shrink the map to the configured size. No transaction exists yet.
  if (rc = ::mdb_env_set_mapsize(s->env, 0); rc == MDB_SUCCESS) {
    MDB_envinfo info;
    ::mdb_env_info(s->env, &info);
    if (info.me_mapsize < wanted) rc = ::mdb_env_set_mapsize(s->env, wanted);
  }
  if (rc != MDB_SUCCESS) lmdb_detail::throw_status(where + "cannot map " + s->path, "mdb_env_set_mapsize", rc);
  MDB_envinfo info;
  ::mdb_env_info(s->env, &info);
  s->map_size.store(info.me_mapsize, std::memory_order_relaxed);
  s->ceiling = std::max(options.max_map_size - options.max_map_size % s->page, info.me_mapsize);
  s->max_key = static_cast<std::size_t>(::mdb_env_get_maxkeysize(s->env));

  // The unnamed database, opened once. A map grown meanwhile by another process is adopted.
  for (int attempt = 0;; ++attempt) {
    MDB_txn* txn = nullptr;
    rc = ::mdb_txn_begin(s->env, nullptr, options.read_only ? MDB_RDONLY : 0u, &txn);
    if (rc == MDB_MAP_RESIZED && attempt < max_resize_retries) {
      if (rc = ::mdb_env_set_mapsize(s->env, 0); rc != MDB_SUCCESS) {
        lmdb_detail::throw_status(where + "cannot map " + s->path, "mdb_env_set_mapsize", rc);
      }
      continue;
    }
    if (rc == MDB_READERS_FULL) {
      throw limit_error(where + "all reader slots of " + s->path +
                        " are in use (MDB_READERS_FULL); release snapshots/cursors in other processes or "
                        "raise lmdb_options::max_readers");
    }
    if (rc != MDB_SUCCESS) lmdb_detail::throw_status(where + "cannot begin a transaction on " + s->path, "mdb_txn_begin", rc);
    if (rc = ::mdb_dbi_open(txn, nullptr, 0, &s->dbi); rc != MDB_SUCCESS) {
      ::mdb_txn_abort(txn);
      lmdb_detail::throw_status(where + "cannot open the main database of " + s->path, "mdb_dbi_open", rc);
    }
    // The placements' named databases the environment holds (keyschema::placed).
    try {
      open_placements(*s, txn, where);
    } catch (...) {
      ::mdb_txn_abort(txn);
      throw;
    }
    if (rc = ::mdb_txn_commit(txn); rc != MDB_SUCCESS) {
      lmdb_detail::throw_status(where + "cannot open the main database of " + s->path, "mdb_txn_commit", rc);
    }
    break;
  }
  ::mdb_env_info(s->env, &info);
  s->map_size.store(info.me_mapsize, std::memory_order_relaxed);

  unsigned readers = 0;
  ::mdb_env_get_maxreaders(s->env, &readers);
  s->pool_cap = std::min<std::size_t>(4, readers / 4);
  s->pool.reserve(s->pool_cap);
  // Point reads: a transaction per reading thread, for at most half the reader slots (LMDB's are
  // shared by every process; the other threads' reads use the pool).
  s->readers.cap = readers / 2;
  s->routes_changed();  // max_key and the placements are known now
  return s;
}

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
