// Static tests of schema descriptors and validation: every line is checked by the compiler.
#include <keyschema/keyschema.hpp>

#include "../conformance/broker_schema.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// --- literals are compared byte-wise -------------------------------------------------------------
// "a" (02 61 00) is a byte prefix of "a\0" (02 61 00 ff 00): the key ("a") is a prefix of every
// key ("a\0", n).
using lit_a = ks::keyspace<"lit_a", ks::bytes, ks::lit<"a">>;
using lit_a_nul = ks::keyspace<"lit_a_nul", ks::bytes, ks::lit<"a\0">, ks::field<"n", std::int64_t>>;
static_assert(rejected<ks::schema<lit_a, lit_a_nul>>);
static_assert(rejected<ks::schema<lit_a_nul, lit_a>>);
static_assert(ks::detail::schema_problem_of<ks::schema<lit_a, lit_a_nul>>().segment == 0);
// ... but when the shorter side goes on, what follows faces the 0xff escape: separated.
using lit_a_n = ks::keyspace<"lit_a_n", ks::bytes, ks::lit<"a">, ks::field<"n", std::int64_t>>;
using lit_a_s = ks::keyspace<"lit_a_s", ks::bytes, ks::lit<"a">, ks::lit<"b">>;
using lit_a_str = ks::keyspace<"lit_a_str", ks::bytes, ks::lit<"a">, ks::field<"s", std::string>>;
static_assert(ks::valid_schema<ks::schema<lit_a_n, lit_a_nul>>);
static_assert(ks::valid_schema<ks::schema<lit_a_s, lit_a_nul>>);
static_assert(ks::valid_schema<ks::schema<lit_a_str, lit_a_nul>>);
// Literals spanning different segment splits: "a\0" then "b" against "a" then "\0b"... differ at
// the escape; the same text split alike is the same key.
using two_lits = ks::keyspace<"two_lits", ks::bytes, ks::lit<"x">, ks::lit<"y">>;
using two_lits_again = ks::keyspace<"two_lits_again", ks::bytes, ks::lit<"x">, ks::lit<"y">>;
static_assert(rejected<ks::schema<two_lits, two_lits_again>>);
using xy = ks::keyspace<"xy", ks::bytes, ks::lit<"xy">>;
static_assert(ks::valid_schema<ks::schema<two_lits, xy>>);  // 02 78 00 .. vs 02 78 79 00
// Literals with NULs on both sides: "a\0\0" vs "a\0": prefix, collision only when the shorter ends.
using lit_a_nul_nul = ks::keyspace<"lit_a_nul_nul", ks::bytes, ks::lit<"a\0\0">>;
using lit_a_nul_end = ks::keyspace<"lit_a_nul_end", ks::bytes, ks::lit<"a\0">>;
static_assert(rejected<ks::schema<lit_a_nul_nul, lit_a_nul_end>>);
static_assert(ks::valid_schema<ks::schema<lit_a_nul_nul, lit_a_nul>>);

// --- composite fields are compared past their common first code --------------------------------
using d_str = ks::keyspace<"d_str", ks::bytes, ks::lit<"D">, ks::field<"v", ks::desc<std::string>>>;
using d_u64 = ks::keyspace<"d_u64", ks::bytes, ks::lit<"D">, ks::field<"v", ks::desc<std::uint64_t>>>;
using d_i8 = ks::keyspace<"d_i8", ks::bytes, ks::lit<"D">, ks::field<"v", ks::desc<std::int8_t>>, ks::lit<"X">>;
static_assert(ks::valid_schema<ks::schema<d_str, d_u64>>);
static_assert(rejected<ks::schema<d_u64, d_i8>>);  // integers of two widths can be equal
using t_i64 = ks::keyspace<"t_i64", ks::bytes, ks::lit<"T">, ks::field<"v", std::tuple<std::int64_t>>>;
using t_str = ks::keyspace<"t_str", ks::bytes, ks::lit<"T">, ks::field<"v", std::tuple<std::string>>>;
using t_empty = ks::keyspace<"t_empty", ks::bytes, ks::lit<"T">, ks::field<"v", std::tuple<>>>;
using t_opt = ks::keyspace<"t_opt", ks::bytes, ks::lit<"T">, ks::field<"v", std::tuple<std::optional<std::int64_t>>>>;
static_assert(ks::valid_schema<ks::schema<t_i64, t_str>>);
static_assert(ks::valid_schema<ks::schema<t_i64, t_empty>>);
static_assert(rejected<ks::schema<t_empty, t_opt>>);  // (05 00) is a prefix of (05 00 ff 00)
static_assert(rejected<ks::schema<t_i64, t_opt>>);
// A nested tuple never meets a desc element, whatever they hold.
using d_tuple = ks::keyspace<"d_tuple", ks::bytes, ks::lit<"T">, ks::field<"v", ks::desc<std::tuple<std::int64_t>>>>;
static_assert(ks::valid_schema<ks::schema<t_i64, d_tuple>>);

