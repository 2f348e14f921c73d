// keyschema/owned.hpp: owned keyspaces: entries that belong to a record and go with it.
//
// A keyspace whose value is owned_by<Owner, Value> holds entries of type Value that belong to a
// record of the keyspace Owner (a message's content chunks, its dead-letter flag): its key
// starts, after its own literals, with Owner's key fields (the same types, in the same order;
// the names may differ), and the entries under one owner's key belong to that record:
//
//   using message = ks::keyspace<"message", meta, ks::lit<"MSG">, ks::field<"id", std::uint64_t>>;
//   using content = ks::keyspace<"content", ks::owned_by<message, ks::bytes>, ks::lit<"CONTENT">,
//       ks::field<"id", std::uint64_t>, ks::field<"chunk", std::uint32_t>>;   // chunked values too
//   using dead_letter = ks::keyspace<"dead_letter", ks::owned_by<message, std::string>,
//       ks::lit<"DLQ">, ks::field<"id", std::uint64_t>>;
//
// Its value_type is Value. The store keeps the ownership, in the same atomic write as the record:
//   - erasing a record of Owner by any path (erase, batches, transactions, store::write,
//     erase_range / erase_prefix / erase_prefix_all chunks, ks::sweep, commit_prepared) erases
//     every entry of the owned keyspace under its key, and what derives from those entries (their
//     counts, index entries, the entries they own in turn). So no entry outlives its owner.
//     Only an erase of a record that exists cascades; an overwrite of the record keeps them;
//   - a put into the owned keyspace whose owner record does not exist in the state the write is
//     resolved against (the stored state with the writes before it in the same batch or
//     transaction) is refused: usage_error "keyschema: keyspace 'content' is owned by 'message'
//     (owned_by<message>): the put of key (...) has no owner, record (...) of 'message' does not
//     exist ...; put the record first (earlier in the same batch or transaction). Nothing was
//     written" (a batch or single write: nothing of it; a transaction: nothing of that put, the
//     transaction stays open). Erasing an owned entry is always allowed.
// Cost: a put into an owned keyspace reads whether its owner exists (a point read); an erase of
// an existing owner reads the owned range under its key (one range read per owned keyspace) and
// erases each entry found, one operation each: on etcd (128 operations per transaction) an
// owner's erase counts 1 + its owned entries; store::erase_range splits its chunks further when
// a chunk with its owned entries would not fit (limit_error only when one record with its owned
// entries does not fit one write). A transaction's operation_count() includes them.
// The ownership is part of the schema layout ("content=bytes:owned_by<message>{...}"): declaring
// or removing it changes the fingerprint, and an existing database is converted with ks::migrate,
// which refuses a database where the new schema's owned keyspace holds orphans (schema_error
// naming the keyspace and the first orphan; erase them with the old schema first). It checks
// before writing anything, when the owned keyspace and its owner keep the key segments they had
// in the old schema; a migration whose steps rewrite those keys is not checked: run
// find_orphans on the result.
// Entries written before the ownership was declared may be orphans: find_orphans<Owned>(db)
// reports them.
//
// Compile-time checks ("keyschema::owned_by: ..."): Owner must be a keyspace of the schema other
// than the owned one, and the owned key must begin with Owner's key fields, same types, same order.
//
// Thread-safety: types, and free functions with the thread-safety of the store or snapshot given.
#pragma once

#include <keyschema/derivation.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fixed_string.hpp>
#include <keyschema/scan.hpp>
#include <keyschema/schema.hpp>

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

