// keyschema/detail/backend/placement.hpp: what a backend_with_placements (backend.hpp) shares:
// routing keys to placements by prefix, and a cursor merging the cursors of several placements.
//
// placement_router holds the placement names (index 0: the default placement "") and the routes
// given to place(). route(key) says where a put goes and where an erase also erases; reached(r)
// which placements a cursor over r must read. placement_cursor<Sub> merges one Sub cursor per
// placement in key order (both directions); with a single placement it is that cursor.
//
// Thread-safety: a router is set up (add, set_routes) before the backend is shared, then only
// read. A placement_cursor is used by one thread at a time, as its Sub cursors.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

class placement_router {
 public:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  placement_router() : names_{std::string()} {}

  // Where a put of a key goes (to) and the placement an erase of it also erases in (also, or none).
  struct target {
    std::size_t to = 0;
    std::size_t also = none;
  };

  // The index of placement `name`, added when new.
  std::size_t add(std::string_view name) {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return i;
    names_.emplace_back(name);
    return names_.size() - 1;
  }
  // The index of placement `name`, or none.
  std::size_t find(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return i;
    return none;
  }
  const std::vector<std::string>& names() const noexcept { return names_; }

  // Replaces the routes (adding the placements they name).
  void set_routes(std::span<const placement_route> routes) {
    routes_.clear();
    for (const placement_route& r : routes) {
      route_entry e{std::string(r.prefix), successor(r.prefix), add(r.placement), none};
      if (r.previous && *r.previous != r.placement) e.also = add(*r.previous);
      routes_.push_back(std::move(e));
    }
    placed_ = true;
  }

  bool has_routes() const noexcept { return !routes_.empty(); }

  target route(std::string_view key) const noexcept {
    const route_entry* best = nullptr;
    for (const route_entry& e : routes_)
      if (key.starts_with(e.prefix) && (best == nullptr || e.prefix.size() > best->prefix.size())) best = &e;
    return best == nullptr ? target{} : target{best->to, best->also};
  }

  // The placements a cursor over r must read, in index order: before set_routes, every known
  // placement (a raw backend reads whatever the engine holds); after, those a key in r can be
  // routed to (the default one unless r lies inside a route's prefix).
  std::vector<std::size_t> reached(const key_range& r) const {
    std::vector<bool> on(names_.size(), !placed_);
    if (placed_) {
      // When r lies inside a route's prefix (the longest such), every key of r goes to that route
      // or to one nested in it; otherwise to a route r meets or to the default placement.
      const route_entry* inside = nullptr;
      for (const route_entry& e : routes_)
        if (within(r, e) && (inside == nullptr || e.prefix.size() > inside->prefix.size())) inside = &e;
      for (const route_entry& e : routes_) {
        if (!intersects(r, e) || (inside != nullptr && !e.prefix.starts_with(inside->prefix))) continue;
        on[e.to] = true;
        if (e.also != none) on[e.also] = true;
      }
      if (inside == nullptr) on[0] = true;
    }
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < on.size(); ++i)
      if (on[i]) out.push_back(i);
    return out;
  }

 private:
  struct route_entry {
    std::string prefix;
    std::string end;  // successor(prefix)
    std::size_t to;
    std::size_t also;
  };

  // The least key greater than every key starting with p ("" when there is none: p is all 0xFF).
  static std::string successor(std::string_view p) {
    std::string s(p);
    while (!s.empty() && static_cast<unsigned char>(s.back()) == 0xff) s.pop_back();
    if (!s.empty()) s.back() = static_cast<char>(static_cast<unsigned char>(s.back()) + 1);
    return s;
  }
  // Whether a key starting with e.prefix can lie in r.
  static bool intersects(const key_range& r, const route_entry& e) {
    return (e.end.empty() || r.lower < std::string_view(e.end)) && (r.upper.empty() || std::string_view(e.prefix) < r.upper);
  }
  // Whether every key of r starts with e.prefix.
  static bool within(const key_range& r, const route_entry& e) {
    return r.lower >= std::string_view(e.prefix) && !r.upper.empty() && !e.end.empty() &&
           r.upper <= std::string_view(e.end);
  }

  std::vector<std::string> names_;
  std::vector<route_entry> routes_;
  bool placed_ = false;
};

