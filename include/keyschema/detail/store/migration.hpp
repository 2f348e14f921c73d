// keyschema/detail/store/migration.hpp: the machinery of ks::migrate (see keyschema/migrate.hpp
// for what it does and guarantees), and the public types it uses: migrate_options,
// migrate_result, migration_writer<New>.
//
// Thread-safety: a migration_run is used by one thread; migration_writer likewise.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/detail/schema/layout_compare.hpp>
#include <keyschema/detail/schema/migration_record.hpp>
#include <keyschema/detail/store/limit_check.hpp>
#include <keyschema/detail/store/prepared_record.hpp>
#include <keyschema/detail/store/schema_check.hpp>
#include <keyschema/entry.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fingerprint.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/store.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

// Options of ks::migrate.
struct migrate_options {
  // The most old entries one atomic batch rewrites (fewer when the backend's limits,
  // max_ops_per_write and max_bytes_per_write, demand it). REQUIRES: at least 1.
  std::size_t batch_entries = 1000;
};

// What one call of ks::migrate did.
struct migrate_result {
  std::uint64_t entries = 0;  // old entries rewritten or dropped by this call
  std::uint64_t batches = 0;  // atomic batches of rewritten entries written by this call
  bool resumed = false;       // this call finished a migration a previous call had begun
  bool already_done = false;  // the database already had New's record: nothing was written
};

namespace detail {
struct migration_access;
}

// What a transform step writes into: the typed put and erase of a batch over schema New (see
// store.hpp's basic_writer for their errors: limit_error, key_error), plus schema_error when a
// put would be read again as an old entry (see migrate.hpp). Made by ks::migrate only; valid
// during the step's call.
template <class New>
class migration_writer : public detail::basic_writer<migration_writer<New>, New> {
 private:
  friend detail::store_access;
  friend detail::migration_access;
  migration_writer(write_batch* out, backend_limits limits, std::function<void(std::string_view)> check)
      : out_(out), limits_(limits), check_(std::move(check)) {}
  template <class KW, class VW>
  void emplace_op(write_batch::op_kind kind, KW&& kw, VW&& vw) {
    out_->emplace(kind, std::forward<KW>(kw), std::forward<VW>(vw));
    if (kind == write_batch::op_kind::put) check_((*out_)[out_->size() - 1].key);
  }
  backend_limits limits() const { return limits_; }

  write_batch* out_;
  backend_limits limits_;
  std::function<void(std::string_view)> check_;
};

