// keyschema/detail/schema/key_codec.hpp: encoding and decoding the keys of one keyspace.
//
// A key is the tuple of the keyspace's segments: literals are appended as their precomputed
// bytes, fields through codec_traits (prefix values as described in detail/schema/key_argument.hpp).
// Prefix encodings (the first k fields plus the literals that follow the last of them) are what
// scans and range erases bound their cursors with. decode_key/decode_value are what the store's
// reads and the scans decode entries with; describe_key names a key in their decode errors.
//
// Thread-safety: stateless.
#pragma once

#include <keyschema/codec.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/direct_write.hpp>
#include <keyschema/detail/schema/key_argument.hpp>
#include <keyschema/detail/codec/tuple_text.hpp>
#include <keyschema/error.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/value_codec.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// A printable form of a key for error messages: the decoded tuple, or escaped bytes.
template <class = void>
inline std::string describe_key(std::string_view key) {
  try {
    return tuple::to_string(tuple::unpack_dynamic(key));
  } catch (const decode_error&) {
    std::string out;
    append_quoted(out, key, true);  // b"..." with \xNN escapes
    return out;
  }
}

template <class = void>
[[noreturn]] inline void rethrow_in_keyspace(std::string_view keyspace, std::string_view key, const char* part,
                                             const decode_error& e) {
  throw decode_error("keyschema: keyspace '" + std::string(keyspace) + "', key " + describe_key(key) + ": the " +
                     part + " does not decode: " + e.what());
}

// Decodes one element of type T from r into out; std::string and bytes are assigned, so the
// storage out already holds is reused. Throws decode_error as codec_traits<T>::decode.
template <class T>
void decode_field_into(tuple::reader& r, T& out) {
  if constexpr (std::is_same_v<T, std::string> && std::is_same_v<codec<T>, codec<std::string>>) {
    read_text_element_into(r, out);
  } else if constexpr (std::is_same_v<T, bytes>) {
    std::string s = std::move(out).str();  // keeps the storage (moves only)
    read_bytes_element_into(r, s);
    out = bytes(std::move(s));
  } else {
    out = codec_traits<T>::decode(r);
  }
}

