// keyschema/lmdb/detail/cursor_bound.hpp: lmdb_detail::cursor_bound, the copy of the one bound an
// lmdb_cursor checks while it steps, and before_sign(), the check itself.
//
// A cursor copies its bound (the backend contract: the key_range it was made from may go away).
// Bounds of typed scans are short (a key prefix and a type code or two), so the copy is kept in
// the cursor itself when it fits: opening a cursor then allocates nothing for it. A longer bound
// goes to the heap (detail::inline_bytes, which holds a scan's bounds too).
//
// Thread-safety: a value type; distinct objects may be used concurrently.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/inline_bytes.hpp>

#include <lmdb.h>

#include <cstring>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

// The copy of the bound: held in the cursor itself up to 96 bytes.
using cursor_bound = detail::inline_bytes<96>;

// Negative when key orders before b in LMDB's default order (memcmp, then length), zero or
// positive otherwise. A key at least as long as b, the usual case, takes one memcmp over b's
// bytes: equal bytes mean the key is b or extends it, so not before it. REQUIRES: b is not
// empty; key.mv_data points to key.mv_size readable bytes (or mv_size is 0).
KEYSCHEMA_ALWAYS_INLINE int before_sign(const MDB_val& key, const cursor_bound& b) noexcept {
  if (key.mv_size >= b.size()) [[likely]]
    return std::memcmp(key.mv_data, b.data(), b.size());
  // Shorter than b: before it unless a byte orders after b's.
  const int c = key.mv_size == 0 ? 0 : std::memcmp(key.mv_data, b.data(), key.mv_size);
  return c != 0 ? c : -1;
}

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