namespace detail {

struct migration_access {
  template <class New>
  static migration_writer<New> make(write_batch* out, backend_limits l, std::function<void(std::string_view)> c) {
    return migration_writer<New>(out, l, std::move(c));
  }
};

template <class OldKS, class F>
struct transform_step {
  using keyspace = OldKS;
  F fn;
};
template <class OldKS>
struct drop_step {
  using keyspace = OldKS;
};

template <class T>
struct is_migration_step : std::false_type {};
template <class K, class F>
struct is_migration_step<transform_step<K, F>> : std::true_type {};
template <class K>
struct is_migration_step<drop_step<K>> : std::true_type {};

template <class OldKS, class... Steps>
inline constexpr std::size_t step_count = (std::size_t{std::is_same_v<OldKS, typename Steps::keyspace>} + ... + 0);

// Whether New has a keyspace of OldKS's name and layout.
template <class New, class OldKS>
constexpr bool carried_into() {
  return any_keyspace<New>([]<class K>(std::type_identity<K>) {
    return K::name == OldKS::name && keyspace_fingerprint<K> == keyspace_fingerprint<OldKS>;
  });
}

// Whether New's keyspace NewKS is one of Old's, unchanged.
template <class Old, class NewKS>
constexpr bool unchanged_from() {
  return carried_into<Old, NewKS>();
}

namespace diagnostic {
template <std::size_t N>
inline constexpr bool migrate_false = false;

template <fixed_string OldKeyspace>
struct old_keyspace_without_step {
  static_assert(migrate_false<OldKeyspace.size()>,
                "keyschema::migrate: an old keyspace (see OldKeyspace) has no step and the new schema has no "
                "keyspace of its name and layout; pass ks::transform<OldKS>(f) or ks::drop<OldKS>");
  static constexpr bool value = false;
};
template <fixed_string OldKeyspace>
struct two_steps_for_one_keyspace {
  static_assert(migrate_false<OldKeyspace.size()>,
                "keyschema::migrate: two steps name the same old keyspace (see OldKeyspace); pass one step per "
                "old keyspace");
  static constexpr bool value = false;
};
template <fixed_string Keyspace>
struct step_of_foreign_keyspace {
  static_assert(migrate_false<Keyspace.size()>,
                "keyschema::migrate: a step names a keyspace (see Keyspace) that is not part of the old schema; "
                "name the old schema's keyspace in ks::transform<OldKS> / ks::drop<OldKS>");
  static constexpr bool value = false;
};
template <fixed_string OldKeyspace>
struct transform_not_callable {
  static_assert(migrate_false<OldKeyspace.size()>,
                "keyschema::migrate: the transform of an old keyspace (see OldKeyspace) cannot be called as "
                "f(const ks::entry<OldKS>&, ks::migration_writer<New>&); give it that signature");
  static constexpr bool value = false;
};
}  // namespace diagnostic

template <class New, class Step>
constexpr bool check_step_callable() {
  if constexpr (requires { Step::fn; }) {
    using K = typename Step::keyspace;
    if constexpr (!std::is_invocable_v<decltype((std::declval<Step&>().fn)), const entry<K>&, migration_writer<New>&>)
      return diagnostic::transform_not_callable<K::name_string>::value;
  }
  return true;
}

template <class Old, class New, class... Steps>
constexpr bool check_migration_steps() {
  static_assert((is_migration_step<Steps>::value && ...),
                "keyschema::migrate: every argument after the backend (and options) must be a step: "
                "ks::transform<OldKS>(f) or ks::drop<OldKS>");
  if constexpr ((is_migration_step<Steps>::value && ...)) {
    bool ok = true;
    (
        [&] {
          using K = typename Steps::keyspace;
          if constexpr (!Old::template contains<K>) ok = ok && diagnostic::step_of_foreign_keyspace<K::name_string>::value;
          else if constexpr (step_count<K, Steps...> > 1) ok = ok && diagnostic::two_steps_for_one_keyspace<K::name_string>::value;
          else ok = ok && check_step_callable<New, Steps>();
        }(),
        ...);
    for_each_keyspace<Old>([&]<class K>(std::type_identity<K>) {
      if constexpr (step_count<K, Steps...> == 0 && !carried_into<New, K>())
        ok = ok && diagnostic::old_keyspace_without_step<K::name_string>::value;
    });
    return ok;
  }
  return false;
}

// Whether key is a key of a keyspace of Schema (a key that starts like one but does not decode
// counts as one: key_codec::claims).
template <class Schema>
bool key_of_schema(std::string_view key) {
  return any_keyspace<Schema>([key]<class K>(std::type_identity<K>) { return key_codec<K>::claims(key); });
}

// Old has a keyspace of K's name whose keys are K's (the same segments).
template <class Old, class K>
constexpr bool same_keys_in() {
  return []<class... O>(std::tuple<O...>*) {
    return ((O::name == K::name && std::is_same_v<typename O::segments, typename K::segments>) || ...);
  }(static_cast<typename Old::keyspaces*>(nullptr));
}

// The keyspace a derived keyspace D (a count, an index, a sum: derivation.hpp) derives from.
template <class D>
struct derived_source {
  using type = typename D::value_marker::source_keyspace;
};

template <class Old, class New, class Backend, class... Steps>
class migration_run {
  using old_keyspaces = typename Old::keyspaces;
  static constexpr std::size_t old_count = std::tuple_size_v<old_keyspaces>;
  using new_keyspaces = typename New::keyspaces;
  static constexpr std::size_t new_count = std::tuple_size_v<new_keyspaces>;

 public:
  migration_run(Backend& b, const migrate_options& o, Steps&... steps)
      : b_(b), opts_(o), steps_(steps...), limits_(b.limits()) {}

