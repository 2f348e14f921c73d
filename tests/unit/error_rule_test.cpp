// tests/unit/error_rule_test.cpp: the rule of include/keyschema/error.hpp, case by case: each
// cause raises exactly its class (never the base keyschema::error), with a message naming what was
// wrong. One row per cause; the adapters' own cases (a write transaction used after it ended, a
// read-only file system) are in their backends' tests.
#include <keyschema/keyschema.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace error_rule_test {

namespace {
namespace ks = keyschema;

using message = ks::keyspace<"message", std::string, ks::lit<"M">, ks::field<"destination", std::string>,
                             ks::field<"id", std::uint8_t>>;
using message_count = ks::keyspace<"message_count", ks::count_of<message, 1>, ks::lit<"C">,
                                   ks::field<"destination", std::string>>;
using small_counter = ks::keyspace<"small_counter", std::int8_t, ks::lit<"N">, ks::field<"name", std::string>>;
using content = ks::keyspace<"content", ks::bytes, ks::lit<"B">, ks::field<"id", std::uint64_t>,
                             ks::field<"chunk", std::uint8_t>>;  // at most 255 chunks
struct by_destination {
  std::optional<std::tuple<std::string, std::string, std::uint8_t>> operator()(const message::key_type& k,
                                                                               const std::string& v) const {
    return std::tuple<std::string, std::string, std::uint8_t>(v, std::get<0>(k), std::get<1>(k));
  }
};
using by_value = ks::keyspace<"by_value", ks::index_of<message, by_destination>, ks::lit<"I">,
                              ks::field<"value", std::string>, ks::field<"destination", std::string>,
                              ks::field<"id", std::uint8_t>>;
using pair_value = ks::keyspace<"pair_value", std::tuple<std::string, std::int64_t>, ks::lit<"P">,
                                ks::field<"id", std::uint64_t>>;  // a packed value
using rule_schema = ks::schema<message, message_count, small_counter, content, by_value, pair_value>;
using rule_store = ks::store<rule_schema, ks::memory_backend>;

// Another layout of "message": its id is a u64.
using message_v2 = ks::keyspace<"message", std::string, ks::lit<"M">, ks::field<"destination", std::string>,
                                ks::field<"id", std::uint64_t>>;
using rule_schema_v2 = ks::schema<message_v2>;

const std::string bad_utf8 = "q\xff";

enum class kind { key, encode, decode, schema, limit, overflow, usage };

const char* name_of(kind k) {
  switch (k) {
    case kind::key: return "key_error";
    case kind::encode: return "encode_error";
    case kind::decode: return "decode_error";
    case kind::schema: return "schema_error";
    case kind::limit: return "limit_error";
    case kind::overflow: return "overflow_error";
    case kind::usage: return "usage_error";
  }
  return "?";
}

// The most specific class of e, by name ("error" for the base class itself).
std::string class_of(const ks::error& e) {
  if (typeid(e) == typeid(ks::key_error)) return "key_error";
  if (typeid(e) == typeid(ks::encode_error)) return "encode_error";
  if (typeid(e) == typeid(ks::decode_error)) return "decode_error";
  if (typeid(e) == typeid(ks::schema_error)) return "schema_error";
  if (typeid(e) == typeid(ks::limit_error)) return "limit_error";
  if (typeid(e) == typeid(ks::overflow_error)) return "overflow_error";
  if (typeid(e) == typeid(ks::usage_error)) return "usage_error";
  if (typeid(e) == typeid(ks::conflict_error)) return "conflict_error";
  if (typeid(e) == typeid(ks::backend_error)) return "backend_error";
  if (typeid(e) == typeid(ks::error)) return "error";
  return typeid(e).name();
}

struct row {
  const char* cause;
  kind expected;
  std::vector<std::string> names;  // what what() must name
  std::function<void(rule_store&)> run;
};

std::string encoded_message_key(const std::string& destination, std::uint8_t id) {
  std::string k;
  ks::detail::key_codec<message>::encode(k, message::key_type(destination, id));
  return k;
}

}  // namespace

