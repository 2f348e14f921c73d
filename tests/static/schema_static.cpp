// Static tests of schema descriptors and validation: every line is checked by the compiler.
#include <keyschema/keyschema.hpp>

#include "../conformance/broker_schema.hpp"

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

namespace {
namespace ks = keyschema;
using namespace keyschema::conformance;

// --- descriptors --------------------------------------------------------------------------------
static_assert(std::is_same_v<message_metadata::key_type, std::tuple<std::string, std::uint64_t>>);
static_assert(std::is_same_v<message_content::key_type, std::tuple<std::uint64_t, std::uint32_t>>);
static_assert(message_metadata::segment_count == 4 && message_metadata::field_count == 2);
static_assert(message_metadata::name == "message_metadata");
// A prefix of one field covers the literal after it; of zero fields, the leading literal.
static_assert(message_metadata::prefix_segments[0] == 1);
static_assert(message_metadata::prefix_segments[1] == 3);
static_assert(message_metadata::prefix_segments[2] == 4);
static_assert(message_content::prefix_segments[2] == 4);  // trailing literal included
static_assert(ks::lit<"AB">::encoded == std::string_view("\x02" "AB\x00", 4));
static_assert(ks::lit<"">::encoded == std::string_view("\x02\x00", 2));

// --- valid schemas ------------------------------------------------------------------------------
static_assert(ks::valid_schema<broker>);
static_assert(ks::valid_schema<ks::schema<>>);
static_assert(ks::valid_schema<ks::schema<message_metadata>>);
// Literals that differ separate keyspaces even when later segments are identical.
using a_by_id = ks::keyspace<"a", std::int64_t, ks::lit<"A">, ks::field<"id", std::uint64_t>>;
using b_by_id = ks::keyspace<"b", std::int64_t, ks::lit<"B">, ks::field<"id", std::uint64_t>>;
static_assert(ks::valid_schema<ks::schema<a_by_id, b_by_id>>);
// An integer or bytes field facing a literal: they can never encode alike.
using x_int = ks::keyspace<"x_int", ks::bytes, ks::lit<"X">, ks::field<"n", std::int32_t>>;
using x_lit = ks::keyspace<"x_lit", ks::bytes, ks::lit<"X">, ks::lit<"COUNT">>;
using x_bytes = ks::keyspace<"x_bytes", ks::bytes, ks::lit<"X">, ks::field<"b", ks::bytes>, ks::lit<"T">>;
static_assert(ks::valid_schema<ks::schema<x_int, x_lit>>);
static_assert(ks::valid_schema<ks::schema<x_bytes, x_lit>>);
// Integer and bytes fields facing each other: disjoint type codes.
static_assert(ks::valid_schema<ks::schema<x_int, x_bytes>>);

// --- invalid schemas: false, not a hard error ---------------------------------------------------
template <class S>
concept rejected = !ks::valid_schema<S>;

// The seed's updated schema: DESTINATION.MESSAGE_COUNT.$destination against
// DESTINATION.$destination.MESSAGE_METADATA.$id. A queue named "MESSAGE_COUNT" collides.
using seed_message_count = ks::keyspace<"message_count", std::int64_t,  //
    ks::lit<"DESTINATION">, ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
static_assert(rejected<ks::schema<message_metadata, seed_message_count>>);
static_assert(ks::detail::schema_problem_of<ks::schema<message_metadata, seed_message_count>>().kind ==
              ks::detail::problem_kind::keyspaces_collide);
// ... and the position named is segment 1, where the literal faces the destination field.
static_assert(ks::detail::schema_problem_of<ks::schema<message_metadata, seed_message_count>>().segment == 1);

// One key equal to another's prefix: ("A", id) vs ("A", id, "X").
using a_by_id_x = ks::keyspace<"ax", std::int64_t, ks::lit<"A">, ks::field<"id", std::uint64_t>, ks::lit<"X">>;
static_assert(rejected<ks::schema<a_by_id, a_by_id_x>>);
static_assert(ks::detail::schema_problem_of<ks::schema<a_by_id, a_by_id_x>>().segment == 1);
// Identical layouts under two names.
using a_again = ks::keyspace<"a2", ks::bytes, ks::lit<"A">, ks::field<"other", std::int64_t>>;
static_assert(rejected<ks::schema<a_by_id, a_again>>);
// Fields of different integer types can encode alike.
using a_signed = ks::keyspace<"a3", ks::bytes, ks::lit<"A">, ks::field<"n", std::int8_t>, ks::lit<"S">>;
static_assert(rejected<ks::schema<a_by_id, a_signed>>);
// A string field against a literal can collide (the queue named like the literal).
using s_field = ks::keyspace<"s", ks::bytes, ks::lit<"X">, ks::field<"name", std::string>>;
static_assert(rejected<ks::schema<s_field, x_lit>>);
// Duplicate keyspace names, duplicate field names, empty keyspace.
using a_dup_name = ks::keyspace<"a", std::int64_t, ks::lit<"Z">>;
static_assert(rejected<ks::schema<a_by_id, a_dup_name>>);
using dup_field = ks::keyspace<"d", std::int64_t, ks::lit<"D">, ks::field<"id", int>, ks::field<"id", int>>;
static_assert(rejected<ks::schema<dup_field>>);
using empty_ks = ks::keyspace<"e", std::int64_t>;
static_assert(rejected<ks::schema<empty_ks>>);
// A field type with no key codec, a value type with no value codec.
struct opaque {};
using no_codec = ks::keyspace<"n", std::int64_t, ks::lit<"N">, ks::field<"o", opaque>>;
static_assert(rejected<ks::schema<no_codec>>);
using no_value_codec = ks::keyspace<"v", opaque, ks::lit<"V">>;
static_assert(rejected<ks::schema<no_value_codec>>);
// Not a schema at all.
static_assert(rejected<int>);
static_assert(rejected<message_metadata>);

// --- fingerprints -------------------------------------------------------------------------------
static_assert(ks::layout<broker>::fingerprint == ks::layout<broker>::fingerprint);
static_assert(ks::layout<broker>::fingerprint != ks::layout<ks::schema<message_metadata>>::fingerprint);
// Changing one field's type changes the fingerprint.
using message_metadata_u32 = ks::keyspace<"message_metadata", ks::bytes,  //
    ks::lit<"DESTINATION">, ks::field<"destination", std::string>, ks::lit<"MESSAGE_METADATA">,
    ks::field<"message_id", std::uint32_t>>;
static_assert(ks::layout<ks::schema<message_metadata>>::fingerprint !=
              ks::layout<ks::schema<message_metadata_u32>>::fingerprint);
// Renaming a literal changes it too.
using a_by_id_renamed = ks::keyspace<"a", std::int64_t, ks::lit<"AA">, ks::field<"id", std::uint64_t>>;
static_assert(ks::layout<ks::schema<a_by_id>>::fingerprint != ks::layout<ks::schema<a_by_id_renamed>>::fingerprint);

// --- entries: fields by name --------------------------------------------------------------------
static_assert(ks::detail::field_index<message_metadata>("message_id") == 1);
static_assert(ks::detail::field_index<message_metadata>("destination") == 0);
static_assert(ks::detail::field_index<message_metadata>("nope") == message_metadata::field_count);

// --- the store's API shape ----------------------------------------------------------------------
using store_t = ks::store<broker, ks::memory_backend>;
template <class S, class KS>
concept can_get = requires(const S& s, const typename KS::key_type& k) { s.template get<KS>(k); };
static_assert(can_get<store_t, message_metadata>);
static_assert(ks::backend<ks::memory_backend>);
static_assert(!ks::backend<int>);

}  // namespace