  migrate_result run() {
    if (opts_.batch_entries == 0) throw usage_error("keyschema::migrate: migrate_options::batch_entries is 0; give at least 1");
    std::string text;
    if (b_.get(migration_key, text, nullptr)) {
      std::optional<migration_progress> p = parse_migration_progress(text);
      if (!p || p->from_fingerprint != fingerprint_text(layout<Old>::fingerprint) ||
          p->to_fingerprint != fingerprint_text(layout<New>::fingerprint) ||
          p->keyspace_index >= old_count + 2 * new_count) {
        throw schema_error(where() + " has an unfinished ks::migrate between other schemas (" + describe_migration(text) +
                           "; this call migrates from " + fingerprint_text(layout<Old>::fingerprint) + " to " +
                           fingerprint_text(layout<New>::fingerprint) + "); finish it with the schemas it was begun with");
      }
      progress_ = std::move(*p);
      written_ = std::move(text);
      result_.resumed = true;
    } else if (!begin()) {
      return result_;
    }
    rewrite(std::make_index_sequence<old_count>{});
    rebuild(std::make_index_sequence<new_count>{});
    write_batch done;
    done.put(schema_key, layout<New>::record());
    done.erase(migration_key);
    write_guarded(done, write_options{.sync = true}, {write_guard{migration_key, written_, true}});
    return result_;
  }

 private:
  static std::string where() {
    return "keyschema::migrate: the database";
  }

  // Step 1 (see migrate.hpp). Returns false when there is nothing to do.
  bool begin() {
    std::string stored;
    if (!b_.get(schema_key, stored, nullptr)) {
      auto c = b_.cursor(key_range{}, nullptr);
      if (c.valid()) {
        throw schema_error(where() + " has no keyschema schema record but holds keys; open it once with the old "
                                     "schema (ks::adopt if they are its keys), then migrate");
      }
      write_batch w;
      w.put(schema_key, layout<New>::record());
      write_guarded(w, write_options{.sync = true},
                    {write_guard{schema_key, {}, false}, write_guard{migration_key, {}, false}});
      return false;
    }
    if (stored == layout<New>::record()) {
      result_.already_done = true;
      return false;
    }
    const std::optional<schema_record> rec = parse_schema_record(stored);
    const layout_comparison cmp =
        rec ? compare_layout(rec->layout, layout<Old>::keyspace_texts()) : layout_comparison{false, {}, {}, {}, {}};
    if (!cmp.readable || !cmp.changed.empty() || !cmp.extra.empty()) {
      throw schema_error(where() + " was not written with the old schema given to ks::migrate: " +
                         (!cmp.readable       ? std::string("its schema record is unreadable")
                          : !cmp.changed.empty() ? "keyspace " + cmp.changed.front()
                                                 : "it holds keyspace(s) " + quoted_names(cmp.extra) +
                                                       " the old schema does not declare") +
                         "; pass the schema that wrote it as Old");
    }
    refuse_prepared();
    // Derivations of New that check the stored state (owned keyspaces: no orphans), where the
    // derived keyspace and its source keep their keys from Old: refused before anything is written.
    for_each_keyspace<New>([&]<class K>(std::type_identity<K>) { this->template verify_derivation<K>(); });
    // Keyspaces new in New must not hold keys that are no old entries.
    for_each_keyspace<New>([&]<class K>(std::type_identity<K>) {
      if constexpr (!unchanged_from<Old, K>()) {
        const std::size_t n = count_keys_of<K>(
            [&](const key_range& r) { return b_.cursor(r, nullptr); }, key_count_cap,
            [](std::string_view k) { return key_of_schema<Old>(k); });
        if (n != 0) {
          throw schema_error(where() + ": keyspace '" + std::string(K::name) +
                             "' of the new schema already holds " + count_text(n, key_count_cap) +
                             " keys that are no entries of the old schema; erase them first");
        }
      }
    });
    progress_.from_fingerprint = fingerprint_text(layout<Old>::fingerprint);
    progress_.to_fingerprint = fingerprint_text(layout<New>::fingerprint);
    progress_.keyspace_index = 0;
    progress_.keyspace = std::string(std::tuple_element_t<0, old_keyspaces>::name);
    write_batch w;
    std::string progress = format_migration_progress(progress_);
    w.put(migration_key, progress);
    write_guarded(w, write_options{.sync = true},
                  {write_guard{schema_key, stored, true}, write_guard{migration_key, {}, false}});
    written_ = std::move(progress);
    return true;
  }

