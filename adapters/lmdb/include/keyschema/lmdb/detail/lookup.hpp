// keyschema/lmdb/detail/lookup.hpp: point reads, lmdb_detail::lookup() and read_lease.
//
// lookup() is mdb_get in a given transaction, copying the value out of the memory map; it serves
// lmdb_backend::get() and lmdb_write_transaction::get(). guards_hold() checks the conditions of a
// guarded write (backend_with_write_guards) in the write transaction; guards_hold_since() skips
// that when no commit came after this process's last guarded one (remember_guards). read_lease holds a short read
// transaction for a get() without a snapshot: the calling thread's own (thread_reader.hpp) or a
// pooled one.
//
// Thread-safety: lookup() is called with the transaction's lock held when the transaction is a
// shared snapshot's (txn_handle::mu); a read_lease is a scope guard of one thread.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/lmdb/detail/env_state.hpp>
#include <keyschema/lmdb/detail/long_keys.hpp>
#include <keyschema/lmdb/detail/status.hpp>
#include <keyschema/write_batch.hpp>

#include <lmdb.h>

#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

// Throws the backend_error of a failed mdb_get (out of line: lookup() stays small enough to be
// inlined into every point read).
[[noreturn, gnu::noinline, gnu::cold]] inline void throw_get_failed(const env_state& s, int rc) {
  lmdb_detail::throw_status("keyschema::lmdb_backend::get: read failed on " + s.path, "mdb_get", rc);
}

// mdb_get of key in dbi; value is assigned only when the key is found (a miss or an error leaves
// it unchanged, as every lookup here does: lmdb_backend's get_keeps_value_on_miss).
KEYSCHEMA_ALWAYS_INLINE bool lookup_in(const env_state& s, MDB_txn* txn, MDB_dbi dbi, std::string_view key,
                                       std::string& value) {
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{0, nullptr};
  const int rc = ::mdb_get(txn, dbi, &k, &v);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != MDB_SUCCESS) [[unlikely]] throw_get_failed(s, rc);
  value.assign(static_cast<const char*>(v.mv_data), v.mv_size);
  return true;
}

// Whether lookup() reads key plainly in the main database: 1 to env_state::plain_max bytes (no
// placement, and not a key a keyspace with long keys may hold in the long form).
KEYSCHEMA_ALWAYS_INLINE bool plain_key(const env_state& s, std::string_view key) noexcept {
  return key.size() - 1 < s.plain_max;  // an empty key wraps around: not plain
}

// Whether key can be stored at all: not empty, and at most max_key bytes unless a keyspace with
// long keys holds it (lmdb_backend::get answers "absent" without a transaction otherwise).
inline bool storable_key(const env_state& s, std::string_view key) noexcept {
  return !key.empty() && (key.size() <= s.max_key || long_route_of(s, key) != nullptr);
}

// lookup() of a key that is not plain_key(): every route.
[[gnu::noinline]] inline bool lookup_routed(const env_state& s, MDB_txn* txn, std::string_view key,
                                            std::string& value) {
  if (may_be_long(s, key.size())) {
    if (const env_state::long_route* r = long_route_of(s, key)) return lookup_long(s, txn, key, *r, value);
  }
  if (key.empty() || key.size() > s.max_key) return false;
  if (s.single()) return lookup_in(s, txn, s.dbi, key, value);
  const detail::placement_router::target t = s.router.route(key);
  if (s.present[t.to] && lookup_in(s, txn, s.dbis[t.to], key, value)) return true;
  return t.also != detail::placement_router::none && s.present[t.also] &&
         lookup_in(s, txn, s.dbis[t.also], key, value);
}

// Reads key in the named database of its placement (and of the placement it is moving from,
// during ks::migrate), or in the main database when nothing is placed.
// A long key of a keyspace with long keys is searched in its group (long_keys.hpp).
// The usual key (plain_key) is read here, any other by lookup_routed.
KEYSCHEMA_ALWAYS_INLINE bool lookup(const env_state& s, MDB_txn* txn, std::string_view key, std::string& value) {
  if (plain_key(s, key)) [[likely]] return lookup_in(s, txn, s.dbi, key, value);
  return lookup_routed(s, txn, key, value);
}

// Whether the condition c holds, given whether its key was found and, if so, its value.
inline bool guard_holds(const write_guard& c, bool found, const MDB_val& v) noexcept {
  if (found != c.exists) return false;
  return !found || std::string_view(static_cast<const char*>(v.mv_data), v.mv_size) == c.value;
}

