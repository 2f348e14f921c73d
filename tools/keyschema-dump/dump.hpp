// tools/keyschema-dump/dump.hpp: the output of keyschema-dump, one line per stored key.
//
// keyschema keys are FoundationDB tuples, so a database can be listed without its schema:
// format_entry() decodes a key with keyschema::tuple::unpack_dynamic and renders one line, and
// dump_entries() walks a backend's keys (any class meeting <keyschema/backend.hpp>) in key order
// and writes one line per key. The formats (docs/keyschema-dump.md has the full description):
//
//   text (default)
//     ("DESTINATION", "queue-1", "MESSAGE_METADATA", 42)  =  x"0a0b0c"
//     ("DESTINATION", "queue-1", "MESSAGE_COUNT")  =  (17,)
//     !b"legacy.key\xff"  =  x"31"
//     # schema 3c2d5e6f7a8b9c0d keyschema-layout/1;message_metadata=raw{...};
//     # migration keyschema-migration/1\n<from>\n<to>\n...   (only while a ks::migrate is unfinished)
//   JSON lines (--json)
//     {"key":["DESTINATION","queue-1","MESSAGE_METADATA",42],"value":{"hex":"0a0b0c"},"valid_key":true}
//     {"key":{"hex":"6c6567..."},"value":{"hex":"31"},"valid_key":false,"error":"unknown type code 0x6c at byte 0"}
//     {"schema":{"fingerprint":"3c2d5e6f7a8b9c0d","layout":"keyschema-layout/1;..."}}
//     {"migration":"keyschema-migration/1\n..."}
//
// A key is valid when it decodes as a tuple of standard elements (plus keyschema's desc). A key
// that does not (legacy dotted keys, corrupt bytes, FoundationDB user type codes 0x41..0x4f,
// which keyschema never writes) is printed as escaped bytes and flagged; it never stops the dump.
// Values are shown decoded when they are a non-empty valid tuple (values of tuple or scalar
// value types), as hex otherwise (raw bytes values), or as the mode in dump_options says.
// The reserved schema record (keyschema::schema_key) is printed as one "# schema" line (its format
// has not changed since it was introduced; the store compares it keyspace by keyspace), each
// prepared-transaction record (keyschema/prepared.hpp) as one "# prepared" line, and the progress
// record of an unfinished ks::migrate (keyschema::migration_key) as one "# migration" line.
//
// Thread-safety: pure functions; dump_entries() reads the backend through one cursor, as the
// backend contract allows from any thread, and writes to `out`, which the caller must not share.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/layout_compare.hpp>
#include <keyschema/error.hpp>
#include <keyschema/fingerprint.hpp>
#include <keyschema/reserved_records.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/tuple_format.hpp>

#include "prefix.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace dump {

// How values are shown.
enum class value_format {
  automatic,  // decoded when the value is a non-empty valid tuple, hex otherwise
  hex,        // always hex
  none,       // not at all: keys only
};

struct dump_options {
  // Tuple-encoded prefix every listed key starts with (see parse_prefix); empty: every key.
  std::string prefix;
  // List at most this many keys (the schema record and invalid keys count too); nullopt: all.
  std::optional<std::uint64_t> limit;
  // JSON lines instead of text.
  bool json = false;
  // Descending key order.
  bool reverse = false;
  value_format values = value_format::automatic;
};

// What dump_entries() listed so far.
struct dump_stats {
  std::uint64_t entries = 0;       // lines written, all kinds
  std::uint64_t invalid_keys = 0;  // keys that are not tuples (flagged lines)
  std::uint64_t schema_records = 0;
  std::uint64_t prepared_records = 0;  // prepared-transaction records (keyschema/prepared.hpp)
};

// The result of decoding one key or value as a tuple.
struct decoded_tuple {
  std::vector<tuple::element> elements;  // meaningful when valid
  bool valid = false;
  std::string error;  // why it is not valid, e.g. "unknown type code 0x6c at byte 0"
};

