// keyschema/lmdb/detail/long_keys.hpp: keys longer than LMDB's key limit, in the keyspaces that
// take them (keyschema::long_keys; lmdb_backend::long_keys(), backend_with_long_keys).
//
// The long form. In a keyspace with long keys (env_state::long_routes, by key prefix), a key K
// longer than long_head (502) bytes is stored under the LMDB key
//     K[0, 502) + 0xFF (the marker) + a tie-breaker (8 bytes, big-endian)     511 bytes
// with the LMDB value
//     n (4 bytes, big-endian) + K[502, |K|) (n bytes) + the value.
// A key of at most 502 bytes is stored plainly. A long form is 511 bytes (mdb_env_get_maxkeysize
// of a default LMDB build) and a plain key of such a keyspace at most 502, so the two never meet.
//
// Order. LMDB orders stored keys; for two keys A and B of the keyspace:
//   - both plain: their order.
//   - A plain (at most 502 bytes), B long: A either differs from B within its own bytes, which
//     decide both comparisons alike, or is a prefix of B's first 502 bytes (A == those bytes
//     included), and then orders before both B and B's long form (shorter).
//   - both long, differing within their first 502 bytes: those bytes decide, alike.
//   - both long with the same first 502 bytes: a group, ordered by tie-breaker in LMDB. In LMDB's
//     order a group is contiguous (a key between two of them starts with the same 502 bytes and
//     is longer). A cursor reads a group whole, sorts it by full key (either direction) and then
//     yields it; so every scan is in exact key order.
// Lookups. get, a put replacing a key and an erase search the key's group (MDB_SET_RANGE to its
// first 502 bytes + the marker, then the group in tie order) and compare the stored rest of each
// key: uniqueness is exact. A new key of a group gets the largest tie-breaker there + 1 (the
// smallest unused one after 2^64 - 1), so tie-breakers never collide.
// Bounds. A cursor bound longer than 502 bytes in such a keyspace is given to LMDB as its group's
// (lower: its first 502 bytes; upper: the least key after every key starting with them), and the
// full keys are checked against the bound itself (long_bounds).
// Migration (ks::migrate turning the marker on or off): a route with plain_too also reads and
// erases keys of 503 to 511 bytes stored plainly; one without encode stores them plainly. A
// cursor reads a plain key longer than 502 bytes of such a keyspace as part of its group.
// Cost: a long key's lookup or write reads its whole group (one extra cursor search and the
// group's entries); a cursor copies and sorts each group it meets; the stored value carries the
// key's bytes beyond the first 502.
//
// Thread-safety: the functions touch only the transaction they are given (called as the callers
// of lookup() and apply_batch() are); a long_key_cursor is used by one thread at a time.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/placement.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/lmdb/detail/env_state.hpp>
#include <keyschema/lmdb/detail/status.hpp>
#include <keyschema/write_batch.hpp>

#include <lmdb.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

// long_head (502, env_state.hpp): the bytes of the key kept in the LMDB key.
inline constexpr char long_marker = '\xff';                            // after them
inline constexpr std::size_t long_tie = 8;                             // the tie-breaker, big-endian
inline constexpr std::size_t long_stored = long_head + 1 + long_tie;  // 511: the LMDB key of a long form
inline constexpr std::size_t long_len = 4;                             // the rest's length in front of the value

// Whether a key of n bytes may need the long form (the fast test before long_route_of).
KEYSCHEMA_ALWAYS_INLINE bool may_be_long(const env_state& s, std::size_t n) noexcept {
  return n > long_head && !s.long_routes.empty();
}

// The route of key when it is longer than long_head in a keyspace with long keys, else nullptr.
inline const env_state::long_route* long_route_of(const env_state& s, std::string_view key) noexcept {
  if (key.size() <= long_head) return nullptr;
  for (const env_state::long_route& r : s.long_routes)
    if (key.starts_with(r.prefix)) return &r;
  return nullptr;
}

