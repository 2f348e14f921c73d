// keyschema/detail/key_codec.hpp: encoding and decoding the keys of one keyspace.
//
// A key is the tuple of the keyspace's segments: literals are appended as their precomputed
// bytes, fields through codec_traits. Prefix encodings (the first k fields plus the literals that
// follow the last of them) are what scans and range erases bound their cursors with.
//
// Thread-safety: stateless.
#pragma once

#include <keyschema/codec.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/tuple.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// Appends one field value as field type T. Arguments whose own codec writes the same encoding
// (a string literal or std::string_view for a std::string field) are written directly, without
// building a T first.
template <class T, class P>
inline void encode_field_as(std::string& out, const P& p) {
  using D = std::remove_cvref_t<P>;
  if constexpr (std::is_same_v<D, T>) {
    codec_traits<T>::encode(out, p);
  } else if constexpr (key_writable<D> && codec_traits<D>::name() == codec_traits<T>::name() &&
                       !std::is_arithmetic_v<D>) {
    codec_traits<D>::encode(out, p);
  } else {
    static_assert(std::is_convertible_v<const P&, T>,
                  "keyschema: a key or bound argument does not convert to its field's type; pass the "
                  "field's type (see keyspace::key_type)");
    codec_traits<T>::encode(out, static_cast<T>(p));
  }
}

template <class KS>
struct key_codec {
  using key_type = typename KS::key_type;
  using segments = typename KS::segments;

  // Appends the whole key.
  static void encode(std::string& out, const key_type& k) {
    encode_segments<KS::segment_count>(out, k, std::make_index_sequence<KS::segment_count>{});
  }

  // Appends the prefix made of the first sizeof...(P) fields, and the literals up to the next
  // field (all remaining segments when every field is given).
  template <class... P>
  static void encode_prefix(std::string& out, const P&... p) {
    static_assert(sizeof...(P) <= KS::field_count);
    constexpr std::size_t n = KS::prefix_segments[sizeof...(P)];
    encode_segments<n>(out, std::forward_as_tuple(p...), std::make_index_sequence<n>{});
  }

  // Decodes key into out. Returns false when the bytes do not have this keyspace's layout (a
  // literal differs, an element has a type code the field cannot have, bytes are left over):
  // such keys belong to another keyspace. Throws decode_error when an element that starts like
  // the field's type is malformed (corruption).
  static bool decode(std::string_view key, key_type& out) {
    tuple::reader r(key);
    return walk_segments(r, out, std::make_index_sequence<KS::segment_count>{}) && r.at_end();
  }

  // The layout check of decode() without building the fields.
  static bool matches(std::string_view key) {
    tuple::reader r(key);
    std::nullptr_t none = nullptr;
    return walk_segments(r, none, std::make_index_sequence<KS::segment_count>{}) && r.at_end();
  }

 private:
  template <std::size_t N, class Args, std::size_t... S>
  static void encode_segments(std::string& out, const Args& args, std::index_sequence<S...>) {
    (encode_segment<S>(out, args), ...);
  }

  template <std::size_t S, class Args>
  static void encode_segment(std::string& out, const Args& args) {
    using seg = std::tuple_element_t<S, segments>;
    if constexpr (is_lit<seg>::value) {
      out.append(seg::encoded);
    } else {
      encode_field_as<typename seg::type>(out, std::get<KS::fields_before[S]>(args));
    }
  }

  // Walks the segments; with Out = key_type decodes each field into it, with Out = std::nullptr_t
  // only checks the layout and skips the fields.
  template <class Out, std::size_t... S>
  static bool walk_segments(tuple::reader& r, Out& out, std::index_sequence<S...>) {
    return (walk_segment<S>(r, out) && ...);
  }

  template <std::size_t S, class Out>
  static bool walk_segment(tuple::reader& r, Out& out) {
    using seg = std::tuple_element_t<S, segments>;
    if constexpr (is_lit<seg>::value) {
      if (!r.remaining().starts_with(seg::encoded)) return false;
      r.skip(seg::encoded.size());
      return true;
    } else {
      using T = typename seg::type;
      if (r.at_end() || !codec_traits<T>::type_codes().contains(r.peek())) return false;
      if constexpr (std::is_same_v<Out, key_type>)
        std::get<KS::fields_before[S]>(out) = codec_traits<T>::decode(r);
      else
        r.skip_element();
      return true;
    }
  }
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