// The placements `routes` name (each route's placement and previous one) that `router` does not
// know yet, each once, in the order first named; the default placement ("") is never missing.
// What backend_with_placements::place() creates.
inline std::vector<std::string> missing_placements(const placement_router& router,
                                                   std::span<const placement_route> routes) {
  std::vector<std::string> missing;
  for (const placement_route& r : routes) {
    for (const std::optional<std::string_view> name : {std::optional(r.placement), r.previous}) {
      if (!name || name->empty() || router.find(*name) != placement_router::none) continue;
      bool seen = false;
      for (const std::string& m : missing) seen = seen || m == *name;
      if (!seen) missing.emplace_back(*name);
    }
  }
  return missing;
}

// A cursor over several placements' cursors (each over the same range and direction, all on one
// consistent state), merged in key order. A key lives in one placement, so no key repeats. Keys
// of the first cursor starting with `hidden` (the engine's own records of its placements, such
// as LMDB's named-database entries in its main database) are stepped over.
//
// Cost: cur_ always points to a Sub (the one the cursor is on; with a single placement, or when
// every cursor is exhausted, the first), so valid(), key() and value() are the Sub's own, with no
// test of their own; next() tests once whether there is anything to merge.
template <class Sub>
class placement_cursor {
 public:
  explicit placement_cursor(Sub only) : first_(std::move(only)), cur_(&first_) {}
  placement_cursor(Sub first, std::vector<Sub> rest, bool reverse, std::string_view hidden)
      : first_(std::move(first)), rest_(std::move(rest)), hidden_(hidden), reverse_(reverse), merged_(true), cur_(&first_) {
    skip_hidden();
    pick();
  }
  // Moves keep cur_ on the same Sub: the first one is moved into this object, the others stay
  // in the vector's buffer, which moves whole.
  placement_cursor(placement_cursor&& o) noexcept
      : first_(std::move(o.first_)),
        rest_(std::move(o.rest_)),
        hidden_(o.hidden_),
        reverse_(o.reverse_),
        merged_(o.merged_),
        cur_(o.cur_ == &o.first_ ? &first_ : o.cur_) {
    o.cur_ = &o.first_;
  }
  placement_cursor& operator=(placement_cursor&& o) noexcept {
    if (this != &o) {
      const bool on_first = o.cur_ == &o.first_;
      first_ = std::move(o.first_);
      rest_ = std::move(o.rest_);
      hidden_ = o.hidden_;
      reverse_ = o.reverse_;
      merged_ = o.merged_;
      cur_ = on_first ? &first_ : o.cur_;
      o.cur_ = &o.first_;
    }
    return *this;
  }

  KEYSCHEMA_ALWAYS_INLINE bool valid() const noexcept { return cur_->valid(); }
  KEYSCHEMA_ALWAYS_INLINE std::string_view key() const noexcept { return cur_->key(); }
  KEYSCHEMA_ALWAYS_INLINE std::string_view value() const noexcept { return cur_->value(); }
  KEYSCHEMA_ALWAYS_INLINE void next() {
    if (!merged_) [[likely]] {
      first_.next();
      return;
    }
    next_merged();
  }

  // The engine's handle of the cursor of the placement the cursor is on (of the first placement
  // read when it is not valid), for Sub cursors that offer native().
  auto native() const noexcept
    requires requires(const Sub& c) { c.native(); }
  {
    return (cur_->valid() ? *cur_ : first_).native();
  }

 private:
  [[gnu::noinline]] void next_merged() {
    cur_->next();
    if (cur_ == &first_) skip_hidden();
    pick();
  }

  void skip_hidden() {
    if (hidden_.empty()) return;
    while (first_.valid() && first_.key().starts_with(hidden_)) first_.next();
  }
  // Points cur_ to the valid cursor whose key comes first in the cursor's direction, or to the
  // first cursor when none is valid.
  void pick() {
    Sub* best = first_.valid() ? &first_ : nullptr;
    for (Sub& c : rest_) {
      if (!c.valid()) continue;
      if (best == nullptr || (reverse_ ? c.key() > best->key() : c.key() < best->key())) best = &c;
    }
    cur_ = best != nullptr ? best : &first_;
  }

  Sub first_;
  std::vector<Sub> rest_;
  std::string_view hidden_;  // a constant of the backend
  bool reverse_ = false;
  bool merged_ = false;
  Sub* cur_;  // first_ or an element of rest_ (see the class comment)
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
