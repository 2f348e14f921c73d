// keyschema/detail/store/derived_writes.hpp: resolving adds and maintaining derived keyspaces.
//
// Some writes depend on the state they are applied to: an add (counters.hpp) writes the stored
// value plus a delta; a put or erase of a record of a keyspace that others derive from (a count,
// an index, a sum, owned entries: each a derivation, derivation.hpp) changes them. They are
// resolved here, in one place, against a write_overlay: the writes decided so far (a pending_map,
// key -> value or erasure) laid over a base state read through a function (the engine's write
// transaction, or the latest committed state while the store's writer lock is held, or a
// transaction's snapshot).
//   - A store_transaction resolves each write as it is made, over its own pending writes.
//   - A store_batch records its adds (pending_adds) beside its byte-level write_batch; at commit
//     the store replays the batch's operations in order into a write_overlay (resolve_batch) and
//     writes what the overlay holds: one operation per key, its last state, in one atomic write
//     (the backend applies a batch atomically, so the order of distinct keys does not matter).
// The derived kinds are not named here: derived_writes folds over the schema's keyspaces whose
// value marker is a derivation and calls its hooks. Backends see ordinary write_batches: they
// know nothing of adds or derivations.
//
// Thread-safety: the functions are stateless; a write_overlay or pending_adds belongs to one
// thread. Callers hold the store's writer lock while resolving.
#pragma once

#include <keyschema/derivation.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/detail/store/overlay_cursor.hpp>
#include <keyschema/detail/store/transaction_writes.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fingerprint.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/value_codec.hpp>
#include <keyschema/write_batch.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// --- what a keyspace is ---------------------------------------------------------------------------
// KS is a derived keyspace declared through the derivation hooks (derivation.hpp).
template <class KS>
inline constexpr bool is_derived_keyspace = derivation<typename KS::value_marker>;

// D is a derived keyspace (derivation.hpp) whose source is R.
template <class D, class R>
constexpr bool derives_from() {
  if constexpr (is_derived_keyspace<D>)
    return std::is_same_v<typename D::value_marker::source_keyspace, R>;
  else
    return false;
}

// KS's derivation checks each write of KS itself (its marker has on_write<KS>).
template <class KS>
constexpr bool guards_own_writes() {
  if constexpr (is_derived_keyspace<KS>)
    return requires(derivation_context& cx, std::string_view key, const typename KS::key_type& k,
                    const std::string_view* v) { KS::value_marker::template on_write<KS>(cx, key, k, v); };
  else
    return false;
}

// How messages name D's kind: its marker's `kind` ("a declared count", "an index"), or "a
// derived keyspace".
template <class D>
constexpr std::string_view derivation_kind() {
  if constexpr (requires { std::string_view(D::value_marker::kind); })
    return D::value_marker::kind;
  else
    return "a derived keyspace";
}

// The operations one write of a record of R adds for D (derivation.hpp's ops_per_source_write).
template <class D, class R>
constexpr std::size_t derivation_ops() {
  if constexpr (derives_from<D, R>())
    return static_cast<std::size_t>(D::value_marker::ops_per_source_write);
  else
    return 0;
}

// KS is maintained by the store (a derivation declared maintained: a declared count, an index,
// a sum): not written directly.
template <class KS>
constexpr bool maintained_derivation() {
  if constexpr (is_derived_keyspace<KS>)
    return static_cast<bool>(KS::value_marker::maintained);
  else
    return false;
}
template <class KS>
inline constexpr bool is_maintained_keyspace = maintained_derivation<KS>();

// KS's value can be added to: an integer type other than bool.
template <class V>
inline constexpr bool addable_value = std::integral<V> && !std::same_as<V, bool> && value_encodable<V>;


// A write_batch holding the overlay's writes, one per key.
template <class = void>
inline void overlay_to_batch(const pending_map& writes, write_batch& out) {
  // One allocation for the whole batch: growing it value by value copies what it holds at each
  // doubling, which costs more than the write itself for large values (64 KiB chunks).
  std::size_t bytes = out.byte_size();
  for (const auto& [k, v] : writes) bytes += k.size() + (v ? v->size() : 0);
  out.reserve(out.size() + writes.size(), bytes);
  for (const auto& [k, v] : writes) {
    if (v)
      out.put(k, *v);
    else
      out.erase(k);
  }
}

// --- the adds of a batch ----------------------------------------------------------------------------

