// keyschema/detail/codec/codec_composites.hpp: codec specializations for std::optional<T>,
// std::tuple<Ts...> (nested tuple) and keyschema::desc<T>.
// Included by <keyschema/codec.hpp>; do not include directly.
//
// Stateless; thread-safe.
#pragma once

#include <keyschema/detail/codec/codec_core.hpp>
#include <keyschema/detail/codec/decode_in_place.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/tuple_reader.hpp>
#include <keyschema/detail/codec/tuple_skip.hpp>
#include <keyschema/types.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

// std::optional<T>: an empty optional is null (0x00), so it sorts before every value; otherwise
// T's own element. REQUIRES (checked when encoding): T cannot itself encode as null.
template <class T>
  requires key_encodable<T>
struct codec<std::optional<T>> {
  static constexpr std::string_view name = detail::composite_name<"optional<", T>::value;
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::null) | codec_traits<T>::type_codes();
  static void encode(std::string& out, const std::optional<T>& v) {
    static_assert(!codec_traits<T>::type_codes().contains(detail::code::null),
                  "keyschema::codec<std::optional<T>>: T can itself encode as null, so an empty optional "
                  "would be ambiguous; wrap T in a std::tuple");
    if (v)
      codec_traits<T>::encode(out, *v);
    else
      out.push_back('\0');
  }
  static std::optional<T> decode(tuple::reader& in) {
    if (in.next_is_null()) {
      in.take_null();
      return std::nullopt;
    }
    return std::optional<T>(codec_traits<T>::decode(in));
  }
};

namespace detail {
template <class T>
struct is_std_tuple : std::false_type {};
template <class... Ts>
struct is_std_tuple<std::tuple<Ts...>> : std::true_type {};
template <class T>
struct is_desc : std::false_type {};
template <class T>
struct is_desc<desc<T>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// Appends one element of a nested tuple written by encode_element(out) (which appends exactly
// one top-level element): a lone leading 0x00 (null) becomes 0x00 0xff.
template <class F>
inline void append_nested_with(std::string& out, F&& encode_element) {
  const std::size_t start = out.size();
  encode_element(out);
  if (out.size() > start && out[start] == '\0') out.insert(out.begin() + static_cast<std::ptrdiff_t>(start) + 1, '\xff');
}

template <class E>
inline void append_nested_element(std::string& out, const E& e) {
  if constexpr (codec_traits<E>::type_codes().contains(code::null))
    append_nested_with(out, [&e](std::string& o) { codec_traits<E>::encode(o, e); });
  else
    codec_traits<E>::encode(out, e);
}

// Appends a desc element around what encode_element(out) appends (exactly one element):
// 0x40, the complement of those bytes, 0xff (see codec<desc<T>> below).
template <class F>
inline void append_desc_with(std::string& out, F&& encode_element) {
  out.push_back(static_cast<char>(code::desc));
  const std::size_t start = out.size();
  encode_element(out);
  for (std::size_t i = start; i < out.size(); ++i) out[i] = static_cast<char>(~out[i]);
  out.push_back('\xff');
}
}  // namespace detail

// std::tuple<Ts...>: a nested tuple, 0x05 elements 0x00 (null inside is 0x00 0xff).
template <class... Ts>
  requires(key_encodable<Ts> && ...)
struct codec<std::tuple<Ts...>> {
  static constexpr std::string_view name = detail::composite_name<"tuple<", Ts...>::value;
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::nested);
  static void encode(std::string& out, const std::tuple<Ts...>& v) {
    out.push_back(static_cast<char>(detail::code::nested));
    std::apply([&out](const Ts&... e) { (detail::append_nested_element(out, e), ...); }, v);
    out.push_back('\0');
  }
  // Throws decode_error: not a nested tuple, an element of another type, fewer or more elements.
  static std::tuple<Ts...> decode(tuple::reader& in) {
    in.begin_nested();
    std::tuple<Ts...> r = detail::decode_elements<Ts...>(in);  // in order, in place when possible
    in.end_nested();
    return r;
  }
};

// desc<T>: user type code 0x40, the bitwise complement of T's element encoding, then 0xff.
//
// Complementing reverses the order of two encodings that differ at some byte. When one encoding
// is a proper prefix of the other (a string and the same string followed by NULs, a nested tuple
// and the same tuple followed by nulls), the longer one continues with the escape byte 0xff,
// which the complement turns into 0x00; the 0xff terminator then sorts the shorter value after
// the longer one, as descending order requires. The terminator also makes the element
// prefix-free, so whatever follows it in the key cannot disturb the order.
// Result: pack(desc(a)) < pack(desc(b)) exactly when pack(b) < pack(a).
template <class T>
  requires key_encodable<T>
struct codec<desc<T>> {
  static constexpr std::string_view name = detail::composite_name<"desc<", T>::value;
  static constexpr type_code_set type_codes = type_code_set::of(detail::code::desc);
  static void encode(std::string& out, const desc<T>& v) {
    detail::append_desc_with(out, [&v](std::string& o) { codec_traits<T>::encode(o, v.value); });
  }
  // Throws decode_error: not a desc element, T's decoder rejects the (complemented) bytes, or
  // the 0xff terminator is missing.
  static desc<T> decode(tuple::reader& in) {
    if (in.at_end() || in.peek() != detail::code::desc) in.fail_unexpected("desc element (user type code 0x40)");
    in.skip(1);
    const std::string_view rest = in.remaining();
    std::size_t n = rest.size();
    constexpr std::size_t stack_size = 64;
    constexpr type_code_set standard = type_code_set::of(0x00, 0x3f) | type_code_set::of(detail::code::desc);
    if (n > stack_size && (codec_traits<T>::type_codes() & standard) == codec_traits<T>::type_codes())
      n = detail::element_end(rest, 0, 0xff, false, in.offset());  // only the element's own bytes
    char stack[stack_size];
    std::string heap;
    char* buf = stack;
    if (n > stack_size) {
      heap.resize(n);
      buf = heap.data();
    }
    for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<char>(~rest[i]);
    tuple::reader inner(std::string_view(buf, n), in.offset());
    desc<T> r(codec_traits<T>::decode(inner));
    in.skip(inner.offset() - in.offset());
    if (in.at_end() || in.peek() != detail::code::escape) in.fail("expected 0xff terminating the desc element");
    in.skip(1);
    return r;
  }
};

KEYSCHEMA_END_NAMESPACE
