// keyschema/derivation.hpp: derived keyspaces as plug-ins: the hooks a derived kind supplies.
//
// A derived keyspace D is a keyspace of the schema whose entries follow from the records of
// another keyspace R (its source): a count of R's records (count_of, counters.hpp), an index of
// them (index_of, indexes.hpp), a sum of their values (sum_of, sum.hpp), the entries owned by
// them (owned_by, owned.hpp). It is declared by its value marker, the Value argument of
// keyschema::keyspace<Name, Value, Segments...>; a marker M is a derivation when it declares
//
//   using keyschema_derivation = void;       // the tag: "M is a derivation"
//   using source_keyspace = R;               // the record keyspace D derives from
//   static constexpr bool maintained;        // true: only the store writes D (put, erase, add of
//                                            // D do not compile; a raw write_batch writing D is
//                                            // refused); false: D is written by its users too
//   static constexpr std::size_t ops_per_source_write;  // the most engine operations one write
//                                            // of a record of R adds to an atomic write for D
//                                            // (sizes range erases under backend_limits::
//                                            // max_ops_per_write; etcd counts every operation)
//   template <class Schema, class D> static constexpr bool check();
//                                            // the schema check, at compile time: true, or a
//                                            // static_assert "keyschema::<marker>: <what is
//                                            // wrong>; <how to fix>" naming D and R
//   template <class D> static void on_source_write(derivation_context& cx, const source_write<R>& w);
//                                            // how one write of a record of R (w: its key, the
//                                            // old value or none, the new value or none) changes
//                                            // D, written into cx (the state of the write so far)
//   template <class Sink> static constexpr void visit_layout(Sink& sink);
//                                            // its text in the schema layout (fingerprint.hpp):
//                                            // a change of it is a schema change (ks::migrate)
// and, optionally,
//   template <class D> static void on_write(derivation_context& cx, std::string_view key,
//                                           const typename D::key_type& k, const std::string_view* value);
//                                            // called before each write of D itself (value:
//                                            // nullptr for an erase); may refuse it by throwing
//   template <class D> static void rebuild(derivation_context& cx, const typename R::key_type& k,
//                                          const typename R::value_type& v);
//                                            // adds what record (k, v) contributes to D, over a
//                                            // state where D starts empty: ks::migrate rebuilds a
//                                            // maintained D this way from R's records
//   template <class D> static void verify(derivation_context& cx);
//                                            // throws schema_error naming the first stored entry
//                                            // that breaks D's rule (ks::migrate checks a database
//                                            // with it before converting it to a schema with D)
//   template <class D> static void follows(derivation_context& cx, std::string_view key,
//                                          const typename D::key_type& k);
//                                            // throws key_error when entry k of a maintained D
//                                            // follows from the records in cx: store_transaction::
//                                            // erase_stale<D> erases only entries that do not
//   static constexpr std::string_view kind;  // how messages name the kind ("a declared count")
//   template <class D> static constexpr bool refuse_direct_write();
//                                            // for a maintained D: a static_assert naming the
//                                            // kind, raised by a direct put/erase/add of D
//
// The store calls the hooks from detail/store/derived_writes.hpp, the one place that resolves
// writes against the state they are applied to: every write path (put, erase, batches,
// transactions, store::write, erase_range / erase_prefix chunks, prepared transactions,
// ks::sweep) goes through it, so a derivation sees every write of R, in the same atomic write.
// A hook that throws refuses the write: nothing of it is written (batches and single writes are
// resolved whole before anything is written; a transaction drops what the write had changed).
//
// Thread-safety: types and stateless hooks; a derivation_context belongs to the thread resolving
// one write, which holds the store's writer lock.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/store/overlay_cursor.hpp>
#include <keyschema/write_batch.hpp>

#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

// M is a derivation marker (see the top of this file).
template <class M>
concept derivation = requires {
  typename M::keyschema_derivation;
  typename M::source_keyspace;
  { M::maintained } -> std::convertible_to<bool>;
  { M::ops_per_source_write } -> std::convertible_to<std::size_t>;
};

namespace detail {

// The writes decided so far over a base state. The pending_map is the caller's (a transaction's
// pending writes, or a batch's resolution); the base is read through read(ctx, key, out) and
// scanned through scan(ctx, range, keys) (the keys in [range.lower, range.upper), ascending).
// With a journal, every change is recorded so that undo() can restore the map (a transaction
// drops a write that failed half-way). A template (write_overlay below is its one specialization)
// only so that a translation unit that never resolves a write does not instantiate its std::map
// and std::vector code.
template <class = void>
class basic_write_overlay {
 public:
  using base_reader = bool (*)(const void* ctx, std::string_view key, std::string& out);
  using base_scanner = void (*)(const void* ctx, const key_range& r, std::vector<std::string>& keys);
  // What the map held for a key before a change: nothing (outer nullopt), or its entry.
  using journal = std::vector<std::pair<std::string, std::optional<std::optional<std::string>>>>;

  basic_write_overlay(pending_map& writes, base_reader read, const void* ctx, base_scanner scan = nullptr,
                journal* j = nullptr) noexcept
      : writes_(&writes), read_(read), scan_(scan), ctx_(ctx), journal_(j) {}

