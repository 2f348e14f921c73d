// keyschema/detail/codec/codec_core.hpp: the codec<T> primary template, codec_traits<T> and the
// key_encodable / key_writable concepts, without any specialization. Public through
// <keyschema/codec.hpp>, which documents them; the specializations (detail/codec/codec_scalars.hpp,
// detail/codec/codec_composites.hpp) build on this header, so nothing includes codec.hpp back.
//
// Thread-safety: codecs are stateless; every function here may be called concurrently.
#pragma once

#include <keyschema/type_code_set.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/tuple_reader.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/types.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

// Primary template: no codec. Specialize it (see above) to make T usable in keys.
template <class T>
struct codec {
  using not_specialized = void;
};

namespace detail {

template <class T>
concept codec_declared = !requires { typename codec<T>::not_specialized; };

template <class T>
concept full_encoder = codec_declared<T> && requires(std::string& out, const T& v) {
  codec<T>::encode(out, v);
  { codec<T>::name } -> std::convertible_to<std::string_view>;
};

template <class T>
concept full_codec = full_encoder<T> && requires(tuple::reader& in) {
  { codec<T>::decode(in) } -> std::same_as<T>;
};

template <class T>
concept mapped_codec = codec_declared<T> && !full_encoder<T> && requires(const T& v) {
  typename codec<T>::repr;
  { codec<T>::to_repr(v) } -> std::convertible_to<typename codec<T>::repr>;
  { codec<T>::from_repr(std::declval<typename codec<T>::repr>()) } -> std::convertible_to<T>;
};

template <class T>
concept codec_has_name = requires {
  { codec<T>::name } -> std::convertible_to<std::string_view>;
};

template <class T>
concept codec_has_type_codes = requires {
  { codec<T>::type_codes } -> std::convertible_to<type_code_set>;
};

template <class T>
constexpr bool is_key_encodable() {
  if constexpr (full_codec<T>)
    return true;
  else if constexpr (mapped_codec<T>)
    return is_key_encodable<typename codec<T>::repr>();
  else
    return false;
}

template <class T>
constexpr bool is_key_writable() {
  if constexpr (full_encoder<T>)
    return true;
  else
    return is_key_encodable<T>();
}

}  // namespace detail

// T can be written into and read back from a key (a usable full or mapped codec exists).
// T is a cv-unqualified non-reference type.
template <class T>
concept key_encodable = detail::is_key_encodable<T>();

// T can be written into a key: key_encodable<T>, or an encode-only type such as
// std::string_view, const char* or a char array (which decode as std::string).
template <class T>
concept key_writable = detail::is_key_writable<T>();

#define KEYSCHEMA_DETAIL_NO_CODEC_MESSAGE                                                              \
  "keyschema::codec: no codec for this type; specialize keyschema::codec<T> (mapped: repr/to_repr/" \
  "from_repr, or full: encode/decode/name)"

// Uniform access to codec<T>, whatever its form.
// REQUIRES: key_writable<T> (checked with a static_assert); decode() also needs key_encodable<T>.
template <class T>
struct codec_traits {
  static_assert(key_writable<T>, KEYSCHEMA_DETAIL_NO_CODEC_MESSAGE);

  // Appends exactly one element encoding v to out. Never shrinks out; on an exception out may
  // hold a partial element (the string codec restores it).
  // Throws whatever the codec throws (std::string: encode_error on invalid UTF-8).
  static void encode(std::string& out, const T& v) {
    if constexpr (detail::full_encoder<T>)
      codec<T>::encode(out, v);
    else if constexpr (detail::mapped_codec<T>)
      codec_traits<typename codec<T>::repr>::encode(out, codec<T>::to_repr(v));
  }

  // Consumes exactly one element from in and returns it.
  // Throws decode_error: malformed bytes, another type, a value that does not fit T, or a value
  // the mapped codec's from_repr rejects.
  // (For array types, which cannot be returned, the declared result is std::string; decoding them
  // is rejected by the static_assert.)
  static std::conditional_t<std::is_array_v<T>, std::string, T> decode(tuple::reader& in) {
    static_assert(key_encodable<T>,
                  "keyschema::codec_traits<T>::decode: T can be encoded but not decoded; decode string "
                  "elements as std::string (not std::string_view or const char*)");
    if constexpr (detail::full_codec<T>)
      return codec<T>::decode(in);
    else if constexpr (detail::mapped_codec<T>)
      return static_cast<T>(codec<T>::from_repr(codec_traits<typename codec<T>::repr>::decode(in)));
    else
      in.fail("no codec for this type");  // unreachable: the static_assert above fired
  }

  // The codec's identity, used in schema fingerprints: "i64", "u32", "string", "bytes",
  // "double", "bool", "uuid", "null", "tuple<i64,string>", "optional<u64>", "desc<u64>", ...
  // Mapped codecs without their own name report their repr's name.
  static constexpr std::string_view name() {
    if constexpr (detail::codec_has_name<T>)
      return std::string_view(codec<T>::name);
    else if constexpr (detail::mapped_codec<T>)
      return codec_traits<typename codec<T>::repr>::name();
    else
      return std::string_view("?");
  }

  // The set of first bytes an element of T can start with. Full codecs that do not declare
  // type_codes report all 256 (the schema check rejects them as key fields); mapped codecs
  // report their repr's set unless they declare one.
  static constexpr type_code_set type_codes() {
    if constexpr (detail::codec_has_type_codes<T>)
      return type_code_set(codec<T>::type_codes);
    else if constexpr (detail::mapped_codec<T>)
      return codec_traits<typename codec<T>::repr>::type_codes();
    else
      return type_code_set::all();
  }
};

namespace detail {

// "<Prefix><name(T1)>,<name(T2)>...>" as a static constexpr string, e.g. "tuple<i64,string>".
template <fixed_string Prefix, class... Ts>
struct composite_name {
  static constexpr std::size_t size = Prefix.view().size() + (std::size_t{0} + ... + codec_traits<Ts>::name().size()) +
                                      (sizeof...(Ts) > 0 ? sizeof...(Ts) - 1 : 0) + 1;
  static constexpr std::array<char, size> chars = [] {
    std::array<char, size> a{};
    std::size_t i = 0;
    auto put = [&](std::string_view s) {
      for (char c : s) a[i++] = c;
    };
    put(Prefix.view());
    bool first = true;
    ((put(first ? std::string_view() : std::string_view(",")), first = false, put(codec_traits<Ts>::name())), ...);
    put(">");
    return a;
  }();
  static constexpr std::string_view value{chars.data(), size};
};

}  // namespace detail

KEYSCHEMA_END_NAMESPACE
