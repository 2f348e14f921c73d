// tests/conformance/cases/values.cpp: conformance cases: struct values (struct_value.hpp) stored
// through the backend: typed reads, scans, get_into, transactions, reopening, and the stored bytes
// (the tuple of the members, the same on every backend).
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp). Its schema is its own (a store of it is another database than the broker
// fixture's).
#include <conformance/conformance.hpp>

namespace keyschema::conformance::values {

struct message_meta {
  std::int64_t priority = 0;
  std::optional<std::string> reply_to;
  ks::bytes correlation;

  friend bool operator==(const message_meta&, const message_meta&) = default;
};

}  // namespace keyschema::conformance::values

template <>
struct keyschema::value_fields<keyschema::conformance::values::message_meta>
    : keyschema::members<keyschema::member<"priority", &keyschema::conformance::values::message_meta::priority>,
                         keyschema::member<"reply_to", &keyschema::conformance::values::message_meta::reply_to>,
                         keyschema::member<"correlation", &keyschema::conformance::values::message_meta::correlation>> {};

namespace keyschema::conformance::values {

using meta = ks::keyspace<"meta", message_meta, ks::lit<"META">, ks::field<"destination", std::string>,
                          ks::field<"message_id", std::uint64_t>>;
using values_schema = ks::schema<meta>;

inline message_meta sample(std::uint64_t i) {
  message_meta m;
  m.priority = static_cast<std::int64_t>(i) - 2;
  if (i % 2 == 0) m.reply_to = "reply-" + std::to_string(i);
  m.correlation = ks::bytes(std::string("c\0\xff", 3) + std::to_string(i));
  return m;
}

TEST_CASE("struct values are stored as the tuple of their members on every backend", "[conformance][struct_value]") {
  testing::temp_dir dir("conformance-values");
  auto db = backend_factory::open<values_schema>(dir.path());
  for (std::uint64_t i = 0; i < 6; ++i) db->put<meta>({"q", i}, sample(i));

  for (std::uint64_t i = 0; i < 6; ++i) CHECK(db->get<meta>({"q", i}) == std::optional<message_meta>(sample(i)));
  std::uint64_t n = 0;
  for (const auto& e : db->scan<meta>("q")) {
    CHECK(e.value == sample(n));
    CHECK(ks::get<"priority">(e.value) == static_cast<std::int64_t>(n) - 2);
    ++n;
  }
  CHECK(n == 6);
  message_meta out;
  CHECK(db->get_into<meta>({"q", 3}, out));
  CHECK(out == sample(3));
  CHECK_FALSE(db->get_into<meta>({"q", 99}, out));
  CHECK(out == sample(3));

  // The stored bytes: the members packed as one tuple, whatever the backend.
  std::string key, stored;
  ks::detail::key_codec<meta>::encode(key, meta::key_type("q", 4));
  REQUIRE(db->backend().get(key, stored, nullptr));
  const message_meta s4 = sample(4);
  CHECK(stored == ks::tuple::pack(s4.priority, s4.reply_to, s4.correlation));

  {
    auto tx = db->transaction();
    message_meta m = *tx.get<meta>({"q", 1});
    m.priority = 100;
    tx.put<meta>({"q", 1}, m);
    CHECK(tx.get<meta>({"q", 1})->priority == 100);
    tx.commit();
  }
  CHECK(db->get<meta>({"q", 1})->priority == 100);

  if constexpr (backend_factory::persistent) {
    db.reset();
    db = backend_factory::open<values_schema>(dir.path());
    CHECK(db->get<meta>({"q", 1})->priority == 100);
    CHECK(db->get<meta>({"q", 5}) == std::optional<message_meta>(sample(5)));
  } else {
    WARN("memory backend: a struct value's reopening is covered by the file backends");
  }
}

}  // namespace keyschema::conformance::values
