// keyschema/error.hpp: the exception hierarchy.
//
// Every error keyschema raises derives from keyschema::error, itself a std::runtime_error, so a
// caller can catch everything with one handler or pick the kind it can act on. Not-found is never
// an error: lookups return std::optional.
//
// Thread-safety: exception objects are immutable after construction.
#pragma once

#include <keyschema/detail/config.hpp>

#include <stdexcept>
#include <string>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

// Base of every keyschema error.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bytes that do not decode as the requested type: truncated input, an unknown or unexpected type
// code, an unterminated string, invalid UTF-8, an integer that does not fit the requested C++ type,
// or a stored value that its value codec rejects. what() names what was expected and the byte
// offset (and, when raised by a store, the keyspace and key).
// Remedy: the bytes were written by another schema or are corrupt; nothing was modified.
class decode_error : public error {
 public:
  using error::error;
};

// The database was written with another schema layout (a keyspace differs, is not declared, or
// was added over existing keys; a ks::migrate is unfinished), or a schema cannot be used as
// asked. Remedy: open the database with the schema that wrote it, or ks::migrate it.
// Also raised by a write (or ks::migrate's rebuild) when an index's Derive derives an entry that
// does not carry its record's key fields (indexes.hpp): what() names the index, the record and
// the field; nothing of that write was written. Remedy: fix Derive to copy them.
class schema_error : public error {
 public:
  using error::error;
};

// A configured limit was hit: a key longer than the backend accepts, a database map that cannot
// grow any further. what() names the keyspace, the size and the limit. Nothing was written.
class limit_error : public error {
 public:
  using error::error;
};

// A key given as field values names a key no key of its keyspace can be: an integer outside its
// field's range (300 for a std::uint8_t field, -1 for an unsigned one). what() names the keyspace,
// the field, the value and the range. Nothing was read or written. Remedy: check the value before
// building the key; a scan bound or prefix may be any integer (it orders against every key).
// Also raised for a raw write_batch (store::write) that writes a key of a keyspace the store
// maintains (a declared count or an index): what() names the key and keyspace; nothing written.
class key_error : public error {
 public:
  using error::error;
};

// An add (counters.hpp) whose sum does not fit the keyspace's value type. what() names the
// keyspace, the key, the stored value and the delta. Nothing was written.
class overflow_error : public error {
 public:
  using error::error;
};

// The storage engine reported a failure. native_call() is the engine function that failed (for
// example "leveldb::DB::Open", "mdb_txn_commit"), native_code() its return code where it has one
// (0 otherwise), and what() includes the engine's own status text.
class backend_error : public error {
 public:
  backend_error(const std::string& message, std::string native_call, int native_code = 0)
      : error(message + " [" + native_call + (native_code != 0 ? ": " + std::to_string(native_code) : std::string()) + "]"),
        native_call_(std::move(native_call)),
        native_code_(native_code) {}

  const std::string& native_call() const noexcept { return native_call_; }
  int native_code() const noexcept { return native_code_; }

 private:
  std::string native_call_;
  int native_code_;
};

// A write transaction could not commit because the state it read changed meanwhile (for example:
// LMDB's map had to grow, which ends the write transaction, and another process committed before
// it could be begun again). Nothing was written and the transaction is rolled back.
// Remedy: run the transaction again from the start (re-read, then write).
class conflict_error : public error {
 public:
  using error::error;
};

// A database is already open by another process or store object (LevelDB's LOCK file).
class locked_error : public backend_error {
 public:
  using backend_error::backend_error;
};

KEYSCHEMA_END_NAMESPACE
