// keyschema/indexes.hpp: secondary indexes declared in the schema, and the expiry sweep.
//
// A keyspace whose value is index_of<Record, Derive[, Version]> is a secondary index of the keyspace Record,
// maintained by the store. Derive is a default-constructible callable (a struct with operator(),
// or a C++20 captureless lambda type) mapping a record's key and value to the index key:
//   struct by_expiry {
//     std::optional<std::tuple<ms_time, std::string, std::uint64_t>>
//     operator()(const message::key_type& k, const message::value_type& v) const;  // nullopt: not indexed
//   };
//   using expiry_index = ks::keyspace<"expiry_index", ks::index_of<message, by_expiry>, ks::lit<"EXPIRY">,
//       ks::field<"at", ms_time>, ks::field<"destination", std::string>, ks::field<"message_id", std::uint64_t>>;
// Its value_type is std::tuple<> (an index entry is its key). In the same atomic write as the
// record, the store puts the index entry of a new record, replaces the entry of an overwritten
// record whose derived key changed (reading the old value), and erases the entry of an erased
// record: in single ops, batches (resolved at commit, under the writer lock), transactions (which
// read their own index changes), store::write and each chunk of erase_range / erase_prefix.
// A schema whose Derive cannot be called with (const Record::key_type&, const Record::value_type&)
// returning something convertible to std::optional<index key_type> does not compile
// (keyschema::index_of: ...). Writing an index keyspace directly does not compile either, and a
// raw write_batch given to store::write that puts or erases an index key is refused (key_error
// naming the keyspace; nothing is written).
// An index entry belongs to one record: the index key must hold every field of the record's key,
// by the same name and type, else the schema does not compile (keyschema::index_of: the index key
// lacks field(s) of the indexed record's key; the diagnostic names the missing fields), as two
// records could derive one entry and erasing one would leave the other indexed nowhere. Derive
// must copy those fields' values from the record's key: an entry that does not carry them is
// refused when derived (schema_error "keyschema::index_of: index '<index>': Derive derived the
// entry ... from the record ... of keyspace '<record>', but the entry's field '<field>' differs
// ..."; nothing of that write is written), in every write and in ks::migrate's rebuild. So
// record_key<Index>() / get_record<Index>() and sweep lead from an entry to its own record.
// (A declared count, count_of, is the derivation meant to merge records: one entry per group.)
//
// Version (a std::size_t, default 1) names the derivation in the schema layout: the layout names
// the indexed keyspace but cannot see what Derive computes, so a changed Derive would silently
// keep the entries derived by the old one. Bump Version whenever Derive's result changes
// (index_of<message, by_expiry, 2>): a database whose index was derived by another version is
// then refused on open (schema_error "keyspace 'expiry_index': ... index_of<message> stored,
// ... index_of<message,v2> in this program"), like any changed keyspace. Version 1 adds nothing
// to the layout ("index_of<message>"), so databases written before Version existed keep opening.
//
// index_of is a derivation (derivation.hpp): the store knows it only through its hooks. An entry
// that no record derives (left by a write around the store) is erased by
// store_transaction::erase_stale<Index>(key), which refuses an entry that follows from an
// existing record (key_error); sweep repairs through it.
//
// Scanning an index is an ordinary scan of its keyspace (typed entries, bounds, limits):
//   for (const auto& e : db.scan<expiry_index>().to(now)) ... ks::get_record<expiry_index>(db, e.key)
//
// sweep<Index>(db, now, batch_size, callback): erases every record whose index entry's first
// field is before now (the index's first field is the time; now converts to it losslessly or
// the call does not compile, as any scan bound: std::chrono types are unit-checked), in atomic
// batches of at most batch_size records, each with its index entries and counts; calls
// callback(record key, record value) for each record before its batch commits. Reads only the
// due part of the index (cost proportional to what is due). Returns the number of records erased.
//
// Thread-safety: types and free functions with the store's thread-safety (store.hpp).
#pragma once

#include <keyschema/derivation.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {
template <class Index, class Record, class Derive>
struct index_hooks;  // below
}  // namespace detail