TEST_CASE("each cause raises the class error.hpp's rule gives it, naming what was wrong", "[store][error]") {
  const std::vector<row> rows = {
      // A key the caller gives that no key can be: key_error.
      {"an integer outside its key field's range", kind::key, {"'message'", "'id'", "300"},
       [](rule_store& db) { db.put<message>({"q", 300}, "v"); }},
      {"invalid UTF-8 in a text key field (put)", kind::key, {"'message'", "'destination'", "invalid UTF-8"},
       [](rule_store& db) { db.put<message>({bad_utf8, 1}, "v"); }},
      {"invalid UTF-8 in a text key field (get)", kind::key, {"'message'", "'destination'", "invalid UTF-8"},
       [](rule_store& db) { (void)db.get<message>({bad_utf8, 1}); }},
      {"invalid UTF-8 in a text key field (typed key)", kind::key, {"'message'", "'destination'"},
       [](rule_store& db) { db.erase<message>(message::key_type(bad_utf8, 1)); }},
      {"invalid UTF-8 in a scan prefix", kind::key, {"'message'", "'destination'", "invalid UTF-8"},
       [](rule_store& db) { (void)db.scan<message>(bad_utf8); }},
      {"invalid UTF-8 in a batch's key", kind::key, {"'message'", "'destination'"},
       [](rule_store& db) {
         auto b = db.batch();
         b.put<message>({bad_utf8, 1}, "v");
       }},
      {"invalid UTF-8 in an index key derived from a value", kind::key, {"'by_value'", "'value'", "invalid UTF-8"},
       [](rule_store& db) { db.put<message>({"q", 1}, bad_utf8); }},
      {"a raw write_batch writing a declared count", kind::key, {"'message_count'", "Nothing was written"},
       [](rule_store& db) {
         ks::write_batch b;
         std::string k;
         ks::detail::key_codec<message_count>::encode(k, message_count::key_type("q"));
         b.put(k, "x");
         db.write(b);
       }},
      {"a raw write_batch writing the schema record", kind::key, {"reserved key", "Nothing was written"},
       [](rule_store& db) {
         ks::write_batch b;
         b.put(ks::schema_key, "x");
         db.write(b);
       }},
      // Any other value the caller gives that cannot be encoded: encode_error.
      {"invalid UTF-8 in a tuple::pack element", kind::encode, {"invalid UTF-8"},
       [](rule_store&) { (void)ks::tuple::pack(bad_utf8); }},
      {"invalid UTF-8 in a packed value (put)", kind::encode, {"'pair_value'", "invalid UTF-8"},
       [](rule_store& db) { db.put<pair_value>({1}, {bad_utf8, 1}); }},
      {"invalid UTF-8 in a packed value (transaction)", kind::encode, {"'pair_value'", "invalid UTF-8"},
       [](rule_store& db) {
         auto tx = db.transaction();
         tx.put<pair_value>({1}, {bad_utf8, 1});
       }},
      // Bytes from the database that do not decode: decode_error.
      {"a stored value that does not decode", kind::decode, {"'small_counter'"},
       [](rule_store& db) {
         ks::write_batch b;
         std::string k;
         ks::detail::key_codec<small_counter>::encode(k, small_counter::key_type("n"));
         b.put(k, "not an integer");
         db.write(b);
         (void)db.get<small_counter>({"n"});
       }},
      {"a malformed key under a scanned keyspace", kind::decode, {"'message'"},
       [](rule_store& db) {
         std::string k = encoded_message_key("q", 1);
         k.pop_back();  // the id cut short
         ks::write_batch b;
         b.put(k, "x");
         db.unsafe_backend().write(b, {});
         for (const auto& e : db.scan<message>()) (void)e;
       }},
      // Limits: limit_error.
      {"a chunked value needing more chunks than its field numbers", kind::limit, {"'content'", "chunks"},
       [](rule_store& db) {
         auto tx = db.transaction();
         (void)ks::put_chunked<content>(tx, {1}, std::string(1000, 'x'), 1);
       }},
      // An add whose sum does not fit: overflow_error.
      {"an add past the value type", kind::overflow, {"'small_counter'", "127"},
       [](rule_store& db) {
         db.put<small_counter>({"n"}, 127);
         db.add<small_counter>({"n"}, 1);
       }},
      // Misuse and state: usage_error.
      {"a transaction used after commit", kind::usage, {"already committed or rolled back"},
       [](rule_store& db) {
         auto tx = db.transaction();
         tx.commit();
         tx.put<message>({"q", 1}, "v");
       }},
      {"a read of a transaction after rollback", kind::usage, {"already committed or rolled back"},
       [](rule_store& db) {
         auto tx = db.transaction();
         tx.rollback();
         (void)tx.get<message>({"q", 1});
       }},
      {"a write on the store from the thread holding a transaction", kind::usage, {"deadlock"},
       [](rule_store& db) {
         auto tx = db.transaction();
         db.put<message>({"q", 1}, "v");
       }},
      {"a second transaction on the thread holding one", kind::usage, {"deadlock"},
       [](rule_store& db) {
         auto tx = db.transaction();
         auto tx2 = db.transaction();
       }},
      {"a batch committed from the thread holding a transaction", kind::usage, {"deadlock"},
       [](rule_store& db) {
         auto b = db.batch();
         b.put<message>({"q", 1}, "v");
         auto tx = db.transaction();
         b.commit();
       }},
      {"sweep with a batch size of 0", kind::usage, {"keyschema::sweep", "batch_size is 0"},
       [](rule_store& db) { (void)ks::sweep<by_value>(db, std::string("z"), 0, [](const auto&, const auto&) {}); }},
      {"put_chunked with a chunk size of 0", kind::usage, {"'content'", "chunk_size 0"},
       [](rule_store& db) {
         auto tx = db.transaction();
         (void)ks::put_chunked<content>(tx, {1}, "data", 0);
       }},
      {"put_chunked on an ended transaction", kind::usage, {"already committed or rolled back"},
       [](rule_store& db) {
         auto tx = db.transaction();
         tx.rollback();
         (void)ks::put_chunked<content>(tx, {1}, "data", 4);
       }},
      {"erase_chunked on an ended transaction", kind::usage, {"already committed or rolled back"},
       [](rule_store& db) {
         auto tx = db.transaction();
         tx.commit();
         (void)ks::erase_chunked<content>(tx, {1});
       }},
      {"prepare of an ended transaction", kind::usage, {"b\"x1\"", "already committed or rolled back"},
       [](rule_store& db) {
         auto tx = db.transaction();
         tx.commit();
         ks::prepare(tx, "x1");
       }},
      {"prepare of an xid already prepared", kind::usage, {"b\"x2\"", "already prepared"},
       [](rule_store& db) {
         {
           auto tx = db.transaction();
           tx.put<message>({"q", 1}, "v");
           ks::prepare(tx, "x2");
         }
         auto tx = db.transaction();
         tx.put<message>({"q", 2}, "v");
         ks::prepare(tx, "x2");
       }},
      {"commit_prepared from the thread holding a transaction", kind::usage, {"deadlock"},
       [](rule_store& db) {
         auto tx = db.transaction();
         (void)ks::commit_prepared(db, "x3");
       }},
      {"migrate with batch_entries 0", kind::usage, {"keyschema::migrate", "batch_entries is 0"},
       [](rule_store&) {
         ks::memory_backend b;
         (void)ks::migrate<rule_schema, rule_schema>(b, ks::migrate_options{.batch_entries = 0});
       }},
  };
  for (const row& r : rows) {
    INFO(r.cause << ": expected " << name_of(r.expected));
    rule_store db;
    try {
      r.run(db);
      FAIL("no error");
    } catch (const ks::error& e) {
      INFO(e.what());
      CHECK(class_of(e) == name_of(r.expected));
      for (const std::string& n : r.names) CHECK_THAT(e.what(), Catch::Contains(n));
    }
  }
}

