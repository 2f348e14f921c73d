// keyschema::bytes is constructible from a string literal (once ambiguous between the
// std::string and std::string_view constructors), and keeps its other constructors.
#include <keyschema/types.hpp>

#include <string>
#include <string_view>
#include <type_traits>

namespace ks = keyschema;

static_assert(std::is_constructible_v<ks::bytes, const char*>, "ks::bytes(\"...\") must compile");
static_assert(std::is_constructible_v<ks::bytes, const char (&)[4]>, "ks::bytes(\"abc\") must compile");
static_assert(std::is_constructible_v<ks::bytes, std::string>);
static_assert(std::is_constructible_v<ks::bytes, std::string_view>);
static_assert(std::is_convertible_v<std::string, ks::bytes>, "a std::string converts implicitly, as before");
static_assert(!std::is_convertible_v<const char*, ks::bytes>, "text becomes bytes only when spelled ks::bytes(...)");

// The inline namespace names the major and minor version (the package declares minor versions
// incompatible): bump `v0_1` in detail/config.hpp together with KEYSCHEMA_VERSION_MINOR.
static_assert(KEYSCHEMA_VERSION_MAJOR == 0 && KEYSCHEMA_VERSION_MINOR == 1,
              "the version changed: rename the inline namespace v0_1 in detail/config.hpp to match");
static_assert(std::is_same_v<ks::v0_1::bytes, ks::bytes>, "public names live in keyschema::v0_1");
