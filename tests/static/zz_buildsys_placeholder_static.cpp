#include <keyschema/error.hpp>
#include <type_traits>
static_assert(std::is_base_of_v<keyschema::error, keyschema::decode_error>);
