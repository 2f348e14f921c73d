// keyschema/counters.hpp: counters and declared counts.
//
// Counters. add<KS>(key, delta) adds delta to the integer stored under key (a missing key counts
// as 0), on a store (one atomic write), a store_batch and a store_transaction. KS's value_type
// must be an integer type (not bool); delta is a std::int64_t (negative to subtract).
//   - In a transaction it reads the current value (the transaction's own writes included) and
//     puts the sum, atomically with the rest of the transaction.
//   - In a batch it is recorded, not read: at commit the store resolves it while it holds its
//     writer lock (on LMDB and SQLite, backend_with_write_transaction, inside the engine's write
//     transaction, so writers of other processes cannot interleave) and writes the sum with the
//     batch's other operations in one atomic write. So two threads (or, on LMDB and SQLite,
//     processes) adding through batches never lose an update, which "read with db.get, put the
//     sum in a batch" does. Within one batch, adds to one key sum; a put then an add adds to the
//     put value; an erase then an add starts from 0; a put or erase after an add replaces it.
// Errors of add: overflow_error (error.hpp) when the sum does not fit the value type, naming the
// keyspace, the key, the stored value and the delta; nothing is written then (the whole batch or
// single op; a transaction stays open without that add). decode_error when the stored value does
// not decode; key_error / limit_error for the key as put.
//
// Declared counts. A keyspace whose value is count_of<Counted, N> holds, per distinct value of
// the first N fields of Counted's keys, the number of Counted's records with those fields; its
// fields must be exactly Counted's first N fields (same names, same types, same order):
//   using message_count = ks::keyspace<"message_count", ks::count_of<message_metadata, 1>,
//       ks::lit<"MESSAGE_COUNT">, ks::field<"destination", std::string>>;
// Its value_type is std::int64_t. The store maintains it: every write that creates a record of
// Counted (a put of a key that did not exist) adds 1, every erase of an existing record
// subtracts 1, in the same atomic write as the record (single ops, batches, transactions,
// store::write of a raw write_batch, and each chunk of erase_range / erase_prefix). So after a
// crash a count always equals the number of records it counts. A count that reaches 0 is erased:
// get returns std::nullopt, never 0. Writing a count keyspace directly (put, erase, add) does not
// compile ("maintained by the store"); a raw write_batch given to store::write that puts or
// erases one of its keys is refused (key_error naming the keyspace; nothing is written). A schema whose count does not match its counted keyspace does
// not compile (the store's static_assert names both keyspaces and the field position).
//
// A count is maintained from the moment the records are written through a store whose schema
// declares it: declaring one over records already stored does not count them. (Adding a keyspace
// over records that exist is refused on open until ks::migrate converts the database; migrate
// derives every count of the new schema from the migrated records. So does turning an integer
// keyspace into a count: the layout names the count,
// "message_count=packed<i64>:count_of<message_metadata,1>{...}".)
//
// count_of is a derivation (derivation.hpp): the store knows it only through its hooks.
//
// Cost: a write to a counted keyspace reads whether the key exists first (one point read per
// key, at commit for batches). Batches over schemas without counts, and batches without adds,
// are written exactly as before.
//
// Thread-safety: types only; the operations have the store's thread-safety (store.hpp).
#pragma once

#include <keyschema/derivation.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/value_codec.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

namespace diagnostic {

template <fixed_string Count, fixed_string Counted>
struct count_of_foreign_keyspace {
  static_assert(always_false<Count.size()>,
                "keyschema::count_of: the keyspace a count counts is not part of the schema (see Count and "
                "Counted in this instantiation); add it to the keyschema::schema<...>");
  static constexpr bool value = false;
};

template <fixed_string Count, fixed_string Counted, std::size_t GroupFields>
struct count_of_field_count {
  static_assert(always_false<GroupFields>,
                "keyschema::count_of: a count keyspace must have exactly N fields, the first N fields of the "
                "counted keyspace (see Count, Counted and GroupFields in this instantiation); give it those "
                "fields, or change N");
  static constexpr bool value = false;
};

template <fixed_string Count, fixed_string Counted, std::size_t Field>
struct count_of_field_mismatch {
  static_assert(always_false<Field>,
                "keyschema::count_of: a field of the count keyspace differs from the counted keyspace's field at "
                "the same position (name or type; see Count, Counted and Field, 0-based, in this instantiation); "
                "declare the count's fields as the counted keyspace's first N fields");
  static constexpr bool value = false;
};

}  // namespace diagnostic

