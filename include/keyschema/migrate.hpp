// keyschema/migrate.hpp: rewriting a database from one schema to another (schema migration).
//
// A store refuses a database whose recorded layout differs from its schema in a keyspace (see
// store.hpp). ks::migrate<Old, New> converts such a database: it rewrites the entries of the old
// schema's keyspaces into the new schema's, in bounded atomic batches, resumable after a crash,
// and records the new schema only when everything is rewritten:
//
//   ks::leveldb_backend b(path);                       // the database, no store open on it
//   ks::migrate<v1, v2>(b,
//       ks::transform<v1_metadata>([](const ks::entry<v1_metadata>& e, ks::migration_writer<v2>& out) {
//         out.put<metadata>({e.get<"destination">(), std::stoull(e.get<"message_id">())}, e.value);
//       }),
//       ks::drop<v1_scratch>);
//   // then: ks::store<v2, ks::leveldb_backend> db(path);
//
// Steps, one per old keyspace at most:
//   ks::transform<OldKS>(f)  f(const entry<OldKS>&, migration_writer<New>&) is called once per old
//                            entry, in key order, and writes zero or more new entries (put, erase
//                            of any keyspace of New); the old entry is erased first, in the same
//                            batch, so writing the same key again replaces it;
//   ks::drop<OldKS>          erases every entry of OldKS.
// An old keyspace without a step must have a keyspace of the same name and identical layout in
// New (keyspace_fingerprint): its entries are carried over untouched. Anything else does not
// compile (static_assert naming the rule; the "required from" note names the keyspace), nor does
// a New whose declared counts or indexes fail the store's checks (an index key lacking a field of
// its record's key: keyschema::index_of: ...), since step 2b rebuilds them.
//
// How it runs (and why a half-done migration is never ambiguous):
//   1. Checks: the database's record is Old's (compared keyspace by keyspace, as a store does;
//      a database that has New's record already returns at once: already_done), no prepared
//      transaction (keyschema/prepared.hpp) exists (its writes are keys of Old), and every
//      keyspace of New that is not an unchanged old one holds no key that is not an old entry.
//      Then writes the progress record (migration_key) with sync: from here on a store refuses
//      the database with schema_error "unfinished ks::migrate", with either schema.
//   2. For each old keyspace with a step, in schema order: reads at most batch_entries old
//      entries in key order after the progress mark, calls the step, and writes in ONE atomic
//      batch the erase of those old keys, the new entries, and the progress record naming the
//      keyspace and the last old key processed. A crash loses at most the batch being built; a
//      rerun resumes after the last committed old key. Old and new keys may share bytes (same
//      keyspace, changed value codec): every old key at or before the mark has been rewritten,
//      every one after it has not. To keep that true, a step must not write a key that is also a
//      key of an old keyspace still to be rewritten: of the keyspace being rewritten after the old
//      key being processed, or of a later one with a step. Such a write throws schema_error
//      naming the keyspaces, before anything of that batch is written.
//   2b. Rebuilds every declared count (count_of) and index (index_of) of New, in schema order:
//      erases its keys, then derives it from the records of New it derives from (as they are
//      after step 2), reading them in key order in batches of at most batch_entries records,
//      each batch one atomic write with the progress record (the keyspace and the last record
//      derived), so a rerun resumes after it. Steps write records only (a migration_writer
//      cannot write a count or index, like a batch), so counts and indexes equal the records
//      whatever the steps did. Cost: one pass over each derived keyspace and its records.
//   3. Writes New's record and erases the progress record in one atomic write with sync.
//
// Placement (keyschema::placed) is part of a keyspace's layout. An old keyspace without a step
// whose keyspace of the same name in New differs from it in placement only is moved by an
// implicit step (a ks::transform writing each entry unchanged; for a count or index, ks::drop, as
// step 2b derives it again). On a backend_with_placements the run reads such a keyspace in both
// placements, erases there from both, and writes into New's, so each batch moves its entries
// atomically. The long-keys marker (keyschema::long_keys) is part of the layout too, and moved
// alike: on a backend_with_long_keys the run reads the keyspace's keys in either form and writes
// them in New's (a key longer than the engine's limit in a keyspace New takes the marker off is a
// limit_error naming the keyspace, before anything of its batch is written).
//
// Durability: the batches of rewritten entries are
// written without sync (a crash of the machine may lose the last ones, together with their
// progress: the rerun redoes them); the start and the end are written with sync.
//
// Steps must be deterministic: a step may be called again for one entry when its output did not
// fit the batch being filled (its first output is discarded) or after a crash (the batch that
// held its output was never written).
//
// Thread-safety: migrate() uses the backend alone. REQUIRES: nothing else writes the database
// while it runs (no store is open on it: an ordinary open is refused once step 1 is done, and
// the engines' locks refuse a second open of the same path in most configurations).
// On a backend other processes can write while it is open (backend_with_write_guards: LMDB,
// SQLite, etcd) this is checked rather than assumed: each write of a store is guarded by the schema
// record it opened with and the absence of a progress record, so a store another process opened
// with the old schema is refused (schema_error) from step 1 on and writes nothing the migration
// could miss; each batch of the migration is guarded by the progress record it wrote last (step 1:
// by the schema record it checked and no progress record), so a second ks::migrate running at the
// same time is refused (schema_error) instead of interleaving its batches.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/store/migration.hpp>
#include <keyschema/detail/store/placement_routes.hpp>
#include <keyschema/entry.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fingerprint.hpp>
#include <keyschema/schema.hpp>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

