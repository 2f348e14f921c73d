// keyschema/entry.hpp: one typed entry of a keyspace, as scans yield it.
//
// entry<KS> holds the decoded key fields (KS::key_type, a std::tuple of the field types) and the
// decoded value. Fields can be read by position (std::get<1>(e.key)) or by name
// (e.get<"message_id">()). A scan's .value_views() yields entry_view<KS> instead: the same key,
// and the stored value bytes as a std::string_view into the engine's buffer (valid until the
// scan's iterator moves); .keys_only() yields key_entry<KS>, the key alone.
//
// Thread-safety: plain values.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/schema.hpp>

#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {

template <class Fields, std::size_t... I>
constexpr std::size_t field_index_impl(std::string_view name, std::index_sequence<I...>) {
  std::size_t found = sizeof...(I);
  ((std::tuple_element_t<I, Fields>::name == name && found == sizeof...(I) ? (found = I, 0) : 0), ...);
  return found;
}

// Position of the field called name among KS's fields; KS::field_count when there is none.
template <class KS>
constexpr std::size_t field_index(std::string_view name) {
  return field_index_impl<typename KS::fields>(name, std::make_index_sequence<KS::field_count>{});
}

}  // namespace detail

namespace detail {
// The key field called Name of key (a KS::key_type); a compile error naming the rule otherwise.
template <class KS, fixed_string Name, class Key>
constexpr const auto& field_by_name(const Key& key) noexcept {
  constexpr std::size_t i = field_index<KS>(Name.view());
  static_assert(i < KS::field_count,
                "keyschema::entry::get: the keyspace has no field with this name; use a name given in a "
                "keyschema::field<\"name\", T> of the keyspace");
  return std::get<(i < KS::field_count ? i : 0)>(key);
}
}  // namespace detail

template <class KS>
struct entry {
  using keyspace_type = KS;
  using key_type = typename KS::key_type;
  using value_type = typename KS::value_type;

  key_type key;
  value_type value;

  // The key field called Name.
  template <fixed_string Name>
  const auto& get() const noexcept {
    return detail::field_by_name<KS, Name>(key);
  }

  friend bool operator==(const entry&, const entry&) = default;
};

// An entry whose value is not decoded: the stored bytes, pointing into the engine's buffer.
// Lifetime: `value` is valid until the scan iterator that yielded it is incremented or destroyed
// (and, on LMDB, until the transaction or snapshot it reads ends); copy it to keep it.
template <class KS>
struct entry_view {
  using keyspace_type = KS;
  using key_type = typename KS::key_type;

  key_type key;
  std::string_view value;

  // The key field called Name.
  template <fixed_string Name>
  const auto& get() const noexcept {
    return detail::field_by_name<KS, Name>(key);
  }
};

// The key of an entry alone, as a keys-only scan yields it.
template <class KS>
struct key_entry {
  using keyspace_type = KS;
  using key_type = typename KS::key_type;

  key_type key;

  // The key field called Name.
  template <fixed_string Name>
  const auto& get() const noexcept {
    return detail::field_by_name<KS, Name>(key);
  }

  friend bool operator==(const key_entry&, const key_entry&) = default;
};

KEYSCHEMA_END_NAMESPACE