// The adds recorded by a store_batch: key, delta, where among the batch's operations (before the
// operation at `position`) and how to apply it (typed by keyspace). A template (pending_adds below
// is its one specialization) only so that a translation unit that never batches an add does not
// instantiate its std::vector code.
template <class = void>
class basic_pending_adds {
 public:
  using apply_fn = void (*)(write_overlay&, std::string_view key, std::int64_t delta);
  struct add_op {
    std::size_t position;
    std::string_view key;
    std::int64_t delta;
    apply_fn apply;
  };

  // Appends an add whose key write_key(buf) appends to a buffer. If it throws, nothing is added.
  template <class KeyWriter>
  void emplace(std::size_t position, KeyWriter&& write_key, std::int64_t delta, apply_fn apply) {
    const std::size_t mark = keys_.size();
    try {
      write_key(keys_);
      adds_.push_back(rec{position, mark, keys_.size() - mark, delta, apply});
    } catch (...) {
      keys_.resize(mark);
      throw;
    }
  }
  std::size_t size() const noexcept { return adds_.size(); }
  bool empty() const noexcept { return adds_.empty(); }
  void clear() noexcept {
    keys_.clear();
    adds_.clear();
  }
  // REQUIRES: i < size().
  add_op operator[](std::size_t i) const noexcept {
    const rec& r = adds_[i];
    return add_op{r.position, std::string_view(keys_).substr(r.offset, r.len), r.delta, r.apply};
  }

 private:
  struct rec {
    std::size_t position;
    std::size_t offset;
    std::size_t len;
    std::int64_t delta;
    apply_fn apply;
  };
  std::string keys_;
  std::vector<rec> adds_;
};
using pending_adds = basic_pending_adds<>;

// --- the schema's derived writes --------------------------------------------------------------------

// Throws key_error when b puts or erases a reserved key (its first byte 0xff: the schema record,
// a migration's progress, prepared transactions), which only the store writes: written raw, the
// store would read back a record it did not make. Called with store::write's raw batches.
template <class = void>
inline void refuse_reserved(std::string_view what, const write_batch& b) {
  for (const write_batch::op o : b) {
    if (o.key.empty() || static_cast<unsigned char>(o.key.front()) != 0xff) continue;
    throw key_error(std::string(what) + (o.kind == write_batch::op_kind::put ? " puts" : " erases") +
                    " the reserved key " + describe_key(o.key) +
                    ": keys starting with 0xff hold the store's own records (schema, migration, prepared "
                    "transactions) and are written by the store only. Nothing was written");
  }
}

// Throws key_error when b puts a key that starts like a key of a keyspace of Schema but does not
// decode as one (malformed, or cut short: key_codec::decode's errors): every scan and range erase
// of that keyspace would refuse it. Erases pass: erasing such a key is how it is removed. Called
// with store::write's raw batches.
template <class Schema>
void refuse_undecodable(std::string_view what, const write_batch& b) {
  for (const write_batch::op o : b) {
    if (o.kind != write_batch::op_kind::put) continue;
    for_each_keyspace<Schema>([&]<class KS>(std::type_identity<KS>) {
      try {
        (void)key_codec<KS>::matches(o.key);
      } catch (const decode_error& e) {
        throw key_error(std::string(what) + " puts key " + describe_key(o.key) + ", which starts like a key of keyspace '" +
                        std::string(KS::name) + "' but does not decode as one, so every scan of '" +
                        std::string(KS::name) + "' would refuse it (" + e.what() +
                        "). Write it through the keyspace, or under a key of no keyspace. Nothing was written");
      }
    });
  }
}

template <class Schema>
struct derived_writes;

template <class... K>
struct derived_writes<schema<K...>> {
  // Some keyspace of the schema derives from R.
  template <class R>
  static constexpr bool has_dependents = (derives_from<K, R>() || ...);
  // A write of a key of R is resolved: R has dependents, or R's derivation checks R's writes.
  template <class R>
  static constexpr bool watched = has_dependents<R> || guards_own_writes<R>();
  // The most operations one write of a record of R becomes, as its derivations declare them:
  // itself, plus ops_per_source_write of each derivation of R (a count 1, an index 2, an owned
  // keyspace at least 1). Sizes range-erase chunks under a backend's max_ops_per_write.
  template <class R>
  static constexpr std::size_t ops_per_write =
      1 + (derivation_ops<K, R>() + ... + std::size_t{0});
  // Some write of the schema is resolved: a keyspace of it is derived.
  static constexpr bool any = (is_derived_keyspace<K> || ...);