// --- integers: one type code range whatever the width ----------------------------------------------
using u8_field = ks::keyspace<"u8_field", ks::bytes, ks::lit<"I">, ks::field<"n", std::uint8_t>>;
using i64_field = ks::keyspace<"i64_field", ks::bytes, ks::lit<"I">, ks::field<"n", std::int64_t>, ks::lit<"Z">>;
static_assert(rejected<ks::schema<u8_field, i64_field>>);

}  // namespace

// --- user codecs: type_codes required for full codecs, never 0xFF --------------------------------
namespace schema_static_codecs {
struct point {
  std::int32_t x;
};
struct point_ff {
  std::int32_t x;
};
struct point_ok {
  std::int32_t x;
};
struct point_via_repr {
  std::int32_t x;
};
}  // namespace schema_static_codecs

template <>
struct keyschema::codec<schema_static_codecs::point> {  // no type_codes
  static constexpr std::string_view name = "point";
  static void encode(std::string& out, const schema_static_codecs::point& p) { codec_traits<std::int32_t>::encode(out, p.x); }
  static schema_static_codecs::point decode(tuple::reader& in) { return {codec_traits<std::int32_t>::decode(in)}; }
};
template <>
struct keyschema::codec<schema_static_codecs::point_ff> {  // type_codes with 0xFF
  static constexpr std::string_view name = "point_ff";
  static constexpr type_code_set type_codes = type_code_set::of(0x41) | type_code_set::of(0xff);
  static void encode(std::string& out, const schema_static_codecs::point_ff&) { out.push_back('\x41'); }
  static schema_static_codecs::point_ff decode(tuple::reader& in) {
    in.take();
    return {0};
  }
};
template <>
struct keyschema::codec<schema_static_codecs::point_ok> {
  static constexpr std::string_view name = "point_ok";
  static constexpr type_code_set type_codes = type_code_set::of(0x41);
  static void encode(std::string& out, const schema_static_codecs::point_ok&) { out.push_back('\x41'); }
  static schema_static_codecs::point_ok decode(tuple::reader& in) {
    in.take();
    return {0};
  }
};
template <>
struct keyschema::codec<schema_static_codecs::point_via_repr> {  // inherits std::int32_t's type_codes
  using repr = std::int32_t;
  static std::int32_t to_repr(const schema_static_codecs::point_via_repr& p) { return p.x; }
  static schema_static_codecs::point_via_repr from_repr(std::int32_t x) { return {x}; }
};