namespace diagnostic {

template <fixed_string Owned>
struct owned_by_foreign_keyspace {
  static_assert(always_false<Owned.size()>,
                "keyschema::owned_by: the owner keyspace of an owned keyspace is not part of the schema (see Owned in "
                "this instantiation); add the owner keyspace to the keyschema::schema<...>");
  static constexpr bool value = false;
};

template <fixed_string Owned>
struct owned_by_itself {
  static_assert(always_false<Owned.size()>,
                "keyschema::owned_by: a keyspace is declared as owned by itself (see Owned in this instantiation); "
                "name the record keyspace it belongs to");
  static constexpr bool value = false;
};

template <fixed_string Owned, fixed_string Owner, std::size_t Field>
struct owned_by_key_mismatch {
  static_assert(always_false<Field>,
                "keyschema::owned_by: the owned keyspace's key does not begin with the owner's key fields (see Owned, "
                "Owner and Field, the 0-based position of the first field whose type differs or is missing, in this "
                "instantiation); declare the owned keyspace's first fields with the owner's key field types, in the "
                "same order");
  static constexpr bool value = false;
};

}  // namespace diagnostic

namespace detail {

// The first position among Owner's fields where D's field type differs (Owner::field_count if
// none; a missing field counts as different).
template <class D, class Owner>
constexpr std::size_t first_owned_field_mismatch() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t pos = Owner::field_count;
    (
        [&] {
          if constexpr (I < D::field_count) {
            if (pos == Owner::field_count &&
                !std::is_same_v<typename D::template field_at<I>::type, typename Owner::template field_at<I>::type>)
              pos = I;
          } else {
            if (pos == Owner::field_count) pos = I;
          }
        }(),
        ...);
    return pos;
  }(std::make_index_sequence<Owner::field_count>{});
}

// The encoded key of the owner of the owned entry k (D's first Owner::field_count fields).
template <class D, class Owner>
void owner_key_of(std::string& out, const typename D::key_type& k) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    key_codec<Owner>::encode(out, typename Owner::key_type(std::get<I>(k)...));
  }(std::make_index_sequence<Owner::field_count>{});
}

}  // namespace detail

// Value marker of an owned keyspace: entries of type Value belonging to records of Owner. See
// the top of this file.
template <class Owner, class Value>
struct owned_by {
  using keyschema_derivation = void;
  using keyschema_value_type = Value;
  using source_keyspace = Owner;
  using owner_keyspace = Owner;
  static constexpr bool maintained = false;  // written by its users; the store erases with the owner
  // An owner's erase erases its owned entries, one operation each: at least one is assumed.
  static constexpr std::size_t ops_per_source_write = 1;

  template <class Schema, class D>
  static constexpr bool check() {
    if constexpr (!detail::is_keyspace<Owner>::value || !Schema::template contains<Owner>) {
      return diagnostic::owned_by_foreign_keyspace<D::name_string>::value;
    } else if constexpr (std::is_same_v<Owner, D>) {
      return diagnostic::owned_by_itself<D::name_string>::value;
    } else if constexpr (detail::first_owned_field_mismatch<D, Owner>() != Owner::field_count) {
      return diagnostic::owned_by_key_mismatch<D::name_string, Owner::name_string,
                                               detail::first_owned_field_mismatch<D, Owner>()>::value;
    } else {
      return true;
    }
  }

