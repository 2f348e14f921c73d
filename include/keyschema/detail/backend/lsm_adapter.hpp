// keyschema/detail/backend/lsm_adapter.hpp: the code the two LSM adapters (leveldb_backend,
// rocksdb_backend) share, written once over the engine's types.
//
// LevelDB and RocksDB have the same shape: a DB handle with Get/Write/GetSnapshot/NewIterator/
// GetProperty, a WriteBatch, a Status with IsIOError/IsNotFound/ToString, a Slice, ReadOptions
// with verify_checksums/fill_cache/snapshot, and the same on-disk layout (CURRENT naming the
// live MANIFEST, numbered table and log files). What differs is named by an engine traits type E,
// defined by each adapter next to its class; this header includes no database header, so neither
// adapter depends on the other's engine:
//
//   struct E : lsm_types<DB, WriteBatch, Status, Slice, ReadOptions, Iterator> {
//     static constexpr lsm_names names{
//         "keyschema::leveldb_backend", "LevelDB", "leveldb_options",   // adapter, engine, options
//         "leveldb::DB::Open", "leveldb::DB::Get", "leveldb::WriteBatch::Put", "leveldb::Iterator",
//         "leveldb::WriteBatch::Iterate"};
//     static std::size_t size(const batch_type&);    // bytes held (detail::thread_batch_lease's Ops)
//     static void clear(batch_type&);                // (detail::thread_batch_lease's Ops)
//     static status_type put(batch_type&, slice_type, slice_type);
//     static status_type erase(batch_type&, slice_type);
//     static int code(const status_type&);           // backend_error::native_code()
//     static bool is_lock_conflict(const status_type&);
//     [[noreturn]] static void throw_error(const status_type&, const std::string& context,
//                                          const char* native_call, const std::string& dir);
//   };
//
// Thread-safety: stateless functions; lsm_snapshot copies as a std::shared_ptr does.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/disk_full.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/write_batch.hpp>

#include <cerrno>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// A shared handle to an engine snapshot (Db::GetSnapshot), released with Db::ReleaseSnapshot
// when the last copy is destroyed. Base of leveldb_snapshot and rocksdb_snapshot.
template <class Db, class Snapshot>
class lsm_snapshot {
 public:
  // The engine's snapshot, for ReadOptions::snapshot of native() calls. Owned by this handle:
  // valid while any copy of it lives. Never nullptr.
  const Snapshot* native() const noexcept { return snap_.get(); }

 protected:
  // Takes ownership of snap, taken from db; releases it with db->ReleaseSnapshot. If allocating
  // the shared count fails, snap is released before the exception propagates.
  // REQUIRES: snap was returned by db->GetSnapshot(); db outlives every copy.
  lsm_snapshot(Db* db, const Snapshot* snap) : snap_(snap, [db](const Snapshot* s) { db->ReleaseSnapshot(s); }) {}

 private:
  std::shared_ptr<const Snapshot> snap_;
};

// For s, a failed write to the database directory dir: "disk full (...)" when the disk is the
// cause (see detail::disk_full: no_space_reported (the engine's own no-space code) or
// strerror(ENOSPC) in the status text, or any other IO error with less than disk_full_margin
// bytes free), else nullopt. nullopt also for an empty dir (a read, whose failure is not the
// disk's space).
template <class Status>
std::optional<std::string> lsm_disk_full(const Status& s, const std::string& dir, bool no_space_reported) {
  if (!s.IsIOError() || dir.empty()) return std::nullopt;
  const bool no_space =
      no_space_reported || s.ToString().find(std::generic_category().message(ENOSPC)) != std::string::npos;
  return disk_full(dir, no_space ? ENOSPC : EIO);
}

// Throws backend_error("<context>: <status text>", native_call, code); with full (see
// lsm_disk_full), "<context>: <full>: <status text>".
// REQUIRES: !s.ok().
template <class Status>
[[noreturn]] void throw_lsm_error(const Status& s, int code, const std::optional<std::string>& full,
                                  const std::string& context, const char* native_call) {
  if (full) throw backend_error(context + ": " + *full + ": " + s.ToString(), native_call, code);
  throw backend_error(context + ": " + s.ToString(), native_call, code);
}

// True for "<digits><ext>" with ext one of exts (".log", ".sst", ...): the numbered files in
// which LevelDB and RocksDB keep data.
inline bool lsm_is_numbered_file(std::string_view name, std::initializer_list<std::string_view> exts) noexcept {
  const auto dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  for (const char c : name.substr(0, dot)) {
    if (c < '0' || c > '9') return false;
  }
  const std::string_view ext = name.substr(dot);
  for (const std::string_view e : exts) {
    if (ext == e) return true;
  }
  return false;
}