// Whether every condition of g (backend.hpp, write_guard) holds in txn, compared in the map
// without a copy. One condition: one mdb_get. Several: one cursor, positioned by one search on
// the first condition's key and moved to each next one by at most guard_steps steps (keys
// guarded together lie together: the store's schema and migration records are neighbours at the
// end of the tree, with at most the prepared records between them), else by another search; so
// the store's two conditions cost one search and one step.
// Errors: backend_error "mdb_get" / "mdb_cursor_open" / "mdb_cursor_get".
inline bool guards_hold(const env_state& s, MDB_txn* txn, write_guards g) {
  if (g.size() <= 1) {
    for (const write_guard& c : g) {
      MDB_val k{c.key.size(), const_cast<char*>(c.key.data())};
      MDB_val v{0, nullptr};
      const int rc = c.key.empty() || c.key.size() > s.max_key ? MDB_NOTFOUND : ::mdb_get(txn, s.dbi, &k, &v);
      if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) [[unlikely]] throw_get_failed(s, rc);
      if (!guard_holds(c, rc == MDB_SUCCESS, v)) return false;
    }
    return true;
  }
  constexpr int guard_steps = 4;
  MDB_cursor* cur = nullptr;
  const auto fail = [&](const char* call, int rc) {
    lmdb_detail::throw_status("keyschema::lmdb_backend: cannot read the guarded keys of " + s.path, call, rc);
  };
  if (const int rc = ::mdb_cursor_open(txn, s.dbi, &cur); rc != MDB_SUCCESS) fail("mdb_cursor_open", rc);
  struct closer {
    MDB_cursor* c;
    ~closer() { ::mdb_cursor_close(c); }
  } close{cur};
  MDB_val k{0, nullptr}, v{0, nullptr};
  bool positioned = false;  // the cursor is on an entry (k, v)
  for (const write_guard& c : g) {
    bool found = false;
    bool located = false;
    if (c.key.empty() || c.key.size() > s.max_key) {
      located = true;  // LMDB holds no such key
    } else if (positioned) {
      bool back = false;
      for (int step = 0; step <= guard_steps; ++step) {
        const std::string_view here(static_cast<const char*>(k.mv_data), k.mv_size);
        if (here == c.key) {
          found = located = true;
          break;
        }
        if (step > 0 && (c.key < here) != back) {
          located = true;  // stepped past it: absent
          break;
        }
        back = c.key < here;
        if (step == guard_steps) break;
        const int rc = ::mdb_cursor_get(cur, &k, &v, back ? MDB_PREV : MDB_NEXT);
        if (rc == MDB_NOTFOUND) {
          located = true;  // past the first or last entry: absent
          positioned = false;
          break;
        }
        if (rc != MDB_SUCCESS) [[unlikely]] fail("mdb_cursor_get", rc);
      }
    }
    if (!located) {
      k = MDB_val{c.key.size(), const_cast<char*>(c.key.data())};
      const int rc = ::mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
      if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) [[unlikely]] fail("mdb_cursor_get", rc);
      found = positioned = rc == MDB_SUCCESS;
    }
    if (!guard_holds(c, found, v)) return false;
  }
  return true;
}

// Whether g are the conditions env_state::guards remembers (same order, keys, values, kinds).
inline bool same_guards(const env_state& s, write_guards g) noexcept {
  if (s.guards.size() != g.size()) return false;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (s.guards[i].exists != g[i].exists || s.guards[i].key != g[i].key || s.guards[i].value != g[i].value) {
      return false;
    }
  }
  return true;
}

// Whether every condition of g holds in the write transaction txn: without reading anything when
// g are the conditions of this process's last guarded commit (same: same_guards(s, g)) and txn
// is the transaction right after it (env_state::guards), otherwise by guards_hold.
// REQUIRES: write_mu held.
inline bool guards_hold_since(const env_state& s, MDB_txn* txn, write_guards g, bool same) {
  if (g.empty()) return true;
  if (same && s.guards_txn != 0 && ::mdb_txn_id(txn) == s.guards_txn + 1) return true;
  return guards_hold(s, txn, g);
}

// After the commit of transaction id, which held the conditions g (same: same_guards(s, g)) and
// applied batch: remembers g for guards_hold_since, or forgets what it remembered when batch
// wrote one of g's keys. REQUIRES: write_mu held.
inline void remember_guards(env_state& s, std::size_t id, write_guards g, const write_batch& batch, bool same) {
  if (g.empty()) return;  // an unguarded commit: the next transaction id differs anyway
  for (write_batch::op o : batch) {
    for (const write_guard& c : g) {
      if (o.key == c.key) {
        s.guards_txn = 0;
        return;
      }
    }
  }
  if (!same) {
    s.guards.resize(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      s.guards[i].key.assign(g[i].key);
      s.guards[i].value.assign(g[i].value);
      s.guards[i].exists = g[i].exists;
    }
  }
  s.guards_txn = id;
}

// A short read transaction, released at scope exit: the calling thread's own reader
// (env_state::enter_thread_reader), or one from the pool when that is not available.
struct read_lease {
  KEYSCHEMA_ALWAYS_INLINE explicit read_lease(env_state& s) : st(s), r(s.enter_thread_reader()) {
    txn = r != nullptr ? r->txn : s.acquire_read_outlined();
  }
  read_lease(const read_lease&) = delete;
  read_lease& operator=(const read_lease&) = delete;
  KEYSCHEMA_ALWAYS_INLINE ~read_lease() {
    if (r != nullptr) [[likely]] {
      st.leave_thread_reader(*r);
    } else {
      st.release_read_outlined(txn);
    }
  }
  env_state& st;
  thread_reader* r;
  MDB_txn* txn;
};

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
