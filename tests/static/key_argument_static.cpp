// Static tests of how prefix and bound values convert to their field's type
// (keyschema/detail/schema/key_argument.hpp): exact conversions are accepted, every lossy or unrelated
// one is rejected (a compile error at scan / erase_prefix / from / after / to / through).
#include <keyschema/keyschema.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace {
namespace ks = keyschema;
using ks::detail::arg_kind;
using ks::detail::arg_kind_of;
using namespace std::chrono;

template <class T, class D>
constexpr bool accepted = ks::detail::arg_ok(arg_kind_of<T, D>());
template <class T, class D>
constexpr bool lossy = arg_kind_of<T, D>() == arg_kind::lossy;
template <class T, class D>
constexpr bool unrelated = arg_kind_of<T, D>() == arg_kind::unrelated;

// --- std::chrono: what std::chrono converts implicitly is lossless, the rest is rejected --------
using ms_point = sys_time<milliseconds>;
static_assert(accepted<ms_point, ms_point>);
static_assert(arg_kind_of<ms_point, sys_seconds>() == arg_kind::converted);  // seconds -> ms: exact
static_assert(arg_kind_of<ms_point, sys_time<minutes>>() == arg_kind::converted);
static_assert(lossy<ms_point, system_clock::time_point>);                     // now(): ns -> ms
static_assert(lossy<ms_point, sys_time<microseconds>>);
static_assert(lossy<ms_point, sys_time<duration<double, std::milli>>>);       // floating ticks
static_assert(unrelated<ms_point, steady_clock::time_point>);                 // another clock
static_assert(unrelated<ms_point, time_point<steady_clock, milliseconds>>);
static_assert(unrelated<ms_point, milliseconds>);                              // a duration for a time point
static_assert(unrelated<ms_point, std::int64_t>);                              // a bare count has no unit
static_assert(arg_kind_of<milliseconds, seconds>() == arg_kind::converted);
static_assert(lossy<milliseconds, nanoseconds>);
static_assert(lossy<seconds, milliseconds>);
static_assert(unrelated<milliseconds, std::int64_t>);
static_assert(unrelated<milliseconds, int>);
// Same integer encoding underneath, different meanings: converted by value, never reinterpreted.
static_assert(arg_kind_of<nanoseconds, milliseconds>() == arg_kind::converted);  // ms -> ns is exact

// --- integers: written as their own value, which orders correctly against any width -------------
static_assert(arg_kind_of<std::uint8_t, std::int64_t>() == arg_kind::own_integer);   // 300 selects nothing
static_assert(arg_kind_of<std::uint64_t, int>() == arg_kind::own_integer);           // -1 before every value
static_assert(arg_kind_of<std::int8_t, std::uint64_t>() == arg_kind::own_integer);
static_assert(arg_kind_of<std::int32_t, std::int32_t>() == arg_kind::direct);
enum plain_enum : std::uint16_t { plain_a = 7 };
enum class scoped_enum : std::uint16_t { a = 7 };
static_assert(arg_kind_of<std::uint32_t, plain_enum>() == arg_kind::own_integer);
static_assert(unrelated<std::uint32_t, scoped_enum>);
static_assert(unrelated<scoped_enum, std::uint16_t>);
static_assert(accepted<scoped_enum, scoped_enum>);

// --- floating point and bool ----------------------------------------------------------------
static_assert(lossy<std::int64_t, double>);  // 2.5 would become 2
static_assert(lossy<std::uint8_t, float>);
static_assert(lossy<float, double>);
static_assert(arg_kind_of<double, float>() == arg_kind::converted);
static_assert(arg_kind_of<double, std::int32_t>() == arg_kind::converted);  // 31 bits fit 53
static_assert(lossy<double, std::int64_t>);                                 // 2^53 + 1 does not
static_assert(lossy<float, std::int32_t>);
static_assert(arg_kind_of<float, std::int16_t>() == arg_kind::converted);
static_assert(lossy<std::int32_t, bool>);
static_assert(lossy<bool, int>);
static_assert(lossy<std::int32_t, char>);  // a character is not an integer key
static_assert(accepted<bool, bool>);

// --- strings and other types ------------------------------------------------------------------
static_assert(arg_kind_of<std::string, std::string_view>() == arg_kind::direct);
static_assert(arg_kind_of<std::string, const char*>() == arg_kind::direct);
static_assert(arg_kind_of<std::string, char[6]>() == arg_kind::direct);
static_assert(unrelated<ks::bytes, const char*>);
static_assert(arg_kind_of<ks::bytes, std::string>() == arg_kind::converted);
static_assert(unrelated<std::string, ks::bytes>);
static_assert(unrelated<std::string, int>);
static_assert(unrelated<std::uint64_t, std::string>);

// --- composites: element by element ------------------------------------------------------------
static_assert(arg_kind_of<ks::desc<std::uint64_t>, ks::desc<std::uint64_t>>() == arg_kind::direct);
static_assert(arg_kind_of<ks::desc<std::uint64_t>, std::uint64_t>() == arg_kind::desc_of);
static_assert(arg_kind_of<ks::desc<std::uint8_t>, int>() == arg_kind::desc_of);  // by value, not narrowed
static_assert(arg_kind_of<ks::desc<ms_point>, sys_seconds>() == arg_kind::desc_of);
static_assert(lossy<ks::desc<ms_point>, system_clock::time_point>);
static_assert(lossy<ks::desc<std::int64_t>, ks::desc<double>>);
static_assert(arg_kind_of<std::optional<std::uint32_t>, std::nullopt_t>() == arg_kind::optional_of);
static_assert(arg_kind_of<std::optional<std::uint32_t>, int>() == arg_kind::optional_of);
static_assert(arg_kind_of<std::optional<ms_point>, std::optional<sys_seconds>>() == arg_kind::optional_of);
static_assert(lossy<std::optional<ms_point>, system_clock::time_point>);
static_assert(lossy<std::optional<std::int32_t>, std::optional<double>>);
static_assert(arg_kind_of<std::tuple<std::uint8_t, std::string>, std::tuple<int, const char*>>() == arg_kind::tuple_of);
static_assert(lossy<std::tuple<std::int64_t, ms_point>, std::tuple<int, system_clock::time_point>>);
static_assert(unrelated<std::tuple<std::int64_t>, std::tuple<std::int64_t, std::int64_t>>);
static_assert(unrelated<std::tuple<std::int64_t>, std::tuple<std::string>>);

}  // namespace
