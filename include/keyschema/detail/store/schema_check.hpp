// keyschema/detail/store/schema_check.hpp: the store's check of the schema record on open
// (store internals; the rules are documented at store's constructors in store.hpp).
//
// The stored layout is compared keyspace by keyspace with the program's (layout_compare.hpp):
//   - an unfinished ks::migrate (migration_key present): refused;
//   - a keyspace whose part differs: refused, one line naming it and the difference;
//   - a keyspace of the program the record lacks (added): accepted only when the database holds
//     no key of it (counted by a scan of its range, stopped after key_count_cap keys) and, for a
//     declared count (count_of), no record of the keyspace it counts (the count would start at 0
//     below them); the record is then rewritten to this program's (unless the backend is
//     read-only);
//   - a stored keyspace the program does not declare: refused, naming it.
// schema_guards() and schema_changed_error() re-check the record at every write of a store on a
// backend other processes can write (backend_with_write_guards in backend.hpp).
//
// Thread-safety: stateless functions; the caller holds what makes get/cursor/write consistent.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/detail/schema/layout_compare.hpp>
#include <keyschema/detail/schema/migration_record.hpp>
#include <keyschema/detail/store/derived_writes.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fingerprint.hpp>
#include <keyschema/scan.hpp>
#include <keyschema/write_batch.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

inline constexpr std::size_t key_count_cap = 1000;

// The whole key range of keyspace KS (what scan<KS>() covers).
template <class KS>
std::pair<std::string, std::string> keyspace_bounds() {
  std::string prefix, lower, upper;
  key_codec<KS>::encode_prefix(prefix);
  prefix_bounds<KS, 0>(prefix, lower, upper);
  return {std::move(lower), std::move(upper)};
}

// Number of keys of keyspace KS in the database, up to cap. Also(key) says whether a key of KS is
// to be left out of the count. A key in KS's range that starts like a key of KS but does not
// decode counts (it is not known to be another keyspace's).
template <class KS, class Cursor, class Exclude>
std::size_t count_keys_of(Cursor&& cursor, std::size_t cap, Exclude&& exclude) {
  const auto [lower, upper] = keyspace_bounds<KS>();
  std::size_t n = 0;
  for (auto c = cursor(key_range{lower, upper, false}); c.valid() && n < cap; c.next()) {
    if (key_codec<KS>::claims(c.key()) && !exclude(c.key())) ++n;
  }
  return n;
}

// count_keys_of for the keyspace at `index` of Schema.
template <class Schema, class Cursor, class Exclude>
std::size_t count_keys_at(std::size_t index, Cursor&& cursor, std::size_t cap, Exclude&& exclude) {
  std::size_t n = 0;
  std::size_t i = 0;
  for_each_keyspace<Schema>([&]<class K>(std::type_identity<K>) {
    if (i++ == index) n = count_keys_of<K>(cursor, cap, exclude);
  });
  return n;
}

// For a maintained derivation (derivation.hpp: a declared count, an index, a sum) at `index` of
// Schema: what it is ("a declared count (count_of<message,1>)"), the name of the keyspace it
// derives from and how many records that holds (up to cap); {"", "", 0} for any other keyspace.
struct derived_records {
  std::string what, source;
  std::size_t records = 0;
};
template <class Schema, class Cursor>
derived_records counted_records_at(std::size_t index, Cursor&& cursor, std::size_t cap) {
  derived_records out;
  std::size_t i = 0;
  for_each_keyspace<Schema>([&]<class K>(std::type_identity<K>) {
    if constexpr (maintained_derivation<K>()) {
      if (i == index) {
        using R = typename K::value_marker::source_keyspace;
        std::string text;
        string_sink sink{&text};
        K::value_marker::visit_layout(sink);
        out = {std::string(derivation_kind<K>()) + " (" + text + ")", std::string(R::name),
               count_keys_of<R>(cursor, cap, [](std::string_view) { return false; })};
      }
    }
    ++i;
  });
  return out;
}

template <class = void>
inline std::string count_text(std::size_t n, std::size_t cap) {
  return std::to_string(n) + (n >= cap ? "+" : "");
}

// The refusal of an unfinished migration (shared by the store and migrate).
template <class = void>
inline std::string unfinished_migration_message(const std::string& where, std::string_view progress) {
  return where + " has an unfinished ks::migrate (" + describe_migration(progress) +
         "); run the same ks::migrate<Old, New> again to finish it, then open it with the new schema";
}

// The conditions a store guards each of its writes with on a backend other processes can write
// (backend_with_write_guards): the schema record still holds `record` (the bytes the store opened
// the database with) and no ks::migrate is under way. A ks::migrate begins by writing its
// progress record and ends by rewriting the schema record, so from its first write on, a store
// opened with the old schema writes nothing more.
template <class = void>
inline std::array<write_guard, 2> schema_guards(std::string_view record) noexcept {
  return {write_guard{schema_key, record, true}, write_guard{migration_key, {}, false}};
}

