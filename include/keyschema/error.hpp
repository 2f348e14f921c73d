// keyschema/error.hpp: the exception hierarchy.
//
// Every error keyschema raises derives from keyschema::error, itself a std::runtime_error, so a
// caller can catch everything with one handler or pick the kind it can act on. Not-found is never
// an error: lookups return std::optional. (std::bad_alloc passes through as itself.)
//
// The rule: the class says what caused the error, never where it was raised. keyschema itself
// throws only these subclasses, never keyschema::error itself:
//   key_error           a key the caller gives that no key can be: an integer outside its field's
//                       range, text that is not valid UTF-8 in a text field (of a key, a scan
//                       prefix or a bound); a raw write_batch writing a key the store maintains
//                       or reserves.
//   encode_error        any other value the caller gives that cannot be encoded: text that is
//                       not valid UTF-8 in a value or a tuple::pack element.
//   decode_error        bytes read from the database (or given as stored bytes) that do not
//                       decode as their type; a stored record that is damaged.
//   schema_error        the database's schema record differs or is missing; a schema cannot be
//                       used as asked (migrations).
//   limit_error         a size or count over a limit of the backend or of a format.
//   overflow_error      an add whose sum does not fit the value type.
//   usage_error         a call that its arguments or its object's state do not allow: a size or
//                       option out of range, a transaction or cursor used after it ended, an xid
//                       already prepared, a write that would deadlock.
//   conflict_error      the state a write transaction read changed before it could commit.
//   backend_error       the storage engine failed (I/O, a damaged file, a full disk, a read-only
//                       file system, an option the engine refuses), with the engine's call and
//                       code; locked_error: the database is open in another process or backend
//                       object; wrong_engine_error (engine_probe.hpp): the path holds another
//                       engine's database.
// A new error picks its class from this table; its message names what was wrong (keyspace, key,
// field, xid, path, limit) and says what was or was not written.
//
// Thread-safety: exception objects are immutable after construction.
#pragma once

#include <keyschema/detail/config.hpp>

#include <stdexcept>
#include <string>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

// Base of every keyschema error. Catch it to handle them all; keyschema throws only the
// subclasses below (see the table above).
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
// Also raised for text that is not valid UTF-8 in a text (std::string) field of a key, a scan
// prefix or bound: what() names the keyspace, the field and the byte offset. Remedy: store binary
// data as keyschema::bytes.
// Also raised for a raw write_batch (store::write) that writes a key of a keyspace the store
// maintains (a declared count or an index) or a reserved key (the store's own 0xff records):
// what() names the key and keyspace; nothing written.
class key_error : public error {
 public:
  using error::error;
};

// A value given by the caller that cannot be encoded as its type, outside a key (a key's fields
// raise key_error): text (std::string) that is not valid UTF-8 in a value or a tuple::pack
// element. what() names the byte offset. Nothing was written. Remedy: store binary data as
// keyschema::bytes. A user's codec that cannot encode a value should throw it too.
class encode_error : public error {
 public:
  using error::error;
};

// A call that its arguments or its object's state do not allow: a size or option outside what the
// function accepts (a batch or chunk size of 0, etcd_options without endpoints), a transaction,
// write transaction or cursor used after it ended, an xid that is already prepared, a write on a
// store from a thread that holds an open transaction on it (it would deadlock). A bug in the
// calling code: what() names the function and what is wrong; nothing was read or written.
// Remedy: fix the call (the message says how).
class usage_error : public error {
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
