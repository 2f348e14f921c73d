// keyschema/detail/store/erase_across.hpp: erase_prefix<KS> and erase_prefix_all<KS...> of the
// store and of a transaction (store.hpp), written once for both over their erase_range and scan
// (erase_prefix_ops), with the compile-time checks of erase_prefix_all (every listed keyspace is
// in the schema, and the prefix values are valid leading field values of every one of them; each
// failure is a static_assert in a diagnostic template whose arguments name the keyspace).
//
// Thread-safety: the checks are compile-time only; erase_prefix_ops is as thread-safe as the
// store or transaction it is part of.
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

// The erase_prefix members of Derived, a store or a transaction (CRTP), which provides
//   template <class KS, class... P> scan_view<...> scan(const P&... prefix);
//   template <class KS, class K, class M> std::size_t erase_range(const scan_view<KS, Derived, K, M>&);
// How atomic they are is Derived's erase_range's: a transaction's erases are part of it; the
// store's run in bounded atomic batches.
template <class Derived, class Schema>
class erase_prefix_ops {
 public:
  // erase_range of scan<KS>(prefix...): every entry of keyspace KS whose first fields equal
  // prefix. Returns the number erased. Errors: as erase_range.
  template <class KS, class... P>
  std::size_t erase_prefix(const P&... prefix) {
    return self().erase_range(self().template scan<KS>(prefix...));
  }

  // erase_prefix<KS>(prefix...) for each listed keyspace, in the order listed (everything of one
  // xid, one destination). Returns the total erased. In a transaction, atomically with the rest of
  // the transaction; on the store, each keyspace in bounded atomic batches (erase_range), not
  // atomic as a whole: a crash midway leaves the keyspaces listed last (and a suffix of the one
  // being erased) in place (a transaction's erase_prefix_all is atomic).
  // REQUIRES (compile errors naming the keyspace): each KS is in the schema and prefix is a valid
  // prefix of its leading fields. Errors: as erase_range, for the keyspace that failed; what the
  // keyspaces listed before it erased stays erased (in a transaction: roll back to drop it).
  template <class... KS, class... P>
  std::size_t erase_prefix_all(const P&... prefix) {
    static_assert(sizeof...(KS) > 0, "keyschema::erase_prefix_all: list at least one keyspace");
    static_assert((check_erase_prefix_all<Schema, KS, P...>() && ...));
    std::size_t n = 0;
    ((n += erase_prefix<KS>(prefix...)), ...);
    return n;
  }

 private:
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
};

}  // namespace detail

KEYSCHEMA_END_NAMESPACE
