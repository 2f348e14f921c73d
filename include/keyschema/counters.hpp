// keyschema/counters.hpp: counters and declared counts.
//
// Counters. add<KS>(key, delta) adds delta to the integer stored under key (a missing key counts
// as 0), on a store (one atomic write), a store_batch and a store_transaction. KS's value_type
// must be an integer type (not bool); delta is a std::int64_t (negative to subtract).
//   - In a transaction it reads the current value (the transaction's own writes included) and
//     puts the sum, atomically with the rest of the transaction.
//   - In a batch it is recorded, not read: at commit the store resolves it while it holds its
//     writer lock (on LMDB and SQLite, backend_with_write_transaction, inside the engine's write
//     transaction, so writers of other processes cannot interleave) and writes the sum with the
//     batch's other operations in one atomic write. So two threads (or, on LMDB and SQLite,
//     processes) adding through batches never lose an update, which "read with db.get, put the
//     sum in a batch" does. Within one batch, adds to one key sum; a put then an add adds to the
//     put value; an erase then an add starts from 0; a put or erase after an add replaces it.
// Errors of add: overflow_error (error.hpp) when the sum does not fit the value type, naming the
// keyspace, the key, the stored value and the delta; nothing is written then (the whole batch or
// single op; a transaction stays open without that add). decode_error when the stored value does
// not decode; key_error / limit_error for the key as put.
//
// Declared counts. A keyspace whose value is count_of<Counted, N> holds, per distinct value of
// the first N fields of Counted's keys, the number of Counted's records with those fields; its
// fields must be exactly Counted's first N fields (same names, same types, same order):
//   using message_count = ks::keyspace<"message_count", ks::count_of<message_metadata, 1>,
//       ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
// Its value_type is std::int64_t. The store maintains it: every write that creates a record of
// Counted (a put of a key that did not exist) adds 1, every erase of an existing record
// subtracts 1, in the same atomic write as the record (single ops, batches, transactions,
// store::write of a raw write_batch, and each chunk of erase_range / erase_prefix). So after a
// crash a count always equals the number of records it counts. A count that reaches 0 is erased:
// get returns std::nullopt, never 0. Writing a count keyspace directly (put, erase, add) does not
// compile ("maintained by the store"); a raw write_batch given to store::write that puts or
// erases one of its keys is refused (key_error naming the keyspace; nothing is written). A schema whose count does not match its counted keyspace does
// not compile (the store's static_assert names both keyspaces and the field position).
//
// A count is maintained from the moment the records are written through a store whose schema
// declares it: declaring one over records already stored does not count them. (Adding a keyspace
// over records that exist is refused on open until ks::migrate converts the database; migrate
// derives every count of the new schema from the migrated records. So does turning an integer
// keyspace into a count: the layout names the count,
// "message_count=packed<i64>:count_of<message_metadata,1>{...}".)
//
// Cost: a write to a counted keyspace reads whether the key exists first (one point read per
// key, at commit for batches). Batches over schemas without counts, and batches without adds,
// are written exactly as before.
//
// Thread-safety: types only; the operations have the store's thread-safety (store.hpp).
#pragma once

#include <keyschema/detail/config.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE

// Value marker of a declared count keyspace: the number of records of Counted grouped by its
// first N fields. See the top of this file.
template <class Counted, std::size_t N>
struct count_of {
  using keyschema_value_type = std::int64_t;  // the keyspace's value_type
  using counted_keyspace = Counted;
  static constexpr std::size_t group_fields = N;

  // Names the derivation in the schema layout (fingerprint.hpp): "count_of<Counted's name,N>".
  template <class Sink>
  static constexpr void visit_layout(Sink& sink) {
    sink("count_of<");
    sink(Counted::name);
    sink(",");
    sink(std::string_view(digits_.data(), digit_count_));
    sink(">");
  }

 private:
  static constexpr std::size_t digit_count_ = [] {
    std::size_t n = 1;
    for (std::size_t v = N; v >= 10; v /= 10) ++n;
    return n;
  }();
  static constexpr std::array<char, digit_count_> digits_ = [] {
    std::array<char, digit_count_> a{};
    std::size_t v = N;
    for (std::size_t i = digit_count_; i-- > 0; v /= 10) a[i] = static_cast<char>('0' + v % 10);
    return a;
  }();
};

KEYSCHEMA_END_NAMESPACE