// Value marker of a secondary index keyspace: maintained by the store from the records of
// Record, each indexed under Derive{}(key, value) (std::nullopt: not indexed), by the derivation
// numbered Version. See above. REQUIRES (compile time): Version >= 1.
template <class Record, class Derive, std::size_t Version = 1>
struct index_of {
  static_assert(Version >= 1,
                "keyschema::index_of: Version must be at least 1; the first derivation is 1 (the default), bump it "
                "when Derive's result changes");
  using keyschema_value_type = std::tuple<>;
  using indexed_keyspace = Record;
  using derive = Derive;
  static constexpr std::size_t version = Version;

  // The derivation hooks (derivation.hpp).
  using keyschema_derivation = void;
  using source_keyspace = Record;
  static constexpr bool maintained = true;
  static constexpr std::size_t ops_per_source_write = 2;  // the old entry erased, the new one put
  static constexpr std::string_view kind = "an index";

  // Writing an index directly does not compile.
  template <class I>
  static constexpr bool refuse_direct_write() {
    static_assert(sizeof(I) == 0,
                  "keyschema::put/erase/add: this keyspace is an index (index_of), maintained by the store; write "
                  "the records it indexes instead");
    return false;
  }

  template <class Schema, class I>
  static constexpr bool check() {
    return detail::index_hooks<I, Record, Derive>::template check<Schema>();
  }
  // Replaces the entry derived from the old value (if any) by the one derived from the new value
  // (if any), both derived and checked before anything is written.
  template <class I>
  static void on_source_write(derivation_context& cx, const source_write<Record>& w) {
    detail::index_hooks<I, Record, Derive>::on_source_write(cx, w);
  }
  template <class I>
  static void rebuild(derivation_context& cx, const typename Record::key_type& k, const typename Record::value_type& v) {
    detail::index_hooks<I, Record, Derive>::rebuild(cx, k, v);
  }
  // Throws key_error when the entry k follows from the records (its record exists and derives
  // it): store_transaction::erase_stale refuses to erase it then.
  template <class I>
  static void follows(derivation_context& cx, std::string_view key, const typename I::key_type& k) {
    detail::index_hooks<I, Record, Derive>::follows(cx, key, k);
  }

  // Names the derivation in the schema layout (fingerprint.hpp): "index_of<Record's name>" for
  // version 1, "index_of<Record's name,vN>" for version N (the derivation function itself has no
  // name the layout could hold).
  template <class Sink>
  static constexpr void visit_layout(Sink& sink) {
    sink("index_of<");
    sink(Record::name);
    if constexpr (Version != 1) {
      sink(",v");
      sink(std::string_view(digits_.data(), digit_count_));
    }
    sink(">");
  }

 private:
  static constexpr std::size_t digit_count_ = [] {
    std::size_t n = 1;
    for (std::size_t v = Version; v >= 10; v /= 10) ++n;
    return n;
  }();
  static constexpr std::array<char, digit_count_> digits_ = [] {
    std::array<char, digit_count_> a{};
    std::size_t v = Version;
    for (std::size_t i = digit_count_; i-- > 0; v /= 10) a[i] = static_cast<char>('0' + v % 10);
    return a;
  }();
};

namespace detail {

template <class Marker>
struct index_marker : std::false_type {};
template <class Record, class Derive, std::size_t Version>
struct index_marker<index_of<Record, Derive, Version>> : std::true_type {};

// KS is a secondary index (its value is index_of<...>).
template <class KS>
inline constexpr bool is_index_keyspace = index_marker<typename KS::value_marker>::value;

// The position of the field named `name` with type T among KS's fields; KS::field_count if none.
template <class KS, class T>
constexpr std::size_t field_position(std::string_view name) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t pos = KS::field_count;
    ((pos == KS::field_count && KS::template field_at<I>::name == name &&
              std::is_same_v<typename KS::template field_at<I>::type, T>
          ? (void)(pos = I)
          : void()),
     ...);
    return pos;
  }(std::make_index_sequence<KS::field_count>{});
}

// Every field of Record's key is a field of Index's key (same name, same type).
template <class Index, class Record>
constexpr bool index_holds_record_key() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return ((field_position<Index, typename Record::template field_at<I>::type>(Record::template field_at<I>::name) !=
             Index::field_count) &&
            ...);
  }(std::make_index_sequence<Record::field_count>{});
}

