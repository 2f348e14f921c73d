// keyschema/detail/codec/decode_in_place.hpp: decoding a tuple's elements without moving them,
// for tuple::unpack, tuple::unpack_prefix and the nested tuple's codec.
//
// A decoder returns its value (codec_traits<T>::decode). Put into a std::tuple by the tuple's
// own constructor, that value is built, then moved into the element: for a std::string one more
// copy of its bytes (short strings live inside the object). Here the tuple is default-
// constructed and each element in turn is destroyed and rebuilt directly from its decoder's
// result (guaranteed copy elision: no move), in wire order. std::tuple's constructor cannot be
// used with lazily decoding arguments instead: libstdc++ builds the last element first, and the
// wire must be read from the first.
//
// Stateless; thread-safe.
#pragma once

#include <keyschema/detail/codec/codec_core.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/tuple_reader.hpp>

#include <cstddef>
#include <memory>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// An element that may be rebuilt in place. Not empty types (a tuple may store them as base
// classes, where a new object would not become the element), not const types (get<I> gives no
// mutable element), not types whose default constructor may throw (it puts the element back when
// the decoder throws, so that the tuple's destructor finds a live object).
template <class T>
concept decodable_in_place = std::is_nothrow_default_constructible_v<T> && !std::is_empty_v<T> && !std::is_const_v<T>;

// Replaces element (a default-constructed T) by the next value of r.
// Throws what codec_traits<T>::decode throws; element is then default-constructed again.
template <decodable_in_place T>
void decode_in_place(tuple::reader& r, T& element) {
  std::destroy_at(std::addressof(element));
  try {
    ::new (static_cast<void*>(std::addressof(element))) T(codec_traits<T>::decode(r));  // elided: no move
  } catch (...) {
    ::new (static_cast<void*>(std::addressof(element))) T();
    throw;
  }
}

template <class... Ts, std::size_t... I>
std::tuple<Ts...> decode_elements_in_place(tuple::reader& r, std::index_sequence<I...>) {
  std::tuple<Ts...> result;
  (decode_in_place(r, std::get<I>(result)), ...);  // left to right
  return result;
}

template <class... Ts>
std::tuple<Ts...> decode_elements_moving(tuple::reader& r) {
  std::tuple<Ts...> result{codec_traits<Ts>::decode(r)...};  // braced: evaluated left to right
  return result;
}

// The next sizeof...(Ts) elements of r as Ts..., decoded in order (in place when every Ts is
// decodable_in_place). Throws what their decoders throw.
// (Each path is its own function returning one named tuple: the return value optimization then
// builds it in the caller's object; one function with both paths moved it.)
template <class... Ts>
std::tuple<Ts...> decode_elements(tuple::reader& r) {
  if constexpr ((decodable_in_place<Ts> && ...))
    return decode_elements_in_place<Ts...>(r, std::index_sequence_for<Ts...>{});
  else
    return decode_elements_moving<Ts...>(r);
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
