// keyschema/detail/store/store_access.hpp: the one door to the private hooks of the typed store classes.
//
// store, store_snapshot, store_batch and store_transaction implement the typed API of
// basic_reader/basic_writer (store.hpp) and scan_view (scan.hpp) through hooks (raw_get,
// raw_cursor, emplace_op, limits) that are not part of their public interface. Each class
// befriends store_access, and the layers above call the hooks only through it, as range-v3 does
// with range_access: users of the classes see no hook.
//
// Thread-safety: stateless; each call has the thread-safety of the hook it forwards to.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/write_batch.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

struct store_access {
  // Reads the value stored under key as the source sees it; false when there is none.
  template <class Source>
  static bool raw_get(const Source& s, std::string_view key, std::string& value) {
    return s.raw_get(key, value);
  }

  // Whether the source's raw_get leaves value unchanged when it returns false or throws (its
  // backend is a backend_with_value_kept_on_miss).
  template <class Source>
  static constexpr bool raw_get_keeps_value() {
    return Source::raw_get_keeps_value_;
  }

  // A backend cursor over r as the source sees it. REQUIRES: the source outlives the cursor.
  template <class Source>
  static auto raw_cursor(const Source& s, const key_range& r) -> decltype(s.raw_cursor(r)) {
    return s.raw_cursor(r);
  }

  // Adds one operation whose key and value the writers kw/vw append to a buffer.
  template <class Sink, class KW, class VW>
  static void emplace_op(Sink& s, write_batch::op_kind kind, KW&& kw, VW&& vw) {
    s.emplace_op(kind, std::forward<KW>(kw), std::forward<VW>(vw));
  }

  // The limits of the sink's backend (backend.hpp, backend_limits).
  template <class Sink>
  static backend_limits limits(const Sink& s) {
    return s.limits();
  }
};

// The cursor type store_access::raw_cursor returns for Source.
template <class Source>
using raw_cursor_t = decltype(store_access::raw_cursor(std::declval<const Source&>(), std::declval<const key_range&>()));

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