// Throws the error for a directory dir that holds the engine's data file `name` but no CURRENT
// file: opening it would create an empty database and delete those files. repair: the engine's
// repair tool, as the remedy names it.
[[noreturn]] inline void throw_lsm_orphaned_files(const char* adapter, const char* engine, const std::string& dir,
                                                  const std::string& name, const std::string& repair,
                                                  const char* native_call, int code) {
  throw backend_error(std::string(adapter) + ": cannot open '" + dir + "': it holds " + engine + " files (" + name +
                          ") but no CURRENT file, which names the live MANIFEST; opening it would create an "
                          "empty database and delete those files. Remedy: restore CURRENT (one line, the name "
                          "of the newest MANIFEST-<n> file followed by a newline) or run " +
                          repair + ", then reopen",
                      native_call, code);
}

// The engine's types, as an engine traits type names them.
template <class Db, class Batch, class Status, class Slice, class ReadOptions, class Iterator>
struct lsm_types {
  using db_type = Db;
  using batch_type = Batch;
  using status_type = Status;
  using slice_type = Slice;
  using read_options_type = ReadOptions;
  using iterator_type = Iterator;
};

// The names an adapter's messages and errors use.
struct lsm_names {
  const char* adapter;        // "keyschema::leveldb_backend"
  const char* engine;         // "LevelDB"
  const char* options;        // "leveldb_options"
  const char* call_open;      // native_call of a failed open
  const char* call_get;       // ... of a failed point read
  const char* call_batch;     // ... of an operation the engine's batch refused
  const char* call_iterator;  // ... of a failed iterator read
  const char* call_batch_iterate;  // ... of a failed read of a batch's operations (WriteBatch::Iterate)
};

// The operations leveldb_backend and rocksdb_backend share, over engine traits E (see above).
template <class E>
struct lsm_adapter {
  using db_type = typename E::db_type;
  using batch_type = typename E::batch_type;
  using status_type = typename E::status_type;
  using slice_type = typename E::slice_type;
  using read_options_type = typename E::read_options_type;
  using iterator_type = typename E::iterator_type;

  // Creates directory path and its parents. Path is std::filesystem::path (what the adapters'
  // constructors take; they include <filesystem>, this core header does not, so that it brings
  // none of it: the call below is std::filesystem::create_directories, found through the
  // argument's namespace). Errors: backend_error, native_call
  // "std::filesystem::create_directories", native_code() the errno value, what() naming the path.
  template <class Path>
  static void create_directory(const Path& path) {
    std::error_code ec;
    create_directories(path, ec);
    if (ec) {
      throw backend_error(std::string(E::names.adapter) + ": cannot create the database directory '" + path.string() +
                              "': " + ec.message(),
                          "std::filesystem::create_directories", ec.value());
    }
  }

  // Throws the error for a failed DB::Open of path: locked_error when another handle holds the
  // LOCK file, else backend_error (with "disk full (...)" when the disk is).
  // REQUIRES: !st.ok().
  [[noreturn]] static void open_failed(const status_type& st, const std::string& path) {
    if (E::is_lock_conflict(st)) {
      throw locked_error(std::string(E::names.adapter) + ": the database '" + path +
                             "' is already open (its LOCK file is held by another process or another "
                             "handle in this process): " + st.ToString(),
                         E::names.call_open, E::code(st));
    }
    E::throw_error(st, std::string(E::names.adapter) + ": cannot open '" + path + "'", E::names.call_open, path);
  }

  // Read options that check checksums when verify_checksums, reading snapshot (the latest state
  // when nullptr).
  template <class Snapshot>
  static read_options_type read_options(bool verify_checksums, const Snapshot* snapshot) noexcept {
    read_options_type ro;
    ro.verify_checksums = verify_checksums;
    ro.snapshot = snapshot;
    return ro;
  }

  // Reads key into value through ro; false when it does not exist. `in`: nothing, or the
  // engine's column family to read (RocksDB). Errors: backend_error, native_call
  // E::names.call_get.
  template <class... In>
  static bool get(db_type& db, const read_options_type& ro, std::string_view key, std::string& value,
                  const std::string& path, In*... in) {
    const status_type st = db.Get(ro, in..., slice_type(key.data(), key.size()), &value);
    if (st.ok()) return true;
    if (st.IsNotFound()) return false;
    E::throw_error(st, std::string(E::names.adapter) + ": get from '" + path + "'", E::names.call_get, std::string());
  }

