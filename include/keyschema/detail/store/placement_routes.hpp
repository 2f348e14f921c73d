// keyschema/detail/store/placement_routes.hpp: telling a backend_with_placements (backend.hpp)
// where the keys of a schema's placed keyspaces (keyschema::placed, schema.hpp) go.
//
// place_schema<Schema>(b): one route per placed keyspace (its leading literals -> its placement);
// keyschema::store calls it right after constructing its backend. place_migration<Old, New>(b):
// the routes ks::migrate reads and writes by: a prefix of New goes to New's placement, and, when
// a keyspace of Old with the same prefix was placed elsewhere, its keys are still read (and
// erased) there too; a placed keyspace of Old that New does not have stays where it is. A backend
// without placements is left alone.
//
// Thread-safety: called before the backend is shared.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/schema.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// (prefix, placement) of every keyspace of Schema that starts with a literal; `placed_only`
// keeps the placed ones alone.
struct prefix_placement {
  std::string prefix;
  std::string_view placement;
};
template <class Schema>
std::vector<prefix_placement> prefix_placements(bool placed_only) {
  std::vector<prefix_placement> out;
  for_each_keyspace<Schema>([&]<class K>(std::type_identity<K>) {
    if constexpr (leading_literals<K>() > 0) {
      if (!placed_only || !placement_of<K>().empty()) out.push_back({placement_prefix<K>(), placement_of<K>()});
    }
  });
  return out;
}

template <class Schema, class Backend>
void place_schema(Backend& b) {
  if constexpr (backend_with_placements<Backend>) {
    const std::vector<prefix_placement> placed = prefix_placements<Schema>(true);
    std::vector<placement_route> routes;
    for (const prefix_placement& p : placed) routes.push_back({p.prefix, p.placement, std::nullopt});
    b.place(routes);
  }
}

template <class Old, class New, class Backend>
void place_migration(Backend& b) {
  if constexpr (backend_with_placements<Backend>) {
    const std::vector<prefix_placement> olds = prefix_placements<Old>(false);
    const std::vector<prefix_placement> news = prefix_placements<New>(false);
    const auto find = [](const std::vector<prefix_placement>& v, std::string_view prefix) -> const prefix_placement* {
      for (const prefix_placement& p : v)
        if (p.prefix == prefix) return &p;
      return nullptr;
    };
    std::vector<placement_route> routes;
    for (const prefix_placement& n : news) {
      const prefix_placement* o = find(olds, n.prefix);
      const std::string_view was = o != nullptr ? o->placement : std::string_view();
      if (n.placement.empty() && was.empty()) continue;
      routes.push_back({n.prefix, n.placement, was != n.placement ? std::optional(was) : std::nullopt});
    }
    for (const prefix_placement& o : olds) {
      if (!o.placement.empty() && find(news, o.prefix) == nullptr) routes.push_back({o.prefix, o.placement, std::nullopt});
    }
    b.place(routes);
  }
}

// The prefixes of Schema's keyspaces with long keys (keyschema::long_keys).
template <class Schema>
std::vector<std::string> long_key_prefixes() {
  std::vector<std::string> out;
  for_each_keyspace<Schema>([&]<class K>(std::type_identity<K>) {
    if constexpr (leading_literals<K>() > 0 && has_long_keys<K>()) out.push_back(placement_prefix<K>());
  });
  return out;
}

// Tells a backend_with_long_keys (backend.hpp) which keyspaces of Schema take long keys; another
// backend is left alone.
template <class Schema, class Backend>
void long_key_schema(Backend& b) {
  if constexpr (backend_with_long_keys<Backend>) {
    const std::vector<std::string> prefixes = long_key_prefixes<Schema>();
    std::vector<long_key_route> routes;
    for (const std::string& p : prefixes) routes.push_back({p, true, false});
    b.long_keys(routes);
  }
}

// The routes ks::migrate runs with: New's keyspaces with long keys encode them; a keyspace of Old
// with long keys that New has without them (or not at all) is still read and erased in either
// form, its puts stored plainly.
template <class Old, class New, class Backend>
void long_key_migration(Backend& b) {
  if constexpr (backend_with_long_keys<Backend>) {
    const std::vector<std::string> olds = long_key_prefixes<Old>();
    const std::vector<std::string> news = long_key_prefixes<New>();
    std::vector<long_key_route> routes;
    for (const std::string& p : news) routes.push_back({p, true, true});
    for (const std::string& p : olds) {
      bool kept = false;
      for (const std::string& n : news) kept = kept || n == p;
      if (!kept) routes.push_back({p, false, true});
    }
    b.long_keys(routes);
  }
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
