// keyschema/detail/store/derived_writes.hpp: resolving adds and maintaining declared counts.
//
// Some writes depend on the state they are applied to: an add (counters.hpp) writes the stored
// value plus a delta; a put or erase of a record of a counted keyspace changes its count only
// when it creates or removes the record. They are resolved here, in one place, against a
// write_overlay: the writes decided so far (a pending_map, key -> value or erasure) laid over a
// base state read through a function (the engine's write transaction, or the latest committed
// state while the store's writer lock is held, or a transaction's snapshot).
//   - A store_transaction resolves each write as it is made, over its own pending writes.
//   - A store_batch records its adds (pending_adds) beside its byte-level write_batch; at commit
//     the store replays the batch's operations in order into a write_overlay (resolve_batch) and
//     writes what the overlay holds: one operation per key, its last state, in one atomic write
//     (the backend applies a batch atomically, so the order of distinct keys does not matter).
// Backends see ordinary write_batches: they know nothing of adds or counts.
//
// Thread-safety: the functions are stateless; a write_overlay or pending_adds belongs to one
// thread. Callers hold the store's writer lock while resolving.
#pragma once

#include <keyschema/counters.hpp>
#include <keyschema/derivation.hpp>
#include <keyschema/fingerprint.hpp>
#include <keyschema/indexes.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/detail/store/overlay_cursor.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fixed_string.hpp>
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

template <class Marker>
struct count_marker : std::false_type {};
template <class Counted, std::size_t N>
struct count_marker<count_of<Counted, N>> : std::true_type {};

// KS is a declared count (its value is count_of<...>).
template <class KS>
inline constexpr bool is_count_keyspace = count_marker<typename KS::value_marker>::value;

// C is a count of R.
template <class C, class R>
constexpr bool counts() {
  if constexpr (is_count_keyspace<C>)
    return std::is_same_v<typename C::value_marker::counted_keyspace, R>;
  else
    return false;
}

// I is an index of R.
template <class I, class R>
constexpr bool indexes() {
  if constexpr (is_index_keyspace<I>)
    return std::is_same_v<typename I::value_marker::indexed_keyspace, R>;
  else
    return false;
}

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

// The operations one write of a record of R adds for D (derivation.hpp's ops_per_source_write).
template <class D, class R>
constexpr std::size_t derivation_ops() {
  if constexpr (derives_from<D, R>())
    return static_cast<std::size_t>(D::value_marker::ops_per_source_write);
  else
    return 0;
}

// KS is maintained by the store (a declared count, an index, or a derivation declared
// maintained): not written directly.
template <class KS>
constexpr bool maintained_derivation() {
  if constexpr (is_derived_keyspace<KS>)
    return static_cast<bool>(KS::value_marker::maintained);
  else
    return false;
}
template <class KS>
inline constexpr bool is_maintained_keyspace =
    is_count_keyspace<KS> || is_index_keyspace<KS> || maintained_derivation<KS>();

// KS's value can be added to: an integer type other than bool.
template <class V>
inline constexpr bool addable_value = std::integral<V> && !std::same_as<V, bool> && value_encodable<V>;

// The adds of a store_transaction still recorded as deltas: key -> the sum of its deltas (see
// store_transaction::add).
using pending_deltas = std::map<std::string, std::int64_t, std::less<>>;

