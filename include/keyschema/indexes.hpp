// keyschema/indexes.hpp: secondary indexes declared in the schema, and the expiry sweep.
//
// A keyspace whose value is index_of<Record, Derive> is a secondary index of the keyspace Record,
// maintained by the store. Derive is a default-constructible callable (a struct with operator(),
// or a C++20 captureless lambda type) mapping a record's key and value to the index key:
//   struct by_expiry {
//     std::optional<std::tuple<ms_time, std::string, std::uint64_t>>
//     operator()(const message::key_type& k, const message::value_type& v) const;  // nullopt: not indexed
//   };
//   using expiry_index = ks::keyspace<"expiry_index", ks::index_of<message, by_expiry>, ks::lit<"EXPIRY">,
//       ks::field<"at", ms_time>, ks::field<"destination", std::string>, ks::field<"message_id", std::uint64_t>>;
// Its value_type is std::tuple<> (an index entry is its key). In the same atomic write as the
// record, the store puts the index entry of a new record, replaces the entry of an overwritten
// record whose derived key changed (reading the old value), and erases the entry of an erased
// record: in single ops, batches (resolved at commit, under the writer lock), transactions (which
// read their own index changes), store::write and each chunk of erase_range / erase_prefix.
// A schema whose Derive cannot be called with (const Record::key_type&, const Record::value_type&)
// returning something convertible to std::optional<index key_type> does not compile
// (keyschema::index_of: ...). Writing an index keyspace directly does not compile either.
// The index key should hold the record's key fields (by the same names), so that entries of two
// records never collide and record_key<Index>() / get_record<Index>() can find the record.
//
// Scanning an index is an ordinary scan of its keyspace (typed entries, bounds, limits):
//   for (const auto& e : db.scan<expiry_index>().to(now)) ... ks::get_record<expiry_index>(db, e.key)
//
// sweep<Index>(db, now, batch_size, callback): erases every record whose index entry's first
// field is before now (the index's first field is the time; now converts to it losslessly or
// the call does not compile, as any scan bound: std::chrono types are unit-checked), in atomic
// batches of at most batch_size records, each with its index entries and counts; calls
// callback(record key, record value) for each record before its batch commits. Reads only the
// due part of the index (cost proportional to what is due). Returns the number of records erased.
//
// Thread-safety: types and free functions with the store's thread-safety (store.hpp).
#pragma once

#include <keyschema/detail/config.hpp>

#include <tuple>

KEYSCHEMA_BEGIN_NAMESPACE

// Value marker of a secondary index keyspace: maintained by the store from the records of
// Record, each indexed under Derive{}(key, value) (std::nullopt: not indexed). See above.
template <class Record, class Derive>
struct index_of {
  using keyschema_value_type = std::tuple<>;
  using indexed_keyspace = Record;
  using derive = Derive;
};

KEYSCHEMA_END_NAMESPACE
