// tests/conformance/conformance_support.hpp: helpers shared by the conformance cases.
//
//   fixture<F>        a scratch directory and a store<broker, F::backend> opened in it by the
//                     backend factory F (see memory_factory.hpp); reopen() closes and reopens it.
//   collect(view)     a scan's entries as "key = value" strings (Catch2 prints them on failure).
//   lookup<KS>(src,k) a point read as the same kind of string, "<missing>" for std::nullopt.
//   scan_bounds<T>    optional lower/upper bounds on the field after a prefix, direction, limit;
//                     apply_bounds() turns it into scan_view builder calls.
//   model<KS>         a std::map reference model of one keyspace whose fields all sort like
//                     their C++ type (no desc<T>); expected() answers a scan the way the store
//                     must.
//
// Thread-safety: none of these objects is shared between threads.
#pragma once

#include <conformance/broker_schema.hpp>
#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>
#include <keyschema/keyschema.hpp>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace keyschema::conformance {

// bytes from text (keyschema::bytes("...") is ambiguous between its string and string_view
// constructors).
inline ks::bytes bin(std::string_view s) { return ks::bytes(s); }

// A database in a fresh directory, opened through the backend factory F.
template <class F>
class fixture {
 public:
  using backend_type = typename F::backend;
  using store_type = ks::store<broker, backend_type>;

  fixture() : db_(F::template open<broker>(dir_.path())) {}

  store_type& db() noexcept { return *db_; }
  const std::filesystem::path& dir() const noexcept { return dir_.path(); }

  // Destroys the store (closing the database) and opens the same directory again.
  void reopen() {
    db_.reset();
    db_ = F::template open<broker>(dir_.path());
  }
  // Destroys the store; db() must not be used until reopen().
  void close() { db_.reset(); }

 private:
  testing::temp_dir dir_{"conformance"};  // declared first: outlives the store
  std::unique_ptr<store_type> db_;
};

template <class View>
std::vector<std::string> collect(const View& view) {
  using KS = typename View::entry_type::keyspace_type;
  std::vector<std::string> out;
  for (const auto& e : view) out.push_back(show_entry<KS>(e.key, e.value));
  return out;
}

// Number of entries a scan yields.
template <class View>
std::size_t count(const View& view) {
  std::size_t n = 0;
  for (auto it = view.begin(); it != view.end(); ++it) ++n;
  return n;
}

template <class KS, class Source>
std::string lookup(const Source& src, const typename KS::key_type& key) {
  const std::optional<typename KS::value_type> v = src.template get<KS>(key);
  return v ? show(*v) : std::string("<missing>");
}

template <class T>
struct scan_bounds {
  std::optional<T> lower = std::nullopt;
  bool lower_inclusive = true;  // from (true) or after (false)
  std::optional<T> upper = std::nullopt;
  bool upper_inclusive = false;  // through (true) or to (false)
  bool reverse = false;
  std::optional<std::size_t> limit = std::nullopt;

  std::string describe() const {
    std::string s;
    if (lower) s += (lower_inclusive ? ".from(" : ".after(") + show(*lower) + ")";
    if (upper) s += (upper_inclusive ? ".through(" : ".to(") + show(*upper) + ")";
    if (reverse) s += ".reverse()";
    if (limit) s += ".limit(" + std::to_string(*limit) + ")";
    return s.empty() ? std::string("(unbounded)") : s;
  }
};

template <class View, class T>
View apply_bounds(View v, const scan_bounds<T>& b) {
  if (b.lower) v = b.lower_inclusive ? v.from(*b.lower) : v.after(*b.lower);
  if (b.upper) v = b.upper_inclusive ? v.through(*b.upper) : v.to(*b.upper);
  if (b.reverse) v = v.reverse();
  if (b.limit) v = v.limit(*b.limit);
  return v;
}

template <class KS>
class model {
 public:
  using key_type = typename KS::key_type;
  using value_type = typename KS::value_type;

  void put(const key_type& k, const value_type& v) { m_.insert_or_assign(k, v); }
  void erase(const key_type& k) { m_.erase(k); }
  std::size_t size() const noexcept { return m_.size(); }
  const std::map<key_type, value_type>& entries() const noexcept { return m_; }

  // The keys a scan with the first K fields equal to prefix (a std::tuple of K values) and
  // bounds b on field K covers, in scan order.
  template <std::size_t K, class Prefix, class T>
  std::vector<key_type> covered(const Prefix& prefix, const scan_bounds<T>& b) const {
    std::vector<key_type> out;
    for (const auto& [k, v] : m_) {
      if (!prefix_equal(k, prefix, std::make_index_sequence<K>{})) continue;
      if constexpr (K < KS::field_count) {
        const auto& f = std::get<K>(k);
        if (b.lower && (b.lower_inclusive ? f < *b.lower : !(*b.lower < f))) continue;
        if (b.upper && (b.upper_inclusive ? *b.upper < f : !(f < *b.upper))) continue;
      }
      out.push_back(k);
    }
    if (b.reverse) std::reverse(out.begin(), out.end());
    if (b.limit && out.size() > *b.limit) out.resize(*b.limit);
    return out;
  }

  // covered() as the strings collect() produces.
  template <std::size_t K, class Prefix, class T>
  std::vector<std::string> expected(const Prefix& prefix, const scan_bounds<T>& b) const {
    std::vector<std::string> out;
    for (const key_type& k : covered<K>(prefix, b)) out.push_back(show_entry<KS>(k, m_.at(k)));
    return out;
  }

  // Every entry in key order.
  std::vector<std::string> all() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : m_) out.push_back(show_entry<KS>(k, v));
    return out;
  }

 private:
  template <class Prefix, std::size_t... I>
  static bool prefix_equal(const key_type& k, const Prefix& p, std::index_sequence<I...>) {
    return ((std::get<I>(k) == std::get<I>(p)) && ...);
  }

  std::map<key_type, value_type> m_;
};

// Random bounds for a scan: each bound present with probability 2/3, drawn by pick(); random
// direction; a limit of 0, 1 or 3 in 3 cases out of 8.
template <class T, class Rng, class Pick>
scan_bounds<T> random_bounds(Rng& rng, Pick&& pick) {
  scan_bounds<T> b;
  if (rng() % 3 != 0) {
    b.lower = pick();
    b.lower_inclusive = rng() % 2 == 0;
  }
  if (rng() % 3 != 0) {
    b.upper = pick();
    b.upper_inclusive = rng() % 2 == 0;
  }
  b.reverse = rng() % 2 == 0;
  switch (rng() % 8) {
    case 0: b.limit = 0; break;
    case 1: b.limit = 1; break;
    case 2: b.limit = 3; break;
    default: break;
  }
  return b;
}

// Runs scan<KS>(prefix...) with bounds b on src and compares it with the model.
template <class KS, class Source, class Prefix, class T>
void check_scan(const Source& src, const model<KS>& m, const Prefix& prefix, const scan_bounds<T>& b) {
  constexpr std::size_t k = std::tuple_size_v<Prefix>;
  auto view = std::apply([&](const auto&... p) { return src.template scan<KS>(p...); }, prefix);
  std::vector<std::string> got;
  if constexpr (k < KS::field_count)
    got = collect(apply_bounds(view, b));
  else  // every field fixed: no bounds, only direction and limit
    got = collect((b.reverse ? view.reverse() : view).limit(b.limit.value_or(static_cast<std::size_t>(-1))));
  const std::vector<std::string> want = m.template expected<k>(prefix, b);
  INFO("scan<" << KS::name << ">" << show(prefix) << b.describe());
  CHECK(got == want);
}

}  // namespace keyschema::conformance
