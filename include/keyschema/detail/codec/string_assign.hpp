// keyschema/detail/codec/string_assign.hpp: assign_reusing(s, v), the copy of stored bytes into a
// std::string that a scan or a decode reuses from entry to entry.
//
// It does what s.assign(v.data(), v.size()) does. When v is no longer than s (the usual step of a
// scan over values or text of similar sizes), the bytes are moved into s's own storage and s is
// shortened, all inline; a longer v takes std::string::assign. v may alias s (memmove). Stateless;
// thread-safe.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstring>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

// Makes s a copy of v, reusing s's storage. Errors: std::bad_alloc when v is longer than s's
// capacity and memory runs out (s is then unchanged).
KEYSCHEMA_ALWAYS_INLINE void assign_reusing(std::string& s, std::string_view v) {
  if (v.size() <= s.size()) {
    if (!v.empty()) std::memmove(s.data(), v.data(), v.size());
    s.erase(v.size());  // shortens: inline (resize() is a call into libstdc++ even when it changes nothing)
  } else {
    s.assign(v.data(), v.size());
  }
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
