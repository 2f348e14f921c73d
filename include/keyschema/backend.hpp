// keyschema/backend.hpp: the byte-level contract every storage backend meets.
//
// The typed layer (keyschema::store) never talks to a database directly; it talks to a Backend,
// a small class that stores byte-string keys in unsigned lexicographic (memcmp) order. The
// contract is deliberately small so that LevelDB, LMDB, RocksDB, SQLite or a replicated engine
// can each meet it in one header:
//
//   using snapshot_type = ...;   // a consistent, read-only view of the whole database
//   using cursor_type   = ...;   // an ordered iterator over a key range of one view
//
//   bool get(std::string_view key, std::string& value, const snapshot_type* snap) const;
//       Reads key in *snap (the latest committed state when snap is nullptr). On success assigns
//       the value to `value` and returns true; returns false when the key does not exist
//       (`value` is then unspecified). Errors: backend_error.
//
//   void write(const write_batch& batch, const write_options& opts);
//       Applies every operation of batch atomically: after a crash, either all of them are
//       present or none. Later operations on the same key win. With opts.sync the commit is on
//       stable storage when write() returns. Errors: backend_error (nothing was applied),
//       limit_error (a limit such as LMDB's map size was reached; nothing was applied).
//
//   snapshot_type snapshot() const;
//       A view of the latest committed state that does not change while writers go on.
//       Copyable and cheap to copy; the state is released when the last copy is destroyed.
//       REQUIRES: every copy is destroyed before the backend.
//
//   cursor_type cursor(const key_range& range, const snapshot_type* snap) const;
//       An iterator over the keys k with range.lower <= k < range.upper (no upper bound when
//       range.upper is empty), ascending, or descending when range.reverse. The cursor reads
//       *snap, or a private snapshot taken now when snap is nullptr: either way one cursor
//       always sees one consistent state. The cursor copies the bounds it needs.
//       REQUIRES: the cursor and snap outlive neither the backend.
//
//   std::size_t max_key_size() const noexcept;
//       The longest key write() accepts (SIZE_MAX when unlimited). The typed layer checks keys
//       against it before writing, so the error can name the keyspace.
//
// A cursor_type has:
//   bool valid() const;                  // positioned on an entry inside the range
//   std::string_view key() const;        // REQUIRES: valid(). Valid until next() or destruction.
//   std::string_view value() const;      // REQUIRES: valid(). Valid until next() or destruction.
//   void next();                         // REQUIRES: valid(). Moves in the cursor's direction.
// Cursors throw backend_error when the engine reports an error while moving.
//
// Optional: a backend that can erase a range natively (RocksDB's DeleteRange) provides
//   void erase_range(const key_range& range, const write_options& opts);
// and the store uses it instead of erasing in bounded batches.
//
// Optional: a backend whose engine has write transactions that serialize writers itself, also
// across processes (LMDB), provides
//   using write_transaction_type = ...;   // move-constructible; destroying an open one aborts it
//   write_transaction_type begin_write();
//       Takes the engine's write lock (waiting for writers of this and every other process) and
//       returns a transaction reading the state it locked, which stays current until it ends.
//       Errors: backend_error, limit_error.
// with, on a write_transaction_type t:
//   bool t.is_open() const;
//       True until commit() succeeded or a failure ended the transaction.
//   bool t.get(std::string_view key, std::string& value) const;     // as get(), locked state
//   cursor t.cursor(const key_range& range) const;                   // as cursor(), locked state
//       REQUIRES: is_open(). The cursor is not used after the transaction ended.
//   void t.commit(const write_batch& batch, const write_options& opts);
//       Applies batch atomically with the durability of opts and ends the transaction. When it
//       throws, nothing was applied; the transaction is either still open (the locked state is
//       unchanged) or ended (is_open() is false), and never commits over a state other than the
//       one it read: if the engine had to let go of its lock, it throws conflict_error when
//       another writer committed meanwhile.
// keyschema::store then runs its transactions inside one (so they are serializable across
// processes) instead of over a snapshot guarded by its in-process writer lock.
// REQUIRES: a write_transaction_type is begun, used and ended by one thread, which meanwhile does
// not call write() or begin_write() of the same backend.
//
// Thread-safety required of a backend: get, snapshot and cursor may be called concurrently from
// any number of threads, also while one thread is inside write(). keyschema::store calls write()
// from one thread at a time (it serializes writers itself). A single cursor or snapshot object
// is not shared between threads without external synchronization.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/write_batch.hpp>

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE

// Bounds of a cursor: lower <= key < upper; an empty upper means no upper bound (an empty
// exclusive upper bound would select nothing, so the encoding is unambiguous).
struct key_range {
  std::string_view lower;
  std::string_view upper;
  bool reverse = false;
};

template <class C>
concept backend_cursor = requires(C& c, const C& cc) {
  { cc.valid() } -> std::convertible_to<bool>;
  { cc.key() } -> std::convertible_to<std::string_view>;
  { cc.value() } -> std::convertible_to<std::string_view>;
  c.next();
};

template <class B>
concept backend = requires(B& b, const B& cb, std::string_view k, std::string& out, const write_batch& wb,
                           const write_options& wo, const key_range& r,
                           const typename B::snapshot_type* snap) {
  typename B::snapshot_type;
  typename B::cursor_type;
  requires std::copy_constructible<typename B::snapshot_type>;
  requires backend_cursor<typename B::cursor_type>;
  { cb.get(k, out, snap) } -> std::same_as<bool>;
  b.write(wb, wo);
  { cb.snapshot() } -> std::same_as<typename B::snapshot_type>;
  { cb.cursor(r, snap) } -> std::same_as<typename B::cursor_type>;
  { cb.max_key_size() } -> std::convertible_to<std::size_t>;
};

// Detects the optional write transactions (see above).
template <class B>
concept backend_with_write_transaction =
    backend<B> &&
    requires(B& b, const typename B::write_transaction_type& ct, typename B::write_transaction_type& t,
             std::string_view k, std::string& out, const key_range& r, const write_batch& wb,
             const write_options& wo) {
      requires std::move_constructible<typename B::write_transaction_type>;
      { b.begin_write() } -> std::same_as<typename B::write_transaction_type>;
      { ct.is_open() } -> std::convertible_to<bool>;
      { ct.get(k, out) } -> std::same_as<bool>;
      { ct.cursor(r) } -> backend_cursor;
      t.commit(wb, wo);
    };

// Detects the optional native range erase.
template <class B>
concept backend_with_erase_range = backend<B> && requires(B& b, const key_range& r, const write_options& wo) {
  b.erase_range(r, wo);
};

KEYSCHEMA_END_NAMESPACE