  // Whether writing b needs resolving: some operation writes a keyspace with dependents.
  static bool needs(const write_batch& b) {
    if constexpr (!any) {
      (void)b;
      return false;
    } else {
      for (const write_batch::op o : b) {
        if ((watched_key<K>(o.key) || ...)) return true;
      }
      return false;
    }
  }

  // Whether writing key needs resolving (needs() of a batch is whether any of its keys does).
  static bool needs_key(std::string_view key) {
    if constexpr (!any) {
      (void)key;
      return false;
    } else {
      return (watched_key<K>(key) || ...);
    }
  }

  // Whether key is a key of a keyspace the store maintains (a maintained derivation).
  static bool maintained_key(std::string_view key) {
    return (maintained_match<K>(key) || ...);
  }

  // Throws key_error when b puts or erases a key of a keyspace the store maintains (a declared
  // count, an index, a sum): written directly, it would no longer equal what it derives from. what
  // opens the message ("keyschema::store::write: the raw write_batch"). Nothing is written.
  static void refuse_maintained(std::string_view what, const write_batch& b) {
    if constexpr (any) {
      for (const write_batch::op o : b) (void)(refuse_key<K>(what, o) || ...);
    } else {
      (void)what;
      (void)b;
    }
  }

  // Writes the record key (value nullptr: erases it) with what derives from it: the
  // derivation_context::record_writer of the schema's derivations.
  static void write_record(write_overlay& st, std::string_view key, const std::string_view* value) {
    if (value != nullptr)
      put(st, key, *value);
    else
      erase(st, key);
  }

  // Puts key -> value in st, first updating what depends on it.
  static void put(write_overlay& st, std::string_view key, std::string_view value) {
    if constexpr (any) (void)(on_write<K>(st, key, &value) || ...);
    st.put(key, value);
  }
  // Erases key in st, first updating what depends on it.
  static void erase(write_overlay& st, std::string_view key) {
    if constexpr (any) (void)(on_write<K>(st, key, nullptr) || ...);
    st.erase(key);
  }

  // Adds delta to the value of key (keyspace KS) in st. Errors: overflow_error, decode_error;
  // st is unchanged then.
  template <class KS>
  static void add(write_overlay& st, std::string_view key, std::int64_t delta) {
    using V = typename KS::value_type;
    V base = 0;
    std::string cur;
    if (st.get(key, cur)) base = decode_value<KS>(key, cur);
    V sum{};
    if (__builtin_add_overflow(base, delta, &sum)) {
      throw overflow_error("keyschema::add: keyspace '" + std::string(KS::name) + "', key " + describe_key(key) +
                           ": the stored value " + std::to_string(base) + " plus " + std::to_string(delta) +
                           " does not fit the value type [" + std::to_string(std::numeric_limits<V>::min()) + ", " +
                           std::to_string(std::numeric_limits<V>::max()) + "]; nothing was written");
    }
    std::string enc;
    value_traits<V>::encode(enc, sum);
    put(st, key, enc);
  }

  // Adds delta to the value of key in st when key is a key of a keyspace whose value is an integer
  // and that the store does not maintain; returns false, doing nothing, otherwise. Errors: as add.
  static bool add_any(write_overlay& st, std::string_view key, std::int64_t delta) {
    return (add_if<K>(st, key, delta) || ...);
  }

  // Adds to st what the record (rk, v) of R contributes to D, a maintained derivation of R (its
  // rebuild hook: 1 to a count, an index entry, a number to a sum). Rebuilds D from R's records
  // (ks::migrate), over an st in which D starts empty. Errors: what the hook throws
  // (overflow_error, decode_error, schema_error), what reading the base throws.
  template <class D, class R>
  static void derive_record(write_overlay& st, const typename R::key_type& rk, const typename R::value_type& v) {
    static_assert(derives_from<D, R>(), "derive_record: D does not derive from R");
    derivation_context cx(st, &write_record);
    D::value_marker::template rebuild<D>(cx, rk, v);
  }

  // The apply function a batch records for an add to KS.
  template <class KS>
  static void apply_add(write_overlay& st, std::string_view key, std::int64_t delta) {
    add<KS>(st, key, delta);
  }

