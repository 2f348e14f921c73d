// keyschema/codec.hpp: the customization point that maps a C++ type to tuple-encoded key bytes.
//
// keyschema::codec<T> says how one key element of type T is written and read. The library
// specializes it for the standard types (see docs/encoding.md): integers up to 64 bits, float,
// double, bool, std::string (UTF-8), keyschema::bytes, keyschema::uuid, std::nullptr_t,
// std::optional<T>, std::tuple<Ts...> (nested tuple), enums, std::chrono durations and time
// points with integral representation, and keyschema::desc<T> (descending order).
// std::string_view, const char* and char arrays (string literals) are encode-only: they encode
// like std::string and decode as std::string. Durations and time points are named with their
// period and clock ("time_point<system_clock,duration<i64,1/1000>>"); a time point needs
// keyschema::clock_name<Clock> (see detail/codec/codec_scalars.hpp).
//
// Users add types in one of two forms:
//
//  (1) mapped: the type is stored as another encodable type.
//        template <> struct keyschema::codec<message_id> {
//          using repr = std::uint64_t;
//          static std::uint64_t to_repr(const message_id& m) { return m.value; }
//          static message_id from_repr(std::uint64_t v) { return message_id{v}; }  // may throw decode_error
//          static constexpr std::string_view name = "message_id";                // optional
//        };
//  (2) full: the codec writes and reads the bytes itself.
//        template <> struct keyschema::codec<point> {
//          static void encode(std::string& out, const point& p);  // appends exactly one element
//          static point decode(keyschema::tuple::reader& in);     // consumes exactly one element
//          static constexpr std::string_view name = "point";      // identity for schema fingerprints
//          static constexpr keyschema::type_code_set type_codes = keyschema::type_code_set::of(0x05);  // e.g. it writes a std::tuple
//        };
//      type_codes (the first bytes an element can start with) is required for a full codec used
//      in a key field, at any depth of its type, and must not contain 0xFF; a schema breaking
//      either rule does not compile (the diagnostic names the codec). Scans tell another
//      keyspace's key from a damaged one by it. Mapped codecs inherit their repr's.
//      A full codec must write one self-delimiting element whose byte order is the intended
//      order of T. An encoding may be a proper prefix of another only when the longer one goes
//      on with 0xff (as FDB strings and nested tuples do: "a" = 02 61 00, "a\0" = 02 61 00 ff 00);
//      desc<T> and nested tuples rely on it. An element must not start with 0x00 unless it is a
//      lone null (nested tuples escape it as 0x00 0xff). Delegating to codec_traits of standard
//      types (e.g. encoding a std::tuple) satisfies all of this.
//
// codec_traits<T> is the uniform way to use any codec. key_encodable<T> holds when T can be
// encoded and decoded; key_writable<T> when it can at least be encoded.
//
// Thread-safety: codecs are stateless; every function here may be called concurrently.
#pragma once

// In this order: the primary template and traits, then the specializations.
#include <keyschema/detail/codec/codec_core.hpp>        // codec<T>, codec_traits<T>, the concepts
#include <keyschema/detail/codec/codec_scalars.hpp>     // the scalar types
#include <keyschema/detail/codec/codec_composites.hpp>  // optional, nested tuple, desc