inline std::string_view view_of(const MDB_val& v) noexcept {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// Whether a stored LMDB key is a long form (given that it starts with a long-key prefix).
inline bool is_long_form(std::string_view raw) noexcept {
  return raw.size() == long_stored && raw[long_head] == long_marker;
}

inline std::uint64_t tie_of(std::string_view raw) noexcept {
  std::uint64_t t = 0;
  for (std::size_t i = long_head + 1; i < long_stored; ++i) t = (t << 8) | static_cast<unsigned char>(raw[i]);
  return t;
}

// Splits the LMDB value of a long form into the key's rest and the value; false when malformed
// (shorter than the length it gives).
inline bool split_long_value(std::string_view v, std::string_view& rest, std::string_view& value) noexcept {
  if (v.size() < long_len) return false;
  std::size_t n = 0;
  for (std::size_t i = 0; i < long_len; ++i) n = (n << 8) | static_cast<unsigned char>(v[i]);
  if (v.size() - long_len < n) return false;
  rest = v.substr(long_len, n);
  value = v.substr(long_len + n);
  return true;
}

[[noreturn, gnu::cold]] inline void throw_malformed(const std::string& path, const char* call) {
  throw backend_error("keyschema::lmdb_backend: a stored long key (keyschema::long_keys) of " + path +
                          " has a malformed value (shorter than the key length it gives): the database is "
                          "damaged; restore it from a copy",
                      call, MDB_CORRUPTED);
}

// What a search of a long key's group found.
struct long_match {
  bool found = false;
  char key[long_stored];  // the LMDB key of the match (found)
  MDB_val value{0, nullptr};  // its stored value (found): points into the map
  bool any = false;           // the group holds a long form
  std::uint64_t last_tie = 0;  // the largest tie-breaker of the group (any and not found)
};

// Searches the group of the long key `key` with cursor c (of the database to search). Returns
// MDB_SUCCESS, LMDB's error, or MDB_CORRUPTED (a malformed stored value).
inline int find_long(MDB_cursor* c, std::string_view key, long_match& m) {
  char head[long_head + 1];
  std::memcpy(head, key.data(), long_head);
  head[long_head] = long_marker;
  const std::string_view group(head, sizeof head);
  const std::string_view rest = key.substr(long_head);
  MDB_val k{sizeof head, head};
  MDB_val v{0, nullptr};
  int rc = ::mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
  for (; rc == MDB_SUCCESS; rc = ::mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    const std::string_view raw = view_of(k);
    if (!raw.starts_with(group)) break;
    if (raw.size() != long_stored) continue;  // a plain key of the group (ks::migrate)
    std::string_view r, value;
    if (!split_long_value(view_of(v), r, value)) return MDB_CORRUPTED;
    m.any = true;
    m.last_tie = tie_of(raw);
    if (r == rest) {
      m.found = true;
      std::memcpy(m.key, raw.data(), long_stored);
      m.value = v;
      return MDB_SUCCESS;
    }
  }
  return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

// The smallest tie-breaker of key's group not in use (after the largest reached 2^64 - 1).
inline int free_tie(MDB_cursor* c, std::string_view key, std::uint64_t& tie) {
  char head[long_head + 1];
  std::memcpy(head, key.data(), long_head);
  head[long_head] = long_marker;
  const std::string_view group(head, sizeof head);
  MDB_val k{sizeof head, head};
  MDB_val v{0, nullptr};
  tie = 0;
  int rc = ::mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
  for (; rc == MDB_SUCCESS; rc = ::mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    const std::string_view raw = view_of(k);
    if (!raw.starts_with(group)) break;
    if (raw.size() != long_stored) continue;
    if (tie_of(raw) != tie) break;  // ties ascend in LMDB's order
    ++tie;
  }
  return rc == MDB_NOTFOUND || rc == MDB_SUCCESS ? MDB_SUCCESS : rc;
}

// An MDB_cursor closed at scope exit.
struct scoped_cursor {
  scoped_cursor() = default;
  scoped_cursor(const scoped_cursor&) = delete;
  scoped_cursor& operator=(const scoped_cursor&) = delete;
  ~scoped_cursor() {
    if (c != nullptr) ::mdb_cursor_close(c);
  }
  MDB_cursor* c = nullptr;
};

// Reads the long key `key` (route r) in database dbi of txn. Returns MDB_SUCCESS (found tells
// whether it is there; value then holds it), or an error with `call` naming the LMDB function.
inline int lookup_long_in(const env_state& s, MDB_txn* txn, MDB_dbi dbi, std::string_view key,
                          const env_state::long_route& r, std::string& value, bool& found, const char*& call) {
  found = false;
  {
    scoped_cursor c;
    if (const int rc = ::mdb_cursor_open(txn, dbi, &c.c); rc != MDB_SUCCESS) {
      c.c = nullptr;
      call = "mdb_cursor_open";
      return rc;
    }
    long_match m;
    call = "mdb_cursor_get";
    if (const int rc = find_long(c.c, key, m); rc != MDB_SUCCESS) return rc;
    if (m.found) {
      std::string_view rest, v;
      split_long_value(view_of(m.value), rest, v);
      value.assign(v);
      found = true;
      return MDB_SUCCESS;
    }
  }
  if ((r.plain_too || !r.encode) && key.size() <= s.max_key) {
    MDB_val k{key.size(), const_cast<char*>(key.data())};
    MDB_val v{0, nullptr};
    call = "mdb_get";
    const int rc = ::mdb_get(txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND) return MDB_SUCCESS;
    if (rc != MDB_SUCCESS) return rc;
    value.assign(view_of(v));
    found = true;
  }
  return MDB_SUCCESS;
}

// lookup() of a long key (route r): in its placement, then in the one it moves from (ks::migrate).
// Errors: backend_error naming the LMDB call; MDB_CORRUPTED for a malformed stored value.
inline bool lookup_long(const env_state& s, MDB_txn* txn, std::string_view key, const env_state::long_route& r,
                        std::string& value) {
  const detail::placement_router::target t = s.single() ? detail::placement_router::target{} : s.router.route(key);
  for (const std::size_t i : {t.to, t.also}) {
    if (i == detail::placement_router::none || !s.present[i]) continue;
    bool found = false;
    const char* call = nullptr;
    const int rc = lookup_long_in(s, txn, s.dbis[i], key, r, value, found, call);
    if (rc == MDB_CORRUPTED) throw_malformed(s.path, call);
    if (rc != MDB_SUCCESS) lmdb_detail::throw_status("keyschema::lmdb_backend::get: read failed on " + s.path, call, rc);
    if (found) return true;
  }
  return false;
}

// Erases the long key `key` from dbi of txn in every form route r allows. Returns MDB_SUCCESS or
// an error with `call` naming the LMDB function.
inline int erase_long_in(const env_state& s, MDB_txn* txn, MDB_dbi dbi, std::string_view key,
                         const env_state::long_route& r, const char*& call) {
  {
    scoped_cursor c;
    call = "mdb_cursor_open";
    if (const int rc = ::mdb_cursor_open(txn, dbi, &c.c); rc != MDB_SUCCESS) {
      c.c = nullptr;
      return rc;
    }
    long_match m;
    call = "mdb_cursor_get";
    if (const int rc = find_long(c.c, key, m); rc != MDB_SUCCESS) return rc;
    if (m.found) {
      call = "mdb_cursor_del";
      if (const int rc = ::mdb_cursor_del(c.c, 0); rc != MDB_SUCCESS) return rc;
    }
  }
  if ((r.plain_too || !r.encode) && key.size() <= s.max_key) {
    MDB_val k{key.size(), const_cast<char*>(key.data())};
    call = "mdb_del";
    const int rc = ::mdb_del(txn, dbi, &k, nullptr);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return rc;
  }
  return MDB_SUCCESS;
}

// Applies one operation on a long key (route r) in the write transaction txn: a put stores the
// long form in the key's placement (replacing the key's entry: the same LMDB key), or, when r does
// not encode, the plain key; an erase erases every form in the placement and in the one the key
// moves from. Returns MDB_SUCCESS, or an error with `call` naming the LMDB function
// (MDB_CORRUPTED: a malformed stored value).
inline int apply_long(const env_state& s, MDB_txn* txn, write_batch::op o, const env_state::long_route& r,
                      const char*& call) {
  const detail::placement_router::target t = s.single() ? detail::placement_router::target{} : s.router.route(o.key);
  const MDB_dbi to = s.dbis[t.to];
  if (o.kind == write_batch::op_kind::erase || !r.encode) {
    if (const int rc = erase_long_in(s, txn, to, o.key, r, call); rc != MDB_SUCCESS) return rc;
    if (t.also != detail::placement_router::none) {
      if (const int rc = erase_long_in(s, txn, s.dbis[t.also], o.key, r, call); rc != MDB_SUCCESS) return rc;
    }
    if (o.kind == write_batch::op_kind::erase) return MDB_SUCCESS;
    MDB_val k{o.key.size(), const_cast<char*>(o.key.data())};
    MDB_val v{o.value.size(), const_cast<char*>(o.value.data())};
    call = "mdb_put";
    return ::mdb_put(txn, to, &k, &v, 0);  // stored plainly: the route does not encode
  }
  scoped_cursor c;
  call = "mdb_cursor_open";
  if (const int rc = ::mdb_cursor_open(txn, to, &c.c); rc != MDB_SUCCESS) {
    c.c = nullptr;
    return rc;
  }
  long_match m;
  call = "mdb_cursor_get";
  if (const int rc = find_long(c.c, o.key, m); rc != MDB_SUCCESS) return rc;
  if (!m.found) {
    std::uint64_t tie = 0;
    if (m.any && m.last_tie != UINT64_MAX) {
      tie = m.last_tie + 1;
    } else if (m.any) {
      if (const int rc = free_tie(c.c, o.key, tie); rc != MDB_SUCCESS) return rc;
    }
    std::memcpy(m.key, o.key.data(), long_head);
    m.key[long_head] = long_marker;
    for (std::size_t i = 0; i < long_tie; ++i)
      m.key[long_stored - 1 - i] = static_cast<char>(static_cast<unsigned char>(tie >> (8 * i)));
  }
  const std::string_view rest = o.key.substr(long_head);
  MDB_val k{long_stored, m.key};
  MDB_val v{long_len + rest.size() + o.value.size(), nullptr};
  call = "mdb_put";
  if (const int rc = ::mdb_put(txn, to, &k, &v, MDB_RESERVE); rc != MDB_SUCCESS) return rc;
  char* out = static_cast<char*>(v.mv_data);
  for (std::size_t i = 0; i < long_len; ++i)
    out[i] = static_cast<char>(static_cast<unsigned char>(rest.size() >> (8 * (long_len - 1 - i))));
  if (!rest.empty()) std::memcpy(out + long_len, rest.data(), rest.size());
  if (!o.value.empty()) std::memcpy(out + long_len + rest.size(), o.value.data(), o.value.size());
  if (r.plain_too && o.key.size() <= s.max_key) {  // a plain copy left by the schema before (ks::migrate)
    MDB_val pk{o.key.size(), const_cast<char*>(o.key.data())};
    call = "mdb_del";
    const int rc = ::mdb_del(txn, to, &pk, nullptr);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return rc;
  }
  return MDB_SUCCESS;
}

// The bounds a long_key_cursor checks itself: a bound longer than long_head in a keyspace with
// long keys, which the LMDB cursors were given as its group's (raw_range).
struct long_bounds {
  std::string lower;  // when lower_cut: the cursor's lower bound
  std::string upper;  // when upper_cut: the cursor's upper bound
  std::string upper_raw;  // the group bound the LMDB cursors got for upper ("" = none)
  bool lower_cut = false;
  bool upper_cut = false;
};

// The range of stored keys a cursor over r reads: r, with a bound longer than long_head in a
// keyspace with long keys replaced by its group's: the lower one by its first long_head bytes, the
// upper one by the least key after every key starting with them. The result may view b.
inline key_range raw_range(const env_state& s, const key_range& r, long_bounds& b) {
  key_range out = r;
  if (long_route_of(s, r.lower) != nullptr) {
    b.lower.assign(r.lower);
    b.lower_cut = true;
    out.lower = r.lower.substr(0, long_head);
  }
  if (long_route_of(s, r.upper) != nullptr) {
    b.upper.assign(r.upper);
    b.upper_cut = true;
    b.upper_raw.assign(r.upper.substr(0, long_head));
    while (!b.upper_raw.empty() && static_cast<unsigned char>(b.upper_raw.back()) == 0xff) b.upper_raw.pop_back();
    if (!b.upper_raw.empty()) b.upper_raw.back() = static_cast<char>(static_cast<unsigned char>(b.upper_raw.back()) + 1);
    out.upper = b.upper_raw;  // "" (no upper bound) when the bytes are all 0xFF
  }
  return out;
}

// A cursor over stored keys (Sub, over raw_range(r)) yielding the full keys of range r in exact
// order: the groups of long keys read whole, decoded and sorted; keys outside r's own bounds (at
// a cut bound) stepped over. Without long keys (constructed from Sub alone) it is Sub.
template <class Sub>
class long_key_cursor {
 public:
  explicit long_key_cursor(Sub inner) : inner_(std::move(inner)) {}
  long_key_cursor(Sub inner, const env_state* s, long_bounds b, bool reverse)
      : inner_(std::move(inner)), st_(s), b_(std::move(b)), reverse_(reverse) {
    settle();
  }
  long_key_cursor(long_key_cursor&&) noexcept = default;
  long_key_cursor& operator=(long_key_cursor&&) noexcept = default;

  KEYSCHEMA_ALWAYS_INLINE bool valid() const noexcept { return in_group_ || inner_.valid(); }
  KEYSCHEMA_ALWAYS_INLINE std::string_view key() const noexcept {
    return in_group_ ? std::string_view(group_[pos_].key) : inner_.key();
  }
  KEYSCHEMA_ALWAYS_INLINE std::string_view value() const noexcept {
    return in_group_ ? std::string_view(group_[pos_].value) : inner_.value();
  }
  KEYSCHEMA_ALWAYS_INLINE void next() {
    if (st_ == nullptr) [[likely]] {
      inner_.next();
      return;
    }
    next_long();
  }

  // The LMDB cursor (of the placement the cursor reads at the moment), for power users.
  auto native() const noexcept
    requires requires(const Sub& c) { c.native(); }
  {
    return inner_.native();
  }

 private:
  struct entry {
    std::string key;
    std::string value;
  };

  void next_long() {
    if (in_group_) {
      if (++pos_ < group_.size()) return;
      in_group_ = false;
      group_.clear();
    } else {
      inner_.next();
    }
    settle();
  }

  bool in_range(std::string_view k) const noexcept {
    return (!b_.lower_cut || k >= std::string_view(b_.lower)) && (!b_.upper_cut || k < std::string_view(b_.upper));
  }

  // Moves to the first key at or after the inner cursor's position that lies in the range: a plain
  // key as it is, or the group of a long one, read whole.
  void settle() {
    while (inner_.valid()) {
      const std::string_view k = inner_.key();
      if (k.size() > long_head && long_route_of(*st_, k) != nullptr) {
        load_group(k);
        if (!group_.empty()) {
          in_group_ = true;
          pos_ = 0;
          return;
        }
        continue;  // inner_ is past the group
      }
      if (in_range(k)) return;
      inner_.next();
    }
  }

  // Reads the group of k (the stored keys longer than long_head starting with its first
  // long_head bytes) from the inner cursor, which ends past it, keeping the keys in range,
  // sorted in the cursor's direction.
  void load_group(std::string_view first) {
    head_.assign(first.substr(0, long_head));
    for (; inner_.valid(); inner_.next()) {
      const std::string_view raw = inner_.key();
      if (raw.size() <= long_head || !raw.starts_with(head_)) break;
      entry e;
      if (is_long_form(raw)) {
        std::string_view rest, v;
        if (!split_long_value(inner_.value(), rest, v)) throw_malformed(st_->path, "mdb_cursor_get");
        e.key.reserve(long_head + rest.size());
        e.key.assign(head_);
        e.key.append(rest);
        e.value.assign(v);
      } else {  // stored plainly (ks::migrate)
        e.key.assign(raw);
        e.value.assign(inner_.value());
      }
      if (in_range(e.key)) group_.push_back(std::move(e));
    }
    if (reverse_) {
      std::sort(group_.begin(), group_.end(), [](const entry& a, const entry& b) { return a.key > b.key; });
    } else {
      std::sort(group_.begin(), group_.end(), [](const entry& a, const entry& b) { return a.key < b.key; });
    }
  }

  Sub inner_;
  const env_state* st_ = nullptr;  // nullptr: no keyspace has long keys
  long_bounds b_;
  bool reverse_ = false;
  bool in_group_ = false;
  std::size_t pos_ = 0;
  std::vector<entry> group_;
  std::string head_;
};

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
