// examples/broker/invariants.hpp: the broker store's invariants, checked on one snapshot.
//
// check_invariants(db) reads a snapshot of a store of a schema holding the keyspaces of
// wso2_schema.hpp and returns one line per thing that is wrong (empty: all hold):
//   count    every count equals the number of metadata records of its destination, and every
//            destination with records has a count;
//   message  every metadata record has its message_destination (naming the same destination), its
//            content (as many bytes as the metadata says) and a dead-letter flag exactly when it
//            is in the dead-letter channel; every message_destination has its metadata record;
//   content  every message's content chunks belong to a message (no orphan chunks);
//   expiry   every expiration time has its metadata record and its expiry index entry, and every
//            index entry has its expiration time (same time);
//   extra    what the caller adds (xa_store.cpp: every DTX dequeue record belongs to a prepared
//            branch and names a message that exists).
// Each line starts with its category. The checks read everything (a test's store, not a
// production one's).
//
// Thread-safety: reads a snapshot; may run while others write.
#pragma once

#include "wso2_schema.hpp"

#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace wso2 {

inline constexpr const char* dead_letter_channel = "DeadLetterChannel";

// Extra checks (extra(db, snapshot, lines) appends lines); the default checks nothing.
struct no_extra_check {
  template <class Store, class Snapshot>
  void operator()(const Store&, const Snapshot&, std::vector<std::string>&) const {}
};

template <class Store, class Extra = no_extra_check>
std::vector<std::string> check_invariants(const Store& db, const Extra& extra = {}) {
  std::vector<std::string> bad;
  const auto snap = db.snapshot();
  const auto id_text = [](std::uint64_t id) { return std::to_string(id); };

  // count: one grouped pass over the metadata, compared with the declared counts both ways.
  std::map<std::string, std::int64_t> records;
  for (auto&& g : snap.template scan<message_metadata>().template group_by<"destination">()) {
    std::int64_t n = 0;
    for (const auto& e : g) {
      (void)e;
      ++n;
    }
    records[g.template get<"destination">()] = n;
  }
  for (const auto& e : snap.template scan<message_count>()) {
    const std::string& d = e.template get<"destination">();
    const auto it = records.find(d);
    const std::int64_t have = it == records.end() ? 0 : it->second;
    if (e.value != have) {
      bad.push_back("count: destination '" + d + "' has count " + std::to_string(e.value) + " but " +
                    std::to_string(have) + " metadata records");
    }
  }
  for (const auto& [d, n] : records) {
    if (!snap.template get<message_count>({d})) {
      bad.push_back("count: destination '" + d + "' has " + std::to_string(n) + " metadata records and no count");
    }
  }

  // message: metadata <-> destination, content, dead-letter flag.
  for (const auto& e : snap.template scan<message_metadata>()) {
    const std::string& d = e.template get<"destination">();
    const std::uint64_t id = e.template get<"message_id">();
    const auto where = snap.template get<message_destination>({id});
    if (where != std::optional<std::string>(d)) {
      bad.push_back("message: " + id_text(id) + " in '" + d + "' has destination record '" +
                    (where ? *where : std::string("(none)")) + "'");
    }
    std::uint64_t bytes = 0;
    try {
      ks::read_chunked<message_content>(snap, {id}, [&](std::string_view piece) { bytes += piece.size(); });
    } catch (const ks::decode_error& damaged) {
      bad.push_back("message: " + id_text(id) + "'s content is damaged: " + damaged.what());
      continue;
    }
    if (bytes != e.value.content_length) {
      bad.push_back("message: " + id_text(id) + " has " + std::to_string(bytes) + " content bytes, its metadata says " +
                    std::to_string(e.value.content_length));
    }
    const bool flagged = snap.template get<message_dlc_status>({id}).value_or(false);
    if (flagged != (d == dead_letter_channel)) {
      bad.push_back("message: " + id_text(id) + " in '" + d + "' has dead-letter flag " + (flagged ? "set" : "unset"));
    }
  }
  for (const auto& e : snap.template scan<message_destination>()) {
    const std::uint64_t id = e.template get<"message_id">();
    if (!snap.template contains<message_metadata>({e.value, id})) {
      bad.push_back("message: " + id_text(id) + " names destination '" + e.value + "' but has no metadata there");
    }
  }
  for (const auto& e : snap.template scan<message_dlc_status>()) {
    const std::uint64_t id = e.template get<"message_id">();
    if (!snap.template contains<message_destination>({id})) {
      bad.push_back("message: dead-letter flag of " + id_text(id) + ", which does not exist");
    }
  }

  // content: chunks without their message.
  for (auto&& g : snap.template scan<message_content>().keys_only().template group_by<"message_id">()) {
    const std::uint64_t id = g.template get<"message_id">();
    if (!snap.template contains<message_destination>({id})) {
      bad.push_back("content: orphan chunks of message " + id_text(id) + " (no such message)");
    }
  }

  // expiry: expiration <-> metadata, expiration <-> index.
  for (const auto& e : snap.template scan<message_expiration>()) {
    const std::string& d = e.template get<"destination">();
    const std::uint64_t id = e.template get<"message_id">();
    if (!snap.template contains<message_metadata>({d, id})) {
      bad.push_back("expiry: expiration time of " + id_text(id) + " in '" + d + "' without its message");
    }
    if (!snap.template contains<expiry_index>({e.value, d, id})) {
      bad.push_back("expiry: expiration time of " + id_text(id) + " in '" + d + "' without its index entry");
    }
  }
  for (const auto& e : snap.template scan<expiry_index>().keys_only()) {
    const std::string& d = e.template get<"destination">();
    const std::uint64_t id = e.template get<"message_id">();
    if (snap.template get<message_expiration>({d, id}) != std::optional<millis>(e.template get<"at">())) {
      bad.push_back("expiry: index entry of " + id_text(id) + " in '" + d + "' without its expiration time");
    }
  }

  extra(db, snap, bad);
  return bad;
}

// Prints what check_invariants found after `step`; returns whether all held.
template <class Store, class Extra = no_extra_check>
bool invariants_hold(const Store& db, const char* step, const Extra& extra = {}) {
  const std::vector<std::string> bad = check_invariants(db, extra);
  for (const auto& line : bad) std::printf("INVARIANT after %s: %s\n", step, line.c_str());
  return bad.empty();
}

}  // namespace wso2
