// tests/fuzz/fuzz_dump_printer.cpp: keyschema-dump's line for one stored entry, and its --prefix
// parser on the printed keys.
//
// Input: byte 0 selects the options (bit 0: JSON, bits 1-2: value mode automatic/hex/none,
// bit 3: also fuzz parse_prefix with the rest as text), byte 1 is the key length n, then n key
// bytes, then the value. Properties:
//   - format_entry never throws (bytes that do not decode are rendered, not thrown);
//   - the line holds no raw newline (one line per key); in JSON mode it is one valid JSON object
//     with "valid_key"; in text mode a valid key prints as a tuple "(...)", an invalid one as
//     "!b\"...\"";
//   - a valid key whose elements the --prefix syntax supports (no nested tuple, UUID, desc,
//     versionstamp, NaN or integer below -2^63) parses back from its printed text to the same
//     elements, as docs/keyschema-dump.md promises ("a key copied from the output can be pasted
//     back"), and to exactly the key bytes unless the key holds an integer in a longer form than
//     the shortest (which the schema-less decoder reads by value, as FoundationDB does);
//   - parse_prefix on arbitrary text throws only keyschema::dump::usage_error, and what it
//     returns is a valid tuple prefix (unpack_dynamic accepts it).
#include "fuzz_support.hpp"

#include <dump.hpp>
#include <prefix.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/tuple_format.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ks = keyschema;
namespace fz = keyschema::fuzz;

namespace {

bool prefix_syntax_covers(const std::vector<ks::tuple::element>& elements) {
  using kind = ks::tuple::element::kind;
  for (const auto& e : elements) {
    switch (e.type) {
      case kind::null:
      case kind::bytes:
      case kind::string:
      case kind::boolean:
        break;
      case kind::integer:
        // The long forms 0x0b / 0x1d are not what the prefix syntax writes; negative values below
        // -2^63 (8-byte magnitudes, valid in the tuple encoding) are outside its documented range.
        if (e.code == 0x0b || e.code == 0x1d) return false;
        if (e.negative && e.magnitude > (std::uint64_t{1} << 63)) return false;
        break;
      case kind::float32:
      case kind::float64:
        if (std::isnan(e.number)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

bool same_element(const ks::tuple::element& a, const ks::tuple::element& b) {
  using kind = ks::tuple::element::kind;
  if (a.type != b.type) return false;
  switch (a.type) {
    case kind::integer:
      return a.magnitude == b.magnitude && (a.negative == b.negative || a.magnitude == 0);
    case kind::float32:
    case kind::float64:
      return std::memcmp(&a.number, &b.number, sizeof a.number) == 0;
    case kind::boolean:
      return a.boolean == b.boolean;
    default:
      return a.data == b.data;
  }
}

bool shortest_integers(const std::vector<ks::tuple::element>& elements) {
  for (const auto& e : elements) {
    if (e.type != ks::tuple::element::kind::integer) continue;
    const unsigned n = e.code >= 0x14 ? e.code - 0x14u : 0x14u - e.code;
    unsigned need = 0;
    for (std::uint64_t m = e.magnitude; m != 0; m >>= 8) ++need;
    if (n != need || (e.negative && e.magnitude == 0)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fz::input_view(data, size);
  if (in.size() < 2) return 0;
  const auto mode = static_cast<std::uint8_t>(in[0]);

  if (mode & 8) {
    std::string parsed;
    bool ok = false;
    try {
      parsed = ks::dump::parse_prefix(in.substr(1));
      ok = true;
    } catch (const ks::dump::usage_error&) {
    }
    if (ok)
      KEYSCHEMA_FUZZ_CHECK(fz::only_decode_errors([&] { (void)ks::tuple::unpack_dynamic(parsed); }),
                           "parse_prefix returned bytes that are not a tuple: " + fz::hex(parsed));
    return 0;
  }

  const std::size_t n = static_cast<std::uint8_t>(in[1]);
  const std::string_view key = in.substr(2, n);
  const std::string_view value = in.size() > 2 + n ? in.substr(2 + n) : std::string_view();

  ks::dump::dump_options opts;
  opts.json = (mode & 1) != 0;
  opts.values = static_cast<ks::dump::value_format>(((mode >> 1) & 3) % 3);
  std::string line;
  bool invalid = false;
  ks::dump::append_entry(line, key, value, opts, &invalid);
  KEYSCHEMA_FUZZ_CHECK(line.find('\n') == std::string::npos, "the line holds a raw newline: " + line);
  // The reserved records (schema, unfinished migration, prepared transactions) are printed as
  // their own "# ..." lines (JSON: {"schema"...}, {"migration"...}, {"prepared"...}), not as keys.
  if (key == ks::schema_key || key == ks::migration_key || ks::detail::prepared_xid(key)) {
    KEYSCHEMA_FUZZ_CHECK(line.rfind(opts.json ? "{\"" : "# ", 0) == 0, "a reserved record's line: " + line);
    return 0;
  }
  const ks::dump::decoded_tuple d = ks::dump::decode_tuple(key);
  KEYSCHEMA_FUZZ_CHECK(invalid == !d.valid, "the invalid-key flag disagrees with decode_tuple");
  if (opts.json) {
    KEYSCHEMA_FUZZ_CHECK(fz::json_valid(line), "invalid JSON: " + line);
    KEYSCHEMA_FUZZ_CHECK(line.find(d.valid ? "\"valid_key\":true" : "\"valid_key\":false") != std::string::npos,
                         "JSON line without the right valid_key: " + line);
  } else {
    KEYSCHEMA_FUZZ_CHECK(line.starts_with(d.valid ? "(" : "!b\""), "text line starts wrongly: " + line);
  }
  if (d.valid && prefix_syntax_covers(d.elements)) {
    const std::string text = ks::tuple::to_string(d.elements);
    std::string parsed;
    try {
      parsed = ks::dump::parse_prefix(text);
    } catch (const ks::dump::usage_error& e) {
      fz::fail(__FILE__, __LINE__, "a printed key does not parse back as a prefix: " + text + ": " + e.what());
    }
    const auto back = ks::tuple::unpack_dynamic(parsed);
    KEYSCHEMA_FUZZ_CHECK(back.size() == d.elements.size() &&
                             std::equal(back.begin(), back.end(), d.elements.begin(), same_element),
                         "the printed key " + text + " parses back to other elements: " + fz::hex(parsed));
    if (shortest_integers(d.elements))
      KEYSCHEMA_FUZZ_CHECK(parsed == key, "the printed key " + text + " parses back to other bytes: " + fz::hex(parsed));
  }
  return 0;
}