  // A prepared transaction (keyschema/prepared.hpp) holds keys of the old schema, which no store
  // of the new one could commit or read back: refused before anything is written.
  void refuse_prepared() {
    std::string upper(prepared_key_prefix);
    upper.back() = static_cast<char>(upper.back() + 1);  // just past every record key
    constexpr std::size_t shown = 3;
    std::size_t n = 0;
    std::string xids;
    for (auto c = b_.cursor(key_range{std::string(prepared_key_prefix), upper, false}, nullptr); c.valid(); c.next()) {
      if (++n > shown) continue;
      const std::optional<std::string> xid = prepared_xid(c.key());
      xids += (n > 1 ? ", " : "") + (xid ? show_xid(*xid) : describe_key(c.key()));
    }
    if (n == 0) return;
    throw schema_error(where() + " holds " + std::to_string(n) + " prepared transaction" + (n == 1 ? "" : "s") +
                       " (xid " + xids + (n > shown ? ", ..." : "") +
                       "), whose writes are keys of the old schema; commit or roll them back first "
                       "(ks::commit_prepared / ks::rollback_prepared with a store of the old schema), then migrate. "
                       "Nothing was migrated");
  }

  template <std::size_t... I>
  void rewrite(std::index_sequence<I...>) {
    (rewrite_keyspace<I>(), ...);
  }

  // The step of old keyspace KS, or nullptr.
  template <class KS>
  auto* step_of() {
    return find_step<KS, 0>();
  }
  template <class KS, std::size_t J>
  auto* find_step() {
    if constexpr (J == sizeof...(Steps)) {
      return static_cast<void*>(nullptr);
    } else if constexpr (std::is_same_v<typename std::remove_cv_t<std::tuple_element_t<J, std::tuple<Steps...>>>::keyspace, KS>) {
      return &std::get<J>(steps_);
    } else {
      return find_step<KS, J + 1>();
    }
  }

  // Throws when key, written by the step of old keyspace I while it processes `current`, is a key
  // of an old keyspace still to be rewritten (see migrate.hpp).
  template <std::size_t I>
  void check_written(std::string_view key, std::string_view current) const {
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      (
          [&] {
            using K = std::tuple_element_t<J, old_keyspaces>;
            if constexpr (J >= I && step_count<K, Steps...> > 0) {
              if (J == I && key <= current) return;
              if (!key_codec<K>::claims(key)) return;
              throw schema_error(
                  "keyschema::migrate: the step of old keyspace '" +
                  std::string(std::tuple_element_t<I, old_keyspaces>::name) + "' wrote a key of old keyspace '" +
                  std::string(K::name) +
                  (J == I ? "' after the old entry it is rewriting" : "', which is rewritten later") +
                  ", so it would be read again as an old entry; write it in another keyspace or position, or "
                  "migrate in two runs. Nothing of this batch was written");
            }
          }(),
          ...);
    }(std::make_index_sequence<old_count>{});
  }

  // Step 2 for old keyspace I.
  template <std::size_t I>
  void rewrite_keyspace() {
    using KS = std::tuple_element_t<I, old_keyspaces>;
    auto* step = step_of<KS>();
    if constexpr (std::is_same_v<decltype(step), void*>) {
      return;  // carried over unchanged
    } else {
      if (progress_.keyspace_index > I) return;  // done before
      if (progress_.keyspace_index < I) {
        progress_.keyspace_index = I;
        progress_.keyspace = std::string(KS::name);
        progress_.last_key.reset();
      }
      const auto [lower, upper] = keyspace_bounds<KS>();
      const std::size_t max_ops = limits_.max_ops_per_write;
      write_batch chunk, staged;
      std::string current;
      for (;;) {
        chunk.clear();
        std::string from = lower;
        if (progress_.last_key) {
          from = *progress_.last_key;
          from.push_back('\0');
        }
        std::size_t n = 0;
        bool more = false;
        std::string last;
        {
          auto c = b_.cursor(key_range{from, upper, false}, nullptr);
          for (; c.valid(); c.next()) {
            typename KS::key_type k;
            if (!key_codec<KS>::decode(c.key(), k)) continue;
            if (n == opts_.batch_entries) {
              more = true;
              break;
            }
            current.assign(c.key());
            staged.clear();
            staged.erase(current);
            if constexpr (requires { step->fn; }) {
              entry<KS> e{std::move(k), decode_value<KS>(c.key(), c.value())};
              auto w = migration_access::make<New>(&staged, limits_, [&](std::string_view written) {
                check_written<I>(written, current);
              });
              step->fn(static_cast<const entry<KS>&>(e), w);
            }
            const std::size_t progress_bytes = migration_key.size() + 2 * current.size() + progress_.keyspace.size() + 128;
            const bool fits = chunk.size() + staged.size() + 1 <= max_ops &&
                              staged.byte_size() + progress_bytes <= limits_.max_bytes_per_write &&
                              chunk.byte_size() <= limits_.max_bytes_per_write - staged.byte_size() - progress_bytes;
            if (!fits) {
              if (n == 0) {
                throw limit_error("keyschema::migrate: the rewrite of one entry of old keyspace '" + std::string(KS::name) +
                                  "' needs " + std::to_string(staged.size() + 1) + " operations and " +
                                  std::to_string(staged.byte_size() + progress_bytes) +
                                  " bytes, more than one atomic write of the backend takes (backend_limits::"
                                  "max_ops_per_write, max_bytes_per_write); nothing of it was written");
              }
              more = true;
              break;
            }
            for (const write_batch::op o : staged) {
              if (o.kind == write_batch::op_kind::put) chunk.put(o.key, o.value);
              else chunk.erase(o.key);
            }
            last = current;
            ++n;
          }
        }
        if (n == 0) return;
        progress_.last_key = last;
        progress_.entries += n;
        advance(chunk, format_migration_progress(progress_));
        result_.entries += n;
        ++result_.batches;
        if (!more) return;
      }
    }
  }

