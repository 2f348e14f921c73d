// keyschema/sum.hpp: declared sums: the total of a number over a record keyspace's records.
//
// A keyspace whose value is sum_of<Record, Projection, N[, Version]> holds, per distinct value of
// the first N fields of Record's keys, the sum of Projection{}(key, value) over Record's records
// with those fields; its fields must be exactly Record's first N fields (same names, same types,
// same order), as a declared count's (count_of, counters.hpp):
//   struct payload_bytes {  // a message's size in bytes
//     std::int64_t operator()(const message::key_type&, const message::value_type& v) const { return v.size(); }
//   };
//   using queue_bytes = ks::keyspace<"queue_bytes", ks::sum_of<message, payload_bytes, 1>, ks::lit<"QUEUE_BYTES">,
//       ks::field<"destination", std::string>>;
// Projection is a default-constructible callable taking (const Record::key_type&, const
// Record::value_type&) and returning an integer (converted to std::int64_t; an unsigned result
// above INT64_MAX is an overflow_error). keyschema::sum_value sums the value itself (an integer
// value type), keyschema::sum_element<I> the value's element I (a std::tuple value).
// Its value_type is std::int64_t. The store maintains it, in the same atomic write as the
// record: a put of a new record adds its number, an overwrite adds the new number minus the old
// one, an erase subtracts it (single ops, batches, transactions, store::write, erase_range /
// erase_prefix chunks, sweeps, commit_prepared, the cascades of owned keyspaces). A sum that
// reaches 0 is erased: get returns std::nullopt (read it with value_or(0)). Writing a sum
// keyspace directly does not compile ("maintained by the store"); a raw write_batch given to
// store::write that writes one of its keys is refused (key_error naming the keyspace).
// Version (default 1) names the projection in the schema layout ("sum_of<message,1>",
// "sum_of<message,1,v2>"): bump it whenever Projection's result changes, so that a database
// summed by the old one is refused on open and rebuilt by ks::migrate, which derives every sum
// of the new schema from the migrated records.
//
// Errors of a write of a record of Record: overflow_error when a sum, or the difference of an
// overwrite, does not fit std::int64_t (names the keyspace and the key; nothing of that write is
// written); decode_error when a stored record's value does not decode; what Projection throws.
// A schema whose sum does not match its record keyspace, or whose Projection cannot be called
// as above, does not compile ("keyschema::sum_of: ...", naming the keyspaces).
// Cost: a write of a record reads the record's old value and the group's sum (two point reads).
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
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

// Projections for sum_of: the value itself (an integer value type), or its element I.
struct sum_value {
  template <class K, class V>
  constexpr auto operator()(const K&, const V& v) const noexcept {
    return v;
  }
};
template <std::size_t I>
struct sum_element {
  template <class K, class V>
  constexpr auto operator()(const K&, const V& v) const noexcept {
    return std::get<I>(v);
  }
};

namespace diagnostic {

template <fixed_string Sum>
struct sum_of_foreign_keyspace {
  static_assert(always_false<Sum.size()>,
                "keyschema::sum_of: the keyspace a sum adds up is not part of the schema (see Sum in this "
                "instantiation); add it to the keyschema::schema<...>");
  static constexpr bool value = false;
};

template <fixed_string Sum, fixed_string Record, std::size_t Field>
struct sum_of_field_mismatch {
  static_assert(always_false<Field>,
                "keyschema::sum_of: the sum keyspace's fields are not exactly the record keyspace's first N fields "
                "(see Sum, Record and Field, the 0-based position of the first that differs in name or type, or N when "
                "the counts differ, in this instantiation); declare the sum's fields as the record's first N fields");
  static constexpr bool value = false;
};

template <fixed_string Sum, fixed_string Record>
struct sum_of_cannot_project {
  static_assert(always_false<Sum.size()>,
                "keyschema::sum_of: Projection cannot give the number to sum (see Sum and Record in this "
                "instantiation): it must be default-constructible and callable as projection(const "
                "Record::key_type&, const Record::value_type&) returning an integer type (not bool); fix its signature, "
                "or use keyschema::sum_value / keyschema::sum_element<I>");
  static constexpr bool value = false;
};

}  // namespace diagnostic

namespace detail {

// The first position where D's N fields differ from R's first N fields (N if none; a field
// count other than N also differs, at N).
template <class D, class R, std::size_t N>
constexpr std::size_t first_sum_field_mismatch() {
  if constexpr (D::field_count != N || R::field_count < N) {
    return N;
  } else {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      std::size_t pos = N + 1;
      (
          [&] {
            using F = typename D::template field_at<I>;
            using G = typename R::template field_at<I>;
            if (pos == N + 1 && !(F::name == G::name && std::is_same_v<typename F::type, typename G::type>)) pos = I;
          }(),
          ...);
      return pos;
    }(std::make_index_sequence<N>{});
  }
}

template <class P, class R>
constexpr bool projects() {
  if constexpr (!std::is_default_constructible_v<P> ||
                !std::is_invocable_v<const P&, const typename R::key_type&, const typename R::value_type&>) {
    return false;
  } else {
    using T = std::remove_cvref_t<
        std::invoke_result_t<const P&, const typename R::key_type&, const typename R::value_type&>>;
    return std::integral<T> && !std::same_as<T, bool>;
  }
}

}  // namespace detail