template <class Index>
using indexed_t = typename Index::value_marker::indexed_keyspace;

}  // namespace detail

namespace diagnostic {

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

// What index_of does for the store (derivation.hpp): index I of records R, entries derived by D.
template <class I, class R, class D>
struct index_hooks {
  // Only an index needs its key to hold the record's key: its entries are one per record, while a
  // count's entries are one per group and meant to merge the records of a group.
  template <class Schema>
  static constexpr bool check() {
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

  // Values decoded and both entries derived and checked before cx changes: an error
  // (decode_error, schema_error, what Derive throws) leaves it as it was.
  static void on_source_write(derivation_context& cx, const source_write<R>& w) {
    const D derive{};
    std::optional<typename I::key_type> before, after;
    if (w.old_value != nullptr) before = derive(w.record_key, decode_value<R>(w.key, *w.old_value));
    if (w.new_value != nullptr) after = derive(w.record_key, decode_value<R>(w.key, *w.new_value));
    if (before) check_entry(w.record_key, *before);
    if (after) check_entry(w.record_key, *after);
    if (before == after) return;
    std::string ik;
    if (before) {
      key_codec<I>::encode(ik, *before);
      cx.erase(ik);
    }
    if (after) {
      ik.clear();
      key_codec<I>::encode(ik, *after);
      cx.put(ik, std::string_view());  // an index entry's value, std::tuple<>, encodes to nothing
    }
  }

  static void rebuild(derivation_context& cx, const typename R::key_type& k, const typename R::value_type& v) {
    const std::optional<typename I::key_type> e = D{}(k, v);
    if (!e) return;
    check_entry(k, *e);
    std::string ik;
    key_codec<I>::encode(ik, *e);
    cx.put(ik, std::string_view());
  }

  static void follows(derivation_context& cx, std::string_view key, const typename I::key_type& k) {
    const typename R::key_type rk = [&]<std::size_t... J>(std::index_sequence<J...>) {
      return typename R::key_type(
          std::get<field_position<I, typename R::template field_at<J>::type>(R::template field_at<J>::name)>(k)...);
    }(std::make_index_sequence<R::field_count>{});
    std::string record, value;
    key_codec<R>::encode(record, rk);
    if (!cx.get(record, value)) return;
    const std::optional<typename I::key_type> e = D{}(rk, decode_value<R>(record, value));
    if (!e || *e != k) return;
    throw key_error("keyschema::erase_stale: the entry " + describe_key(key) + " of index '" + std::string(I::name) +
                    "' follows from the record " + describe_key(record) + " of '" + std::string(R::name) +
                    "', which exists; erase the record instead (its entry goes with it). Nothing was erased");
  }

  // Throws schema_error when the entry ik that Derive derived from record key rk does not carry
  // rk's key fields unchanged (the schema checks that it has them, by name and type; only the
  // values can be wrong): two records could then share one entry, and record_key, get_record and
  // sweep would lead from it to another record.
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
};

}  // namespace detail

// The key of the record an entry of Index points to, taken from the index key's fields of the
// same names. REQUIRES (compile time): Index is an index_of keyspace whose key holds every field
// of the record's key (same name and type). Errors: none (copies fields).
template <class Index>
typename detail::indexed_t<Index>::key_type record_key(const typename Index::key_type& index_key) {
  using R = detail::indexed_t<Index>;
  static_assert(detail::index_holds_record_key<Index, R>(),
                "keyschema::record_key: the index key lacks a field of the record's key (matched by name and type); "
                "add the record's key fields to the index keyspace");
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return typename R::key_type(
        std::get<detail::field_position<Index, typename R::template field_at<I>::type>(R::template field_at<I>::name)>(
            index_key)...);
  }(std::make_index_sequence<R::field_count>{});
}

// The record an entry of Index points to, read from src (a store, snapshot or transaction):
// src.get<Record>(record_key<Index>(index_key)). Errors: those of get.
template <class Index, class Source>
auto get_record(const Source& src, const typename Index::key_type& index_key) {
  return src.template get<detail::indexed_t<Index>>(record_key<Index>(index_key));
}

