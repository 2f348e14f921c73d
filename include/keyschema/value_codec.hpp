// keyschema/value_codec.hpp: how stored VALUES (not keys) are written and read.
//
// Values need no order, only a faithful round trip:
//   std::string, keyschema::bytes  raw bytes, no framing, no validation (so code that reads or
//                                  writes the store natively interoperates);
//   std::tuple<Ts...>              the elements packed flat, as keyschema::tuple::pack(e...);
//   any other key_encodable T      one packed element, as keyschema::tuple::pack(v).
// Users specialize value_codec<T> for anything else (e.g. a protobuf message):
//   template <> struct keyschema::value_codec<metadata> {
//     static void encode(std::string& out, const metadata& m);  // appends
//     static metadata decode(std::string_view in);              // the whole stored value; throws decode_error
//     static constexpr std::string_view name = "metadata.v1";   // identity for fingerprints
//     static void decode_into(std::string_view in, metadata& m); // optional: scans and get_into
//   };                                                           // reuse m's storage through it
//
// Thread-safety: value codecs are stateless; all functions may be called concurrently.
#pragma once

#include <keyschema/codec.hpp>
#include <keyschema/detail/codec/string_assign.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/types.hpp>

#include <concepts>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

KEYSCHEMA_BEGIN_NAMESPACE

// Primary template: no value codec.
template <class T>
struct value_codec {
  using not_specialized = void;
};

template <>
struct value_codec<std::string> {
  static constexpr std::string_view name = "raw";
  static void encode(std::string& out, const std::string& v) { out.append(v); }
  static std::string decode(std::string_view in) { return std::string(in); }
};

template <>
struct value_codec<bytes> {
  static constexpr std::string_view name = "raw";
  static void encode(std::string& out, const bytes& v) { out.append(v.view()); }
  static bytes decode(std::string_view in) { return bytes(in); }
};

template <class... Ts>
  requires(key_encodable<Ts> && ...)
struct value_codec<std::tuple<Ts...>> {
  static constexpr std::string_view name = detail::composite_name<"packed<", Ts...>::value;
  static void encode(std::string& out, const std::tuple<Ts...>& v) {
    std::apply([&out](const Ts&... e) { tuple::pack_into(out, e...); }, v);
  }
  // Throws decode_error: see tuple::unpack.
  static std::tuple<Ts...> decode(std::string_view in) { return tuple::unpack<Ts...>(in); }
};

template <class T>
  requires(key_encodable<T> && !std::same_as<T, std::string> && !std::same_as<T, bytes> && !detail::is_std_tuple<T>::value)
struct value_codec<T> {
  static constexpr std::string_view name = detail::composite_name<"packed<", T>::value;
  static void encode(std::string& out, const T& v) { codec_traits<T>::encode(out, v); }
  // Throws decode_error: see tuple::unpack.
  static T decode(std::string_view in) { return std::get<0>(tuple::unpack<T>(in)); }
};

// T can be stored as a value (value_codec<T> is usable).
template <class T>
concept value_encodable = !requires { typename value_codec<T>::not_specialized; } &&
                          requires(std::string& out, const T& v, std::string_view in) {
                            value_codec<T>::encode(out, v);
                            { value_codec<T>::decode(in) } -> std::same_as<T>;
                            { value_codec<T>::name } -> std::convertible_to<std::string_view>;
                          };

// Uniform access to value_codec<T>. REQUIRES: value_encodable<T> (static_assert).
template <class T>
struct value_traits {
  static_assert(value_encodable<T>,
                "keyschema::value_codec: no value codec for this type; specialize keyschema::value_codec<T> "
                "(encode/decode/name) or make T key_encodable");

  // Appends the encoding of v to out.
  static void encode(std::string& out, const T& v) {
    if constexpr (value_encodable<T>) value_codec<T>::encode(out, v);
  }
  // Decodes a whole stored value. Throws decode_error (or what a user codec throws).
  static T decode(std::string_view in) {
    if constexpr (value_encodable<T>)
      return value_codec<T>::decode(in);
    else
      throw decode_error("no value codec");
  }
  // Decodes a whole stored value into out: std::string and bytes are assigned (reusing the
  // storage out holds), a codec with `static void decode_into(std::string_view, T&)` is called,
  // any other value is decoded and move-assigned. Throws as decode(); out is then unspecified.
  static void decode_into(std::string_view in, T& out) {
    if constexpr (std::is_same_v<T, std::string>)
      detail::assign_reusing(out, in);
    else if constexpr (std::is_same_v<T, bytes>)
      out.assign(in);
    else if constexpr (requires { value_codec<T>::decode_into(in, out); })
      value_codec<T>::decode_into(in, out);
    else
      out = decode(in);
  }

  // The value codec's identity, e.g. "raw", "packed<u64>", "packed<i64,string>".
  static constexpr std::string_view name() {
    if constexpr (value_encodable<T>)
      return std::string_view(value_codec<T>::name);
    else
      return std::string_view("?");
  }
};

KEYSCHEMA_END_NAMESPACE
