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
#pragma once

#include <keyschema/keyschema.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace wso2 {

namespace ks = keyschema;
using millis = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;

using message_content = ks::keyspace<"message_content", ks::bytes,  //
    ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>, ks::field<"offset", std::uint32_t>,
    ks::lit<"MESSAGE_CONTENT">>;
using message_destination = ks::keyspace<"message_destination", std::string,  //
    ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>, ks::lit<"DESTINATION_NAME">>;
using message_dlc_status = ks::keyspace<"message_dlc_status", bool,  //
    ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>, ks::lit<"DLC_STATUS">>;
using message_count = ks::keyspace<"message_count", std::int64_t,  //
    ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
using message_metadata = ks::keyspace<"message_metadata", ks::bytes,  //
    ks::lit<"DESTINATION">, ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">,
    ks::field<"message_id", std::uint64_t>>;
using message_expiration = ks::keyspace<"message_expiration", millis,  //
    ks::lit<"DESTINATION">, ks::field<"destination", std::string>, ks::lit<"MESSAGE_EXPIRATION_TIME">,
    ks::field<"message_id", std::uint64_t>>;

using message_store = ks::schema<message_content, message_destination, message_dlc_status, message_count,
                                 message_metadata, message_expiration>;

}  // namespace wso2
