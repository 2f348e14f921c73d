// tests/fuzz/fuzz_prepared_record.cpp: a prepared-transaction record (keyschema/prepared.hpp,
// detail/store/prepared_record.hpp) as commit_prepared and keyschema-dump read it back.
//
// Input: byte 0 selects the mode, the rest is the bytes stored under a prepared key (the record
// of xid "fuzz"); with bit 0 of the mode set and 8 bytes or more, the last 8 are replaced by the
// record's checksum of what precedes them, so that mutations reach the parser behind the
// checksum. Properties:
//   - decoding it returns or throws keyschema::decode_error only, reading nothing outside it;
//   - a record that decodes encodes (in the current format, KSP3) to bytes that decode to the
//     same operations, adds, range erases, keyspaces and validation set;
//   - commit_prepared of it on a store (broker schema, memory backend, a few entries) either
//     returns true, the record gone, or throws a keyschema::error (decode_error, schema_error,
//     key_error, conflict_error, overflow_error, limit_error) with the database unchanged and the
//     record kept; rollback_prepared then removes it;
//   - keyschema-dump renders it as one line; in JSON mode, one valid JSON object.
#include "fuzz_support.hpp"

#include "../conformance/broker_schema.hpp"

#include <dump.hpp>
#include <keyschema/keyschema.hpp>
#include <keyschema/prepared.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ks = keyschema;
namespace fz = keyschema::fuzz;
namespace bk = keyschema::conformance;

namespace {

using entries = std::vector<std::pair<std::string, std::string>>;

entries content(const ks::memory_backend& b) {
  entries out;
  for (auto c = b.cursor(ks::key_range{}, nullptr); c.valid(); c.next()) out.emplace_back(c.key(), c.value());
  return out;
}

bool same(const ks::detail::prepared_record& a, const ks::detail::prepared_record& b) {
  if (a.ops.size() != b.ops.size() || a.adds.size() != b.adds.size() || a.range_erases.size() != b.range_erases.size() ||
      a.keyspaces != b.keyspaces || a.checks.size() != b.checks.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    if (a.ops[i].kind != b.ops[i].kind || a.ops[i].key != b.ops[i].key || a.ops[i].value != b.ops[i].value) return false;
  }
  for (std::size_t i = 0; i < a.adds.size(); ++i) {
    if (a.adds[i].key != b.adds[i].key || a.adds[i].delta != b.adds[i].delta) return false;
  }
  for (std::size_t i = 0; i < a.range_erases.size(); ++i) {
    const auto &x = a.range_erases[i], &y = b.range_erases[i];
    if (x.lower != y.lower || x.upper != y.upper || x.keyspace != y.keyspace) return false;
  }
  for (std::size_t i = 0; i < a.checks.size(); ++i) {
    const auto &x = a.checks[i], &y = b.checks[i];
    if (x.what != y.what || x.key != y.key || x.upper != y.upper || x.hash != y.hash || x.entries != y.entries) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view raw = fz::input_view(data, size);
  if (raw.empty()) return 0;
  std::string record(raw.substr(1));
  if ((static_cast<unsigned char>(raw[0]) & 1) != 0 && record.size() >= 8) {
    record.resize(record.size() - 8);
    ks::detail::put_le(record, ks::detail::prepared_checksum(record), 8);
  }
  const std::string_view in = record;
  const std::string xid = "fuzz";

  ks::detail::prepared_record rec;
  const bool decoded = fz::only_decode_errors([&] { rec = ks::detail::decode_prepared(xid, in); });
  if (decoded) {
    ks::detail::prepared_record again;
    const std::string re = ks::detail::encode_prepared(rec);
    KEYSCHEMA_FUZZ_CHECK(fz::only_decode_errors([&] { again = ks::detail::decode_prepared(xid, re); }),
                         "the record encoded again does not decode");
    KEYSCHEMA_FUZZ_CHECK(same(rec, again), "the record encoded again decodes to another record");
  }

  // commit_prepared over a small database.
  ks::store<bk::broker, ks::memory_backend> db;
  db.put<bk::message_metadata>({"q", 1}, ks::bytes("one"));
  db.put<bk::message_count>({"q"}, 1);
  db.put<bk::message_content>({1, 0u}, ks::bytes("chunk"));
  {
    ks::write_batch b;
    b.put(ks::detail::prepared_key(xid), in);
    db.unsafe_backend().write(b, {});
  }
  const entries before = content(db.backend());
  bool committed = false;
  try {
    committed = ks::commit_prepared(db, xid);
  } catch (const ks::error&) {
    KEYSCHEMA_FUZZ_CHECK(content(db.backend()) == before, "a refused commit_prepared changed the database");
  }
  KEYSCHEMA_FUZZ_CHECK(!committed || decoded, "a record that does not decode was committed");
  KEYSCHEMA_FUZZ_CHECK(ks::prepared(db).size() == (committed ? 0u : 1u), "the record's presence after commit_prepared");
  if (!committed) KEYSCHEMA_FUZZ_CHECK(ks::rollback_prepared(db, xid), "rollback_prepared did not find the record");

  for (const bool json : {false, true}) {
    ks::dump::dump_options opts;
    opts.json = json;
    const std::string line = ks::dump::format_entry(ks::detail::prepared_key(xid), in, opts);
    KEYSCHEMA_FUZZ_CHECK(line.find('\n') == std::string::npos, "the prepared line holds a raw newline: " + line);
    if (json) KEYSCHEMA_FUZZ_CHECK(fz::json_valid(line), "invalid JSON: " + line);
    else KEYSCHEMA_FUZZ_CHECK(line.starts_with("# prepared "), "the text prepared line is not a comment: " + line);
  }
  return 0;
}
