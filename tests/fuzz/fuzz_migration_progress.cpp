// tests/fuzz/fuzz_migration_progress.cpp: the progress record of an unfinished ks::migrate
// (detail/schema/migration_record.hpp) as the store, ks::migrate and their messages read it.
//
// Input: byte 0 selects the mode, the rest is the bytes stored under migration_key; with bit 0
// of the mode set, the record's first three lines (header, old and new fingerprints of the two
// schemas below) are put before them, so that mutations reach the fields a resumed ks::migrate
// trusts; with bit 1 set, the database holds one entry. Properties:
//   - parse_migration_progress returns a record or nullopt, never throws (but bad_alloc);
//   - a record that parses, formatted again, parses to the same record, and formatting that
//     gives the same bytes;
//   - describe_migration of it is one line;
//   - opening a memory store (with and without adopt) over a database holding it is a
//     schema_error naming the unfinished migration, never another error or an open store;
//     schema_changed_error names it too;
//   - ks::migrate<v1, v2> over that database either finishes (the record gone, the database
//     then opening with v2, the entry of its unchanged keyspace intact) or refuses with
//     schema_error, the record kept unchanged.
#include "fuzz_support.hpp"

#include <keyschema/keyschema.hpp>
#include <keyschema/migrate.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ks = keyschema;
namespace fz = keyschema::fuzz;

namespace {

using item = ks::keyspace<"item", std::string, ks::lit<"ITEM">, ks::field<"id", std::uint64_t>>;
using tag = ks::keyspace<"tag", std::string, ks::lit<"TAG">, ks::field<"name", std::string>>;
using v1 = ks::schema<item>;
using v2 = ks::schema<item, tag>;

bool same(const ks::detail::migration_progress& a, const ks::detail::migration_progress& b) {
  return a.from_fingerprint == b.from_fingerprint && a.to_fingerprint == b.to_fingerprint &&
         a.keyspace_index == b.keyspace_index && a.keyspace == b.keyspace && a.last_key == b.last_key &&
         a.entries == b.entries;
}

ks::memory_backend database(std::string_view record, bool with_item) {
  ks::memory_backend b;
  {
    ks::store<v1, ks::memory_backend> db;  // records v1's schema record
    if (with_item) db.put<item>({7}, "seven");
    b = std::move(db.unsafe_backend());
  }
  ks::write_batch w;
  w.put(ks::migration_key, record);
  b.write(w, {});
  return b;
}

std::optional<std::string> stored(const ks::memory_backend& b, std::string_view key) {
  std::string v;
  if (!b.get(key, v, nullptr)) return std::nullopt;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view raw = fz::input_view(data, size);
  if (raw.empty()) return 0;
  const auto mode = static_cast<unsigned char>(raw[0]);
  std::string record;
  if ((mode & 1) != 0) {
    record = std::string(ks::detail::migration_header) + '\n' + ks::fingerprint_text(ks::layout<v1>::fingerprint) +
             '\n' + ks::fingerprint_text(ks::layout<v2>::fingerprint) + '\n';
  }
  record += raw.substr(1);

  std::optional<ks::detail::migration_progress> parsed;
  try {
    parsed = ks::detail::parse_migration_progress(record);
  } catch (...) {
    KEYSCHEMA_FUZZ_CHECK(false, "parse_migration_progress threw");
  }
  if (parsed) {
    const std::string text = ks::detail::format_migration_progress(*parsed);
    const std::optional<ks::detail::migration_progress> again = ks::detail::parse_migration_progress(text);
    KEYSCHEMA_FUZZ_CHECK(again.has_value(), "a formatted record does not parse: " + fz::hex(text));
    KEYSCHEMA_FUZZ_CHECK(same(*parsed, *again), "a formatted record parses to another record: " + fz::hex(text));
    KEYSCHEMA_FUZZ_CHECK(ks::detail::format_migration_progress(*again) == text, "formatting is not stable");
  }
  const std::string described = ks::detail::describe_migration(record);
  KEYSCHEMA_FUZZ_CHECK(parsed.has_value() == (described != "(unreadable progress record)"),
                       "describe_migration disagrees with the parser: " + described);

  // A store refuses the database, whatever the record holds.
  for (const bool adopting : {false, true}) {
    try {
      if (adopting) ks::store<v1, ks::memory_backend> db(ks::adopt, database(record, (mode & 2) != 0));
      else ks::store<v1, ks::memory_backend> db(database(record, (mode & 2) != 0));
      KEYSCHEMA_FUZZ_CHECK(false, "a store opened a database with a migration progress record");
    } catch (const ks::schema_error& e) {
      KEYSCHEMA_FUZZ_CHECK(std::string_view(e.what()).find("unfinished ks::migrate") != std::string_view::npos,
                           std::string("the refusal does not name the migration: ") + e.what());
    }
  }
  {
    const ks::memory_backend b = database(record, false);
    const ks::schema_error e = ks::detail::schema_changed_error<v1>(
        "keyschema::store: the database", [&](std::string_view k, std::string& v) { return b.get(k, v, nullptr); });
    KEYSCHEMA_FUZZ_CHECK(std::string_view(e.what()).find("a ks::migrate is converting it") != std::string_view::npos,
                         std::string("schema_changed_error does not name the migration: ") + e.what());
  }

  // ks::migrate resumes a record of these schemas, or refuses.
  ks::memory_backend b = database(record, (mode & 2) != 0);
  try {
    (void)ks::migrate<v1, v2>(b);
  } catch (const ks::schema_error&) {
    KEYSCHEMA_FUZZ_CHECK(stored(b, ks::migration_key) == record, "a refused ks::migrate changed the progress record");
    return 0;
  }
  KEYSCHEMA_FUZZ_CHECK(parsed.has_value(), "ks::migrate resumed from a record that does not parse");
  KEYSCHEMA_FUZZ_CHECK(!stored(b, ks::migration_key).has_value(), "a finished ks::migrate left its progress record");
  ks::store<v2, ks::memory_backend> db(std::move(b));
  // item is the same keyspace in both schemas: whatever the record said, its entry survives.
  const std::optional<std::string> seven = db.get<item>({7});
  KEYSCHEMA_FUZZ_CHECK(seven == ((mode & 2) != 0 ? std::optional<std::string>("seven") : std::nullopt),
                       "an entry of an unchanged keyspace did not survive the resumed ks::migrate");
  return 0;
}