// The refusal of a store's write whose schema_guards did not hold: names what changed (a
// ks::migrate under way, or the schema record now another layout's, or removed), read now with
// get(key, value) -> bool, and the remedy. where: "keyschema::store: the database <path>".
template <class Schema, class Get>
schema_error schema_changed_error(const std::string& where, Get&& get) {
  std::string stored;
  std::string what;
  const std::string ours = fingerprint_text(layout<Schema>::fingerprint);
  if (get(migration_key, stored)) {
    what = "a ks::migrate is converting it (" + describe_migration(stored) + ")";
  } else if (!get(schema_key, stored)) {
    what = "its schema record was removed";
  } else if (const std::optional<schema_record> r = parse_schema_record(stored)) {
    what = r->fingerprint_text == ours
               ? "its schema record was rewritten (now the same layout " + ours + " again)"
               : "it was migrated or extended to schema layout " + std::string(r->fingerprint_text);
  } else {
    what = "its schema record was replaced by an unreadable one";
  }
  return schema_error(where + " changed schema since this store opened it with layout " + ours + ": " + what +
                      "; nothing was written. Reopen the store with the database's current schema");
}

// Checks or records the schema record (see the top of this file and store's constructors).
// where: "keyschema::store: the database <path>". get(key, value) -> bool; cursor(key_range) ->
// a backend cursor; write(batch) writes with sync.
template <class Schema, class Get, class Cursor, class Write>
void check_schema_record(const std::string& where, bool adopting, bool read_only, Get&& get, Cursor&& cursor,
                         Write&& write) {
  std::string stored;
  if (get(migration_key, stored)) throw schema_error(unfinished_migration_message(where, stored));
  const std::string expected = layout<Schema>::record();
  if (!get(schema_key, stored)) {
    if (read_only) {
      throw schema_error(where + ": read-only open of a database that has no keyschema schema record; open it "
                                 "read-write once, or with adopt" +
                         (adopting ? " (adopting records the schema, which a read-only open cannot)" : ""));
    }
    if (!adopting) {
      std::size_t n = 0;
      for (auto c = cursor(key_range{}); c.valid() && n < key_count_cap; c.next()) ++n;
      if (n != 0) {
        throw schema_error(where + " holds " + count_text(n, key_count_cap) +
                           " keys not written by keyschema (it has no keyschema schema record), so nothing says "
                           "they are keys of this schema; open another path, or take the database over with "
                           "ks::store<Schema, Backend>{ks::adopt, ...} if its keys are this schema's keys");
      }
    }
    write_batch b;
    b.put(schema_key, expected);
    write(b);
    return;
  }
  if (stored == expected) return;
  const std::string remedy =
      "; open it with the schema that wrote it, or convert it with ks::migrate (keyschema/migrate.hpp)";
  const std::optional<schema_record> theirs = parse_schema_record(stored);
  const std::vector<std::string> parts = layout<Schema>::keyspace_texts();
  const layout_comparison cmp = theirs ? compare_layout(theirs->layout, parts) : layout_comparison{false, {}, {}, {}, {}};
  const std::string other = where + " was written with another schema layout";
  if (!cmp.readable) {
    throw schema_error(other + " (stored fingerprint " +
                       (theirs ? std::string(theirs->fingerprint_text) + ", layout unreadable: not \"" +
                                     std::string(layout_header) + "name=codec{...};...\""
                               : std::string("unreadable: the record is not \"<16 hex digits>\\n<layout>\"")) +
                       ", this program's " + fingerprint_text(layout<Schema>::fingerprint) + ")" + remedy);
  }
  if (!cmp.changed.empty()) {
    std::string more;
    for (std::size_t i = 1; i < cmp.changed.size(); ++i) {
      more += (i == 1 ? "; also differ: " : ", ") + cmp.changed[i].substr(0, cmp.changed[i].find(':'));
    }
    throw schema_error(other + ": keyspace " + cmp.changed.front() + more + remedy);
  }
  for (std::size_t i : cmp.added) {
    // A count added to records that exist would start at 0 and never equal them.
    const derived_records d = counted_records_at<Schema>(i, cursor, key_count_cap);
    if (d.records != 0) {
      throw schema_error(where + ": keyspace '" + std::string(layout_part_name(parts[i])) + "' is " + d.what +
                         " new in this program, but the keyspace '" + d.source + "' it derives from already holds " +
                         count_text(d.records, key_count_cap) +
                         " records, which it would not include; add it together with its keyspace, or rebuild the "
                         "database with ks::migrate");
    }
    const std::size_t n = count_keys_at<Schema>(i, cursor, key_count_cap, [](std::string_view) { return false; });
    if (n == 0) continue;
    const std::string_view body = part_body(parts[i]);
    std::string renamed;
    for (std::size_t j = 0; j < cmp.extra.size(); ++j) {
      if (part_body(cmp.extra_parts[j]) == body) renamed = " (stored keyspace '" + cmp.extra[j] + "' has its layout: renamed?)";
    }
    throw schema_error(where + ": keyspace '" + std::string(layout_part_name(parts[i])) +
                       "' is new in this program but already has " + count_text(n, key_count_cap) + " keys" + renamed +
                       ", which opening would adopt; erase them, or open it with the schema that wrote it, or "
                       "convert it with ks::migrate (keyschema/migrate.hpp)");
  }
  if (!cmp.extra.empty()) {
    throw schema_error(other + ": it holds keyspace(s) " + quoted_names(cmp.extra) +
                       " that this program does not declare" + remedy);
  }
  // Only added keyspaces (or another order): record this program's layout.
  if (read_only) return;
  write_batch b;
  b.put(schema_key, expected);
  write(b);
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