  // Step 2b (see migrate.hpp): each count and index of New is erased, then derived again from the
  // records of New it derives from. Progress: keyspace_index old_count + 2J while New's keyspace J
  // is erased, old_count + 2J + 1 while it is derived (last_key: the last record derived).
  template <std::size_t... J>
  void rebuild(std::index_sequence<J...>) {
    (rebuild_keyspace<J>(), ...);
  }

  template <std::size_t J>
  void rebuild_keyspace() {
    using D = std::tuple_element_t<J, new_keyspaces>;
    if constexpr (is_maintained_keyspace<D>) {
      const std::size_t erasing = old_count + 2 * J;
      if (progress_.keyspace_index > erasing + 1) return;  // done before
      if (progress_.keyspace_index < erasing) enter_phase(erasing, D::name);
      if (progress_.keyspace_index == erasing) {
        erase_all<D>();
        enter_phase(erasing + 1, D::name);
      }
      derive_all<D, typename derived_source<D>::type>();
    }
  }

  void enter_phase(std::size_t index, std::string_view name) {
    progress_.keyspace_index = index;
    progress_.keyspace = std::string(name);
    progress_.last_key.reset();
  }

  // Erases every key of D, in bounded batches, each with the progress record.
  template <class D>
  void erase_all() {
    const auto [lower, upper] = keyspace_bounds<D>();
    const std::string progress = format_migration_progress(progress_);
    const std::size_t max_keys = erase_chunk_ops(limits_, std::min(opts_.batch_entries, limits_.max_ops_per_write - 1));
    write_batch chunk;
    for (;;) {
      chunk.clear();
      {
        auto c = b_.cursor(key_range{lower, upper, false}, nullptr);
        for (; c.valid() && chunk.size() < max_keys; c.next()) {
          if (!key_codec<D>::matches(c.key())) continue;
          if (!erase_chunk_fits(limits_, chunk.byte_size() + migration_key.size() + progress.size(), c.key().size()))
            break;
          chunk.erase(c.key());
        }
      }
      if (chunk.empty()) return;
      advance(chunk, progress);
      ++result_.batches;
    }
  }

  // Writes b (with sync), on a backend other processes can write (backend_with_write_guards) only
  // while every condition of g holds in the engine's write transaction; otherwise throws
  // schema_error, nothing written: another ks::migrate began or advanced meanwhile, or a store
  // recorded another schema.
  void write_guarded(const write_batch& b, const write_options& o, std::initializer_list<write_guard> g) {
    if constexpr (backend_with_write_guards<Backend>) {
      if (!b_.write(b, o, write_guards(g.begin(), g.size()))) {
        throw schema_error(where() + " was changed by another process while this ks::migrate ran (another ks::migrate "
                                     "began or advanced it, or a store recorded its schema meanwhile: " +
                           changed_state() + "); nothing of this batch was written. Run ks::migrate again once the "
                                             "other process is done: it resumes from what was committed");
      }
    } else {
      b_.write(b, o);
    }
  }
  // What the database holds now, for the message above.
  std::string changed_state() const {
    std::string v;
    if (b_.get(migration_key, v, nullptr)) return "now " + describe_migration(v);
    if (!b_.get(schema_key, v, nullptr)) return "no schema record";
    const std::optional<schema_record> r = parse_schema_record(v);
    if (!r) return "an unreadable schema record";
    return "schema layout " + std::string(r->fingerprint_text) + ", no migration under way";
  }
  // Writes one batch of step 2 or 2b without sync, guarded by the progress record this run wrote
  // last. progress: the new progress record, put into b here; empty when b already holds it.
  void advance(write_batch& b, std::string progress) {
    if (progress.empty()) {
      progress = format_migration_progress(progress_);
    } else {
      b.put(migration_key, progress);
    }
    write_guarded(b, write_options{.sync = false}, {write_guard{migration_key, written_, true}});
    written_ = std::move(progress);
  }