// migrate_options (batch_entries: the most old entries one atomic batch rewrites, default 1000),
// migrate_result (what a call did) and migration_writer<New> (what a transform writes into: put
// and erase of New's keyspaces, with the errors of a batch's) are declared in
// detail/store/migration.hpp.

namespace detail {
// Moving a keyspace between placements: an old keyspace without a step whose keyspace of the same
// name in New differs from it in placement only (or in its long-keys marker, keyschema::long_keys,
// or both) is moved by an implicit step, ks::transform writing each entry unchanged into New's (a
// count or index: ks::drop, since step 2b derives it again).
template <class K>
struct unplaced {
  using type = K;
};
template <class K>
  requires requires { typename K::keyschema_unplaced; }
struct unplaced<K> {
  using type = typename K::keyschema_unplaced;
};
// K without its placement and its long-keys marker (keyschema::long_keys): what the two leave alike.
template <class K>
struct unmarked {
  using type = typename unplaced<K>::type;
};
template <class K>
  requires(has_long_keys<K>())
struct unmarked<K> {
  using type = typename unmarked<typename K::keyschema_short_keys>::type;
};
template <class OldKS, class NewKS>
inline constexpr bool placement_only_change =
    OldKS::name == NewKS::name &&
    (placement_of<OldKS>() != placement_of<NewKS>() || has_long_keys<OldKS>() != has_long_keys<NewKS>()) &&
    keyspace_fingerprint<typename unmarked<OldKS>::type> == keyspace_fingerprint<typename unmarked<NewKS>::type>;

template <class OldKS, class... K>
struct moved_keyspace {
  using type = void;
};
template <class OldKS, class K, class... Ks>
struct moved_keyspace<OldKS, K, Ks...> {
  using type = std::conditional_t<placement_only_change<OldKS, K>, K, typename moved_keyspace<OldKS, Ks...>::type>;
};
template <class OldKS, class Schema>
struct moved_into;
template <class OldKS, class... K>
struct moved_into<OldKS, schema<K...>> : moved_keyspace<OldKS, K...> {};

template <class NewKS, class New>
struct move_entry {
  template <class OldKS>
  void operator()(const entry<OldKS>& e, migration_writer<New>& out) const {
    out.template put<NewKS>(e.key, e.value);
  }
};

template <class Old, class New, class K, class... Steps>
auto implicit_move_step() {
  if constexpr (step_count<K, Steps...> == 0 && !carried_into<New, K>()) {
    using N = typename moved_into<K, New>::type;
    if constexpr (std::is_void_v<N>)
      return std::tuple<>{};
    else if constexpr (requires { typename K::value_marker::indexed_keyspace; } ||
                       requires { typename K::value_marker::counted_keyspace; })
      return std::tuple<drop_step<K>>{};
    else
      return std::tuple<transform_step<K, move_entry<N, New>>>{transform_step<K, move_entry<N, New>>{{}}};
  } else {
    return std::tuple<>{};
  }
}
template <class Old, class New, class... Steps>
auto implicit_move_steps() {
  return []<class... K>(std::tuple<K...>*) {
    return std::tuple_cat(implicit_move_step<Old, New, K, Steps...>()...);
  }(static_cast<typename Old::keyspaces*>(nullptr));
}

template <class Old, class New, class Backend, class... Steps>
migrate_result run_migration(Backend& backend, const migrate_options& options, Steps&... steps) {
  static_assert(detail::check_migration_steps<Old, New, std::remove_cv_t<Steps>...>());
  static_assert(detail::derived_checks<New>::value,
                "keyschema::migrate: a declared count or index of New does not match what it derives from (it "
                "would be rebuilt wrong); the error above names the keyspaces");
  // Placements (backend_with_placements): New's routes, reading a moved keyspace in Old's too.
  detail::place_migration<Old, New>(backend);
  // Long keys (backend_with_long_keys): New's, still reading the long form of Old's.
  detail::long_key_migration<Old, New>(backend);
  detail::migration_run<Old, New, Backend, Steps...> run(backend, options, steps...);
  return run.run();
}
}  // namespace detail

