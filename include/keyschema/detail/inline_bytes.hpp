// keyschema/detail/inline_bytes.hpp: detail::inline_bytes<Capacity>, a byte string held in the
// object itself when it fits in Capacity bytes and in one heap block otherwise.
//
// For the short byte strings copied each time a scan or a cursor is opened (a scan's bounds, the
// bound an LMDB cursor checks while it steps): the usual one costs no allocation. data() is a
// stored pointer (to the inline bytes or the heap block), so reading the bytes takes no branch.
// Moving one copies the inline bytes (a fixed size: a few vector moves, no call) or takes the
// heap block; a moved-from object is empty.
//
// Thread-safety: a value type; distinct objects may be used concurrently.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

template <std::size_t Capacity>
class inline_bytes {
 public:
  static constexpr std::size_t inline_capacity = Capacity;

  inline_bytes() noexcept = default;
  // Copies b. Errors: std::bad_alloc when b is longer than Capacity and memory runs out.
  explicit inline_bytes(std::string_view b) { assign(b); }
  inline_bytes(const inline_bytes& o) { assign(o.view()); }
  inline_bytes& operator=(const inline_bytes& o) {
    if (this != &o) assign(o.view());
    return *this;
  }
  inline_bytes(inline_bytes&& o) noexcept { take(o); }
  inline_bytes& operator=(inline_bytes&& o) noexcept {
    if (this != &o) take(o);
    return *this;
  }
  ~inline_bytes() = default;

  // The bytes; valid until this object is modified, moved or destroyed.
  const char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::string_view view() const noexcept { return std::string_view(data_, size_); }

  // Drops the contents and returns room for n bytes, which the caller fills: size() is n from
  // now on. Errors: std::bad_alloc when n > Capacity and memory runs out (nothing changed then).
  char* overwrite(std::size_t n) {
    if (n <= Capacity) [[likely]] {
      heap_.reset();
      data_ = inline_;
    } else {
      heap_ = std::make_unique_for_overwrite<char[]>(n);
      data_ = heap_.get();
    }
    size_ = n;
    return data_;
  }
  // Keeps the first n bytes (after an overwrite() that asked for more than was written).
  // REQUIRES: n <= size().
  void truncate(std::size_t n) noexcept { size_ = n; }
  // Replaces the contents with a copy of b. REQUIRES: b views none of this object's bytes.
  // Errors: as overwrite.
  void assign(std::string_view b) {
    char* p = overwrite(b.size());
    if (!b.empty()) std::memcpy(p, b.data(), b.size());
  }

 private:
  void take(inline_bytes& o) noexcept {
    heap_ = std::move(o.heap_);
    size_ = std::exchange(o.size_, 0);
    if (heap_) {
      data_ = heap_.get();
    } else {
      std::memcpy(inline_, o.inline_, Capacity);  // whatever size_ is: a constant-size copy
      data_ = inline_;
    }
    o.data_ = o.inline_;
  }

  std::unique_ptr<char[]> heap_;  // the bytes when size_ > Capacity
  std::size_t size_ = 0;
  char* data_ = inline_;  // inline_ or heap_.get()
  char inline_[Capacity];
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE
