// keyschema/reserved_records.hpp: the records keyschema keeps beside a schema's keys, read by
// tools that open a database without its schema (keyschema-dump, a user's checker or backup
// script).
//
// Every reserved key starts with the byte 0xFF, which no tuple-encoded key starts with, so the
// records lie outside every keyspace and sort after every keyspace's keys:
//   schema_key ("\xff" "keyschema/schema")        the schema record: the layout's fingerprint and
//                                                 text (fingerprint.hpp: parse_schema_record)
//   migration_key ("\xff" "keyschema/migration")  the progress of an unfinished ks::migrate
//                                                 (migrate.hpp): text, one item a line, starting
//                                                 "keyschema-migration/1"; while it exists every
//                                                 store refuses the database
//   prepared_key_prefix + xid                     one record per prepared transaction
//                                                 (prepared.hpp), the xid tuple-encoded as bytes
// The byte formats are described in detail/store/prepared_record.hpp and
// detail/schema/migration_record.hpp; this header is the stable way to read them: what a record
// says, never how it is laid out, so a new format version changes nothing for its callers.
//
// Thread-safety: pure functions over the bytes given; nothing is kept.
#pragma once

#include <keyschema/detail/codec/utf8.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/migration_record.hpp>
#include <keyschema/detail/store/prepared_record.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fingerprint.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE

// What one prepared-transaction record holds, in numbers.
struct prepared_record_info {
  int format = 3;           // the record's format version: 1, 2 or 3 ("KSP1".."KSP3")
  std::size_t writes = 0;   // puts, erases, adds and range erases it will apply
  std::size_t checks = 0;   // what commit_prepared compares before applying (format 3)
  // Whether commit_prepared validates the record before applying it (format 3); records of
  // formats 1 and 2 are applied as written.
  bool validated = false;
};

// The xid of a prepared-transaction record's key, or nullopt when key is not one (another key,
// or a key that starts with prepared_key_prefix but does not decode: a damaged key). Never
// throws (std::bad_alloc aside).
template <class = void>
inline std::optional<std::string> prepared_record_xid(std::string_view key) noexcept {
  return detail::prepared_xid(key);
}

// Reads the prepared-transaction record `value` stored for xid.
// Errors: decode_error when the record is damaged (unknown magic, a length past the end, an
// unknown operation kind, a key starting with 0xFF, trailing bytes, a checksum mismatch): what()
// names the xid and the byte offset. Never reads outside `value`. Remedy: the record cannot be
// committed; keyschema::rollback_prepared (prepared.hpp) removes it.
template <class = void>
inline prepared_record_info read_prepared_record(std::string_view xid, std::string_view value) {
  const detail::prepared_record r = detail::decode_prepared(xid, value);
  return prepared_record_info{r.version, r.writes(), r.checks.size(), r.validated()};
}

// xid for messages and listings: b"..." with control and non-ASCII bytes as \xNN, cut after 64
// bytes ("... (N bytes)"). Errors: std::bad_alloc only.
template <class = void>
inline std::string printable_xid(std::string_view xid) { return detail::show_xid(xid); }

// The text of a migration progress record, or nullopt when `value` is not valid UTF-8 (a damaged
// record: the format is text). The view points into `value`. Never throws.
template <class = void>
inline std::optional<std::string_view> migration_record_text(std::string_view value) noexcept {
  if (!detail::utf8_valid(value)) return std::nullopt;
  return value;
}

KEYSCHEMA_END_NAMESPACE