// The calling thread's buffer for a key that is only looked up and does not take the direct
// path (key_codec::write_key with no output string: key_arg::encoded), cleared. Its contents stay
// valid until the thread's next such key. Out of line: the usual key never needs it.
[[gnu::noinline]] inline std::string& read_spill() {
  thread_local std::string spill;
  spill.clear();
  return spill;
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

  // As encode() and encode_prefix(), without the copy of the usual key into a string: a key
  // made of literals, integers and plain text (at most direct_room bytes) is written into buf,
  // any other is appended to *out, or, when out is nullptr (a key that is only looked up), to
  // the calling thread's read_spill(). Returns the key: in buf, or the bytes appended; valid
  // until buf or that string changes. A point read looks its key up from there.
  static std::string_view write_key(std::string* out, key_buffer& buf, const key_type& k) {
    return write_segments<KS::segment_count>(out, buf, k, std::make_index_sequence<KS::segment_count>{});
  }
  template <class... P>
  static std::string_view write_prefix(std::string* out, key_buffer& buf, const P&... p) {
    static_assert(sizeof...(P) <= KS::field_count);
    constexpr std::size_t n = KS::prefix_segments[sizeof...(P)];
    return write_segments<n>(out, buf, std::forward_as_tuple(p...), std::make_index_sequence<n>{});
  }

  // What the direct-path functions return for a key or prefix that takes the general path.
  static constexpr std::size_t no_direct = ~std::size_t{0};

  // write_prefix's direct path into the caller's memory (a scan view's bounds, scan.hpp):
  // direct_prefix_bound(p...) is the most bytes write_prefix_at(dest, p...) may touch at dest, or
  // no_direct when the prefix takes the general path (encode_prefix). write_prefix_at writes the
  // prefix at dest and returns its size, or no_direct (dest's bytes unspecified) when text holds
  // a NUL or a byte above 0x7f. The bytes are write_prefix's. write_prefix_at<false> writes
  // values that write_prefix_at<true> wrote before, without checking their text again.
  template <class... P>
  KEYSCHEMA_ALWAYS_INLINE static std::size_t direct_prefix_bound(const P&... p) {
    constexpr std::size_t n = KS::prefix_segments[sizeof...(P)];
    return direct_bound_of(std::forward_as_tuple(p...), std::make_index_sequence<n>{});
  }
  template <bool Checked, class... P>
  KEYSCHEMA_ALWAYS_INLINE static std::size_t write_prefix_at(char* dest, const P&... p) {
    constexpr std::size_t n = KS::prefix_segments[sizeof...(P)];
    return write_direct_at<Checked>(dest, std::forward_as_tuple(p...), std::make_index_sequence<n>{});
  }

  // Appends a key that write_key() or write_prefix() returned to out, unless it is already there.
  static void append_written(std::string& out, const key_buffer& buf, std::string_view written) {
    if (written.data() == buf.data) out.append(written);  // in buf: the direct path
  }

  // Decodes key into out. Returns false when the key belongs to another keyspace, which is
  // exactly when a literal differs or an element starts with a type code the field's type cannot
  // have (what the schema check separates keyspaces by). Every other key is this keyspace's or
  // was written by another program, so it must decode exactly:
  // Throws decode_error naming the keyspace and the key: an element that starts like the field's
  // type is malformed or does not fit it (an integer out of the field's range, of any width),
  // bytes follow the last segment, or the key ends before its last segment, after or inside a
  // literal or after a field (no keyspace of a valid schema has a key that extends another's, or
  // that another extends).
  static bool decode(std::string_view key, key_type& out) {
    try {
      tuple::reader r(key);
      return decode_rest<0>(r, out);
    } catch (const decode_error& e) {
      rethrow_in_keyspace(KS::name, key, "key", e);
    }
  }

  // Decodes the fields of the encoded prefix of the first Segments segments (what
  // encode_prefix wrote) into out; the other fields of out are left alone. Scans fill the
  // fields their prefix fixed once with it. Throws decode_error naming the keyspace.
  template <std::size_t Segments>
  static void decode_prefix(std::string_view prefix, key_type& out) {
    try {
      tuple::reader r(prefix);
      if (!walk_range<0>(r, out, std::make_index_sequence<Segments>{}) || !r.at_end())
        r.fail("the prefix does not decode as the keyspace's first segments");
    } catch (const decode_error& e) {
      rethrow_in_keyspace(KS::name, prefix, "prefix", e);
    }
  }

  // As decode(), for a key known to start with the encoding of the first FirstSegment segments
  // (offset bytes, as a scan's bounds guarantee): decodes only the segments after it, into the
  // fields of out that follow (std::string and bytes fields are assigned, reusing their storage).
  // The fields before are left alone. Returns false and throws decode_error as decode() does.
  // REQUIRES: offset is the length of that encoding (the final integer's 8-byte load relies on
  // it: a key it reads holds offset + 1 bytes or more, and offset counts the literals; see
  // literal_bytes), whatever the key's bytes; key starts with it (else its fields decode wrong).
  template <std::size_t FirstSegment>
  KEYSCHEMA_ALWAYS_INLINE static bool decode_after(std::string_view key, std::size_t offset, key_type& out) {
    if constexpr (ends_with_integer && FirstSegment == KS::segment_count - 1) {
      // Only the final integer is left (a scan of one queue's ids): read it from the key itself;
      // any other key takes the general path, out of the caller's loop.
      // try_read_final_integer reads a key only when it holds offset + 1 bytes or more, and offset
      // counts the literals before the integer: with 7 bytes of them or more, 8 bytes or more.
      constexpr bool long_key = literal_bytes(std::make_index_sequence<FirstSegment>{}) >= 7;
      if (try_read_final_integer<long_key>(key, offset, std::get<KS::fields_before[FirstSegment]>(out))) [[likely]]
        return true;
      return decode_after_cold<FirstSegment>(key, offset, out);
    } else {
      return decode_after_general<FirstSegment>(key, offset, out);
    }
  }

  // Whether key belongs to this keyspace, by the rule of decode() (range erases use it, so they
  // refuse exactly the keys a scan refuses). Throws decode_error as decode() does.
  static bool matches(std::string_view key) {
    key_type k;
    return decode(key, k);
  }

  // Whether key is this keyspace's or starts like one and does not decode (a malformed or
  // truncated key, which decode() refuses): the keys a scan of the whole keyspace does not step
  // over. For classifying keys (counts, migrations, error messages) without throwing
  // decode_error; std::bad_alloc may still be thrown.
  static bool claims(std::string_view key) {
    try {
      return matches(key);
    } catch (const decode_error&) {
      return true;
    }
  }

 private:
  // The bytes the literals among the segments S... take when encoded (fields not counted).
  template <std::size_t... S>
  static constexpr std::size_t literal_bytes(std::index_sequence<S...>) {
    return (std::size_t{0} + ... + literal_size<std::tuple_element_t<S, segments>>());
  }
  template <class Seg>
  static constexpr std::size_t literal_size() {
    if constexpr (is_lit<Seg>::value)
      return Seg::encoded.size();
    else
      return 0;
  }

  // Whether the key ends with an integer field (an id, a sequence number: the usual case), which
  // decode_rest and decode_after read on the final-element fast path.
  static constexpr bool ends_with_integer = [] {
    using last = std::tuple_element_t<KS::segment_count - 1, segments>;
    if constexpr (is_lit<last>::value)
      return false;
    else
      return tuple_integer<typename last::type>;
  }();

  // Decodes the segments from First on and checks that nothing follows them; false and
  // decode_error as decode(). A key ending with an integer field reads that element with
  // try_read_final_integer, which also checks the end; any key it does not take (another form,
  // bytes after it, a value out of range) takes the general path and its errors.
  template <std::size_t First>
  KEYSCHEMA_ALWAYS_INLINE static bool decode_rest(tuple::reader& r, key_type& out) {
    constexpr std::size_t last = KS::segment_count - 1;
    if constexpr (ends_with_integer && First <= last) {
      if (!walk_range<First>(r, out, std::make_index_sequence<last - First>{})) return false;
      if (try_read_final_integer(r, std::get<KS::fields_before[last]>(out))) return true;
      if (!walk_segment<last>(r, out)) return false;
    } else {
      if (!walk_range<First>(r, out, std::make_index_sequence<KS::segment_count - First>{})) return false;
    }
    if (!r.at_end()) fail_trailing(r);
    return true;
  }

  // decode_after() past its fast path: inlined where there is no fast path, called where there is.
  template <std::size_t FirstSegment>
  [[gnu::noinline]] static bool decode_after_cold(std::string_view key, std::size_t offset, key_type& out) {
    return decode_after_general<FirstSegment>(key, offset, out);
  }
  template <std::size_t FirstSegment>
  KEYSCHEMA_ALWAYS_INLINE static bool decode_after_general(std::string_view key, std::size_t offset, key_type& out) {
    try {
      tuple::reader r(key);
      r.skip(offset);
      return decode_rest<FirstSegment>(r, out);
    } catch (const decode_error& e) {
      rethrow_in_keyspace(KS::name, key, "key", e);
    }
  }

  // A key that ends where segment S should start, or inside its literal, after everything before
  // matched: by the schema's prefix-disjointness (schema.hpp) it is the beginning of a key of this
  // keyspace and of no other keyspace's, so it is an error, not a key to step over.
  [[noreturn]] [[gnu::cold]] static void fail_truncated(const tuple::reader& r, std::size_t segment) {
    r.fail("the key ends before its segment " + std::to_string(segment + 1) + " of " +
           std::to_string(KS::segment_count) +
           " (a truncated key, or a key of another program, not of this schema)");
  }

  [[noreturn]] static void fail_trailing(const tuple::reader& r) {
    r.fail(std::to_string(r.remaining().size()) +
           " bytes follow the last element of the key (a key of another program, not of this schema)");
  }

  // Keys made of literals, integers and plain text (the usual case) are written into a stack
  // buffer (detail/codec/direct_write.hpp) and appended once; any other key, or text that needs
  // escaping or validating beyond ASCII, takes the general path, segment by segment.
  template <std::size_t N, class Args, std::size_t... S>
  static void encode_segments(std::string& out, const Args& args, std::index_sequence<S...> seq) {
    key_buffer buf;
    append_written(out, buf, write_segments<N>(&out, buf, args, seq));
  }

  // The key into buf on the direct path, else appended to *out or read_spill() (see write_key).
  template <std::size_t N, class Args, std::size_t... S>
  KEYSCHEMA_ALWAYS_INLINE static std::string_view write_segments(std::string* out, key_buffer& buf, const Args& args,
                                                                 std::index_sequence<S...> seq) {
    if (const std::size_t n = write_direct(buf, args, seq); n != no_direct) return std::string_view(buf.data, n);
    std::string& o = out != nullptr ? *out : read_spill();
    const std::size_t start = o.size();
    (encode_segment<S>(o, args), ...);
    return std::string_view(o).substr(start);
  }

  // Writes the segments into buf when each takes the direct path and their bounds fit; returns
  // the bytes written, or no_direct (buf unspecified) for a key that takes the general path.
  template <class Args, std::size_t... S>
  KEYSCHEMA_ALWAYS_INLINE static std::size_t write_direct(key_buffer& buf, const Args& args, std::index_sequence<S...> seq) {
    if (direct_bound_of(args, seq) > direct_room) return no_direct;  // no_direct is larger
    return write_direct_at<true>(buf.data, args, seq);
  }

  // The most bytes write_direct_at may touch, or no_direct when a segment takes the general path.
  template <class Args, std::size_t... S>
  KEYSCHEMA_ALWAYS_INLINE static std::size_t direct_bound_of([[maybe_unused]] const Args& args, std::index_sequence<S...>) {
    if constexpr ((direct_segment<S, Args>() && ...))
      return (segment_bound<S>(args) + ... + std::size_t{0});
    else
      return no_direct;
  }

  // Writes the segments at dest (room for direct_bound_of bytes); returns the bytes written, or
  // no_direct (dest's bytes unspecified) when text needs the general path.
  template <bool Checked, class Args, std::size_t... S>
  KEYSCHEMA_ALWAYS_INLINE static std::size_t write_direct_at([[maybe_unused]] char* dest, [[maybe_unused]] const Args& args,
                                                             std::index_sequence<S...>) {
    if constexpr ((direct_segment<S, Args>() && ...)) {
      char* p = dest;
      if ((write_segment<S, Checked>(p, args) && ...)) return static_cast<std::size_t>(p - dest);
    }
    return no_direct;
  }

  // The argument given for the field at segment S (S: a field segment).
  template <std::size_t S, class Args>
  using arg_at = std::remove_cvref_t<std::tuple_element_t<KS::fields_before[S], Args>>;

  // Whether segment S can be written by write_segment: a literal, an integer field given an
  // integer, or a std::string field given a std::string, std::string_view or char array.
  template <std::size_t S, class Args>
  static constexpr bool direct_segment() {
    using seg = std::tuple_element_t<S, segments>;
    if constexpr (is_lit<seg>::value) {
      return true;
    } else {
      using T = typename seg::type;
      using D = arg_at<S, Args>;
      if constexpr (tuple_integer<T>)
        return tuple_integer<D>;
      else if constexpr (std::is_same_v<T, std::string>)
        return is_text_argument<D>;
      else
        return false;
    }
  }

  // The most bytes write_segment may touch for segment S.
  template <std::size_t S, class Args>
  KEYSCHEMA_ALWAYS_INLINE static std::size_t segment_bound(const Args& args) {
    using seg = std::tuple_element_t<S, segments>;
    if constexpr (is_lit<seg>::value)
      return seg::encoded.size();
    else
      return direct_bound(std::get<KS::fields_before[S]>(args));
  }

  // Writes segment S at p and advances p; false (p unspecified) when the text is not plain
  // ASCII without NUL, which the general path escapes or validates (not checked: Checked false).
  template <std::size_t S, bool Checked, class Args>
  KEYSCHEMA_ALWAYS_INLINE static bool write_segment(char*& p, const Args& args) {
    using seg = std::tuple_element_t<S, segments>;
    if constexpr (is_lit<seg>::value) {
      std::memcpy(p, seg::encoded.data(), seg::encoded.size());
      p += seg::encoded.size();
      return true;
    } else {
      return direct_write<Checked>(p, std::get<KS::fields_before[S]>(args));
    }
  }

  // A field value that its codec cannot encode (text that is not valid UTF-8: encode_error) is a
  // key no key of the keyspace can be: key_error naming the keyspace and the field.
  template <std::size_t S, class Args>
  static void encode_segment(std::string& out, const Args& args) {
    using seg = std::tuple_element_t<S, segments>;
    if constexpr (is_lit<seg>::value) {
      out.append(seg::encoded);
    } else {
      const auto& a = std::get<KS::fields_before[S]>(args);
      try {
        encode_argument<typename seg::type, std::remove_cvref_t<decltype(a)>>(out, a);
      } catch (const encode_error& e) {
        throw key_error("keyschema: keyspace '" + std::string(KS::name) + "', field '" + std::string(seg::name) +
                        "': the value does not encode (" + e.what() +
                        "), so no key of the keyspace holds it; nothing was read or written");
      }
    }
  }

  // Walks segments First + S..., decoding each field into out; false at the first segment that
  // shows the key is another keyspace's.
  template <std::size_t First, std::size_t... S>
  static bool walk_range(tuple::reader& r, key_type& out, std::index_sequence<S...>) {
    return (walk_segment<First + S>(r, out) && ...);
  }

  template <std::size_t S>
  static bool walk_segment(tuple::reader& r, key_type& out) {
    using seg = std::tuple_element_t<S, segments>;
    if constexpr (is_lit<seg>::value) {
      if (!r.remaining().starts_with(seg::encoded)) [[unlikely]] {
        if (seg::encoded.starts_with(r.remaining())) fail_truncated(r, S);
        return false;
      }
      r.skip(seg::encoded.size());
      return true;
    } else {
      using T = typename seg::type;
      if constexpr (tuple_integer<T>) {  // the common integer, type code checked on the way
        if (try_read_integer(r, std::get<KS::fields_before[S]>(out))) return true;
      }
      if (r.at_end()) fail_truncated(r, S);
      if (!codec_traits<T>::type_codes().contains(r.peek())) return false;
      decode_field_into<T>(r, std::get<KS::fields_before[S]>(out));
      return true;
    }
  }
};