// Decodes `raw` as a tuple the way keyschema writes them. Invalid when unpack_dynamic rejects it
// or when it holds a top-level FoundationDB user type code 0x41..0x4f (whose length only the
// writing application knows: unpack_dynamic swallows the rest of the input into it, so a legacy
// text key starting with 'A'..'O' would otherwise pass as a "tuple"). Never throws decode errors.
// Errors: std::bad_alloc only.
inline decoded_tuple decode_tuple(std::string_view raw) {
  decoded_tuple d;
  // Fast path for text-like bytes, without the cost of an exception per line: no tuple element
  // starts with a byte above 0x40 that keyschema accepts (0x41..0x4f are user type codes, the
  // FoundationDB tuple layer assigns nothing above them).
  if (!raw.empty() && static_cast<unsigned char>(raw.front()) > 0x40) {
    const auto c = static_cast<std::uint8_t>(raw.front());
    d.error = (c <= 0x4f ? "user type code " + format::hex_byte(c) +
                               " (not written by keyschema; its length is application-defined)"
                         : "unknown type code " + format::hex_byte(c)) +
              " at byte 0";
    return d;
  }
  try {
    d.elements = tuple::unpack_dynamic(raw);
  } catch (const decode_error& e) {
    d.error = e.what();
    d.elements.clear();
    return d;
  }
  std::size_t offset = raw.size();
  if (!d.elements.empty() && d.elements.back().type == tuple::element::kind::user_type) {
    // Only the last top-level element can be one: it takes the rest of the input.
    offset -= d.elements.back().data.size() + 1;
    d.error = "user type code " + format::hex_byte(d.elements.back().code) +
              " (not written by keyschema; its length is application-defined) at byte " + std::to_string(offset);
    d.elements.clear();
    return d;
  }
  d.valid = true;
  return d;
}

namespace detail {

using keyschema::format::append_hex;
using keyschema::format::append_json_string;

// Text of the schema layout for a text line: backslash and control characters escaped.
// REQUIRES: s is valid UTF-8.
inline void append_layout_text(std::string& out, std::string_view s) {
  constexpr char digits[] = "0123456789abcdef";
  for (const char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '\n') {
      out += "\\n";
    } else if (b < 0x20 || b == 0x7f) {
      out += "\\x";
      out += digits[b >> 4];
      out += digits[b & 0xf];
    } else {
      out += ch;
    }
  }
}

// The schema record (see keyschema::parse_schema_record), or a malformed-record line.
inline void append_schema(std::string& out, std::string_view value, bool json) {
  const std::optional<schema_record> record = parse_schema_record(value);
  if (json) {
    out += "{\"schema\":{";
    if (record) {
      out += "\"fingerprint\":\"";
      out.append(record->fingerprint_text);
      out += "\",\"layout\":";
      append_json_string(out, record->layout);
    } else {
      out += "\"hex\":\"";
      append_hex(out, value);
      out += '"';
    }
    out += "}}";
    return;
  }
  out += "# schema ";
  if (record) {
    out.append(record->fingerprint_text);
    out += ' ';
    append_layout_text(out, record->layout);
  } else {
    out += "(malformed record) x\"";
    append_hex(out, value);
    out += '"';
  }
}

