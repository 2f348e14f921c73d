// keyschema/key_arg.hpp: key_arg<KS>, a key of keyspace KS as the store's point operations take it.
//
// get, contains, put and erase (of store, store_batch, store_transaction and store_snapshot) take
// their key as a key_arg<KS>, which is built implicitly from
//   - the typed key itself, a KS::key_type (std::tuple of the field types):
//       db.get<orders>(key);
//   - the values of every field, in order, in braces (or one value for a one-field keyspace):
//       db.put<orders>({"eu-west", 42}, v);     db.get<queue_depth>("q-7");
//     each converted exactly as a scan prefix or bound is (detail/schema/key_argument.hpp):
//     lossless conversions only (seconds -> milliseconds, "text" -> std::string, any integer for
//     an integer field), anything lossy or unrelated a compile error naming the keyspace and the
//     field ("keyschema::key_arg: a value given for a key field ..."); nested braces give a field
//     of tuple type its elements: {{1, 2}, "x"};
//   - a std::tuple of such values (std::make_tuple(region, id));
//   - {} for a keyspace without fields.
// Without key_arg, std::tuple's converting constructor would turn {"q", 300} into the key
// ("q", 44) of a std::uint8_t field and {"q", -1} into ("q", 4294967295) of a std::uint32_t one:
// a put under another key, a get of another entry, without any error. An integer outside its
// field's range cannot be a key of the keyspace, so key_arg refuses it at run time instead:
// key_error naming the keyspace, the field, the value and the range, before anything is read or
// written.
//
// Lifetime: a key_arg refers to the values it was built from (no copy). It is meant as a
// parameter: build it in the call. REQUIRES: the values outlive the key_arg.
// Thread-safety: a key_arg is immutable; encoding it only reads the values it refers to.
#pragma once

#include <keyschema/detail/codec/direct_write.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_argument.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/error.hpp>

#include <array>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// check_field_argument (for keys) of values A... given for every field of KS.
template <class KS, class... A>
constexpr bool check_key_arguments() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return (check_field_argument<KS, I, A, arg_use::key>() && ...);
  }(std::index_sequence_for<A...>{});
}

// key_arg's storage and constructors; Key is KS::key_type = std::tuple<T...>. The constructor
// taking exactly the field types (not a template) is what lets nested braces initialize a field
// of tuple type; the template takes every other accepted type without a conversion first.
template <class KS, class Key>
class key_arg_fields;

template <class KS, class... T>
class key_arg_fields<KS, std::tuple<T...>> {
  static constexpr std::size_t n = sizeof...(T);

 public:
  // The typed key.
  key_arg_fields(const std::tuple<T...>& key) noexcept : write_(&write_key), key_(std::addressof(key)) {}

  // One value per field, of the fields' own types ({} for a keyspace without fields).
  key_arg_fields(const T&... v) noexcept : write_(&write_values<T...>), values_{std::addressof(v)...} {}

  // One value per field, each of a type accepted for its field.
  template <class... A>
    requires(sizeof...(A) == n && n > 0)
  key_arg_fields(const A&... v) noexcept : write_(&write_values<A...>), values_{values_of(v)...} {
    static_assert(check_key_arguments<KS, A...>(),
                  "keyschema::key_arg: a key field value does not convert to its field's type; the error "
                  "above names the keyspace, the field and both types");
  }

  // A std::tuple of such values.
  template <class... A>
    requires(sizeof...(A) == n && n > 0 && !std::is_same_v<std::tuple<A...>, std::tuple<T...>>)
  key_arg_fields(const std::tuple<A...>& t) noexcept : write_(&write_values<A...>) {
    static_assert(check_key_arguments<KS, A...>(),
                  "keyschema::key_arg: a key field value does not convert to its field's type; the error "
                  "above names the keyspace, the field and both types");
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((values_[I] = values_of(std::get<I>(t))), ...);
    }(std::make_index_sequence<n>{});
  }

  // Appends the encoded key to out.
  // Errors: key_error when an integer does not fit its field (out is unchanged then).
  void encode(std::string& out) const {
    key_buffer buf;
    key_codec<KS>::append_written(out, buf, write_(*this, &out, buf));
  }

  // The encoded key, for a read that only looks it up: written into buf when it is the usual key
  // (literals, integers and plain text, at most direct_room bytes), else into the calling
  // thread's read_spill() (key_codec.hpp). The view is valid until buf changes or the thread
  // encodes its next such key.
  // Errors: as encode().
  std::string_view encoded(key_buffer& buf) const { return write_(*this, nullptr, buf); }

 private:
  template <class A>
  static const void* values_of(const A& v) noexcept {
    return static_cast<const void*>(std::addressof(v));
  }

  // The key into buf, or appended to *out or the read spill (key_codec::write_key); key_error
  // before anything is written when a value does not fit its field.
  static std::string_view write_key(const key_arg_fields& self, std::string* out, key_buffer& buf) {
    return key_codec<KS>::write_key(out, buf, *static_cast<const std::tuple<T...>*>(self.key_));
  }

  template <class... A>
  static std::string_view write_values(const key_arg_fields& self, std::string* out, key_buffer& buf) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      (check_fits<I>(*static_cast<const A*>(self.values_[I])), ...);
      return key_codec<KS>::write_prefix(out, buf, *static_cast<const A*>(self.values_[I])...);
    }(std::index_sequence_for<A...>{});
  }

  template <std::size_t I, class A>
  static void check_fits(const A& v) {
    using F = typename KS::template field_at<I>;
    using U = typename F::type;
    if (argument_fits<U>(v)) return;
    std::string what = "keyschema::key_arg: keyspace '" + std::string(KS::name) + "', field '" + std::string(F::name) + "': ";
    if constexpr (tuple_integer<U> && integer_like<A>) {
      std::string value;
      if constexpr (std::is_enum_v<A>)
        value = std::to_string(static_cast<std::underlying_type_t<A>>(v));
      else
        value = std::to_string(v);
      what += "the value " + value + " is outside the field's range [" +
              std::to_string(std::numeric_limits<U>::min()) + ", " + std::to_string(std::numeric_limits<U>::max()) + "]";
    } else {
      what += "an integer inside the value is outside the range of its element's type";
    }
    throw key_error(what + ", so no key of the keyspace holds it; nothing was read or written");
  }

  std::string_view (*write_)(const key_arg_fields&, std::string*, key_buffer&);
  const void* key_ = nullptr;
  std::array<const void*, n> values_{};
};

}  // namespace detail

// A key of keyspace KS: the typed key, or its field values (see the top of this file).
template <class KS>
class key_arg : public detail::key_arg_fields<KS, typename KS::key_type> {
 public:
  using detail::key_arg_fields<KS, typename KS::key_type>::key_arg_fields;
};

KEYSCHEMA_END_NAMESPACE