// A write_batch holding the overlay's writes, one per key.
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
// operation at `position`) and how to apply it (typed by keyspace).
class pending_adds {
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

// --- the schema's derived writes --------------------------------------------------------------------

// Throws key_error when b puts or erases a reserved key (its first byte 0xff: the schema record,
// a migration's progress, prepared transactions), which only the store writes: written raw, the
// store would read back a record it did not make. Called with store::write's raw batches.
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
  // R is counted by some keyspace of the schema.
  template <class R>
  static constexpr bool has_dependents =
      (counts<K, R>() || ...) || (indexes<K, R>() || ...) || (derives_from<K, R>() || ...);
  // A write of a key of R is resolved: R has dependents, or R's derivation checks R's writes.
  template <class R>
  static constexpr bool watched = has_dependents<R> || guards_own_writes<R>();
  // The most operations one write of a record of R becomes: itself, plus one per count of R (its
  // group's count changes) and two per index of R (the old entry erased, the new one put).
  // Sizes range-erase chunks under a backend's max_ops_per_write.
  template <class R>
  static constexpr std::size_t ops_per_write =
      1 + ((counts<K, R>() ? std::size_t{1} : std::size_t{0}) + ... + std::size_t{0}) +
      ((indexes<K, R>() ? std::size_t{2} : std::size_t{0}) + ... + std::size_t{0}) +
      (derivation_ops<K, R>() + ... + std::size_t{0});
  // Some write of the schema is resolved: a keyspace is maintained by the store or derived.
  static constexpr bool any = (is_maintained_keyspace<K> || ...) || (is_derived_keyspace<K> || ...);

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

  // Whether key is a key of a keyspace the store maintains (a declared count or an index).
  static bool maintained_key(std::string_view key) {
    return (maintained_match<K>(key) || ...);
  }

  // Throws key_error when b puts or erases a key of a keyspace the store maintains (a declared
  // count or an index): written directly, it would no longer equal what it derives from. what
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