// Value marker of a declared sum keyspace. See the top of this file. REQUIRES (compile time):
// Version >= 1.
template <class Record, class Projection, std::size_t N, std::size_t Version = 1>
struct sum_of {
  static_assert(Version >= 1,
                "keyschema::sum_of: Version must be at least 1; the first projection is 1 (the default), bump it when "
                "Projection's result changes");
  using keyschema_derivation = void;
  using keyschema_value_type = std::int64_t;
  using source_keyspace = Record;
  static constexpr bool maintained = true;
  static constexpr std::size_t ops_per_source_write = 1;  // the group's sum
  static constexpr std::string_view kind = "a declared sum";

  // Writing a sum directly does not compile.
  template <class D>
  static constexpr bool refuse_direct_write() {
    static_assert(sizeof(D) == 0,
                  "keyschema::put/erase/add: this keyspace is a declared sum (sum_of), maintained by the store; "
                  "write the records it sums instead");
    return false;
  }

  template <class Schema, class D>
  static constexpr bool check() {
    if constexpr (!detail::is_keyspace<Record>::value || !Schema::template contains<Record>) {
      return diagnostic::sum_of_foreign_keyspace<D::name_string>::value;
    } else if constexpr (detail::first_sum_field_mismatch<D, Record, N>() != N + 1) {
      return diagnostic::sum_of_field_mismatch<D::name_string, Record::name_string,
                                               detail::first_sum_field_mismatch<D, Record, N>()>::value;
    } else if constexpr (!detail::projects<Projection, Record>()) {
      return diagnostic::sum_of_cannot_project<D::name_string, Record::name_string>::value;
    } else {
      return true;
    }
  }

  template <class D>
  static void on_source_write(derivation_context& cx, const source_write<Record>& w) {
    std::int64_t delta = 0;
    if (w.new_value != nullptr) delta = number<D>(w.key, w.record_key, *w.new_value);
    if (w.old_value != nullptr) {
      const std::int64_t old = number<D>(w.key, w.record_key, *w.old_value);
      if (__builtin_sub_overflow(delta, old, &delta)) overflow<D>(w.key);
    }
    if (delta != 0) add<D>(cx, w.record_key, delta);
  }

  template <class D>
  static void rebuild(derivation_context& cx, const typename Record::key_type& k, const typename Record::value_type& v) {
    std::string key;
    detail::key_codec<Record>::encode(key, k);
    add<D>(cx, k, project<D>(key, k, v));
  }

  // Names the derivation in the schema layout: "sum_of<Record's name,N>" (",vV" for Version V > 1).
  template <class Sink>
  static constexpr void visit_layout(Sink& sink) {
    sink("sum_of<");
    sink(Record::name);
    sink(",");
    sink(std::string_view(n_digits_.data(), n_digits_.size()));
    if constexpr (Version != 1) {
      sink(",v");
      sink(std::string_view(v_digits_.data(), v_digits_.size()));
    }
    sink(">");
  }

 private:
  template <class D>
  static std::int64_t number(std::string_view key, const typename Record::key_type& k, std::string_view raw) {
    return project<D>(key, k, detail::decode_value<Record>(key, raw));
  }
  template <class D>
  static std::int64_t project(std::string_view key, const typename Record::key_type& k,
                              const typename Record::value_type& v) {
    const auto x = Projection{}(k, v);
    if constexpr (std::is_unsigned_v<decltype(x)>) {
      if (x > static_cast<std::make_unsigned_t<std::int64_t>>(std::numeric_limits<std::int64_t>::max()))
        overflow<D>(key);
    }
    return static_cast<std::int64_t>(x);
  }
  template <class D>
  static void add(derivation_context& cx, const typename Record::key_type& k, std::int64_t d) {
    std::string sk;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      detail::key_codec<D>::encode_prefix(sk, std::get<I>(k)...);
    }(std::make_index_sequence<N>{});
    std::int64_t n = 0;
    std::string cur;
    if (cx.get(sk, cur)) n = detail::decode_value<D>(sk, cur);
    if (__builtin_add_overflow(n, d, &n)) overflow<D>(sk);
    if (n == 0) {
      cx.erase(sk);
    } else {
      std::string enc;
      value_traits<std::int64_t>::encode(enc, n);
      cx.put(sk, enc);
    }
  }
  template <class D>
  [[noreturn]] static void overflow(std::string_view key) {
    throw overflow_error("keyschema::sum_of: sum keyspace '" + std::string(D::name) + "' of '" +
                         std::string(Record::name) + "', key " + detail::describe_key(key) +
                         ": the sum does not fit std::int64_t; nothing of this write was written");
  }

  template <std::size_t X>
  static constexpr auto digits() {
    constexpr std::size_t count = [] {
      std::size_t c = 1;
      for (std::size_t v = X; v >= 10; v /= 10) ++c;
      return c;
    }();
    std::array<char, count> a{};
    std::size_t v = X;
    for (std::size_t i = count; i-- > 0; v /= 10) a[i] = static_cast<char>('0' + v % 10);
    return a;
  }
  static constexpr auto n_digits_ = digits<N>();
  static constexpr auto v_digits_ = digits<Version>();
};

KEYSCHEMA_END_NAMESPACE
