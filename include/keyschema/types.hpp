// keyschema/types.hpp: the value types the tuple codec knows besides the standard ones.
//
//   keyschema::bytes   a binary string (tuple type code 0x01); std::string is a UTF-8 text string
//                      (type code 0x02), so the two never mix in one key position.
//   keyschema::uuid    an RFC 4122 UUID as 16 bytes in network order (type code 0x30).
//   keyschema::desc<T> T stored in descending order (see keyschema/detail/codec/codec_composites.hpp
//                      and docs/encoding.md: user type code 0x40, the bitwise complement of T's own
//                      element encoding, then a 0xff terminator).
//
// All three are plain regular value types.
// Thread-safety: as for any value type: concurrent const access is safe, a mutation needs
// external synchronization.
#pragma once

#include <keyschema/detail/codec/string_assign.hpp>
#include <keyschema/detail/config.hpp>

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {
struct bytes_storage;
}  // namespace detail

// An owned byte string. Comparison is lexicographic by unsigned byte value, which is the order
// of the encoded keys.
class bytes {
 public:
  bytes() = default;
  // Copies `data`.
  explicit bytes(std::string_view data) : data_(data) {}
  // Copies the NUL-terminated text `data` (without its terminator): ks::bytes("...") picks this
  // constructor instead of being ambiguous between the std::string and std::string_view ones.
  // Bytes holding NULs are built from a std::string, a std::string_view or (data, size).
  // REQUIRES: data is not null and points to a NUL-terminated array.
  explicit bytes(const char* data) : data_(data) {}
  // Takes over (or copies) `data`; every byte is kept, including NULs.
  bytes(std::string data) noexcept : data_(std::move(data)) {}  // NOLINT(google-explicit-constructor)
  // Copies `size` bytes from `data`. REQUIRES: data points to at least `size` readable bytes.
  bytes(const void* data, std::size_t size) : data_(static_cast<const char*>(data), size) {}

  // Replaces the bytes with a copy of data, reusing the storage already held.
  void assign(std::string_view data) { detail::assign_reusing(data_, data); }
  // Exchanges the bytes with the contents of s, without copying either (storage included: s then
  // holds what this object held, and may serve as the buffer of the next read).
  void swap(std::string& s) noexcept { data_.swap(s); }

  // The bytes; the view is valid until this object is modified or destroyed.
  std::string_view view() const noexcept { return data_; }
  const std::string& str() const& noexcept { return data_; }
  std::string str() && noexcept { return std::move(data_); }
  const char* data() const noexcept { return data_.data(); }
  std::size_t size() const noexcept { return data_.size(); }
  bool empty() const noexcept { return data_.empty(); }
  std::uint8_t operator[](std::size_t i) const noexcept { return static_cast<std::uint8_t>(data_[i]); }

  friend bool operator==(const bytes& a, const bytes& b) noexcept { return a.data_ == b.data_; }
  friend std::strong_ordering operator<=>(const bytes& a, const bytes& b) noexcept {
    const std::size_t n = a.data_.size() < b.data_.size() ? a.data_.size() : b.data_.size();
    const int c = n == 0 ? 0 : std::memcmp(a.data_.data(), b.data_.data(), n);  // memcmp is unsigned
    if (c != 0) return c < 0 ? std::strong_ordering::less : std::strong_ordering::greater;
    return a.data_.size() <=> b.data_.size();
  }

 private:
  friend struct detail::bytes_storage;
  std::string data_;
};

namespace detail {
// The string a bytes value holds, for a read straight into it (store.hpp, get_into).
struct bytes_storage {
  static std::string& of(bytes& b) noexcept { return b.data_; }
};
}  // namespace detail

// An RFC 4122 UUID: 16 bytes in network byte order. Comparison is by unsigned bytes, which is the
// order of the encoded keys.
struct uuid {
  std::array<std::uint8_t, 16> bytes{};

  friend bool operator==(const uuid&, const uuid&) = default;
  friend auto operator<=>(const uuid&, const uuid&) = default;
};

// Stores T in descending order inside a key: for any a, b of T,
// pack(desc<T>(a)) < pack(desc<T>(b)) exactly when b < a. The wrapper itself compares like T
// (plain, ascending order), so containers of desc<T> sort like T.
// Use it for "newest first" listings, e.g. desc<std::uint64_t> message ids.
template <class T>
struct desc {
  T value{};

  desc() = default;
  desc(T v) : value(std::move(v)) {}  // NOLINT(google-explicit-constructor)

  friend bool operator==(const desc&, const desc&) = default;
  friend auto operator<=>(const desc&, const desc&) = default;
};

template <class T>
desc(T) -> desc<T>;

KEYSCHEMA_END_NAMESPACE