  template <class K>
  void verify_derivation() {
    if constexpr (is_derived_keyspace<K>) {
      if constexpr (requires(derivation_context& cx) { K::value_marker::template verify<K>(cx); }) {
        if constexpr (same_keys_in<Old, K>() && same_keys_in<Old, typename K::value_marker::source_keyspace>()) {
          pending_map none;
          write_overlay st(none, &read_base, &b_, &scan_base);
          derivation_context cx(st, nullptr);
          try {
            K::value_marker::template verify<K>(cx);
          } catch (const schema_error& e) {
            throw schema_error(where() + " does not meet the new schema: " + e.what() + ". Nothing was migrated");
          }
        }
      }
    }
  }

  static bool read_base(const void* ctx, std::string_view key, std::string& out) {
    return static_cast<const Backend*>(ctx)->get(key, out, nullptr);
  }
  static void scan_base(const void* ctx, const key_range& r, std::vector<std::string>& keys) {
    for (auto c = static_cast<const Backend*>(ctx)->cursor(key_range{r.lower, r.upper, false}, nullptr); c.valid();
         c.next())
      keys.emplace_back(c.key());
  }

  // Derives D from every record of R after the progress mark, in bounded batches (at most
  // batch_entries records, fewer when the backend's limits demand it), each written with the
  // progress record.
  template <class D, class R>
  void derive_all() {
    const auto [lower, upper] = keyspace_bounds<R>();
    std::size_t cap = std::max<std::size_t>(1, std::min(opts_.batch_entries, limits_.max_ops_per_write - 1));
    std::vector<std::pair<typename R::key_type, typename R::value_type>> records;
    pending_map writes;
    write_batch out;
    for (;;) {
      std::string from = lower;
      if (progress_.last_key) {
        from = *progress_.last_key;
        from.push_back('\0');
      }
      records.clear();
      std::string last;
      bool more = false;
      {
        auto c = b_.cursor(key_range{from, upper, false}, nullptr);
        for (; c.valid(); c.next()) {
          typename R::key_type k;
          if (!key_codec<R>::decode(c.key(), k)) continue;
          if (records.size() == cap) {
            more = true;
            break;
          }
          records.emplace_back(std::move(k), decode_value<R>(c.key(), c.value()));
          last.assign(c.key());
        }
      }
      if (records.empty()) return;
      writes.clear();
      out.clear();
      write_overlay st(writes, &read_base, &b_, &scan_base);  // the cursor is closed: reads go to the backend
      for (const auto& [k, v] : records) derived_writes<New>::template derive_record<D, R>(st, k, v);
      std::optional<std::string> before = std::move(progress_.last_key);
      progress_.last_key = last;
      overlay_to_batch(writes, out);
      out.put(migration_key, format_migration_progress(progress_));  // advance() keeps it
      if (out.size() > limits_.max_ops_per_write || out.byte_size() > limits_.max_bytes_per_write) {
        progress_.last_key = std::move(before);
        if (cap == 1) {
          throw limit_error("keyschema::migrate: deriving keyspace '" + std::string(D::name) +
                            "' from one record of '" + std::string(R::name) +
                            "' needs more than one atomic write of the backend takes (backend_limits::"
                            "max_ops_per_write, max_bytes_per_write); nothing of it was written");
        }
        cap = std::max<std::size_t>(1, cap / 2);
        continue;
      }
      advance(out, std::string());
      ++result_.batches;
      if (!more) return;
    }
  }

  Backend& b_;
  migrate_options opts_;
  std::tuple<Steps&...> steps_;
  backend_limits limits_;
  migration_progress progress_;
  std::string written_;  // the progress record this run committed last (or found, resuming)
  migrate_result result_;
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