namespace {
namespace ks = keyschema;
namespace sc = schema_static_codecs;
template <class T>
using field_ks = ks::keyspace<"pts", ks::bytes, ks::lit<"P">, ks::field<"p", T>>;
template <class T>
concept accepted_field = requires { requires ks::valid_schema<ks::schema<field_ks<T>>>; };

static_assert(accepted_field<sc::point_ok>);
static_assert(accepted_field<sc::point_via_repr>);
static_assert(accepted_field<std::optional<sc::point_ok>>);
static_assert(accepted_field<std::tuple<std::int64_t, sc::point_ok>>);
static_assert(!accepted_field<sc::point>);
static_assert(requires { requires !ks::valid_schema<ks::schema<field_ks<sc::point>>>; });
static_assert(ks::detail::schema_problem_of<ks::schema<field_ks<sc::point>>>().kind ==
              ks::detail::problem_kind::codec_without_type_codes);
static_assert(!accepted_field<std::optional<sc::point>>);  // everywhere in the field's type
static_assert(!accepted_field<std::tuple<std::int64_t, sc::point>>);
static_assert(!accepted_field<ks::desc<sc::point>>);
static_assert(std::is_same_v<ks::detail::codes_check_t<std::tuple<std::int64_t, std::optional<sc::point>>>::type, sc::point>);
static_assert(!accepted_field<sc::point_ff>);
static_assert(ks::detail::schema_problem_of<ks::schema<field_ks<sc::point_ff>>>().kind ==
              ks::detail::problem_kind::codec_type_codes_include_ff);
static_assert(!accepted_field<ks::desc<sc::point_ff>>);
static_assert(!accepted_field<std::tuple<sc::point_ff>>);

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
// A duration's period and a time point's clock are part of it: ms -> us is a schema_error on open.
using exp_ms = ks::keyspace<"exp", ks::bytes, ks::lit<"E">, ks::field<"t", std::chrono::sys_time<std::chrono::milliseconds>>>;
using exp_us = ks::keyspace<"exp", ks::bytes, ks::lit<"E">, ks::field<"t", std::chrono::sys_time<std::chrono::microseconds>>>;
using exp_steady = ks::keyspace<"exp", ks::bytes, ks::lit<"E">, ks::field<"t", std::chrono::time_point<std::chrono::steady_clock, std::chrono::milliseconds>>>;
using exp_int = ks::keyspace<"exp", ks::bytes, ks::lit<"E">, ks::field<"t", std::int64_t>>;
using ttl_ms = ks::keyspace<"exp", ks::bytes, ks::lit<"E">, ks::field<"t", std::chrono::milliseconds>>;
using ttl_s = ks::keyspace<"exp", ks::bytes, ks::lit<"E">, ks::field<"t", std::chrono::seconds>>;
static_assert(ks::layout<ks::schema<exp_ms>>::fingerprint != ks::layout<ks::schema<exp_us>>::fingerprint);
static_assert(ks::layout<ks::schema<exp_ms>>::fingerprint != ks::layout<ks::schema<exp_steady>>::fingerprint);
static_assert(ks::layout<ks::schema<exp_ms>>::fingerprint != ks::layout<ks::schema<exp_int>>::fingerprint);
static_assert(ks::layout<ks::schema<ttl_ms>>::fingerprint != ks::layout<ks::schema<ttl_s>>::fingerprint);
static_assert(ks::layout<ks::schema<ttl_ms>>::fingerprint != ks::layout<ks::schema<exp_ms>>::fingerprint);

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

// The CRTP hooks are not part of the user-facing classes: only detail::store_access reaches them.
template <class S>
concept has_read_hooks = requires(const S& s, std::string& v) {
  s.raw_get(std::string_view{}, v);
} || requires(const S& s, const ks::key_range& r) { s.raw_cursor(r); };
template <class S>
concept has_write_hooks = requires(S& s) {
  s.limits();
} || requires(S& s) { s.emplace_op(ks::write_batch::op_kind::erase, [](std::string&) {}, [](std::string&) {}); };
using snapshot_t = ks::store_snapshot<broker, ks::memory_backend>;
using batch_t = ks::store_batch<broker, ks::memory_backend>;
using transaction_t = ks::store_transaction<broker, ks::memory_backend>;
static_assert(!has_read_hooks<store_t> && !has_read_hooks<snapshot_t> && !has_read_hooks<transaction_t>,
              "raw_get/raw_cursor must stay private (reached through detail::store_access)");
static_assert(!has_write_hooks<batch_t> && !has_write_hooks<transaction_t>,
              "emplace_op/limits must stay private (reached through detail::store_access)");
// The store's cursors count as alive scan cursors of the store (see ~store) and are the backend's
// cursors otherwise.
static_assert(std::is_same_v<ks::detail::raw_cursor_t<store_t>, ks::detail::counted_cursor<ks::memory_backend::cursor_type>>);
static_assert(std::is_base_of_v<ks::memory_backend::cursor_type, ks::detail::raw_cursor_t<store_t>>);

}  // namespace
