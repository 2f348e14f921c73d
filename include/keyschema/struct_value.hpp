// keyschema/struct_value.hpp: aggregates stored as values without a hand-written codec.
//
// Declare the members to store, by name and pointer to member, and the struct becomes a value
// type (value_codec<T> is provided):
//
//   struct message_meta { std::int64_t priority; std::uint64_t expires; std::string reply_to; };
//   template <> struct keyschema::value_fields<message_meta>
//       : keyschema::members<keyschema::member<"priority", &message_meta::priority>,
//                            keyschema::member<"expires", &message_meta::expires>,
//                            keyschema::member<"reply_to", &message_meta::reply_to>> {};
//
//   keyschema::get<"priority">(meta)          // the member called "priority", by reference
//   keyschema::value_field_names<message_meta>()  // {"priority", "expires", "reply_to"}
//
// A value is stored as the FoundationDB tuple of its members in declaration order, exactly as
// std::tuple<int64_t, uint64_t, std::string> would be (tuple::pack(m.priority, m.expires,
// m.reply_to)), so other tools read it and keyschema-dump shows it decoded. The codec's name in
// the schema layout and fingerprint lists the members with their names and types,
// "struct<priority:i64,expires:u64,reply_to:string>": renaming, reordering, adding or removing a
// member changes the fingerprint (members not listed are not stored, and are value-initialized
// when a value is read).
//
// REQUIRES (each a compile error naming the rule): T is default-initializable; every member is
// a pointer to a data member of T whose type has a key codec (codec.hpp: integers, strings,
// bytes, uuid, time points, optionals, tuples, ...); at least one member; names are distinct.
//
// Errors: decoding a stored value that is not exactly the tuple of the members' types (damaged,
// truncated, written with another layout) throws decode_error, which the store reports naming
// the keyspace and the key. Decoding never reads past the value's bytes.
//
// Thread-safety: stateless; everything may be used concurrently.
#pragma once

#include <keyschema/codec.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/value_codec.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {
template <class P>
struct member_pointer_traits {
  static constexpr bool is_data_member = false;
  using owner = void;
  using type = void;
};
template <class C, class M>
  requires(!std::is_function_v<M>)
struct member_pointer_traits<M C::*> {
  static constexpr bool is_data_member = true;
  using owner = C;
  using type = M;
};
}  // namespace detail

// One stored member: its name (in the layout and for get<Name>) and its pointer to member.
template <fixed_string Name, auto Ptr>
struct member {
  static_assert(detail::member_pointer_traits<decltype(Ptr)>::is_data_member,
                "keyschema::member: the second argument must be a pointer to a data member (&T::member)");
  static constexpr std::string_view name = Name.view();
  static constexpr auto pointer = Ptr;
  using owner = typename detail::member_pointer_traits<decltype(Ptr)>::owner;
  using type = typename detail::member_pointer_traits<decltype(Ptr)>::type;
};

// The stored members of a struct, in storage order.
template <class... M>
struct members {
  using member_list = std::tuple<M...>;
};

// Specialize for T, deriving from members<...>, to store T as a value.
template <class T>
struct value_fields {
  using not_specialized = void;
};

// T has a member list (value_fields<T> is specialized).
template <class T>
concept struct_value = requires { typename value_fields<T>::member_list; };

namespace detail {

template <class T, class List = typename value_fields<T>::member_list>
struct struct_layout;
template <class T, class... M>
struct struct_layout<T, std::tuple<M...>> {
  static constexpr bool check() {
    static_assert(sizeof...(M) > 0,
                  "keyschema::value_fields: the member list is empty; list at least one member with "
                  "keyschema::member<\"name\", &T::member>");
    static_assert((std::is_same_v<typename M::owner, T> && ...),
                  "keyschema::value_fields<T>: a member pointer belongs to another type than T; list "
                  "&T::member pointers of T itself");
    static_assert((key_encodable<std::remove_cv_t<typename M::type>> && ...),
                  "keyschema::value_fields: a member's type has no key codec; use integers, strings, bytes, "
                  "uuid, time points, optionals or tuples of them, or specialize keyschema::codec<T> for it");
    static_assert(std::default_initializable<T>,
                  "keyschema::value_fields<T>: T must be default-initializable (a value is read into a "
                  "value-initialized T)");
    static_assert(distinct_names(),
                  "keyschema::value_fields: two members have the same name; give each member its own name");
    return true;
  }
  static constexpr bool distinct_names() {
    constexpr std::array<std::string_view, sizeof...(M)> names{M::name...};
    for (std::size_t i = 0; i < names.size(); ++i)
      for (std::size_t j = i + 1; j < names.size(); ++j)
        if (names[i] == names[j]) return false;
    return true;
  }