  // An erase of an existing owner record erases every owned entry under its key.
  template <class D>
  static void on_source_write(derivation_context& cx, const source_write<Owner>& w) {
    if (w.new_value != nullptr || w.old_value == nullptr) return;
    std::string prefix, lower, upper;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      detail::key_codec<D>::encode_prefix(prefix, std::get<I>(w.record_key)...);
    }(std::make_index_sequence<Owner::field_count>{});
    detail::prefix_bounds<D, Owner::field_count>(prefix, lower, upper);
    std::vector<std::string> keys;
    cx.keys_in(key_range{lower, upper, false}, keys);
    for (const std::string& k : keys) {
      if (detail::key_codec<D>::matches(k)) cx.erase_record(k);
    }
  }

  // A put of an owned entry needs its owner record.
  template <class D>
  static void on_write(derivation_context& cx, std::string_view key, const typename D::key_type& k,
                       const std::string_view* value) {
    if (value == nullptr) return;
    std::string owner, ignored;
    detail::owner_key_of<D, Owner>(owner, k);
    if (cx.get(owner, ignored)) return;
    throw usage_error("keyschema: keyspace '" + std::string(D::name) + "' is owned by '" + std::string(Owner::name) +
                      "' (owned_by<" + std::string(Owner::name) + ">): the put of key " + detail::describe_key(key) +
                      " has no owner, record " + detail::describe_key(owner) + " of '" + std::string(Owner::name) +
                      "' does not exist in the state the write is resolved against (stored, or written before it in "
                      "the same batch or transaction); put the record first (earlier in the same batch or "
                      "transaction). Nothing was written");
  }

  // Throws schema_error naming the first entry of D whose owner record does not exist in the
  // state cx reads (ks::migrate checks a database before converting it to a schema that
  // declares the ownership). Cost: one scan of D, one point read per distinct owner.
  template <class D>
  static void verify(derivation_context& cx) {
    std::string prefix, lower, upper, owner, last_owner, ignored;
    detail::key_codec<D>::encode_prefix(prefix);
    detail::prefix_bounds<D, 0>(prefix, lower, upper);
    std::vector<std::string> keys;
    cx.keys_in(key_range{lower, upper, false}, keys);
    for (const std::string& key : keys) {
      typename D::key_type k;
      if (!detail::key_codec<D>::decode(key, k)) continue;
      owner.clear();
      detail::owner_key_of<D, Owner>(owner, k);
      if (owner == last_owner) continue;
      if (!cx.get(owner, ignored)) {
        throw schema_error("keyspace '" + std::string(D::name) + "' is owned by '" + std::string(Owner::name) +
                           "' (owned_by<" + std::string(Owner::name) + ">) but its entry " + detail::describe_key(key) +
                           " has no owner: record " + detail::describe_key(owner) + " of '" + std::string(Owner::name) +
                           "' does not exist; erase the orphans (keyschema::find_orphans lists them) or put their "
                           "owners, with the schema that wrote them, first");
      }
      last_owner = owner;
    }
  }

  // Names the ownership in the schema layout (fingerprint.hpp): "owned_by<Owner's name>".
  template <class Sink>
  static constexpr void visit_layout(Sink& sink) {
    sink("owned_by<");
    sink(Owner::name);
    sink(">");
  }
};

// The entries of the owned keyspace Owned (declared owned_by<Owner, ...>) whose owner record
// does not exist, read from one consistent snapshot of db (a store or a snapshot; a transaction
// sees its own writes), in key order, at most max_count of them. An empty result means every
// entry has its owner. Cost: one scan of Owned and one point read per distinct owner key.
// Remedy for what it reports: erase the entries (db.erase<Owned>(key)), or put their owners.
// Errors: decode_error (a key of Owned that does not decode; names the keyspace and the key),
// backend_error. REQUIRES (compile time): Owned is an owned keyspace (owned_by<...>).
template <class Owned, class Source>
std::vector<typename Owned::key_type> find_orphans(const Source& db,
                                                   std::size_t max_count = std::numeric_limits<std::size_t>::max()) {
  static_assert(derivation<typename Owned::value_marker> && requires { typename Owned::value_marker::owner_keyspace; },
                "keyschema::find_orphans: the keyspace is not an owned keyspace; declare its value as "
                "keyschema::owned_by<Owner, Value>");
  using Owner = typename Owned::value_marker::owner_keyspace;
  std::vector<typename Owned::key_type> out;
  if (max_count == 0) return out;
  auto read = [&](const auto& src) {
    std::string last_owner, owner;
    bool last_exists = false;
    for (const auto& e : src.template scan<Owned>()) {
      owner.clear();
      detail::owner_key_of<Owned, Owner>(owner, e.key);
      if (owner != last_owner || last_owner.empty()) {
        typename Owner::key_type ok;
        detail::key_codec<Owner>::decode(owner, ok);
        last_exists = src.template contains<Owner>(ok);
        last_owner = owner;
      }
      if (!last_exists) {
        out.push_back(e.key);
        if (out.size() == max_count) break;
      }
    }
  };
  if constexpr (requires { db.snapshot(); }) {
    const auto snap = db.snapshot();
    read(snap);
  } else {
    read(db);
  }
  return out;
}

KEYSCHEMA_END_NAMESPACE