// A prepared-transaction record: its xid, format, number of writes (puts, erases, adds, range
// erases) and of validation checks, or why it does not decode.
inline void append_prepared(std::string& out, std::string_view xid, std::string_view value, bool json) {
  prepared_record_info rec;
  std::string damage;
  try {
    rec = read_prepared_record(xid, value);
  } catch (const decode_error& e) {
    damage = e.what();
  }
  const std::size_t writes = rec.writes;
  const std::string format = "KSP" + std::to_string(rec.format);
  if (json) {
    out += "{\"prepared\":{\"xid\":{\"hex\":\"";
    append_hex(out, xid);
    out += "\"},";
    if (damage.empty()) {
      out += "\"format\":\"" + format + "\",\"writes\":" + std::to_string(writes);
      if (rec.validated) out += ",\"checks\":" + std::to_string(rec.checks);
    } else {
      out += "\"error\":";
      append_json_string(out, damage);
    }
    out += "}}";
    return;
  }
  out += "# prepared ";
  out += printable_xid(xid);
  if (damage.empty()) {
    out += " " + std::to_string(writes) + (writes == 1 ? " write" : " writes");
    if (rec.validated) {
      out += ", " + std::to_string(rec.checks) + (rec.checks == 1 ? " check" : " checks");
    } else {
      out += ", not validated (format " + format + ")";
    }
  } else {
    out += " (damaged record) ";
    out += damage;
  }
}

// The progress record of an unfinished ks::migrate, escaped as the layout text is (or as hex when
// it is not valid UTF-8).
inline void append_migration(std::string& out, std::string_view value, bool json) {
  const std::optional<std::string_view> text = migration_record_text(value);
  if (json) {
    out += "{\"migration\":";
    if (text) {
      append_json_string(out, *text);
    } else {
      out += "{\"hex\":\"";
      append_hex(out, value);
      out += "\"}";
    }
    out += '}';
    return;
  }
  out += "# migration ";
  if (text) {
    append_layout_text(out, *text);
  } else {
    out += "x\"";
    append_hex(out, value);
    out += '"';
  }
}

inline void append_value(std::string& out, std::string_view value, value_format mode, bool json) {
  if (mode == value_format::automatic && !value.empty()) {
    const decoded_tuple d = decode_tuple(value);
    if (d.valid) {
      out += json ? tuple::to_json(d.elements) : tuple::to_string(d.elements);
      return;
    }
  }
  out += json ? "{\"hex\":\"" : "x\"";
  append_hex(out, value);
  out += json ? "\"}" : "\"";
}

}  // namespace detail

// Appends the line for one stored entry to `out`, without a newline. Keys equal to
// keyschema::schema_key give the schema line; keys that are not tuples give a flagged line.
// `invalid`, when not null, is set to whether the key was flagged.
// Errors: std::bad_alloc only: bytes that do not decode are rendered, never thrown.
inline void append_entry(std::string& out, std::string_view key, std::string_view value, const dump_options& opts,
                         bool* invalid = nullptr) {
  if (invalid != nullptr) *invalid = false;
  if (key == schema_key) {
    detail::append_schema(out, value, opts.json);
    return;
  }
  if (const std::optional<std::string> xid = prepared_record_xid(key)) {
    detail::append_prepared(out, *xid, value, opts.json);
    return;
  }
  if (key == migration_key) {
    detail::append_migration(out, value, opts.json);
    return;
  }
  const decoded_tuple k = decode_tuple(key);
  if (invalid != nullptr) *invalid = !k.valid;
  if (opts.json) {
    out += "{\"key\":";
    if (k.valid) {
      out += tuple::to_json(k.elements);
    } else {
      out += "{\"hex\":\"";
      detail::append_hex(out, key);
      out += "\"}";
    }
    if (opts.values != value_format::none) {
      out += ",\"value\":";
      detail::append_value(out, value, opts.values, true);
    }
    out += k.valid ? ",\"valid_key\":true" : ",\"valid_key\":false,\"error\":";
    if (!k.valid) detail::append_json_string(out, k.error);
    out += '}';
    return;
  }
  if (k.valid) {
    out += tuple::to_string(k.elements);
  } else {
    tuple::element raw;
    raw.type = tuple::element::kind::bytes;
    raw.data.assign(key);
    out += '!';
    out += tuple::to_string(raw);
  }
  if (opts.values != value_format::none) {
    out += "  =  ";
    detail::append_value(out, value, opts.values, false);
  }
}