  // Throws limit_error when a batch of ops operations exceeds the 2^32 - 1 of the count field of
  // the engine's WriteBatch.
  static void check_op_count(std::size_t ops) {
    if (ops > max_ops_per_write) {
      throw limit_error(std::string(E::names.adapter) + ": a batch of " + std::to_string(ops) + " operations exceeds " +
                        E::names.engine + "'s limit of 2^32 - 1 per batch; nothing was written");
    }
  }

  // Appends batch's operations to wb, each checked against max_entry bytes of key plus value,
  // with E::put / E::erase, or with add(wb, op, key, value) when given (a status; RocksDB: the
  // column family of the key's placement).
  // Errors: limit_error (an operation too large); backend_error, native_call E::names.call_batch (the
  // engine refused to add an operation). Nothing was written in either case.
  template <class Add = std::nullptr_t>
  static void fill(batch_type& wb, const write_batch& batch, std::size_t max_entry, const std::string& path,
                   const Add& add = nullptr) {
    for (const write_batch::op o : batch) {
      if (o.key.size() > max_entry || o.value.size() > max_entry - o.key.size()) {
        throw limit_error(std::string(E::names.adapter) + ": an operation of " + std::to_string(o.key.size()) +
                          " key bytes and " + std::to_string(o.value.size()) + " value bytes exceeds the limit of " +
                          std::to_string(max_entry) + " bytes per entry (" + E::names.options +
                          "::max_entry_bytes); nothing was written");
      }
      const slice_type k(o.key.data(), o.key.size());
      const slice_type v(o.value.data(), o.value.size());
      status_type st;
      if constexpr (std::is_null_pointer_v<Add>) {
        st = o.kind == write_batch::op_kind::put ? E::put(wb, k, v) : E::erase(wb, k);
      } else {
        st = add(wb, o, k, v);
      }
      if (!st.ok()) {
        E::throw_error(st, std::string(E::names.adapter) + ": building a batch for '" + path +
                               "' failed, nothing was applied",
                       E::names.call_batch, std::string());
      }
    }
  }

  static constexpr std::size_t max_ops_per_write = std::size_t{0xFFFFFFFF};

  // The engines' limit is on key plus value of one operation: max_entry, and so is max_key_bytes
  // (a key that long only fits with an empty value); max_ops_per_write = 2^32 - 1.
  static backend_limits limits(std::size_t max_entry) noexcept {
    backend_limits l;
    l.max_key_bytes = max_entry;
    l.max_entry_bytes = max_entry;
    l.max_ops_per_write = max_ops_per_write;
    return l;
  }

  // The largest key visible through ro (without filling the block cache), or nullopt when there
  // is none; `in` as for get(). Errors: backend_error, native_call E::names.call_iterator.
  template <class... In>
  static std::optional<std::string> last_key(db_type& db, read_options_type ro, const std::string& path, In*... in) {
    ro.fill_cache = false;
    std::unique_ptr<iterator_type> it(db.NewIterator(ro, in...));
    it->SeekToLast();
    const status_type st = it->status();
    if (!st.ok()) {
      E::throw_error(st, std::string(E::names.adapter) + ": reading the last key of '" + path + "'",
                     E::names.call_iterator, std::string());
    }
    if (!it->Valid()) return std::nullopt;
    return std::string(it->key().data(), it->key().size());
  }

  // The exclusive end of range for a size estimate: range.upper, or the smallest key after the
  // last one (read through ro) when range.upper is empty; nullopt when nothing lies in range.
  // `in` as for get(). Errors: as last_key.
  template <class... In>
  static std::optional<std::string> size_limit(db_type& db, const key_range& range, const read_options_type& ro,
                                               const std::string& path, In*... in) {
    std::string limit;
    if (range.upper.empty()) {
      std::optional<std::string> last = last_key(db, ro, path, in...);
      if (!last) return std::nullopt;
      limit = std::move(*last);
      limit.push_back('\0');  // the smallest key after the last one
    } else {
      limit.assign(range.upper);
    }
    if (!(range.lower < std::string_view(limit))) return std::nullopt;
    return limit;
  }

  // The engine's property `name`, or nullopt for an unknown one.
  static std::optional<std::string> property(db_type& db, std::string_view name) {
    std::string value;
    if (!db.GetProperty(slice_type(name.data(), name.size()), &value)) return std::nullopt;
    return value;
  }
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
