// keyschema-dump: the listing (dump.hpp), the --prefix syntax (prefix.hpp) and the program
// (cli.hpp, and the built binary once) over LevelDB and LMDB databases written by a typed store
// plus a few raw keys that are not tuples.
#include <cli.hpp>  // tools/keyschema-dump (keyschema::dump_support)

#include <keyschema/detail/schema/migration_record.hpp>
#include <keyschema/fingerprint.hpp>
#include <keyschema/memory_backend.hpp>
#include <keyschema/schema.hpp>
#include <keyschema/store.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/types.hpp>
#include <keyschema/write_batch.hpp>
#include <keyschema/leveldb.hpp>
#include <keyschema/lmdb.hpp>
#if KEYSCHEMA_DUMP_WITH_ROCKSDB
#include <keyschema/rocksdb.hpp>
#endif
#if KEYSCHEMA_DUMP_WITH_SQLITE
#include <keyschema/sqlite.hpp>
#endif

#include <support/temp_dir.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <sys/wait.h>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace dump_test {

namespace ks = keyschema;
namespace kd = keyschema::dump;

namespace {

using message_metadata =
    ks::keyspace<"message_metadata", ks::bytes, ks::lit<"DESTINATION">, ks::field<"destination", std::string>,
                 ks::lit<"MESSAGE_METADATA">, ks::field<"message_id", std::uint64_t>>;
using message_count = ks::keyspace<"message_count", std::uint64_t, ks::lit<"DESTINATION">,
                                   ks::field<"destination", std::string>, ks::lit<"MESSAGE_COUNT">>;
using broker = ks::schema<message_metadata, message_count>;

// Three typed metadata entries, one counter and three raw keys that are not tuples.
template <class Backend>
void populate(ks::store<broker, Backend>& db) {
  db.template put<message_metadata>({"queue-1", 9}, ks::bytes(std::string("\x0a\x0b", 2)));
  db.template put<message_metadata>({"queue-1", 10}, ks::bytes(std::string("hello")));
  db.template put<message_metadata>({"queue-10", 1}, ks::bytes(std::string()));
  db.template put<message_count>({"queue-1"}, std::uint64_t{2});
  ks::write_batch raw;
  raw.put("legacy.queue-1.9", std::string("\x15\x07", 2));  // 'l' is no type code; the value is (7,)
  raw.put("Destination.q", "x");                             // 'D' is a FoundationDB user type code
  raw.put(std::string("\x02unterminated"), "");              // a string without its terminator
  db.write(raw);
}

std::string schema_line() {
  const std::string rec = ks::layout<broker>::record();
  return "# schema " + rec.substr(0, 16) + " " + rec.substr(17);
}

// The full listing of a populated database, in key order.
std::vector<std::string> expected_text() {
  return {
      R"(("DESTINATION", "queue-1", "MESSAGE_COUNT")  =  (2,))",
      R"(("DESTINATION", "queue-1", "MESSAGE_METADATA", 9)  =  x"0a0b")",
      R"(("DESTINATION", "queue-1", "MESSAGE_METADATA", 10)  =  x"68656c6c6f")",
      R"(("DESTINATION", "queue-10", "MESSAGE_METADATA", 1)  =  x"")",
      R"(!b"\x02unterminated"  =  x"")",
      R"(!b"Destination.q"  =  x"78")",
      R"(!b"legacy.queue-1.9"  =  (7,))",
      schema_line(),
  };
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

struct run_result {
  int status;
  std::string out, err;
};

run_result run_tool(std::vector<std::string> args) {
  std::vector<std::string_view> views(args.begin(), args.end());
  std::ostringstream out, err;
  const int status = kd::run(views, out, err);
  return {status, out.str(), err.str()};
}

// A small strict JSON syntax checker (RFC 8259 grammar, no semantic checks).
class json_checker {
 public:
  explicit json_checker(std::string_view s) : s_(s) {}
  bool valid() {
    ws();
    if (!value()) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  bool value() {
    if (i_ >= s_.size()) return false;
    switch (s_[i_]) {
      case '{': return object();
      case '[': return array();
      case '"': return string();
      case 't': return word("true");
      case 'f': return word("false");
      case 'n': return word("null");
      default: return number();
    }
  }
  bool object() {
    ++i_;
    ws();
    if (eat('}')) return true;
    for (;;) {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"' || !string()) return false;
      ws();
      if (!eat(':')) return false;
      ws();
      if (!value()) return false;
      ws();
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }
  bool array() {
    ++i_;
    ws();
    if (eat(']')) return true;
    for (;;) {
      ws();
      if (!value()) return false;
      ws();
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }
  bool string() {
    ++i_;
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        const char e = s_[i_++];
        if (e == 'u') {
          for (int k = 0; k < 4; ++k, ++i_)
            if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool number() {
    const std::size_t start = i_;
    eat('-');
    if (eat('0')) {
    } else if (digits() == 0) {
      return false;
    }
    if (eat('.') && digits() == 0) return false;
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (!eat('+')) eat('-');
      if (digits() == 0) return false;
    }
    return i_ > start;
  }
  std::size_t digits() {
    std::size_t n = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_, ++n;
    return n;
  }
  bool word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  std::string_view s_;
  std::size_t i_ = 0;
};

bool valid_json(std::string_view s) { return json_checker(s).valid(); }

// Listing checks shared by both backends: `path` holds a populated database of `backend`.
template <class Backend>
void check_listing(const Backend& db) {
  SECTION("the whole database, text") {
    std::ostringstream out;
    kd::dump_stats stats;
    kd::dump_entries(db, kd::dump_options{}, out, stats);
    CHECK(split_lines(out.str()) == expected_text());
    CHECK(stats.entries == 8);
    CHECK(stats.invalid_keys == 3);
    CHECK(stats.schema_records == 1);
  }
  SECTION("prefix restriction") {
    std::ostringstream out;
    kd::dump_stats stats;
    kd::dump_options o;
    o.prefix = kd::parse_prefix(R"("DESTINATION","queue-1")");
    kd::dump_entries(db, o, out, stats);
    const auto all = expected_text();
    CHECK(split_lines(out.str()) == std::vector<std::string>(all.begin(), all.begin() + 3));  // not queue-10

    std::ostringstream one;
    o.prefix = kd::parse_prefix(R"(("DESTINATION", "queue-1", "MESSAGE_METADATA", 10))");
    kd::dump_entries(db, o, one, stats);
    CHECK(one.str() == all[2] + "\n");

    std::ostringstream none;
    o.prefix = kd::parse_prefix(R"("DESTINATION","queue-2")");
    kd::dump_entries(db, o, none, stats);
    CHECK(none.str().empty());
  }
  SECTION("limit and reverse") {
    const auto all = expected_text();
    kd::dump_options o;
    o.limit = 2;
    std::ostringstream first;
    kd::dump_stats stats;
    kd::dump_entries(db, o, first, stats);
    CHECK(split_lines(first.str()) == std::vector<std::string>(all.begin(), all.begin() + 2));
    CHECK(stats.entries == 2);

    o.reverse = true;
    std::ostringstream last;
    kd::dump_entries(db, o, last, stats);
    CHECK(split_lines(last.str()) == std::vector<std::string>{all[7], all[6]});

    o.limit = 0;
    std::ostringstream nothing;
    kd::dump_entries(db, o, nothing, stats);
    CHECK(nothing.str().empty());

    o.limit.reset();
    o.prefix = kd::parse_prefix(R"("DESTINATION")");
    std::ostringstream backwards;
    kd::dump_entries(db, o, backwards, stats);
    CHECK(split_lines(backwards.str()) == std::vector<std::string>{all[3], all[2], all[1], all[0]});
  }
  SECTION("JSON lines") {
    kd::dump_options o;
    o.json = true;
    std::ostringstream out;
    kd::dump_stats stats;
    kd::dump_entries(db, o, out, stats);
    const auto lines = split_lines(out.str());
    REQUIRE(lines.size() == 8);
    for (const auto& l : lines) {
      INFO(l);
      CHECK(valid_json(l));
    }
    CHECK(lines[0] == R"({"key":["DESTINATION","queue-1","MESSAGE_COUNT"],"value":[2],"valid_key":true})");
    CHECK(lines[2] ==
          R"({"key":["DESTINATION","queue-1","MESSAGE_METADATA",10],"value":{"hex":"68656c6c6f"},"valid_key":true})");
    CHECK(lines[6].rfind(R"({"key":{"hex":"6c65676163792e71756575652d312e39"},"value":[7],"valid_key":false,"error":")", 0) == 0);
    CHECK(lines[6].find("0x6c") != std::string::npos);
    CHECK(lines[5].find(R"("valid_key":false)") != std::string::npos);
    CHECK(lines[5].find("0x44") != std::string::npos);
    const std::string rec = ks::layout<broker>::record();
    CHECK(lines[7] == R"({"schema":{"fingerprint":")" + rec.substr(0, 16) + R"(","layout":")" + rec.substr(17) + "\"}}");
  }
  SECTION("values as hex or not at all") {
    kd::dump_options o;
    o.values = kd::value_format::hex;
    o.prefix = kd::parse_prefix(R"("DESTINATION","queue-1","MESSAGE_COUNT")");
    std::ostringstream hex, none;
    kd::dump_stats stats;
    kd::dump_entries(db, o, hex, stats);
    CHECK(hex.str() == "(\"DESTINATION\", \"queue-1\", \"MESSAGE_COUNT\")  =  x\"1502\"\n");
    o.values = kd::value_format::none;
    kd::dump_entries(db, o, none, stats);
    CHECK(none.str() == "(\"DESTINATION\", \"queue-1\", \"MESSAGE_COUNT\")\n");
  }
}

// The program on a closed database: auto-detection, options and exit statuses.
void check_program(const std::string& path, const std::string& backend) {
  const run_result all = run_tool({path});
  CHECK(all.status == 0);
  CHECK(all.err.empty());
  CHECK(all.out == joined(expected_text()));

  const run_result explicit_backend = run_tool({"--backend", backend, path});
  CHECK(explicit_backend.status == 0);
  CHECK(explicit_backend.out == all.out);

  const auto lines = expected_text();
  const run_result some = run_tool({"--prefix", R"("DESTINATION")", "--prefix=\"queue-1\"", "--limit=2", path});
  CHECK(some.status == 0);
  CHECK(some.out == lines[0] + "\n" + lines[1] + "\n");

  const run_result json = run_tool({"--json", "--reverse", "--limit", "1", path});
  CHECK(json.status == 0);
  CHECK(json.out.rfind("{\"schema\":{\"fingerprint\":", 0) == 0);
  CHECK(valid_json(json.out.substr(0, json.out.size() - 1)));

  std::ostringstream broken, broken_err;
  broken.setstate(std::ios::badbit);
  const std::vector<std::string_view> args{path};
  CHECK(kd::run(args, broken, broken_err) == 2);
  CHECK(broken_err.str().find("writing the listing failed") != std::string::npos);

  const std::string other = backend == "lmdb" ? "leveldb" : "lmdb";
  const run_result wrong = run_tool({"--backend", other, path});
  CHECK(wrong.status == 2);
  CHECK(wrong.out.empty());
  CHECK(wrong.err.find(path) != std::string::npos);
  const std::string holds = backend == "lmdb"      ? "holds an LMDB database"
                            : backend == "leveldb" ? "holds a LevelDB database"
                            : backend == "rocksdb" ? "holds a RocksDB database"
                                                   : "holds a SQLite database";
  CHECK(wrong.err.find(holds) != std::string::npos);
  CHECK(wrong.err.find("keyschema::probe_engines") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(path) / (other == "lmdb" ? "data.mdb" : "LOG")));
}

}  // namespace

namespace {

// Writes the fixture's entries through a store on Backend at path, lists them through a backend
// reopened with `reopen` options (as the tool opens it), then runs the program on it.
template <class Backend, class Options>
void check_backend(const std::string& path, const std::string& name, const Options& reopen) {
  {
    ks::store<broker, Backend> db(path);
    populate(db);
  }
  {
    const Backend db(path, reopen);
    check_listing(db);
  }
  check_program(path, name);
}

// LevelDB and RocksDB take a lock: a database another handle holds is an open error naming the
// path and the engine's open call.
template <class Backend>
void check_held_database(const std::string& path, const std::string& native_call) {
  const Backend holder(path);
  const run_result r = run_tool({path});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(path) != std::string::npos);
  CHECK(r.err.find(native_call) != std::string::npos);
}

}  // namespace

TEST_CASE("keyschema-dump lists a LevelDB database", "[dump][leveldb]") {
  ks::testing::temp_dir dir("dump-leveldb");
  const std::string path = dir / "db";
  ks::leveldb_options o;
  o.create_if_missing = false;
  check_backend<ks::leveldb_backend>(path, "leveldb", o);
  SECTION("a database held by another handle is an open error naming the path") {
    check_held_database<ks::leveldb_backend>(path, "leveldb::DB::Open");
  }
}

TEST_CASE("keyschema-dump lists an LMDB database", "[dump][lmdb]") {
  ks::testing::temp_dir dir("dump-lmdb");
  ks::lmdb_options o;
  o.read_only = true;
  o.create_if_missing = false;
  check_backend<ks::lmdb_backend>(dir / "env", "lmdb", o);
}

TEST_CASE("keyschema-dump lists the long keys of an LMDB keyspace with long_keys in full, in key order",
          "[dump][lmdb][long_keys]") {
  using doc = ks::long_keys<ks::keyspace<"doc", std::string, ks::lit<"DOC">, ks::field<"name", std::string>>>;
  ks::testing::temp_dir dir("dump-long-keys");
  const std::string env = dir / "env";
  const std::string stem(600, 's');
  {
    ks::store<ks::schema<doc>, ks::lmdb_backend> db(env);
    db.put<doc>({stem + "b"}, "second");
    db.put<doc>({stem + "a"}, "first");  // stored after b in its group: listed before it
    db.put<doc>({"short"}, "plain");
  }
  const run_result r = run_tool({"--backend", "lmdb", "--values", "none", env});
  REQUIRE(r.status == 0);
  const std::vector<std::string> lines = split_lines(r.out);
  REQUIRE(lines.size() == 4);  // three entries and the schema record
  CHECK(lines[0] == "(\"DOC\", \"short\")");
  CHECK(lines[1] == "(\"DOC\", \"" + stem + "a\")");
  CHECK(lines[2] == "(\"DOC\", \"" + stem + "b\")");
  CHECK(lines[3].starts_with("# schema "));
  CHECK(lines[3].find("+long_keys{lit:DOC,") != std::string::npos);
}

#if KEYSCHEMA_DUMP_WITH_ROCKSDB
TEST_CASE("keyschema-dump lists a RocksDB database", "[dump][rocksdb]") {
  ks::testing::temp_dir dir("dump-rocksdb");
  const std::string path = dir / "db";
  ks::rocksdb_options o;
  o.create_if_missing = false;
  check_backend<ks::rocksdb_backend>(path, "rocksdb", o);
  SECTION("a database held by another handle is an open error naming the path") {
    check_held_database<ks::rocksdb_backend>(path, "rocksdb::DB::Open");
  }
}
#endif

#if KEYSCHEMA_DUMP_WITH_SQLITE
TEST_CASE("keyschema-dump lists an SQLite database", "[dump][sqlite]") {
  ks::testing::temp_dir dir("dump-sqlite");
  ks::sqlite_options o;
  o.create_if_missing = false;
  check_backend<ks::sqlite_backend>(dir / "db", "sqlite", o);
}
#endif

TEST_CASE("keyschema-dump renders every key and value, never throwing on bad bytes", "[dump]") {
  const kd::dump_options text;
  kd::dump_options json;
  json.json = true;

  SECTION("exotic but valid keys") {
    const std::string k = ks::tuple::pack(ks::bytes(std::string("\x00\xff", 2)), -5, true, nullptr, 1.5,
                                          std::tuple<std::string, int>("in", 1), ks::desc<std::uint64_t>(3));
    CHECK(kd::format_entry(k, "", text) == R"((b"\x00\xff", -5, true, null, 1.5, ("in", 1), desc(3))  =  x"")");
    const std::string j = kd::format_entry(k, "", json);
    CHECK(j == R"({"key":[{"bytes":"00ff"},-5,true,null,1.5,["in",1],{"desc":3}],"value":{"hex":""},"valid_key":true})");
    CHECK(valid_json(j));
  }
  SECTION("an empty value is hex, not the empty tuple; a value that is a tuple is decoded") {
    CHECK(kd::format_entry(ks::tuple::pack(1), "", text) == "(1,)  =  x\"\"");
    CHECK(kd::format_entry(ks::tuple::pack(1), ks::tuple::pack("a", 2), text) == "(1,)  =  (\"a\", 2)");
    // A value starting with a user type code ('H' is 0x48) is raw bytes, not user_type(...).
    CHECK(kd::format_entry(ks::tuple::pack(1), "Hi", text) == "(1,)  =  x\"4869\"");
  }
  SECTION("a malformed schema record is shown as hex") {
    CHECK(kd::format_entry(ks::schema_key, "nonsense", text) == "# schema (malformed record) x\"6e6f6e73656e7365\"");
    const std::string j = kd::format_entry(ks::schema_key, "nonsense", json);
    CHECK(j == R"({"schema":{"hex":"6e6f6e73656e7365"}})");
    CHECK(kd::format_entry(ks::schema_key, "0123456789abcdef\nlay\tout\\", text) ==
          R"(# schema 0123456789abcdef lay\x09out\\)");
  }
  SECTION("the progress record of an unfinished ks::migrate is one line") {
    ks::detail::migration_progress m;
    m.from_fingerprint = "0123456789abcdef";
    m.to_fingerprint = "fedcba9876543210";
    m.keyspace = "message_metadata";
    m.last_key = std::string("\x02q\x00", 3);
    m.entries = 16;
    const std::string rec = ks::detail::format_migration_progress(m);
    CHECK(kd::format_entry(ks::migration_key, rec, text) ==
          R"(# migration keyschema-migration/1\n0123456789abcdef\nfedcba9876543210\n0\nmessage_metadata\n027100\n16)");
    const std::string j = kd::format_entry(ks::migration_key, rec, json);
    CHECK(valid_json(j));
    CHECK(j.rfind(R"({"migration":"keyschema-migration/1\n)", 0) == 0);
    CHECK(kd::format_entry(ks::migration_key, "\xff", text) == "# migration x\"ff\"");
  }
  SECTION("a user type code after valid elements is flagged, with its offset") {
    const std::string k = ks::tuple::pack(1) + "Hello";
    CHECK(kd::format_entry(k, "", text) == R"(!b"\x15\x01Hello"  =  x"")");
    const kd::decoded_tuple d = kd::decode_tuple(k);
    CHECK_FALSE(d.valid);
    CHECK(d.error.find("user type code 0x48") != std::string::npos);
    CHECK(d.error.find("at byte 2") != std::string::npos);
  }
  SECTION("corrupted valid keys: flagged or decoded, valid JSON, no exception") {
    const std::string good = ks::tuple::pack("DESTINATION", ks::bytes(std::string("\x00\xff", 2)), -300, 2.5f,
                                             std::tuple<std::string, std::optional<int>>("in", std::nullopt),
                                             ks::desc<std::string>("z"), UINT64_MAX);
    REQUIRE(kd::decode_tuple(good).valid);
    std::mt19937 rng(7);
    std::uniform_int_distribution<std::size_t> pos(0, good.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255), edits(1, 3);
    int flagged = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string k = good;
      for (int e = edits(rng); e > 0; --e) k[pos(rng)] = static_cast<char>(byte(rng));
      k.resize(std::min(k.size(), pos(rng) + 8));
      bool invalid = false;
      std::string line;
      REQUIRE_NOTHROW(kd::append_entry(line, k, k, json, &invalid));
      INFO(line);
      REQUIRE(valid_json(line));
      flagged += invalid ? 1 : 0;
    }
    CHECK(flagged > 100);
  }
  SECTION("prepared-transaction records are shown as prepared lines") {
    ks::write_batch ops;
    ops.put(ks::tuple::pack(1), "v");
    ops.erase(ks::tuple::pack(2));
    const std::string xid("x\0y", 3);
    const std::string k = ks::detail::prepared_key(xid);
    // Its hash is XXH64: the reference implementation's values (libxxhash 0.8.1), across the
    // short-input and the 32-byte-stripe paths.
    CHECK(ks::detail::xxh64("") == 0xef46db3751d8e999ull);
    CHECK(ks::detail::xxh64("abc") == 0x44bc2cf5ad770999ull);
    CHECK(ks::detail::xxh64(std::string(100, 'a'), 7) == 0xb97967d02e227e7bull);
    CHECK(ks::detail::xxh64("0123456789abcdefghijklmnopqrstuvwxyz") == 0x69196c1b3af0bff9ull);
    CHECK(ks::detail::xxh64("keyschema", 0x9E3779B185EBCA87ull) == 0x3b8b2373ed83e7aeull);
    // The current format (KSP3): its writes (puts, erases, adds, range erases) and its checks.
    ks::detail::prepared_record r;
    r.ops = ops;
    r.adds.push_back(ks::detail::prepared_add{ks::tuple::pack(3), 5});
    r.range_erases.push_back(ks::detail::prepared_range_erase{ks::tuple::pack(4), ks::tuple::pack(5), 42});
    r.keyspaces = {1, 2};
    ks::detail::prepared_check absent, present, range;
    absent.key = ks::tuple::pack(6);
    present.what = ks::detail::prepared_check::kind::present;
    present.key = ks::tuple::pack(1);
    present.hash = 7;
    range.what = ks::detail::prepared_check::kind::range;
    range.key = ks::tuple::pack(4);
    range.entries = 2;
    range.hash = 9;
    r.checks = {absent, present, range};
    const std::string rec = ks::detail::encode_prepared(r);
    REQUIRE(rec.substr(0, 4) == "KSP3");
    CHECK(kd::format_entry(k, rec, text) == R"(# prepared b"x\x00y" 4 writes, 3 checks)");
    CHECK(kd::format_entry(k, rec, json) == R"({"prepared":{"xid":{"hex":"780079"},"format":"KSP3","writes":4,"checks":3}})");
    const std::string bad = kd::format_entry(k, rec.substr(0, rec.size() - 1), text);
    CHECK(bad.rfind(R"(# prepared b"x\x00y" (damaged record) )", 0) == 0);
    CHECK(bad.find("checksum") != std::string::npos);
    // The formats before validation (KSP1; KSP2 with an add) are still shown, as not validated.
    const std::string ksp1 = ks::detail::encode_prepared(ops);
    CHECK(kd::format_entry(k, ksp1, text) == R"(# prepared b"x\x00y" 2 writes, not validated (format KSP1))");
    CHECK(kd::format_entry(k, ksp1, json) == R"({"prepared":{"xid":{"hex":"780079"},"format":"KSP1","writes":2}})");
    const std::string with_add = ks::detail::encode_prepared(ops, {ks::detail::prepared_add{ks::tuple::pack(3), 5}});
    CHECK(kd::format_entry(k, with_add, text) == R"(# prepared b"x\x00y" 3 writes, not validated (format KSP2))");
    const std::string j = kd::format_entry(k, "junk", json);
    CHECK(j.rfind(R"({"prepared":{"xid":{"hex":"780079"},"error":")", 0) == 0);
    CHECK(valid_json(j));
  }
  SECTION("other keys starting with 0xff are flagged") {
    const std::string k = "\xff" "other";
    CHECK(kd::format_entry(k, "", text) == R"(!b"\xffother"  =  x"")");
    const std::string j = kd::format_entry(k, "", json);
    CHECK(j.rfind(R"({"key":{"hex":"ff6f74686572"},"value":{"hex":""},"valid_key":false,"error":")", 0) == 0);
    CHECK(valid_json(j));
  }
  SECTION("random bytes: flagged or decoded, valid JSON, no exception") {
    std::mt19937 rng(20240601);
    std::uniform_int_distribution<int> len(0, 24), byte(0, 255), small(0, 7);
    // Mostly bytes near the interesting type codes, so that many inputs get deep into the decoder.
    const unsigned char interesting[] = {0x00, 0x01, 0x02, 0x05, 0x0b, 0x14, 0x1d, 0xff};
    int flagged = 0, decoded = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string k(static_cast<std::size_t>(len(rng)), '\0');
      for (char& c : k) c = static_cast<char>(small(rng) < 4 ? interesting[small(rng)] : byte(rng));
      bool invalid = false;
      std::string line;
      REQUIRE_NOTHROW(kd::append_entry(line, k, k, text, &invalid));
      if (k == ks::schema_key) continue;
      CHECK(line.front() == (invalid ? '!' : '('));
      (invalid ? flagged : decoded) += 1;
      const std::string j = kd::format_entry(k, k, json);
      INFO(j);
      REQUIRE(valid_json(j));
    }
    CHECK(flagged > 100);
    CHECK(decoded > 100);
  }
}

TEST_CASE("keyschema-dump --prefix syntax", "[dump][prefix]") {
  CHECK(kd::parse_prefix("").empty());
  CHECK(kd::parse_prefix(" ( ) ").empty());
  CHECK(kd::parse_prefix(R"("DESTINATION","queue-1")") == ks::tuple::pack("DESTINATION", "queue-1"));
  CHECK(kd::parse_prefix(R"( ( "DESTINATION" , 42 , ) )") == ks::tuple::pack("DESTINATION", 42));
  CHECK(kd::parse_prefix("(42,)") == ks::tuple::pack(42));
  CHECK(kd::parse_prefix("-9223372036854775808, 18446744073709551615, -0") ==
        ks::tuple::pack(INT64_MIN, UINT64_MAX, 0));
  CHECK(kd::parse_prefix("true,false,null") == ks::tuple::pack(true, false, nullptr));
  CHECK(kd::parse_prefix("1.5, 1.5f, -2e3, inf, nanf") ==
        ks::tuple::pack(1.5, 1.5f, -2e3, std::numeric_limits<double>::infinity(), std::numeric_limits<float>::quiet_NaN()));
  CHECK(kd::parse_prefix(R"(b"\x00\xffA", "tab\there \"q\" \\ \0")") ==
        ks::tuple::pack(ks::bytes(std::string("\x00\xff" "A", 3)), std::string("tab\there \"q\" \\ \0", 16)));
  CHECK(kd::parse_prefix("\"caf\xc3\xa9\"") == ks::tuple::pack(std::string("caf\xc3\xa9")));

  // The printed form of a key parses back to the key.
  const std::string key = ks::tuple::pack("DESTINATION", "q\n\"1\"", "MESSAGE_METADATA", std::uint64_t{42}, ks::bytes(std::string("\x01\x7f", 2)));
  CHECK(kd::parse_prefix(ks::tuple::to_string(ks::tuple::unpack_dynamic(key))) == key);

  const char* bad[] = {
      "DESTINATION",            // unquoted word
      R"("unterminated)",       // no closing quote
      R"("a" "b")",             // missing comma
      R"(("a")",                // missing ')'
      R"("a"))",                // stray ')'
      R"("bad \q escape")",     // unknown escape
      R"(b"\x4")",              // short \x
      "18446744073709551616",   // > 2^64-1
      "-9223372036854775809",   // < -2^63
      R"("\xff")",              // a string that is not UTF-8
      ",",                      // no element
      "1e999",                  // out of range float
  };
  for (const char* text : bad) {
    INFO(text);
    CHECK_THROWS_AS(kd::parse_prefix(text), kd::usage_error);
  }
  CHECK_THROWS_WITH(kd::parse_prefix(R"("a", queue)"), Catch::Contains("column 6") && Catch::Contains("\"queue\""));

  CHECK(kd::element_prefix_upper_bound("") == "");
  CHECK(kd::element_prefix_upper_bound(std::string("\x02" "a\0", 3)) == std::string("\x02" "a\0\xff", 4));
}

// --prefix matches whole elements: a key whose last prefix element only starts like the prefix
// ("a\0b" after "a": 02 61 00 ff 62 00, the byte successor 02 61 01 of the prefix would include
// it) is not listed, whatever follows it and in both directions.
template <class Backend>
void check_element_prefix(Backend& db) {
  using nested = std::tuple<std::string>;
  ks::write_batch b;
  for (const std::string& k : {
           ks::tuple::pack(std::string("a")),
           ks::tuple::pack(std::string("a", 1), std::int64_t{1}),
           ks::tuple::pack(std::string("a"), nested{"b"}),
           ks::tuple::pack(std::string("a\0b", 3)),
           ks::tuple::pack(std::string("a\0", 2), std::int64_t{2}),
           ks::tuple::pack(std::string("ab")),
           ks::tuple::pack(std::string("b")),
           ks::tuple::pack(ks::bytes(std::string("a"))),
           ks::tuple::pack(ks::bytes(std::string("a")), std::int64_t{2}),
           ks::tuple::pack(ks::bytes(std::string("a\0b", 3))),
           ks::tuple::pack(ks::bytes(std::string("a\0", 2))),
           ks::tuple::pack(ks::bytes(std::string("ab"))),
           ks::tuple::pack(nested{"a"}),
           ks::tuple::pack(nested{"a"}, std::int64_t{3}),
           ks::tuple::pack(std::tuple<std::string, std::int64_t>{"a", 1}),
       }) {
    b.put(k, "");
  }
  db.write(b, ks::write_options{});

  auto list = [&](const char* prefix, bool reverse) {
    kd::dump_options o;
    o.prefix = kd::parse_prefix(prefix);
    o.values = kd::value_format::none;
    o.reverse = reverse;
    std::ostringstream out;
    kd::dump_stats stats;
    kd::dump_entries(db, o, out, stats);
    return split_lines(out.str());
  };
  using lines = std::vector<std::string>;
  CHECK(list(R"("a")", false) == lines{R"(("a",))", R"(("a", ("b",)))", R"(("a", 1))"});  // 05 sorts before 15
  CHECK(list(R"("a")", true) == lines{R"(("a", 1))", R"(("a", ("b",)))", R"(("a",))"});
  CHECK(list(R"("a\0")", false) == lines{R"(("a\x00", 2))"});
  CHECK(list(R"("a\0b")", false) == lines{R"(("a\x00b",))"});
  CHECK(list(R"(b"a")", false) == lines{R"((b"a",))", R"((b"a", 2))"});
  CHECK(list(R"(b"a")", true) == lines{R"((b"a", 2))", R"((b"a",))"});
  CHECK(list(R"(b"a\0")", false) == lines{R"((b"a\x00",))"});
  CHECK(list(R"("a", 1)", false) == lines{R"(("a", 1))"});
  CHECK(list(R"("b")", false) == lines{R"(("b",))"});
}

TEST_CASE("keyschema-dump --prefix matches whole elements", "[dump][prefix]") {
  SECTION("memory") {
    ks::memory_backend db;
    check_element_prefix(db);
  }
  ks::testing::temp_dir dir("dump-prefix");
  SECTION("LevelDB") {
    ks::leveldb_backend db(dir / "leveldb");
    check_element_prefix(db);
  }
  SECTION("LMDB") {
    ks::lmdb_backend db(dir / "lmdb");
    check_element_prefix(db);
  }
}

TEST_CASE("keyschema-dump usage and open errors", "[dump][cli]") {
  ks::testing::temp_dir dir("dump-cli");

  SECTION("usage errors exit 1") {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {},
             {"--frobnicate", dir.path().string()},
             {"--backend", "berkeleydb", dir.path().string()},
             {"--limit", "-1", dir.path().string()},
             {"--limit"},
             {"--values", "pretty", dir.path().string()},
             {"--prefix", "DESTINATION", dir.path().string()},
             {dir.path().string(), dir.path().string()}}) {
      const run_result r = run_tool(args);
      INFO(r.err);
      CHECK(r.status == 1);
      CHECK(r.out.empty());
      CHECK(r.err.rfind("keyschema-dump: ", 0) == 0);
    }
  }
  SECTION("--help and --version exit 0") {
    const run_result help = run_tool({"--help"});
    CHECK(help.status == 0);
    CHECK(help.out.find("--prefix") != std::string::npos);
    const run_result version = run_tool({"--version"});
    CHECK(version.status == 0);
    CHECK(version.out.rfind("keyschema-dump 0.", 0) == 0);
  }
  SECTION("a missing path exits 2 and creates nothing") {
    const std::string missing = dir / "missing";
    for (const char* backend : {"", "leveldb", "lmdb"}) {
      std::vector<std::string> args;
      if (*backend != '\0') args = {"--backend", backend};
      args.push_back(missing);
      const run_result r = run_tool(args);
      INFO(r.err);
      CHECK(r.status == 2);
      CHECK(r.err.find(missing) != std::string::npos);
      CHECK(r.err.find('[') != std::string::npos);  // the native call
      CHECK_FALSE(std::filesystem::exists(missing));
    }
  }
  SECTION("a directory with neither database exits 2") {
    const run_result r = run_tool({dir.path().string()});
    CHECK(r.status == 2);
    CHECK(r.err.find("CURRENT") != std::string::npos);
    CHECK(r.err.find("data.mdb") != std::string::npos);
  }
  SECTION("damaged databases exit 2 naming the native call") {
    const std::string lv = dir / "leveldb";
    std::filesystem::create_directory(lv);
    std::ofstream(lv + "/CURRENT") << "MANIFEST-000099\n";
    const run_result l = run_tool({lv});
    INFO(l.err);
    CHECK(l.status == 2);
    CHECK(l.err.find(lv) != std::string::npos);
    CHECK(l.err.find("leveldb::DB::Open") != std::string::npos);

    const std::string md = dir / "lmdb";
    std::filesystem::create_directory(md);
    std::ofstream(md + "/data.mdb") << std::string(8192, 'x');
    const run_result m = run_tool({md});
    INFO(m.err);
    CHECK(m.status == 2);
    CHECK(m.err.find("mdb_env_open") != std::string::npos);
  }
}

#ifdef KEYSCHEMA_DUMP_EXE
TEST_CASE("the keyschema-dump binary", "[dump][binary]") {
  ks::testing::temp_dir dir("dump-binary");
  const std::string path = dir / "db";
  {
    ks::store<broker, ks::leveldb_backend> db(path);
    populate(db);
  }
  const std::string out = dir / "out.txt";
  const std::string cmd = std::string("'") + KEYSCHEMA_DUMP_EXE + "' --json '" + path + "' > '" + out + "' 2>&1";
  const int raw = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == 0);
  std::ifstream in(out);
  const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(got == run_tool({"--json", path}).out);
  CHECK(split_lines(got).size() == 8);

  const std::string usage = std::string("'") + KEYSCHEMA_DUMP_EXE + "' --limit x '" + path + "' > /dev/null 2>&1";
  const int bad = std::system(usage.c_str());
  REQUIRE(WIFEXITED(bad));
  CHECK(WEXITSTATUS(bad) == 1);
}
#endif

}  // namespace dump_test
