// tests/fuzz/fuzz_schema_record.cpp: the schema record "<16 hex>\n<layout>" as a store and
// keyschema-dump read it back.
//
// Input: the bytes stored under keyschema::schema_key. Properties:
//   - opening a store over the database (broker schema, memory backend, no other key) succeeds
//     exactly when the record is this schema's record or, compared keyspace by keyspace, lists
//     only unchanged keyspaces of it (the program added the others: the record is then rewritten
//     to this schema's), and otherwise throws keyschema::schema_error only (never another error,
//     the record left unchanged);
//   - keyschema-dump renders the record as one line; in JSON mode, one valid JSON object.
#include "fuzz_support.hpp"

#include "../conformance/broker_schema.hpp"

#include <dump.hpp>
#include <keyschema/keyschema.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <optional>

namespace ks = keyschema;
namespace fz = keyschema::fuzz;
namespace bk = keyschema::conformance;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fz::input_view(data, size);
  static const std::string expected = ks::layout<bk::broker>::record();

  ks::memory_backend mb;
  ks::write_batch b;
  b.put(ks::schema_key, in);
  mb.write(b, {});
  bool opened = false;
  const std::optional<ks::schema_record> parsed = ks::parse_schema_record(in);
  const ks::detail::layout_comparison cmp =
      parsed ? ks::detail::compare_layout(parsed->layout, ks::layout<bk::broker>::keyspace_texts())
             : ks::detail::layout_comparison{false, {}, {}, {}, {}};
  const bool compatible = in == expected || (cmp.readable && cmp.changed.empty() && cmp.extra.empty());
  try {
    ks::store<bk::broker, ks::memory_backend> db(std::move(mb));
    opened = true;
    std::string stored;
    KEYSCHEMA_FUZZ_CHECK(db.backend().get(ks::schema_key, stored, nullptr) && stored == expected,
                         "opening the store did not leave this schema's record");
  } catch (const ks::schema_error& e) {
    KEYSCHEMA_FUZZ_CHECK(std::string_view(e.what()).find("another schema layout") != std::string_view::npos,
                         std::string("schema_error without the layout explanation: ") + e.what());
    KEYSCHEMA_FUZZ_CHECK(std::string_view(e.what()).find('\n') == std::string_view::npos,
                         std::string("schema_error of more than one line: ") + e.what());
  }
  KEYSCHEMA_FUZZ_CHECK(opened == compatible, opened ? "a foreign schema record was accepted"
                                                    : "a compatible schema record was refused");

  for (const bool json : {false, true}) {
    ks::dump::dump_options opts;
    opts.json = json;
    const std::string line = ks::dump::format_entry(ks::schema_key, in, opts);
    KEYSCHEMA_FUZZ_CHECK(line.find('\n') == std::string::npos, "the schema line holds a raw newline: " + line);
    if (json) KEYSCHEMA_FUZZ_CHECK(fz::json_valid(line), "invalid JSON: " + line);
    else KEYSCHEMA_FUZZ_CHECK(line.starts_with("# schema "), "the text schema line is not a comment: " + line);
  }
  return 0;
}
