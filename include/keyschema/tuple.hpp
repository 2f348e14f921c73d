// keyschema/tuple.hpp: packing and unpacking whole keys in the FoundationDB tuple encoding.
//
//   std::string k = keyschema::tuple::pack("DESTINATION", queue, "MESSAGE_METADATA", id);
//   auto [tag, q, kind, n] = keyschema::tuple::unpack<std::string, std::string, std::string, std::uint64_t>(k);
//
// A packed key is the concatenation of its elements' encodings (see keyschema/codec.hpp and
// docs/encoding.md), so the byte order of packed keys is the element-wise order of the values
// and a packed prefix is a byte prefix of every key that extends it.
// For tools without a schema, unpack_dynamic() decodes any standard tuple into elements that
// to_string()/to_json() of <keyschema/tuple_format.hpp> render.
//
// Thread-safety: all functions are reentrant; they only touch their arguments.
#pragma once

#include <keyschema/codec.hpp>
#include <keyschema/detail/codec/decode_in_place.hpp>
#include <keyschema/detail/codec/direct_write.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/tuple_dynamic.hpp>
#include <keyschema/tuple_reader.hpp>
#include <keyschema/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// tuple::unpack of encodable Ts: one named result, built in the caller's object.
template <class... Ts>
std::tuple<Ts...> unpack_whole(std::string_view in) {
  tuple::reader r(in);
  std::tuple<Ts...> result = decode_elements<Ts...>(r);
  if (!r.at_end()) r.fail("trailing bytes");
  return result;
}

// tuple::unpack_prefix of an encodable T. (One function per path, each returning one named
// object: a function holding both moved the result.)
template <class T>
std::pair<T, std::size_t> unpack_first_in_place(std::string_view in) {
  tuple::reader r(in);
  std::pair<T, std::size_t> result;
  decode_in_place(r, result.first);
  result.second = r.offset();
  return result;
}

template <class T>
std::pair<T, std::size_t> unpack_first_moving(std::string_view in) {
  tuple::reader r(in);
  T v = codec_traits<T>::decode(r);
  return {std::move(v), r.offset()};
}

}  // namespace detail

namespace tuple {

// Appends the elements vs... to out, in order. Allocates nothing besides out's growth.
// Throws encode_error if a std::string argument is not valid UTF-8 (or whatever a user
// codec throws); out then holds the elements before the failing one.
// Integers and plain ASCII text are written into a stack buffer and appended to out at once
// (detail/codec/direct_write.hpp); other elements grow out one by one.
template <class... Ts>
void pack_into(std::string& out, const Ts&... vs) {
  static_assert((key_writable<Ts> && ...), KEYSCHEMA_DETAIL_NO_CODEC_MESSAGE);
  if constexpr ((key_writable<Ts> && ...)) {
    if constexpr (sizeof...(Ts) > 0 && (detail::direct_value<Ts> && ...)) {
      if (detail::append_direct(out, vs...)) return;
    }
    (codec_traits<Ts>::encode(out, vs), ...);
  }
}

// Returns the encoding of the tuple (vs...). pack() of nothing is the empty string.
// Throws as pack_into.
template <class... Ts>
std::string pack(const Ts&... vs) {
  static_assert((key_writable<Ts> && ...), KEYSCHEMA_DETAIL_NO_CODEC_MESSAGE);
  std::string out;
  if constexpr ((key_writable<Ts> && ...)) pack_into(out, vs...);
  return out;
}

// Decodes all of `in` as the elements Ts... in order. Decode string elements as std::string.
// An element of a nothrow default-constructible type (neither empty nor const) is default-
// constructed, then destroyed and built from its decoder's result in place (no move); other
// elements are decoded, then moved into the tuple. unpack_prefix does the same.
// Throws decode_error: malformed bytes, an element of another type, a value that does not fit,
// too few elements, or "trailing bytes at byte N" when `in` holds more than Ts....
template <class... Ts>
std::tuple<Ts...> unpack(std::string_view in) {
  static_assert(((key_encodable<Ts> || !key_writable<Ts>) && ...),
                "keyschema::tuple::unpack: this type can be encoded but not decoded; decode string elements "
                "as std::string (not std::string_view, const char* or char arrays)");
  static_assert((key_writable<Ts> && ...), KEYSCHEMA_DETAIL_NO_CODEC_MESSAGE);
  if constexpr ((key_encodable<Ts> && ...)) {
    return detail::unpack_whole<Ts...>(in);  // elements decoded in place (detail/codec/decode_in_place.hpp)
  } else {
    return std::tuple<Ts...>{};
  }
}

// Decodes the first element of `in` as T and returns it with the number of bytes it used.
// Throws decode_error as unpack (trailing bytes are allowed).
template <class T>
std::pair<T, std::size_t> unpack_prefix(std::string_view in) {
  static_assert(key_encodable<T> || !key_writable<T>,
                "keyschema::tuple::unpack_prefix: this type can be encoded but not decoded; decode string "
                "elements as std::string");
  static_assert(key_writable<T>, KEYSCHEMA_DETAIL_NO_CODEC_MESSAGE);
  if constexpr (key_encodable<T>) {
    if constexpr (detail::decodable_in_place<T>)
      return detail::unpack_first_in_place<T>(in);
    else
      return detail::unpack_first_moving<T>(in);
  } else {
    return {T{}, 0};
  }
}

}  // namespace tuple
KEYSCHEMA_END_NAMESPACE
