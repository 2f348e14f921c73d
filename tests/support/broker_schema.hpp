// tests/support/broker_schema.hpp: the seeds' broker key schema, written with keyschema.
//
// WSO2 MB's LevelDB store used dotted string keys such as MESSAGE.$id.$offset.MESSAGE_CONTENT and
// DESTINATION.$destination.MESSAGE_METADATA.$id. Here each becomes a keyspace; the message count
// moved from DESTINATION.MESSAGE_COUNT.$destination (which collides with
// DESTINATION.$destination... for a queue named "MESSAGE_COUNT") to its own leading literal.
#pragma once

#include <keyschema/keyschema.hpp>

#include <cstdint>
#include <string>

namespace broker_test {
namespace ks = keyschema;

using message_content = ks::keyspace<"message_content", ks::bytes,  //
    ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>, ks::field<"offset", std::uint32_t>,
    ks::lit<"MESSAGE_CONTENT">>;
using message_destination = ks::keyspace<"message_destination", std::string,  //
    ks::lit<"MESSAGE">, ks::field<"message_id", std::uint64_t>, ks::lit<"DESTINATION_NAME">>;
using message_metadata = ks::keyspace<"message_metadata", ks::bytes,  //
    ks::lit<"DESTINATION">, ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">,
    ks::field<"message_id", std::uint64_t>>;
using message_expiration = ks::keyspace<"message_expiration", std::int64_t,  //
    ks::lit<"DESTINATION">, ks::field<"destination", std::string>, ks::lit<"MESSAGE_EXPIRATION_TIME">,
    ks::field<"message_id", std::uint64_t>>;
using message_count = ks::keyspace<"message_count", std::int64_t,  //
    ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;

using broker = ks::schema<message_content, message_destination, message_metadata, message_expiration, message_count>;

}  // namespace broker_test