  // Adds to st what the record (rk, v) of R contributes to D, a count or index of R: 1 to its
  // count, or its index entry. Rebuilds D from R's records (ks::migrate), over an st in which D
  // starts empty. Errors: overflow_error (a count past std::int64_t), decode_error, schema_error
  // (an index entry that does not carry the record's key fields: check_entry), what reading the
  // base throws.
  template <class D, class R>
  static void derive_record(write_overlay& st, const typename R::key_type& rk, const typename R::value_type& v) {
    if constexpr (counts<D, R>()) {
      bump<D>(st, rk, 1);
    } else if constexpr (derives_from<D, R>()) {
      derivation_context cx(st, &write_record);
      D::value_marker::template rebuild<D>(cx, rk, v);
    } else {
      static_assert(indexes<D, R>(), "derive_record: D is no count or index of R");
      apply_change<D, R>(st, derive_change<D, R>(rk, std::nullopt, std::optional<typename R::value_type>(v)));
    }
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
      if constexpr (maintained_derivation<M>()) {
        std::string text;
        string_sink sink{&text};
        M::value_marker::visit_layout(sink);
        using R = typename M::value_marker::source_keyspace;
        msg += "a derived keyspace (" + text + ") the store maintains: written directly it would differ from the "
               "records it derives from. Write the records of '" + std::string(R::name) + "' instead";
      } else if constexpr (is_count_keyspace<M>) {
        using R = typename M::value_marker::counted_keyspace;
        msg += "a declared count (count_of<" + std::string(R::name) +
               ">) the store maintains: written directly it would differ from the number of records it counts. "
               "Write the records of '" + std::string(R::name) + "' instead; their counts follow";
      } else {
        using R = typename M::value_marker::indexed_keyspace;
        msg += "an index (index_of<" + std::string(R::name) +
               ">) the store maintains: written directly it would differ from the records it indexes. "
               "Write the records of '" + std::string(R::name) + "' instead; their index entries follow";
      }
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
      if constexpr (!has_dependents<R>) return true;
      std::string old;
      const bool existed = st.get(key, old);
      const bool exists = new_value != nullptr;
      if constexpr ((derives_from<K, R>() || ...)) {
        // The derivations declared through derivation.hpp, in schema order.
        const std::string_view old_view(old);
        const source_write<R> w{key, k, existed ? &old_view : nullptr, new_value};
        derivation_context cx(st, &write_record);
        (source_write_to<K, R>(cx, w), ...);
      }
      if constexpr ((indexes<K, R>() || ...)) {
        // Values decoded and every index entry derived and checked before st changes: an error
        // (decode_error, schema_error, what Derive throws) leaves st as it was.
        std::optional<typename R::value_type> ov, nv;
        if (existed) ov.emplace(decode_value<R>(key, old));
        if (exists) nv.emplace(decode_value<R>(key, *new_value));
        const std::tuple<index_change_t<K, R>...> changes{derive_change<K, R>(k, ov, nv)...};
        if (existed != exists) ((counts<K, R>() ? bump<K>(st, k, exists ? 1 : -1) : void()), ...);
        [&]<std::size_t... J>(std::index_sequence<J...>) {
          (apply_change<K, R>(st, std::get<J>(changes)), ...);
        }(std::index_sequence_for<K...>{});
      } else {
        if (existed != exists) ((counts<K, R>() ? bump<K>(st, k, exists ? 1 : -1) : void()), ...);
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

  // What a write of a record of R changes in index I: the entry derived from the old value and
  // the one derived from the new value (std::nullopt: none); nothing when I is no index of R.
  template <class I, class R>
  using index_change_t = std::conditional_t<indexes<I, R>(),
                                            std::pair<std::optional<typename I::key_type>, std::optional<typename I::key_type>>,
                                            std::tuple<>>;

  // The change of index I for record key rk, from ov (the old value, if any) to nv (the new
  // value, if any), each derived entry checked (check_entry). Errors: schema_error, what Derive
  // throws.
  template <class I, class R>
  static index_change_t<I, R> derive_change(const typename R::key_type& rk,
                                            const std::optional<typename R::value_type>& ov,
                                            const std::optional<typename R::value_type>& nv) {
    if constexpr (indexes<I, R>()) {
      const typename I::value_marker::derive derive{};
      index_change_t<I, R> c;
      if (ov) c.first = derive(rk, *ov);
      if (nv) c.second = derive(rk, *nv);
      if (c.first) check_entry<I, R>(rk, *c.first);
      if (c.second) check_entry<I, R>(rk, *c.second);
      return c;
    } else {
      (void)rk;
      (void)ov;
      (void)nv;
      return {};
    }
  }

  // Replaces the old entry of the change c by its new one.
  template <class I, class R>
  static void apply_change(write_overlay& st, const index_change_t<I, R>& c) {
    if constexpr (indexes<I, R>()) {
      if (c.first == c.second) return;
      std::string ik;
      if (c.first) {
        key_codec<I>::encode(ik, *c.first);
        st.erase(ik);
      }
      if (c.second) {
        ik.clear();
        key_codec<I>::encode(ik, *c.second);
        st.put(ik, std::string_view());  // an index entry's value, std::tuple<>, encodes to nothing
      }
    } else {
      (void)st;
      (void)c;
    }
  }

  // Throws schema_error when the entry ik that I's Derive derived from record key rk does not
  // carry rk's key fields unchanged (the schema checks that it has them, by name and type; only
  // the values can be wrong): two records could then share one entry, and record_key,
  // get_record and sweep would lead from it to another record.
  template <class I, class R>
  static void check_entry(const typename R::key_type& rk, const typename I::key_type& ik) {
    std::string_view bad;
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      ((bad.empty() &&
                !(std::get<field_position<I, typename R::template field_at<J>::type>(R::template field_at<J>::name)>(
                      ik) == std::get<J>(rk))
            ? (void)(bad = R::template field_at<J>::name)
            : void()),
       ...);
    }(std::make_index_sequence<R::field_count>{});
    if (bad.empty()) return;
    std::string record, entry;
    key_codec<R>::encode(record, rk);
    key_codec<I>::encode(entry, ik);
    throw schema_error("keyschema::index_of: index '" + std::string(I::name) + "': Derive derived the entry " +
                       describe_key(entry) + " from the record " + describe_key(record) + " of keyspace '" +
                       std::string(R::name) + "', but the entry's field '" + std::string(bad) +
                       "' differs from the record's; an index entry must carry its record's key fields unchanged "
                       "(otherwise two records share one entry, and record_key, get_record and sweep reach "
                       "another record): fix Derive to copy them. Nothing of this write was written");
  }

  // Adds d to the count C of the group of record key rk. A count reaching 0 is erased.
  template <class C, class RK>
  static void bump(write_overlay& st, const RK& rk, std::int64_t d) {
    if constexpr (is_count_keyspace<C>) {
      std::string ck;
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        key_codec<C>::encode_prefix(ck, std::get<I>(rk)...);
      }(std::make_index_sequence<C::value_marker::group_fields>{});
      std::int64_t n = 0;
      std::string cur;
      if (st.get(ck, cur)) n = decode_value<C>(ck, cur);
      if (__builtin_add_overflow(n, d, &n))
        throw overflow_error("keyschema: count keyspace '" + std::string(C::name) + "', key " + describe_key(ck) +
                             ": the count overflows std::int64_t; nothing was written");
      if (n == 0) {
        st.erase(ck);
      } else {
        std::string enc;
        value_traits<std::int64_t>::encode(enc, n);
        st.put(ck, enc);
      }
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

// --- schema checks of declared counts -----------------------------------------------------------

}  // namespace detail

namespace diagnostic {

template <fixed_string Count, fixed_string Counted>
struct count_of_foreign_keyspace {
  static_assert(always_false<Count.size()>,
                "keyschema::count_of: the keyspace a count counts is not part of the schema (see Count and "
                "Counted in this instantiation); add it to the keyschema::schema<...>");
  static constexpr bool value = false;
};

template <fixed_string Count, fixed_string Counted, std::size_t GroupFields>
struct count_of_field_count {
  static_assert(always_false<GroupFields>,
                "keyschema::count_of: a count keyspace must have exactly N fields, the first N fields of the "
                "counted keyspace (see Count, Counted and GroupFields in this instantiation); give it those "
                "fields, or change N");
  static constexpr bool value = false;
};

template <fixed_string Count, fixed_string Counted, std::size_t Field>
struct count_of_field_mismatch {
  static_assert(always_false<Field>,
                "keyschema::count_of: a field of the count keyspace differs from the counted keyspace's field at "
                "the same position (name or type; see Count, Counted and Field, 0-based, in this instantiation); "
                "declare the count's fields as the counted keyspace's first N fields");
  static constexpr bool value = false;
};

template <fixed_string Index, fixed_string Record>
struct index_of_cannot_derive {
  static_assert(always_false<Index.size()>,
                "keyschema::index_of: Derive cannot derive the index key (see Index and Record in this "
                "instantiation): it must be default-constructible and callable as derive(const Record::key_type&, "
                "const Record::value_type&) returning std::optional<Index::key_type>; fix its signature");
  static constexpr bool value = false;
};

template <fixed_string Index, fixed_string Record, class Missing>
struct index_of_lacks_record_fields {
  static_assert(always_false<Index.size()>,
                "keyschema::index_of: the index key lacks field(s) of the indexed record's key (see Index, Record "
                "and Missing, one keyschema::field<name, type> per missing field, in this instantiation), so two "
                "records could derive one index entry and erasing one would leave the other indexed nowhere; add "
                "each missing field to the index keyspace, with the same name and type, and have Derive copy it "
                "from the record's key");
  static constexpr bool value = false;
};

template <fixed_string Index>
struct index_of_foreign_keyspace {
  static_assert(always_false<Index.size()>,
                "keyschema::index_of: the keyspace an index indexes is not part of the schema (see Index in this "
                "instantiation); add it to the keyschema::schema<...>");
  static constexpr bool value = false;
};

}  // namespace diagnostic

namespace detail {

// The fields of R's key that Index's key lacks (no field of the same name and type): a std::tuple
// of their keyschema::field<name, type>.
template <class Index, class R, class Seq = std::make_index_sequence<R::field_count>>
struct missing_record_fields;
template <class Index, class R, std::size_t... J>
struct missing_record_fields<Index, R, std::index_sequence<J...>> {
  using type = decltype(std::tuple_cat(
      std::declval<std::conditional_t<field_position<Index, typename R::template field_at<J>::type>(
                                          R::template field_at<J>::name) == Index::field_count,
                                      std::tuple<typename R::template field_at<J>>, std::tuple<>>>()...));
};
template <class Index, class R>
using missing_record_fields_t = typename missing_record_fields<Index, R>::type;

// The checks of an index I of Schema (see check_count_keyspace for counts). Only an index needs
// its key to hold the record's key: its entries are one per record, while a count's entries are
// one per group and meant to merge the records of a group.
template <class Schema, class I>
constexpr bool check_index_keyspace() {
  if constexpr (!is_index_keyspace<I>) {
    return true;
  } else {
    using R = typename I::value_marker::indexed_keyspace;
    using D = typename I::value_marker::derive;
    if constexpr (!is_keyspace<R>::value || !Schema::template contains<R>) {
      return diagnostic::index_of_foreign_keyspace<I::name_string>::value;
    } else if constexpr (!index_holds_record_key<I, R>()) {
      // An index entry is unique per record only when the record's key can be read back from it.
      return diagnostic::index_of_lacks_record_fields<I::name_string, R::name_string,
                                                       missing_record_fields_t<I, R>>::value;
    } else if constexpr (!std::is_default_constructible_v<D> ||
                         !std::is_invocable_v<const D&, const typename R::key_type&, const typename R::value_type&>) {
      return diagnostic::index_of_cannot_derive<I::name_string, R::name_string>::value;
    } else if constexpr (!std::is_same_v<std::invoke_result_t<const D&, const typename R::key_type&,
                                                              const typename R::value_type&>,
                                         std::optional<typename I::key_type>>) {
      return diagnostic::index_of_cannot_derive<I::name_string, R::name_string>::value;
    } else {
      return true;
    }
  }
}

// The first field position where C's fields differ from R's first N fields (N if none).
template <class C, class R, std::size_t N>
constexpr std::size_t first_count_field_mismatch() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t pos = N;
    (
        [&] {
          using F = typename C::template field_at<I>;
          using G = typename R::template field_at<I>;
          if (pos == N && !(F::name == G::name && std::is_same_v<typename F::type, typename G::type>)) pos = I;
        }(),
        ...);
    return pos;
  }(std::make_index_sequence<N>{});
}

template <class Schema, class C>
constexpr bool check_count_keyspace() {
  if constexpr (!is_count_keyspace<C>) {
    return true;
  } else {
    using R = typename C::value_marker::counted_keyspace;
    constexpr std::size_t n = C::value_marker::group_fields;
    if constexpr (!is_keyspace<R>::value || !Schema::template contains<R>) {
      return diagnostic::count_of_foreign_keyspace<C::name_string, C::name_string>::value;
    } else if constexpr (n > R::field_count || C::field_count != n) {
      return diagnostic::count_of_field_count<C::name_string, R::name_string, n>::value;
    } else if constexpr (first_count_field_mismatch<C, R, n>() != n) {
      return diagnostic::count_of_field_mismatch<C::name_string, R::name_string,
                                                 first_count_field_mismatch<C, R, n>()>::value;
    } else {
      return true;
    }
  }
}

// The schema check of a derived keyspace D declared through derivation.hpp.
template <class Schema, class D>
constexpr bool check_derivation() {
  if constexpr (is_derived_keyspace<D>)
    return D::value_marker::template check<Schema, D>();
  else
    return true;
}

// The checks of the schema's derived keyspaces (declared counts and indexes); each failure instantiates a
// diagnostic naming the keyspaces. Called by keyschema::store.
template <class Schema>
struct derived_checks;
template <class... K>
struct derived_checks<schema<K...>> {
  static constexpr bool value = (check_count_keyspace<schema<K...>, K>() && ...) &&
                                (check_index_keyspace<schema<K...>, K>() && ...) &&
                                (check_derivation<schema<K...>, K>() && ...);
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