TEST_CASE("a database written with another layout is a schema_error", "[store][error]") {
  ks::memory_backend b;
  {
    ks::store<rule_schema, ks::memory_backend> db;
    db.put<message>({"q", 1}, "v");
    b = std::move(db.unsafe_backend());  // the database, as a reopen finds it
  }
  try {
    ks::store<rule_schema_v2, ks::memory_backend> db(std::move(b));
    FAIL("opened");
  } catch (const ks::error& e) {
    INFO(e.what());
    CHECK(class_of(e) == "schema_error");
    CHECK_THAT(e.what(), Catch::Contains("'message'"));
  }
}

TEST_CASE("invalid UTF-8 in a key field is refused before anything is written", "[store][error]") {
  rule_store db;
  CHECK_THROWS_AS(db.put<message>({bad_utf8, 1}, "v"), ks::key_error);
  CHECK_THROWS_AS(db.put<message>({"q", 1}, bad_utf8), ks::key_error);  // its index key holds the value
  CHECK(db.get<message>({"q", 1}) == std::nullopt);
  CHECK(db.get<message_count>({"q"}) == std::nullopt);
  std::size_t n = 0;
  for (const auto& e : db.scan<by_value>()) {
    (void)e;
    ++n;
  }
  CHECK(n == 0);
}

}  // namespace error_rule_test
