// keyschema/lmdb/detail/cursor_bound.hpp: lmdb_detail::cursor_bound, the copy of the one bound an
// lmdb_cursor checks while it steps, and before_sign(), the check itself.
//
// A cursor copies its bound (the backend contract: the key_range it was made from may go away).
// Bounds of typed scans are short (a key prefix and a type code or two), so the copy is kept in
// the cursor itself when it fits: opening a cursor then allocates nothing for it. A longer bound
// goes to the heap.
//
// Thread-safety: a value type; distinct objects may be used concurrently.
#pragma once

#include <keyschema/detail/config.hpp>

#include <lmdb.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

class cursor_bound {
 public:
  static constexpr std::size_t inline_capacity = 96;

  cursor_bound() noexcept = default;
  // Copies b. Errors: std::bad_alloc when b is longer than inline_capacity and memory runs out.
  explicit cursor_bound(std::string_view b) { assign(b); }
  // Replaces the bound with a copy of b, in place. Errors: as the constructor (the bound is then
  // empty).
  void assign(std::string_view b) {
    heap_.reset();
    size_ = 0;
    data_ = inline_;
    if (b.size() > inline_capacity) {
      heap_ = std::make_unique<char[]>(b.size());
      data_ = heap_.get();
    }
    if (!b.empty()) std::memcpy(data_, b.data(), b.size());
    size_ = b.size();
  }
  cursor_bound(const cursor_bound&) = delete;
  cursor_bound& operator=(const cursor_bound&) = delete;
  cursor_bound(cursor_bound&& o) noexcept { take(o); }
  cursor_bound& operator=(cursor_bound&& o) noexcept {
    if (this != &o) take(o);
    return *this;
  }

  // The bound's bytes, valid while this object lives unmoved (read once per cursor step, hence
  // a stored pointer rather than a choice between the heap and the inline copy).
  const char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

 private:
  void take(cursor_bound& o) noexcept {
    heap_ = std::move(o.heap_);
    size_ = std::exchange(o.size_, 0);
    if (!heap_ && size_ != 0) std::memcpy(inline_, o.inline_, size_);
    data_ = heap_ ? heap_.get() : inline_;
    o.data_ = o.inline_;
  }
  std::unique_ptr<char[]> heap_;
  std::size_t size_ = 0;
  char* data_ = inline_;  // heap_.get() or inline_
  char inline_[inline_capacity];
};

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
