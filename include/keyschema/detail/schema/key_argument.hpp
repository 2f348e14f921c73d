// keyschema/detail/schema/key_argument.hpp: how a value passed for a key field (a scan prefix value, a
// scan bound, an erase_prefix value, a field of a key given to get/put/erase) is written into the key.
//
// An argument of another type than the field's is accepted only when the bytes written mean the
// same value as in the field, so that prefixes and bounds select exactly the keys a key of that
// value would:
//   - the field's own type, or an encode-only view of it (std::string_view, const char*, a string
//     literal for a std::string field);
//   - an integer (or an unscoped enum) for an integer field, of any width and signedness: it is
//     written as its own value, which orders correctly against every integer of the field (the
//     tuple encoding orders integers by value whatever their width), so .from(300) on a
//     std::uint8_t field selects nothing and .from(-1) on an unsigned field selects everything;
//   - an integer for a float or double field when the floating type holds every value of the
//     integer type exactly, and float for a double field;
//   - a std::chrono duration or time point that converts implicitly to the field's type
//     (std::chrono allows exactly the lossless conversions: seconds -> milliseconds, never
//     nanoseconds -> milliseconds, never another clock);
//   - for desc<T>, std::optional<T> and std::tuple<Ts...> fields: a value accepted for T (or a
//     desc / optional / tuple of such values, std::nullopt for an optional), element by element;
//   - any other type that converts implicitly to the field's type (as keys do), except numbers
//     and std::chrono values, which convert only as above.
// Whole keys given as field values (key_arg, key_arg.hpp: store get/put/erase/contains) follow the
// same rules, except that an integer outside the field's range cannot be a key of the keyspace:
// key_arg throws key_error for it (argument_fits) instead of writing another key.
// Everything else is a compile error at the public entry point (scan, erase_prefix, the bound
// members of scan_view, key_arg's constructor) naming the keyspace, the field, the argument type
// and the field type:
// a lossy conversion (a finer chrono unit, a floating value for an integer field, double for a
// float field, an integer the floating type cannot hold, bool mixed with numbers) or no
// conversion at all. A codec name shared by two types says nothing about their values (a
// duration in ns and one in ms are both "i64" underneath), so names are never compared.
//
// Thread-safety: stateless.
#pragma once

#include <keyschema/codec.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/types.hpp>

#include <chrono>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

enum class arg_kind {
  direct,          // written with the argument's own codec (the field's type, or a view of it)
  own_integer,     // an integer written as its own value
  converted,       // converted implicitly (losslessly) to the field's type, then written
  desc_of,         // a desc element around an accepted argument
  optional_of,     // an optional field: null, or an accepted argument
  tuple_of,        // a nested tuple of accepted arguments
  lossy,           // error: the conversion would change the value
  unrelated,       // error: no conversion
};

constexpr bool arg_ok(arg_kind k) noexcept { return k != arg_kind::lossy && k != arg_kind::unrelated; }

template <class T>
struct is_chrono : std::false_type {};
template <class R, class P>
struct is_chrono<std::chrono::duration<R, P>> : std::true_type {};
template <class C, class D>
struct is_chrono<std::chrono::time_point<C, D>> : std::true_type {};

// Both durations, or both time points of the same clock.
template <class T, class D>
struct same_chrono_kind : std::false_type {};
template <class R1, class P1, class R2, class P2>
struct same_chrono_kind<std::chrono::duration<R1, P1>, std::chrono::duration<R2, P2>> : std::true_type {};
template <class C, class D1, class D2>
struct same_chrono_kind<std::chrono::time_point<C, D1>, std::chrono::time_point<C, D2>> : std::true_type {};

template <class D>
concept string_view_like = std::is_same_v<D, std::string_view> || std::is_same_v<D, const char*> ||
                           std::is_same_v<D, char*> || (std::is_array_v<D> && std::is_same_v<std::remove_extent_t<D>, char>);

// An integer, or an unscoped enum whose underlying type is one (written as that integer).
template <class D>
concept integer_like = tuple_integer<D> || (std::is_enum_v<D> && std::is_convertible_v<D, int> &&
                                            tuple_integer<std::underlying_type_t<D>>);

template <class T, class D>
constexpr arg_kind arg_kind_of();

template <class T, class D, std::size_t... I>
constexpr bool tuple_args_ok(std::index_sequence<I...>) {
  return (arg_ok(arg_kind_of<std::tuple_element_t<I, T>, std::tuple_element_t<I, D>>()) && ...);
}
template <class T, class D, std::size_t... I>
constexpr bool tuple_args_any_lossy(std::index_sequence<I...>) {
  return ((arg_kind_of<std::tuple_element_t<I, T>, std::tuple_element_t<I, D>>() == arg_kind::lossy) || ...);
}