// Erases the records of Index whose index entry's first field is before now, with their index
// entries and declared counts, in transactions of at most batch_size records each (atomic each;
// the whole is not: a crash midway leaves the later ones for the next sweep). Calls
// callback(record key, record value), or callback(tx, record key, record value) when it takes the
// batch's store_transaction first, for each record inside its transaction, before it commits; a
// callback given tx may write through it (erase the record's other keyspaces: its content, its
// metadata elsewhere), atomically with the record's erase (a callback that throws rolls that
// batch back and the exception propagates; earlier batches stay committed). Reads only the due entries of the index and their records. Each batch holds
// the store's writer lock while it runs. Returns the number of records erased.
// A batch holds fewer than batch_size records when the backend's max_ops_per_write demands it
// (etcd: 128 operations, counting what the transaction read): it is committed before the record
// that might not fit (judged by tx.operation_count() and the most operations one record took so
// far); when a record turns out not to fit after all, the batch is rolled back and redone
// without it, so callback may then be called again for the records of that batch (its writes
// through tx were rolled back with it). A single record that does not fit one write fails the
// sweep with limit_error.
// now: a value of (or losslessly convertible to) the index's first field's type, as any scan
// bound: a std::chrono time point of a coarser or equal unit and the same clock.
// An index entry whose record is missing (not produced by the store) is erased too, not counted.
// REQUIRES: batch_size > 0 (else usage_error); no transaction of this thread is open.
// Errors: those of transactions (backend_error, limit_error, conflict_error, decode_error) and
// what callback throws.
template <class Index, class Store, class Now, class Callback>
std::size_t sweep(Store& db, const Now& now, std::size_t batch_size, Callback&& callback,
                  const write_options& opts = {}) {
  using R = detail::indexed_t<Index>;
  static_assert(detail::is_index_keyspace<Index>,
                "keyschema::sweep: the keyspace is not an index; declare it with keyschema::index_of<Record, Derive>");
  if (batch_size == 0) throw usage_error("keyschema::sweep: batch_size is 0; pass the number of records per batch (> 0)");
  std::size_t erased = 0;
  std::vector<typename Index::key_type> due;
  // Records per transaction: batch_size, fewer when the backend's max_ops_per_write demands it.
  // Before each record the transaction's operation_count() plus the most one record added so far
  // must fit the limit, else the records so far are committed and the rest left to the next one.
  std::size_t batch = batch_size;
  std::size_t step = 0;
  for (;;) {
    auto tx = db.transaction();
    const std::size_t max_ops = db.backend().limits().max_ops_per_write;
    const bool limited = max_ops != backend_limits::unlimited;
    due.clear();
    for (const auto& e : tx.template scan<Index>().to(now).limit(batch)) due.push_back(e.key);
    if (due.empty()) return erased;  // tx rolls back: nothing written
    std::size_t done = 0, erased_here = 0;
    bool over = false;
    for (const auto& ik : due) {
      const std::size_t before = limited ? tx.operation_count() : 0;
      if (limited && done > 0 && before + step > max_ops) break;  // the next record may not fit
      const typename R::key_type rk = record_key<Index>(ik);
      if (std::optional<typename R::value_type> v = tx.template get<R>(rk)) {
        if constexpr (std::is_invocable_v<Callback&, decltype(tx)&, const typename R::key_type&,
                                          const typename R::value_type&>)
          callback(tx, std::as_const(rk), std::as_const(*v));
        else
          callback(std::as_const(rk), std::as_const(*v));
        tx.template erase<R>(rk);  // erases its index entries (and updates counts) with it
        ++erased_here;
      }
      // The entry itself, also when its record is missing or it was derived otherwise before: each
      // round makes progress. The record is gone in tx now, so the entry no longer follows from it.
      tx.template erase_stale<Index>(ik);
      ++done;
      if (limited) {
        const std::size_t after = tx.operation_count();
        step = std::max(step, after > before ? after - before : std::size_t{0});
        if (after > max_ops && done > 1) {  // this record did not fit after all: redo the batch without it
          over = true;
          break;
        }
      }
    }
    if (over) {
      tx.rollback();
      batch = done - 1;
      continue;
    }
    tx.commit(opts);
    erased += erased_here;
    if (done < due.size()) batch = done;  // read no more due entries than fit one transaction
  }
}

KEYSCHEMA_END_NAMESPACE
