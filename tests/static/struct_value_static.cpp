// Compile-time facts about struct values (struct_value.hpp): which structs are value types, the
// codec name the schema layout records (member names and types, in order), get<Name>, and that
// reordering or renaming members changes the schema fingerprint.
#include <keyschema/keyschema.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace ks = keyschema;

namespace static_test {

struct message_meta {
  std::int64_t priority = 0;
  std::uint64_t expires = 0;
  std::optional<std::string> reply_to;
  int not_stored = 0;
};
struct reordered {  // the same members, listed in another order
  std::int64_t priority = 0;
  std::uint64_t expires = 0;
};
struct renamed {
  std::int64_t priority = 0;
  std::uint64_t expires = 0;
};
struct unlisted {
  int a = 0;
};

}  // namespace static_test

template <>
struct ks::value_fields<static_test::message_meta>
    : ks::members<ks::member<"priority", &static_test::message_meta::priority>,
                  ks::member<"expires", &static_test::message_meta::expires>,
                  ks::member<"reply_to", &static_test::message_meta::reply_to>> {};
template <>
struct ks::value_fields<static_test::reordered>
    : ks::members<ks::member<"expires", &static_test::reordered::expires>,
                  ks::member<"priority", &static_test::reordered::priority>> {};
template <>
struct ks::value_fields<static_test::renamed>
    : ks::members<ks::member<"priority", &static_test::renamed::priority>,
                  ks::member<"expiry", &static_test::renamed::expires>> {};

namespace static_test {

static_assert(ks::struct_value<message_meta>);
static_assert(ks::value_encodable<message_meta>);
static_assert(!ks::struct_value<unlisted>);
static_assert(!ks::value_encodable<unlisted>);
static_assert(!ks::key_encodable<message_meta>);  // a value type, not a key field type

static_assert(ks::value_traits<message_meta>::name() == "struct<priority:i64,expires:u64,reply_to:optional<string>>");
static_assert(ks::value_traits<reordered>::name() == "struct<expires:u64,priority:i64>");
static_assert(ks::value_traits<renamed>::name() == "struct<priority:i64,expiry:u64>");

static_assert(ks::value_field_names<message_meta>() ==
              std::array<std::string_view, 3>{"priority", "expires", "reply_to"});

// get<Name> reaches the member by name, const or not.
static_assert(std::is_same_v<decltype(ks::get<"priority">(std::declval<message_meta&>())), std::int64_t&>);
static_assert(std::is_same_v<decltype(ks::get<"reply_to">(std::declval<const message_meta&>())),
                             const std::optional<std::string>&>);
constexpr std::uint64_t expires_of() {
  message_meta m;
  ks::get<"expires">(m) = 42;
  return m.expires;
}
static_assert(expires_of() == 42);

// The member names and their order are part of the schema fingerprint.
template <class V>
using meta_ks = ks::keyspace<"meta", V, ks::lit<"META">, ks::field<"id", std::uint64_t>>;
using a = ks::schema<meta_ks<message_meta>>;
static_assert(ks::layout<ks::schema<meta_ks<renamed>>>::fingerprint !=
              ks::layout<ks::schema<meta_ks<reordered>>>::fingerprint);
static_assert(ks::layout<ks::schema<meta_ks<renamed>>>::fingerprint !=
              ks::layout<ks::schema<meta_ks<std::tuple<std::int64_t, std::uint64_t>>>>::fingerprint);
static_assert(ks::valid_schema<a>);

}  // namespace static_test