// The line for one stored entry, as append_entry.
inline std::string format_entry(std::string_view key, std::string_view value, const dump_options& opts) {
  std::string line;
  append_entry(line, key, value, opts);
  return line;
}

// The key prefixes of the keyspaces with long keys (keyschema::long_keys) a layout text names:
// for each part whose codec carries "+long_keys" (fingerprint.hpp), its leading literals ("lit:TEXT"
// segments) encoded as the store encodes them (0x02, the text with NULs as 00 FF, 0x00).
inline std::vector<std::string> long_key_prefixes(std::string_view layout) {
  std::vector<std::string> out;
  const auto parts = keyschema::detail::split_layout(layout, {});
  if (!parts) return out;
  for (const keyschema::detail::layout_part& part : *parts) {
    const keyschema::detail::part_fields f = keyschema::detail::read_part(part.text);
    const std::string_view codec = f.codec.substr(0, f.codec.rfind('@'));
    if (!codec.ends_with("+long_keys")) continue;
    std::string prefix;
    for (const std::string_view seg : f.segments) {
      if (!seg.starts_with("lit:")) break;
      prefix += '\x02';
      for (const char c : seg.substr(4)) {
        prefix += c;
        if (c == '\0') prefix += '\xff';
      }
      prefix += '\0';
    }
    if (!prefix.empty()) out.push_back(std::move(prefix));
  }
  return out;
}

// On a backend_with_long_keys (LMDB), tells the backend the keyspaces with long keys its schema
// record names, so that their keys are listed in full rather than in the backend's stored form.
// A database without a (readable) schema record is left alone. Errors: those of db.get and
// db.long_keys.
template <backend Backend>
void use_stored_long_keys(Backend& db) {
  if constexpr (backend_with_long_keys<Backend>) {
    std::string record;
    if (!db.get(schema_key, record, nullptr)) return;
    const std::optional<schema_record> r = parse_schema_record(record);
    if (!r) return;
    const std::vector<std::string> prefixes = long_key_prefixes(r->layout);
    std::vector<long_key_route> routes;
    for (const std::string& p : prefixes) routes.push_back({p, true, true});
    if (!routes.empty()) db.long_keys(routes);
  }
}

// Writes one line (ending in '\n') per key of `db` that starts with opts.prefix, in ascending
// key order (descending with opts.reverse), at most opts.limit of them. All keys are read from
// one cursor, so they come from one consistent state of the database. Adds what was written to
// `stats`, also when an error interrupts the walk.
// Errors: whatever the backend's cursor throws while reading (backend_error); the lines before
// the error have been written. A write error of `out` ends the walk and is left in its state for
// the caller to report.
// REQUIRES: db is open for the whole call.
template <backend Backend>
void dump_entries(const Backend& db, const dump_options& opts, std::ostream& out, dump_stats& stats) {
  if (opts.limit && *opts.limit == 0) return;
  const std::string upper = element_prefix_upper_bound(opts.prefix);
  auto cursor = db.cursor(key_range{opts.prefix, upper, opts.reverse}, nullptr);
  std::string line;
  std::uint64_t written = 0;
  for (; cursor.valid(); cursor.next()) {
    const std::string_view key = cursor.key();
    line.clear();
    bool invalid = false;
    append_entry(line, key, cursor.value(), opts, &invalid);
    line += '\n';
    out.write(line.data(), static_cast<std::streamsize>(line.size()));
    if (!out) return;  // the output is gone (a closed pipe, a full disk): reading on is pointless
    ++written;
    ++stats.entries;
    if (invalid) ++stats.invalid_keys;
    if (key == schema_key) ++stats.schema_records;
    if (key.starts_with(prepared_key_prefix) && prepared_record_xid(key)) ++stats.prepared_records;
    if (opts.limit && written >= *opts.limit) break;
  }
}

}  // namespace dump
KEYSCHEMA_END_NAMESPACE
