// keyschema/entry.hpp: one typed entry of a keyspace, as scans yield it.
//
// entry<KS> holds the decoded key fields (KS::key_type, a std::tuple of the field types) and the
// decoded value. Fields can be read by position (std::get<1>(e.key)) or by name
// (e.get<"message_id">()).
//
// Thread-safety: a plain value.
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
    constexpr std::size_t i = detail::field_index<KS>(Name.view());
    static_assert(i < KS::field_count,
                  "keyschema::entry::get: the keyspace has no field with this name; use a name given in a "
                  "keyschema::field<\"name\", T> of the keyspace");
    return std::get<i>(key);
  }

  friend bool operator==(const entry&, const entry&) = default;
};

KEYSCHEMA_END_NAMESPACE
