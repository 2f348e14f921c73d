// examples/broker/message_ops.hpp: the message store's operations on the broker schema
// (wso2_schema.hpp), shared by message_store.cpp and xa_store.cpp.
//
// add_message and remove_message write into a transaction (so a message is stored or removed
// whole, with its count, content and expiry index, atomically with whatever else the caller's
// transaction does, an XA branch included); the others are one transaction each, or bounded
// transactions (sweep_expired through ks::sweep, purge, remove_destination). The count is never written here: it
// is a declared count (count_of) that the store keeps with the metadata.
//
// Errors: those of the store's transactions (backend_error, limit_error, conflict_error,
// decode_error; store.hpp); nothing of a failed transaction is written. A Tx is a
// store_transaction; REQUIRES: the calling thread holds no other transaction of the store.
//
// Thread-safety: as the store (store.hpp): each function may be called from several threads;
// a transaction is used by one thread.
#pragma once

#include "invariants.hpp"
#include "wso2_schema.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wso2 {


// A message as the application sees it (also the examples' model of the store).
struct message {
  std::string destination;
  std::string body;
  std::optional<millis> expires;
};
using model = std::map<std::uint64_t, message>;

// The examples' clock origin: expiration times are epoch + some seconds.
inline const millis epoch{std::chrono::milliseconds(1'700'000'000'000)};

// The message store's operations. Each is one transaction (atomic), or bounded transactions.
template <class Tx>
void add_message(Tx& tx, std::uint64_t id, const message& m, std::size_t chunk) {
  tx.template put<message_metadata>({m.destination, id}, metadata{ks::bytes("amqp-header-" + std::to_string(id)), m.body.size()});
  tx.template put<message_destination>({id}, m.destination);
  ks::put_chunked<message_content>(tx, {id}, m.body, chunk);
  if (m.expires) tx.template put<message_expiration>({m.destination, id}, *m.expires);  // and its index entry
}

// Removes a message and everything that hangs off it; the count follows the metadata.
template <class Tx>
void remove_message(Tx& tx, const std::string& destination, std::uint64_t id) {
  tx.template erase<message_expiration>({destination, id});  // and its index entry
  tx.template erase<message_metadata>({destination, id});
  // content chunks, destination name, dead-letter flag: the keyspaces that start with the id
  tx.template erase_prefix_all<message_content, message_destination, message_dlc_status>(id);
}

// The content of message id, or std::nullopt when there is no such message.
template <class Store>
std::optional<std::string> read_content(const Store& db, std::uint64_t id) {
  if (!db.template contains<message_destination>({id})) return std::nullopt;
  std::string body;
  ks::read_chunked<message_content>(db, {id}, [&](std::string_view piece) { body += piece; });
  return body;
}

// Moves message id to the dead-letter channel (its expiry dropped). Returns false when there is
// no such message or it is there already.
template <class Store>
bool move_to_dead_letter(Store& db, std::uint64_t id) {
  auto tx = db.transaction();
  const auto destination = tx.template get<message_destination>({id});
  if (!destination || *destination == dead_letter_channel) return false;
  const auto meta = tx.template get<message_metadata>({*destination, id});
  tx.template erase<message_expiration>({*destination, id});  // a dead letter does not expire
  tx.template erase<message_metadata>({*destination, id});
  tx.template put<message_metadata>({dead_letter_channel, id}, *meta);
  tx.template put<message_destination>({id}, std::string(dead_letter_channel));
  tx.template put<message_dlc_status>({id}, true);
  tx.commit();
  return true;
}

// Removes message id. Returns false when there is no such message.
template <class Store>
bool acknowledge(Store& db, std::uint64_t id) {
  auto tx = db.transaction();
  const auto destination = tx.template get<message_destination>({id});
  if (!destination) return false;
  remove_message(tx, *destination, id);
  tx.commit();
  return true;
}

// Removes the messages due before now: ks::sweep over the expiry index, at most batch messages
// per transaction (each atomic; a crash leaves the rest for the next sweep), reading only the due
// part of the index; the callback removes each message whole through the sweep's transaction.
// REQUIRES: batch > 0.
template <class Store>
std::size_t sweep_expired(Store& db, millis now, std::size_t batch) {
  return ks::sweep<expiry_index>(db, now, batch, [](auto& tx, const message_expiration::key_type& k, const millis&) {
    remove_message(tx, std::get<0>(k), std::get<1>(k));
  });
}

// Removes every message of destination, at most batch per transaction (each atomic).
// REQUIRES: batch > 0.
template <class Store>
std::size_t purge(Store& db, const std::string& destination, std::size_t batch) {
  std::size_t removed = 0;
  for (;;) {
    auto tx = db.transaction();
    std::vector<std::uint64_t> ids;
    for (const auto& e : tx.template scan<message_metadata>(destination).keys_only().limit(batch)) {
      ids.push_back(e.template get<"message_id">());
    }
    if (ids.empty()) return removed;
    for (const std::uint64_t id : ids) remove_message(tx, destination, id);
    tx.commit();
    removed += ids.size();
  }
}

// Purges destination, then erases what is left of it in every keyspace keyed by it.
template <class Store>
std::size_t remove_destination(Store& db, const std::string& destination, std::size_t batch) {
  const std::size_t removed = purge(db, destination, batch);
  db.template erase_prefix_all<message_metadata, message_expiration, queue>(destination);
  return removed;
}

}  // namespace wso2