// How an argument of type D is written for a field of type T (see the top of this file).
// D is cv-unqualified and not a reference.
template <class T, class D>
constexpr arg_kind arg_kind_of() {
  if constexpr (std::is_same_v<D, T>) {
    return arg_kind::direct;
  } else if constexpr (std::is_same_v<T, std::string> && string_view_like<D>) {
    return arg_kind::direct;
  } else if constexpr (is_desc<T>::value) {
    using U = decltype(T::value);
    if constexpr (is_desc<D>::value) {
      constexpr arg_kind k = arg_kind_of<U, decltype(D::value)>();
      return arg_ok(k) ? arg_kind::desc_of : k;
    } else {
      constexpr arg_kind k = arg_kind_of<U, D>();
      return arg_ok(k) ? arg_kind::desc_of : k;
    }
  } else if constexpr (is_optional<T>::value) {
    using U = typename T::value_type;
    if constexpr (std::is_same_v<D, std::nullopt_t>) {
      return arg_kind::optional_of;
    } else if constexpr (is_optional<D>::value) {
      constexpr arg_kind k = arg_kind_of<U, typename D::value_type>();
      return arg_ok(k) ? arg_kind::optional_of : k;
    } else {
      constexpr arg_kind k = arg_kind_of<U, D>();
      return arg_ok(k) ? arg_kind::optional_of : k;
    }
  } else if constexpr (is_std_tuple<T>::value && is_std_tuple<D>::value) {
    if constexpr (std::tuple_size_v<T> != std::tuple_size_v<D>) {
      return arg_kind::unrelated;
    } else if constexpr (tuple_args_ok<T, D>(std::make_index_sequence<std::tuple_size_v<T>>{})) {
      return arg_kind::tuple_of;
    } else {
      return tuple_args_any_lossy<T, D>(std::make_index_sequence<std::tuple_size_v<T>>{}) ? arg_kind::lossy
                                                                                          : arg_kind::unrelated;
    }
  } else if constexpr (tuple_integer<T> && integer_like<D>) {
    return arg_kind::own_integer;
  } else if constexpr (std::is_arithmetic_v<T> && std::is_arithmetic_v<D>) {
    if constexpr (std::is_floating_point_v<T> && tuple_integer<D>)
      return std::numeric_limits<D>::digits <= std::numeric_limits<T>::digits ? arg_kind::converted : arg_kind::lossy;
    else if constexpr (std::is_same_v<T, double> && std::is_same_v<D, float>)
      return arg_kind::converted;
    else
      return arg_kind::lossy;  // floating -> integer, double -> float, bool <-> numbers, char types
  } else if constexpr (is_chrono<T>::value && is_chrono<D>::value) {
    if constexpr (std::is_convertible_v<const D&, T>)
      return arg_kind::converted;
    else if constexpr (same_chrono_kind<T, D>::value)
      return arg_kind::lossy;  // a finer unit, or a floating representation
    else
      return arg_kind::unrelated;  // another clock, a duration for a time point, ...
  } else if constexpr (std::is_convertible_v<const D&, T> && !std::is_arithmetic_v<D> && !is_chrono<D>::value) {
    return arg_kind::converted;
  } else {
    return arg_kind::unrelated;
  }
}

// Appends the argument p for a field of type T. REQUIRES: arg_ok(arg_kind_of<T, D>()) (checked at
// the public entry point with check_field_argument).
template <class T, class D>
inline void encode_argument(std::string& out, const D& p) {
  constexpr arg_kind k = arg_kind_of<T, D>();
  if constexpr (k == arg_kind::direct) {
    codec_traits<D>::encode(out, p);
  } else if constexpr (k == arg_kind::own_integer) {
    if constexpr (std::is_enum_v<D>)
      codec_traits<std::underlying_type_t<D>>::encode(out, static_cast<std::underlying_type_t<D>>(p));
    else
      codec_traits<D>::encode(out, p);
  } else if constexpr (k == arg_kind::converted) {
    const T v = p;  // implicit: lossless by construction
    codec_traits<T>::encode(out, v);
  } else if constexpr (k == arg_kind::desc_of) {
    using U = decltype(T::value);
    append_desc_with(out, [&p](std::string& o) {
      if constexpr (is_desc<D>::value)
        encode_argument<U>(o, p.value);
      else
        encode_argument<U>(o, p);
    });
  } else if constexpr (k == arg_kind::optional_of) {
    using U = typename T::value_type;
    if constexpr (std::is_same_v<D, std::nullopt_t>) {
      out.push_back('\0');
    } else if constexpr (is_optional<D>::value) {
      if (p)
        encode_argument<U>(out, *p);
      else
        out.push_back('\0');
    } else {
      encode_argument<U>(out, p);
    }
  } else if constexpr (k == arg_kind::tuple_of) {
    out.push_back(static_cast<char>(code::nested));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (append_nested_with(out, [&p](std::string& o) { encode_argument<std::tuple_element_t<I, T>>(o, std::get<I>(p)); }),
       ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
    out.push_back('\0');
  } else {
    static_assert(arg_ok(k), "keyschema: a key argument does not convert to its field's type");
  }
}

}  // namespace detail

