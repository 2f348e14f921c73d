// examples/broker/wso2_schema.hpp: WSO2 Message Broker's LevelDB store, fixed.
//
// The seed thread (WSO2 architecture list, 2017) wrote the store's keys as dotted strings:
//
//   MESSAGE.$message_id.$content_offset.MESSAGE_CONTENT             -> content chunk
//   MESSAGE.$message_id.DESTINATION_NAME                            -> queue/topic name
//   MESSAGE.$message_id.DLC_STATUS                                  -> "1" in the dead-letter channel
//   DESTINATION.MESSAGE_COUNT.$destination_name                     -> message count
//   DESTINATION.$destination_name.MESSAGE_METADATA.$message_id      -> metadata
//   DESTINATION.$destination_name.MESSAGE_EXPIRATION_TIME.$message_id -> expiration time
//
// with three bugs the keyspaces below cannot have: decimal ids and offsets sort "10" before "9"
// (here they are integers, in numeric order); a queue named "MESSAGE_COUNT" makes its metadata
// keys parse as the count of another queue, and a name containing '.' splits differently (here
// names are typed string fields, and the count has its own leading literal, because the schema
// check rejects the seed's DESTINATION.MESSAGE_COUNT.$destination next to
// DESTINATION.$destination...); the expiration time was a bare number (here a millisecond
// time point: a second-based value converts exactly, a microsecond one does not compile).
//
// What the broker maintained by hand is declared here: the message count is a declared count
// (ks::count_of: the number of metadata records per destination, written by the store in the same
// atomic write as the records), the metadata is a struct value (ks::value_fields), the content is
// a chunked value (ks::put_chunked: chunk 0 a header, then the chunks in offset order), and the
// expiry index ("EXPIRY", time, destination, message_id; ks::index_of), which the seed lacked (its
// expiry task read every destination's times), lets the expiry sweep read only what is due. broker adds the
// declared queues and the DTX store's dequeue records (message_store.cpp, xa_store.cpp).
#pragma once

#include <keyschema/keyschema.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace wso2 {

namespace ks = keyschema;
using millis = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;

// A message's metadata: the AMQP header the broker keeps opaque, and the content's length.
struct metadata {
  ks::bytes header;
  std::uint64_t content_length = 0;
  friend bool operator==(const metadata&, const metadata&) = default;
};

}  // namespace wso2

template <>
struct keyschema::value_fields<wso2::metadata>
    : keyschema::members<keyschema::member<"header", &wso2::metadata::header>,
                         keyschema::member<"content_length", &wso2::metadata::content_length>> {};

namespace wso2 {

using message_content = ks::keyspace<"message_content", ks::bytes,  //
    ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>, ks::field<"offset", std::uint32_t>,
    ks::lit<"MESSAGE_CONTENT">>;
using message_destination = ks::keyspace<"message_destination", std::string,  //
    ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>, ks::lit<"DESTINATION_NAME">>;
using message_dlc_status = ks::keyspace<"message_dlc_status", bool,  //
    ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>, ks::lit<"DLC_STATUS">>;
using message_metadata = ks::keyspace<"message_metadata", metadata,  //
    ks::lit<"DESTINATION">, ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">,
    ks::field<"message_id", std::uint64_t>>;
// Maintained by the store: the number of message_metadata records of each destination.
using message_count = ks::keyspace<"message_count", ks::count_of<message_metadata, 1>,  //
    ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
using message_expiration = ks::keyspace<"message_expiration", millis,  //
    ks::lit<"DESTINATION">, ks::field<"destination", std::string>, ks::lit<"MESSAGE_EXPIRATION_TIME">,
    ks::field<"message_id", std::uint64_t>>;
// The expiry index: message_expiration ordered by time, maintained by the store (index_of) in the
// same atomic write as the expiration time.
struct by_expiry {
  std::optional<std::tuple<millis, std::string, std::uint64_t>> operator()(const message_expiration::key_type& k,
                                                                           const millis& at) const {
    return std::tuple<millis, std::string, std::uint64_t>(at, std::get<0>(k), std::get<1>(k));
  }
};
using expiry_index = ks::keyspace<"expiry_index", ks::index_of<message_expiration, by_expiry>,  //
    ks::lit<"EXPIRY">, ks::field<"at", millis>, ks::field<"destination", std::string>,
    ks::field<"message_id", std::uint64_t>>;

using message_store = ks::schema<message_content, message_destination, message_dlc_status, message_count,
                                 message_metadata, message_expiration, expiry_index>;

// QUEUE.$destination -> () : the destinations the broker declared.
using queue = ks::keyspace<"queue", std::tuple<>, ks::lit<"QUEUE">, ks::field<"destination", std::string>>;
// XID.$xid.DEQUEUE.$message_id -> destination: a message a prepared XA branch dequeues (consumers
// skip it until the branch ends); written before the branch is prepared, erased by its commit.
using dtx_dequeue = ks::keyspace<"dtx_dequeue", std::string,  //
    ks::lit<"XID">, ks::field<"xid", ks::bytes>, ks::lit<"DEQUEUE">, ks::field<"message_id", std::uint64_t>>;

using broker = ks::schema<message_content, message_destination, message_dlc_status, message_count, message_metadata,
                          message_expiration, expiry_index, queue, dtx_dequeue>;

}  // namespace wso2