namespace detail {

// The first field position where C's fields differ from R's first N fields (N if none).
template <class C, class R, std::size_t N>
constexpr std::size_t first_count_field_mismatch() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t pos = N;
    (
        [&] {
          using F = typename C::template field_at<I>;
          using G = typename R::template field_at<I>;
          if (pos == N && !(F::name == G::name && std::is_same_v<typename F::type, typename G::type>)) pos = I;
        }(),
        ...);
    return pos;
  }(std::make_index_sequence<N>{});
}

}  // namespace detail

// Value marker of a declared count keyspace: the number of records of Counted grouped by its
// first N fields. See the top of this file.
template <class Counted, std::size_t N>
struct count_of {
  using keyschema_value_type = std::int64_t;  // the keyspace's value_type
  using counted_keyspace = Counted;
  static constexpr std::size_t group_fields = N;

  // The derivation hooks (derivation.hpp).
  using keyschema_derivation = void;
  using source_keyspace = Counted;
  static constexpr bool maintained = true;
  static constexpr std::size_t ops_per_source_write = 1;  // the group's count
  static constexpr std::string_view kind = "a declared count";

  template <class Schema, class C>
  static constexpr bool check() {
    if constexpr (!detail::is_keyspace<Counted>::value || !Schema::template contains<Counted>) {
      return diagnostic::count_of_foreign_keyspace<C::name_string, C::name_string>::value;
    } else if constexpr (N > Counted::field_count || C::field_count != N) {
      return diagnostic::count_of_field_count<C::name_string, Counted::name_string, N>::value;
    } else if constexpr (detail::first_count_field_mismatch<C, Counted, N>() != N) {
      return diagnostic::count_of_field_mismatch<C::name_string, Counted::name_string,
                                                 detail::first_count_field_mismatch<C, Counted, N>()>::value;
    } else {
      return true;
    }
  }

  // Writing a count directly does not compile.
  template <class C>
  static constexpr bool refuse_direct_write() {
    static_assert(sizeof(C) == 0,
                  "keyschema::put/erase/add: this keyspace is a declared count (count_of), maintained by the store; "
                  "write the records it counts instead");
    return false;
  }

  // A write that creates a record adds 1 to its group's count, one that erases it subtracts 1.
  template <class C>
  static void on_source_write(derivation_context& cx, const source_write<Counted>& w) {
    const bool existed = w.old_value != nullptr;
    const bool exists = w.new_value != nullptr;
    if (existed != exists) bump<C>(cx, w.record_key, exists ? 1 : -1);
  }
  template <class C>
  static void rebuild(derivation_context& cx, const typename Counted::key_type& k, const typename Counted::value_type&) {
    bump<C>(cx, k, 1);
  }

  // Names the derivation in the schema layout (fingerprint.hpp): "count_of<Counted's name,N>".
  template <class Sink>
  static constexpr void visit_layout(Sink& sink) {
    sink("count_of<");
    sink(Counted::name);
    sink(",");
    sink(std::string_view(digits_.data(), digit_count_));
    sink(">");
  }

 private:
  // Adds d to the count C of the group of record key rk. A count reaching 0 is erased.
  template <class C>
  static void bump(derivation_context& cx, const typename Counted::key_type& rk, std::int64_t d) {
    std::string ck;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      detail::key_codec<C>::encode_prefix(ck, std::get<I>(rk)...);
    }(std::make_index_sequence<N>{});
    std::int64_t n = 0;
    std::string cur;
    if (cx.get(ck, cur)) n = detail::decode_value<C>(ck, cur);
    if (__builtin_add_overflow(n, d, &n))
      throw overflow_error("keyschema: count keyspace '" + std::string(C::name) + "', key " + detail::describe_key(ck) +
                           ": the count overflows std::int64_t; nothing was written");
    if (n == 0) {
      cx.erase(ck);
    } else {
      std::string enc;
      value_traits<std::int64_t>::encode(enc, n);
      cx.put(ck, enc);
    }
  }

  static constexpr std::size_t digit_count_ = [] {
    std::size_t n = 1;
    for (std::size_t v = N; v >= 10; v /= 10) ++n;
    return n;
  }();
  static constexpr std::array<char, digit_count_> digits_ = [] {
    std::array<char, digit_count_> a{};
    std::size_t v = N;
    for (std::size_t i = digit_count_; i-- > 0; v /= 10) a[i] = static_cast<char>('0' + v % 10);
    return a;
  }();
};

namespace detail {

template <class Marker>
struct count_marker : std::false_type {};
template <class Counted, std::size_t N>
struct count_marker<count_of<Counted, N>> : std::true_type {};

// KS is a declared count (its value is count_of<...>).
template <class KS>
inline constexpr bool is_count_keyspace = count_marker<typename KS::value_marker>::value;

}  // namespace detail

KEYSCHEMA_END_NAMESPACE