 private:
  template <class M>
  static bool maintained_match(std::string_view key) {
    if constexpr (is_maintained_keyspace<M>)
      return key_codec<M>::matches(key);
    else
      return false;
  }

  template <class KS>
  static bool add_if(write_overlay& st, std::string_view key, std::int64_t delta) {
    if constexpr (addable_value<typename KS::value_type> && !is_maintained_keyspace<KS>) {
      if (!key_codec<KS>::matches(key)) return false;
      add<KS>(st, key, delta);
      return true;
    } else {
      (void)st;
      (void)key;
      (void)delta;
      return false;
    }
  }

  template <class M>
  static bool refuse_key(std::string_view what, write_batch::op o) {
    if constexpr (is_maintained_keyspace<M>) {
      if (!key_codec<M>::matches(o.key)) return false;
      std::string msg(what);
      msg += o.kind == write_batch::op_kind::put ? " puts" : " erases";
      msg += " key " + describe_key(o.key) + " of keyspace '" + std::string(M::name) + "', ";
      std::string text;
      string_sink sink{&text};
      M::value_marker::visit_layout(sink);
      using R = typename M::value_marker::source_keyspace;
      msg += std::string(derivation_kind<M>()) + " (" + text +
             ") the store maintains: written directly it would differ from the records it derives from. "
             "Write the records of '" + std::string(R::name) + "' instead; what derives from them follows";
      throw key_error(msg + ". Nothing was written");
    } else {
      (void)what;
      (void)o;
      return false;
    }
  }

  template <class R>
  static bool watched_key(std::string_view key) {
    if constexpr (watched<R>)
      return key_codec<R>::matches(key);
    else
      return false;
  }

  // When key is R's and R has dependents: updates them for a write of new_value (nullptr: an
  // erase) and returns true.
  template <class R>
  static bool on_write(write_overlay& st, std::string_view key, const std::string_view* new_value) {
    if constexpr (!watched<R>) {
      return false;
    } else {
      typename R::key_type k;
      if (!key_codec<R>::decode(key, k)) return false;
      if constexpr (guards_own_writes<R>()) {
        derivation_context cx(st, &write_record);
        R::value_marker::template on_write<R>(cx, key, k, new_value);
      }
      if constexpr (has_dependents<R>) {
        // Each derivation of R, in schema order, sees the record's old value and its new one.
        std::string old;
        const bool existed = st.get(key, old);
        const std::string_view old_view(old);
        const source_write<R> w{key, k, existed ? &old_view : nullptr, new_value};
        derivation_context cx(st, &write_record);
        (source_write_to<K, R>(cx, w), ...);
      }
      return true;
    }
  }

  template <class D, class R>
  static void source_write_to(derivation_context& cx, const source_write<R>& w) {
    if constexpr (derives_from<D, R>()) {
      D::value_marker::template on_source_write<D>(cx, w);
    } else {
      (void)cx;
      (void)w;
    }
  }
};

// Replays a batch's operations and adds, in order, into st (see the top of this file).
// Errors: those of derived_writes::add (overflow_error, decode_error) and of reading the base.
template <class Schema>
void resolve_batch(write_overlay& st, const write_batch& ops, const pending_adds* adds) {
  std::size_t a = 0;
  const std::size_t na = adds ? adds->size() : 0;
  for (std::size_t i = 0;; ++i) {
    for (; a < na && (*adds)[a].position == i; ++a) {
      const pending_adds::add_op op = (*adds)[a];
      op.apply(st, op.key, op.delta);
    }
    if (i == ops.size()) break;
    const write_batch::op o = ops[i];
    if (o.kind == write_batch::op_kind::put)
      derived_writes<Schema>::put(st, o.key, o.value);
    else
      derived_writes<Schema>::erase(st, o.key);
  }
}

// The schema check of a derived keyspace D (derivation.hpp's check<Schema, D>).
template <class Schema, class D>
constexpr bool check_derivation() {
  if constexpr (is_derived_keyspace<D>)
    return D::value_marker::template check<Schema, D>();
  else
    return true;
}

// The checks of the schema's derived keyspaces (declared counts, indexes, sums, owned
// keyspaces); each failure instantiates a diagnostic naming the keyspaces. Called by
// keyschema::store.
template <class Schema>
struct derived_checks;
template <class... K>
struct derived_checks<schema<K...>> {
  static constexpr bool value = (check_derivation<schema<K...>, K>() && ...);
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