  // "struct<name:codec,...>"
  static constexpr std::size_t name_size =
      7 + (std::size_t{0} + ... + (M::name.size() + 1 + codec_traits<std::remove_cv_t<typename M::type>>::name().size())) +
      (sizeof...(M) - 1) + 1;
  static constexpr std::array<char, name_size> name_chars = [] {
    std::array<char, name_size> a{};
    std::size_t i = 0;
    auto put = [&](std::string_view s) {
      for (char c : s) a[i++] = c;
    };
    put("struct<");
    bool first = true;
    ((put(first ? std::string_view() : std::string_view(",")), first = false, put(M::name), put(":"),
      put(codec_traits<std::remove_cv_t<typename M::type>>::name())),
     ...);
    put(">");
    return a;
  }();
  static constexpr std::string_view name{name_chars.data(), name_size};

  static void encode(std::string& out, const T& v) { tuple::pack_into(out, v.*M::pointer...); }
  static void decode_into(std::string_view in, T& out) {
    auto t = tuple::unpack<std::remove_cv_t<typename M::type>...>(in);  // throws decode_error
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((out.*M::pointer = std::move(std::get<I>(t))), ...);
    }(std::index_sequence_for<M...>{});
  }

  template <std::size_t... I>
  static constexpr std::size_t index_of(std::string_view n, std::index_sequence<I...>) {
    std::size_t found = sizeof...(M);
    ((M::name == n && found == sizeof...(M) ? (found = I, 0) : 0), ...);
    return found;
  }
  static constexpr std::size_t index_of(std::string_view n) { return index_of(n, std::index_sequence_for<M...>{}); }
};

}  // namespace detail

// The value codec of a struct with a member list: the tuple of its members.
template <class T>
  requires(struct_value<T> && !key_encodable<T>)
struct value_codec<T> {
  static_assert(detail::struct_layout<T>::check());
  static constexpr std::string_view name = detail::struct_layout<T>::name;
  // Appends the tuple of v's listed members.
  static void encode(std::string& out, const T& v) { detail::struct_layout<T>::encode(out, v); }
  // Throws decode_error when in is not exactly the tuple of the members' types.
  static T decode(std::string_view in) {
    T out{};
    detail::struct_layout<T>::decode_into(in, out);
    return out;
  }
  // As decode, into out (members not listed are left as they are). Throws decode_error; out's
  // listed members are then unchanged.
  static void decode_into(std::string_view in, T& out) { detail::struct_layout<T>::decode_into(in, out); }
};

// The member of v called Name (a compile error naming the rule when there is none).
template <fixed_string Name, class T>
  requires struct_value<std::remove_const_t<T>>
constexpr auto& get(T& v) noexcept {
  using L = detail::struct_layout<std::remove_const_t<T>>;
  constexpr std::size_t i = L::index_of(Name.view());
  static_assert(i < std::tuple_size_v<typename value_fields<std::remove_const_t<T>>::member_list>,
                "keyschema::get<Name>: the struct has no member with this name in its value_fields; use a name "
                "given in a keyschema::member<\"name\", &T::member>");
  using M = std::tuple_element_t<(i < std::tuple_size_v<typename value_fields<std::remove_const_t<T>>::member_list> ? i : 0),
                                 typename value_fields<std::remove_const_t<T>>::member_list>;
  return v.*M::pointer;
}

// The members' names, in storage order.
template <struct_value T>
constexpr auto value_field_names() noexcept {
  return []<class... M>(std::tuple<M...>*) {
    return std::array<std::string_view, sizeof...(M)>{M::name...};
  }(static_cast<typename value_fields<T>::member_list*>(nullptr));
}

KEYSCHEMA_END_NAMESPACE