// Decodes a stored value of KS; decode errors name the keyspace and the key.
template <class KS>
typename KS::value_type decode_value(std::string_view key, std::string_view value) {
  try {
    return value_traits<typename KS::value_type>::decode(value);
  } catch (const decode_error& e) {
    rethrow_in_keyspace(KS::name, key, "value", e);
  }
}

// Decodes a stored value of KS into out (std::string and bytes values are assigned, reusing the
// storage out holds); decode errors name the keyspace and the key. A raw value (std::string,
// bytes) has nothing to decode and nothing to fail but the allocation: its copy is inlined into
// the scan's step, with no handler around it.
template <class KS>
KEYSCHEMA_ALWAYS_INLINE void decode_value_into(std::string_view key, std::string_view value,
                                               typename KS::value_type& out) {
  using V = typename KS::value_type;
  if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, bytes>) {
    (void)key;
    value_traits<V>::decode_into(value, out);  // detail::assign_reusing, inline
  } else {
    try {
      value_traits<V>::decode_into(value, out);
    } catch (const decode_error& e) {
      rethrow_in_keyspace(KS::name, key, "value", e);
    }
  }
}

// Decodes key into out when it is KS's; false when it belongs to another keyspace (see
// key_codec::decode; decode errors name the keyspace and the key).
template <class KS>
bool decode_key(std::string_view key, typename KS::key_type& out) {
  return key_codec<KS>::decode(key, out);
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