// The step rewriting old keyspace OldKS with f (see the top of this file). f is moved into it.
template <class OldKS, class F>
detail::transform_step<OldKS, std::decay_t<F>> transform(F&& f) {
  return {std::forward<F>(f)};
}
// The step erasing every entry of old keyspace OldKS.
template <class OldKS>
inline constexpr detail::drop_step<OldKS> drop{};

// Migrates the database of `backend` from schema Old to schema New (see the top of this file).
// Returns what this call did. Ownership: the backend stays the caller's; steps are used during
// the call only.
// REQUIRES: valid_schema<Old>, valid_schema<New>; nothing else writes the database meanwhile.
// Errors (what was committed before stays committed; rerunning the same call resumes):
//   schema_error: the database's record is not Old's (names the keyspace and the difference, or
//     the keyspaces not in Old), or it has none and holds keys; the database holds prepared
//     transactions ("holds 2 prepared transactions (xid b"a", b"b")": nothing was migrated;
//     remedy: ks::commit_prepared or ks::rollback_prepared each with a store of Old, then
//     migrate); a keyspace new in New already
//     holds keys that are no old entries (names it and the count); an unfinished migration
//     between other schemas (names their fingerprints); a step wrote a key that would be read
//     again as an old entry (see above); an index of New whose Derive derives an entry that does
//     not carry its record's key fields (names the index, the record and the field); on a
//     backend_with_write_guards, another process began or advanced a migration, or recorded a
//     schema, while this one ran (names what the database holds now; nothing of the batch was
//     written; run it again once the other is done);
//   limit_error: the output of one old entry, or what one record derives, does not fit one
//     atomic write of the backend;
//   overflow_error: a count of New passes std::int64_t while derived;
//   decode_error: an old entry does not decode as Old's types (names keyspace and key);
//   usage_error: options.batch_entries is 0;
//   backend_error from the engine; whatever a step throws (the batch it was filling is dropped).
template <class Old, class New, class Backend, class... Steps>
  requires backend<Backend>
migrate_result migrate(Backend& backend, const migrate_options& options, Steps&&... steps) {
  static_assert(valid_schema<Old> && valid_schema<New>,
                "keyschema::migrate: Old and New must be valid schemas; check each with keyschema::valid_schema");
  // Keyspaces moved between placements and given no step get the implicit one.
  auto moves = detail::implicit_move_steps<Old, New, std::remove_cvref_t<Steps>...>();
  return std::apply(
      [&](auto&... move) {
        return detail::run_migration<Old, New>(backend, options, steps..., move...);
      },
      moves);
}
// As above with default options.
template <class Old, class New, class Backend, class... Steps>
  requires(backend<Backend> && !(std::is_same_v<std::remove_cvref_t<Steps>, migrate_options> || ...))
migrate_result migrate(Backend& backend, Steps&&... steps) {
  return migrate<Old, New>(backend, migrate_options{}, std::forward<Steps>(steps)...);
}

KEYSCHEMA_END_NAMESPACE
