// keyschema/detail/store/erase_across.hpp: erase_prefix_all<KS...> of the store and of a
// transaction (store.hpp): the compile-time checks (every listed keyspace is in the schema, and
// the prefix values are valid leading field values of every one of them; each failure is a
// static_assert in a diagnostic template whose arguments name the keyspace) and the loop both
// share.
//
// Thread-safety: the checks are compile-time only; erase_prefix_each is as thread-safe as the
// target's erase_prefix.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_argument.hpp>
#include <keyschema/fixed_string.hpp>

#include <cstddef>

KEYSCHEMA_BEGIN_NAMESPACE

namespace diagnostic {

template <fixed_string Keyspace>
struct erase_prefix_all_keyspace_not_in_schema {
  static_assert(always_false_type<decltype(Keyspace)>,
                "keyschema::erase_prefix_all: a listed keyspace (Keyspace in this instantiation) is not part of the "
                "store's schema; list only keyspaces of the keyschema::schema<...> the store was declared with");
  static constexpr bool value = false;
};

template <fixed_string Keyspace, std::size_t Fields, std::size_t Given>
struct erase_prefix_all_too_many_values {
  static_assert(always_false_type<decltype(Keyspace)>,
                "keyschema::erase_prefix_all: more prefix values (Given) than a listed keyspace (Keyspace in this "
                "instantiation) has fields (Fields); give only the leading fields every listed keyspace shares");
  static constexpr bool value = false;
};

}  // namespace diagnostic

namespace detail {

// True when prefix values of types P... are a valid prefix of keyspace KS of Schema; otherwise
// instantiates a diagnostic naming KS (and, for a value of the wrong type, the field).
template <class Schema, class KS, class... P>
constexpr bool check_erase_prefix_all() {
  if constexpr (!Schema::template contains<KS>) {
    return diagnostic::erase_prefix_all_keyspace_not_in_schema<KS::name_string>::value;
  } else if constexpr (sizeof...(P) > KS::field_count) {
    return diagnostic::erase_prefix_all_too_many_values<KS::name_string, KS::field_count, sizeof...(P)>::value;
  } else {
    return check_prefix_arguments<KS, P...>();
  }
}

// erase_prefix<KS>(prefix...) on target (a store or a transaction) for each KS in the order
// listed; returns the total erased. The body of both erase_prefix_all members, which check the
// arguments (check_erase_prefix_all) before calling it. Errors: those of target's erase_prefix.
template <class... KS, class Target, class... P>
std::size_t erase_prefix_each(Target& target, const P&... prefix) {
  std::size_t n = 0;
  ((n += target.template erase_prefix<KS>(prefix...)), ...);
  return n;
}

}  // namespace detail

KEYSCHEMA_END_NAMESPACE
