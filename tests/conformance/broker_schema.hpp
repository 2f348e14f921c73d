// tests/conformance/broker_schema.hpp: the message-broker schema every conformance case runs on.
//
// The keyspaces follow the dotted LevelDB key schema of WSO2 Message Broker (see
// /work/shared/seeds), turned into typed keyspaces, plus a descending-order listing and a keyspace
// with a binary field:
//
//   message_metadata     ("DESTINATION", destination, "MESSAGE_METADATA", message_id)        -> bytes
//   message_expiration   ("DESTINATION", destination, "MESSAGE_EXPIRATION_TIME", message_id) -> i64
//   message_content      ("MESSAGE", message_id, offset, "MESSAGE_CONTENT")                  -> bytes
//   message_destination  ("MESSAGE", message_id, "DESTINATION_NAME")                         -> string
//   message_count        ("MESSAGE_COUNT", destination)                                      -> i64
//   expiry               ("EXPIRY", at, message_id)                                          -> ()
//   recent               ("RECENT", destination, desc(message_id))                           -> bytes
//   dtx_entry            ("DTX_ENTRY", xid, node_id, "BRANCH_ID")                            -> bytes
//
// message_metadata and message_expiration share their first two segments; so do message_content
// and message_destination: scans of one must never see the other. broker_v2 differs from broker
// in one value codec only (message_count holds u64), which changes the schema fingerprint.
//
// Also: show() overloads that print typed keys and values for test diagnostics.
// Thread-safety: types and pure functions.
#pragma once

#include <keyschema/keyschema.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace keyschema::conformance {

namespace ks = keyschema;

using message_metadata =
    ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                 ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
using message_expiration =
    ks::keyspace<"message_expiration", std::int64_t, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                 ks::lit<"MESSAGE_EXPIRATION_TIME">, ks::field<"message_id", std::uint64_t>>;
using message_content =
    ks::keyspace<"message_content", ks::bytes, ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>,
                 ks::field<"offset", std::uint32_t>, ks::lit<"MESSAGE_CONTENT">>;
using message_destination = ks::keyspace<"message_destination", std::string, ks::lit<"MESSAGE">,
                                         ks::field<"message_id", std::uint64_t>, ks::lit<"DESTINATION_NAME">>;
using message_count =
    ks::keyspace<"message_count", std::int64_t, ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
using expiry = ks::keyspace<"expiry", std::tuple<>, ks::lit<"EXPIRY">, ks::field<"at", std::int64_t>,
                            ks::field<"message_id", std::uint64_t>>;
using recent = ks::keyspace<"recent", ks::bytes, ks::lit<"RECENT">, ks::field<"destination", std::string>,
                            ks::field<"message_id", ks::desc<std::uint64_t>>>;
using dtx_entry = ks::keyspace<"dtx_entry", ks::bytes, ks::lit<"DTX_ENTRY">, ks::field<"xid", ks::bytes>,
                               ks::field<"node_id", std::uint32_t>, ks::lit<"BRANCH_ID">>;

using broker = ks::schema<message_metadata, message_expiration, message_content, message_destination, message_count,
                          expiry, recent, dtx_entry>;

// The same layout except message_count's value codec: another fingerprint.
using message_count_v2 =
    ks::keyspace<"message_count", std::uint64_t, ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
using broker_v2 = ks::schema<message_metadata, message_expiration, message_content, message_destination,
                             message_count_v2, expiry, recent, dtx_entry>;

static_assert(ks::valid_schema<broker>);
static_assert(ks::valid_schema<broker_v2>);
static_assert(ks::layout<broker>::fingerprint != ks::layout<broker_v2>::fingerprint);

// --- printing for diagnostics ------------------------------------------------------------------

// Bytes as b"..." with control and non-ASCII bytes as \xNN (the codec's own quoting).
inline std::string show_bytes(std::string_view s) {
  std::string out;
  ks::detail::append_quoted(out, s, true);
  return out;
}

inline std::string show(const std::string& s) {
  std::string out;
  ks::detail::append_quoted(out, s, false);
  return out;
}
inline std::string show(const ks::bytes& b) {
  // Large values print as their size only, not megabytes of text.
  if (b.size() > 64) return "bytes[" + std::to_string(b.size()) + "]";
  return show_bytes(b.view());
}
inline std::string show(int v) { return std::to_string(v); }
inline std::string show(std::uint64_t v) { return std::to_string(v); }
inline std::string show(std::uint32_t v) { return std::to_string(v); }
inline std::string show(std::int64_t v) { return std::to_string(v); }
inline std::string show(const ks::desc<std::uint64_t>& v) { return "desc(" + std::to_string(v.value) + ")"; }
inline std::string show(const std::tuple<>&) { return "()"; }

template <class... T>
std::string show(const std::tuple<T...>& t) {
  std::string out = "(";
  std::apply(
      [&](const auto&... e) {
        bool first = true;
        ((out += (first ? "" : ", "), out += show(e), first = false), ...);
      },
      t);
  return out + ")";
}

// "key = value", the form scan results are compared in.
template <class KS>
std::string show_entry(const typename KS::key_type& k, const typename KS::value_type& v) {
  return show(k) + " = " + show(v);
}

}  // namespace keyschema::conformance