namespace diagnostic {

template <class T>
inline constexpr bool always_false_type = false;

template <fixed_string Keyspace, fixed_string Field, class Argument, class FieldType>
struct lossy_key_argument {
  static_assert(always_false_type<Argument>,
                "keyschema::scan: a prefix or bound value for a key field (see Keyspace, Field, Argument and "
                "FieldType in this instantiation) would be converted lossily (a finer std::chrono unit such as "
                "system_clock::now() for a millisecond field, a floating value for an integer field, double for "
                "float, an integer the floating type cannot hold exactly, or bool mixed with numbers); convert it "
                "explicitly to the field's type first: std::chrono::floor/ceil/round/time_point_cast for times");
  static constexpr bool value = false;
};

template <fixed_string Keyspace, fixed_string Field, class Argument, class FieldType>
struct unconvertible_key_argument {
  static_assert(always_false_type<Argument>,
                "keyschema::scan: a prefix or bound value for a key field (see Keyspace, Field, Argument and "
                "FieldType in this instantiation) does not convert to the field's type (another clock, a bare "
                "count for a std::chrono field, an unrelated type); pass a value of the field's type (see "
                "keyspace::key_type)");
  static constexpr bool value = false;
};

template <fixed_string Keyspace, fixed_string Field, class Argument, class FieldType>
struct lossy_key_value {
  static_assert(always_false_type<Argument>,
                "keyschema::key_arg: a value given for a key field (see Keyspace, Field, Argument and FieldType in "
                "this instantiation) would be converted lossily (a finer std::chrono unit such as "
                "system_clock::now() for a millisecond field, a floating value for an integer field, double for "
                "float, an integer the floating type cannot hold exactly, or bool mixed with numbers); convert it "
                "explicitly to the field's type first: std::chrono::floor/ceil/round/time_point_cast for times");
  static constexpr bool value = false;
};

template <fixed_string Keyspace, fixed_string Field, class Argument, class FieldType>
struct unconvertible_key_value {
  static_assert(always_false_type<Argument>,
                "keyschema::key_arg: a value given for a key field (see Keyspace, Field, Argument and FieldType in "
                "this instantiation) does not convert to the field's type (another clock, a bare count for a "
                "std::chrono field, an unrelated type); pass a value of the field's type (see keyspace::key_type)");
  static constexpr bool value = false;
};

}  // namespace diagnostic

namespace detail {

// What a field argument is for: a scan prefix or bound, or a whole key (store get/put/...).
enum class arg_use { scan, key };

// True when an argument of type P may be written for field I of keyspace KS; otherwise
// instantiates the diagnostic of Use naming the keyspace, the field and both types. Call it in a
// static_assert at the public entry point.
template <class KS, std::size_t I, class P, arg_use Use = arg_use::scan>
constexpr bool check_field_argument() {
  using F = typename KS::template field_at<I>;
  using T = typename F::type;
  using D = std::remove_cvref_t<P>;
  constexpr arg_kind k = arg_kind_of<T, D>();
  if constexpr (k == arg_kind::lossy) {
    if constexpr (Use == arg_use::key)
      return diagnostic::lossy_key_value<KS::name_string, F::name_string, D, T>::value;
    else
      return diagnostic::lossy_key_argument<KS::name_string, F::name_string, D, T>::value;
  } else if constexpr (k == arg_kind::unrelated) {
    if constexpr (Use == arg_use::key)
      return diagnostic::unconvertible_key_value<KS::name_string, F::name_string, D, T>::value;
    else
      return diagnostic::unconvertible_key_argument<KS::name_string, F::name_string, D, T>::value;
  } else {
    return true;
  }
}

// Whether the value p for a field of type T is one the field can hold: false only for an integer
// (arg_kind::own_integer, also inside desc/optional/tuple) outside T's range. Every other
// accepted argument converts losslessly by construction.
template <class T, class D>
constexpr bool argument_fits(const D& p) noexcept {
  constexpr arg_kind k = arg_kind_of<T, D>();
  if constexpr (k == arg_kind::own_integer) {
    if constexpr (std::is_enum_v<D>)
      return std::in_range<T>(static_cast<std::underlying_type_t<D>>(p));
    else
      return std::in_range<T>(p);
  } else if constexpr (k == arg_kind::desc_of) {
    using U = decltype(T::value);
    if constexpr (is_desc<D>::value)
      return argument_fits<U>(p.value);
    else
      return argument_fits<U>(p);
  } else if constexpr (k == arg_kind::optional_of) {
    using U = typename T::value_type;
    if constexpr (std::is_same_v<D, std::nullopt_t>)
      return true;
    else if constexpr (is_optional<D>::value)
      return !p || argument_fits<U>(*p);
    else
      return argument_fits<U>(p);
  } else if constexpr (k == arg_kind::tuple_of) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (argument_fits<std::tuple_element_t<I, T>>(std::get<I>(p)) && ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else {
    return true;
  }
}

// check_field_argument for prefix values P... given for the first fields of KS.
template <class KS, class... P>
constexpr bool check_prefix_arguments() {
  if constexpr (sizeof...(P) > KS::field_count) {
    return true;  // reported by the caller's own static_assert
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (check_field_argument<KS, I, P>() && ...);
    }(std::index_sequence_for<P...>{});
  }
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