  // The value of key as the writes so far leave it; false when it does not exist.
  bool get(std::string_view key, std::string& out) const {
    if (auto it = writes_->find(key); it != writes_->end()) {
      if (!it->second) return false;
      out.assign(*it->second);
      return true;
    }
    return read_(ctx_, key, out);
  }
  void put(std::string_view key, std::string_view value) {
    auto it = writes_->find(key);
    note(it, key);
    if (it == writes_->end())
      writes_->emplace(std::string(key), std::optional<std::string>(std::in_place, value));
    else
      it->second.emplace(value);
  }
  void erase(std::string_view key) {
    auto it = writes_->find(key);
    note(it, key);
    if (it == writes_->end())
      writes_->emplace(std::string(key), std::nullopt);
    else
      it->second.reset();
  }
  // The keys in [r.lower, r.upper) (upper empty: no bound) as the writes so far leave them,
  // ascending. REQUIRES: the overlay was made with a base_scanner (every store path does).
  void keys_in(const key_range& r, std::vector<std::string>& out) const {
    out.clear();
    if (scan_ != nullptr) scan_(ctx_, r, out);
    auto lo = writes_->lower_bound(r.lower);
    auto hi = r.upper.empty() ? writes_->end() : writes_->lower_bound(r.upper);
    if (lo == hi) return;
    std::vector<std::string> merged;
    merged.reserve(out.size());
    auto b = out.begin();
    for (auto it = lo; it != hi; ++it) {
      for (; b != out.end() && *b < it->first; ++b) merged.push_back(std::move(*b));
      if (b != out.end() && *b == it->first) ++b;
      if (it->second) merged.push_back(it->first);
    }
    for (; b != out.end(); ++b) merged.push_back(std::move(*b));
    out.swap(merged);
  }
  pending_map& writes() noexcept { return *writes_; }

  // Restores the map to what it held before the changes the journal recorded.
  static void undo(pending_map& writes, journal& j) {
    for (auto it = j.rbegin(); it != j.rend(); ++it) {
      if (!it->second)
        writes.erase(it->first);
      else
        writes.insert_or_assign(it->first, std::move(*it->second));
    }
    j.clear();
  }

 private:
  void note(pending_map::iterator it, std::string_view key) {
    if (journal_ == nullptr) return;
    if (it == writes_->end())
      journal_->emplace_back(std::string(key), std::nullopt);
    else
      journal_->emplace_back(std::string(key), std::optional<std::optional<std::string>>(it->second));
  }

  pending_map* writes_;
  base_reader read_;
  base_scanner scan_;
  const void* ctx_;
  journal* journal_;
};
using write_overlay = basic_write_overlay<>;

// derivation_context's members (see derivation_context below), in a template for the same
// reason as basic_write_overlay.
template <class = void>
class basic_derivation_context {
 public:
  // Writes a record of the schema (nullptr: erases it), with everything derived from it.
  using record_writer = void (*)(detail::write_overlay& st, std::string_view key, const std::string_view* value);

  basic_derivation_context(detail::write_overlay& st, record_writer write_record) noexcept
      : st_(&st), write_record_(write_record) {}

  // The value of key in this state; false when it does not exist.
  bool get(std::string_view key, std::string& value) const { return st_->get(key, value); }
  // The keys of this state in r (r.reverse ignored), ascending.
  void keys_in(const key_range& r, std::vector<std::string>& keys) const { st_->keys_in(r, keys); }
  // Puts or erases a key of the derived keyspace, as is (nothing is derived from it).
  void put(std::string_view key, std::string_view value) { st_->put(key, value); }
  void erase(std::string_view key) { st_->erase(key); }
  // Erases a record of any keyspace of the schema with what derives from it (its counts, index
  // entries, owned entries): a cascade.
  void erase_record(std::string_view key) { write_record_(*st_, key, nullptr); }

 private:
  detail::write_overlay* st_;
  record_writer write_record_;
};

}  // namespace detail

// What a derivation's hooks write through: the state of the write being resolved (the base
// state with the writes decided so far laid over it). Reads see those writes. Its members are
// detail::basic_derivation_context's:
//   bool get(std::string_view key, std::string& value) const: the value of key in this state;
//     false when it does not exist;
//   void keys_in(const key_range& r, std::vector<std::string>& keys) const: the keys of this
//     state in r (r.reverse ignored), ascending;
//   void put(key, value), void erase(key): puts or erases a key of the derived keyspace, as is
//     (nothing is derived from it);
//   void erase_record(key): erases a record of any keyspace of the schema with what derives from
//     it (its counts, index entries, owned entries): a cascade.
class derivation_context : public detail::basic_derivation_context<> {
 public:
  using detail::basic_derivation_context<>::basic_derivation_context;
};

// One write of a record of R, as a derivation sees it.
template <class R>
struct source_write {
  std::string_view key;                   // the record's encoded key
  const typename R::key_type& record_key; // its fields
  const std::string_view* old_value;      // its stored value before the write; nullptr: none
  const std::string_view* new_value;      // its value after the write; nullptr: erased
};

KEYSCHEMA_END_NAMESPACE
