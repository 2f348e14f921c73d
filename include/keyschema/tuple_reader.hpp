// keyschema/tuple_reader.hpp: keyschema::tuple::reader, the decoding cursor that full codecs
// (keyschema::codec<T>::decode) read from. Also included by <keyschema/codec.hpp> and
// <keyschema/tuple.hpp>.
//
// A reader walks over encoded tuple bytes that it does not own, one element at a time. Codecs
// (keyschema::codec<T>::decode) consume exactly one element from it. It never reads outside the
// view it was given: every access is bounds-checked and a short input is a decode_error.
//
// Thread-safety: a reader is a small mutable cursor; use one per thread. The viewed bytes must
// outlive the reader and must not change while it is in use.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/codec/tuple_codes.hpp>
#include <keyschema/detail/codec/tuple_error.hpp>
#include <keyschema/detail/codec/tuple_skip.hpp>
#include <keyschema/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace tuple {

class reader {
 public:
  // Views `in` (not copied; it must outlive the reader). `base_offset` is added to offset() and
  // to the byte offsets in error messages, e.g. the length of a key prefix the caller stripped.
  explicit reader(std::string_view in, std::size_t base_offset = 0) noexcept : data_(in), base_(base_offset) {}

  // True when every byte has been consumed.
  bool at_end() const noexcept { return pos_ == data_.size(); }
  // base_offset + number of bytes consumed so far.
  std::size_t offset() const noexcept { return base_ + pos_; }
  // The number of bytes of the viewed input consumed so far (offset() without base_offset): so
  // many bytes before remaining().data() belong to the input.
  std::size_t consumed() const noexcept { return pos_; }
  // The bytes not consumed yet.
  std::string_view remaining() const noexcept { return std::string_view(data_.data() + pos_, data_.size() - pos_); }
  // Nesting depth: 0 at top level, 1 inside one nested tuple, ...
  std::size_t depth() const noexcept { return depth_; }

  // The next byte, not consumed. Throws decode_error at end of input.
  std::uint8_t peek() const {
    if (pos_ >= data_.size()) fail("unexpected end of input");
    return static_cast<std::uint8_t>(data_[pos_]);
  }
  // Consumes and returns the next byte. Throws decode_error at end of input.
  std::uint8_t take() {
    const std::uint8_t b = peek();
    ++pos_;
    return b;
  }
  // Consumes the next n bytes and returns a view of them (into the viewed input).
  // Throws decode_error if fewer than n bytes remain; nothing is consumed then.
  std::string_view take(std::size_t n) {
    if (data_.size() - pos_ < n) fail_short(n);
    const std::string_view v(data_.data() + pos_, n);
    pos_ += n;
    return v;
  }
  // Consumes n bytes. Throws decode_error if fewer than n bytes remain; nothing is consumed then.
  void skip(std::size_t n) {
    if (data_.size() - pos_ < n) fail_short(n);
    pos_ += n;
  }

  // Consumes n bytes without checking. For codecs that have just checked remaining().size().
  // REQUIRES: n <= remaining().size().
  void advance(std::size_t n) noexcept { pos_ += n; }

  // Skips one element of any standard type (and desc elements), without decoding it.
  // Throws decode_error on malformed input, on user type codes 0x41..0x4f (their length is
  // application-defined) and at the end of a nested tuple.
  void skip_element() { pos_ = detail::element_end(data_, pos_, 0x00, depth_ > 0, base_); }

  // True when the next element is null: 0x00 at top level, 0x00 0xff inside a nested tuple.
  bool next_is_null() const noexcept {
    if (pos_ >= data_.size() || data_[pos_] != '\0') return false;
    if (depth_ == 0) return true;
    return pos_ + 1 < data_.size() && static_cast<std::uint8_t>(data_[pos_ + 1]) == 0xff;
  }
  // Consumes a null element. Throws decode_error if the next element is not null.
  void take_null() {
    if (!next_is_null()) fail_unexpected("null");
    pos_ += depth_ == 0 ? 1 : 2;
  }

  // Consumes the 0x05 that opens a nested tuple. Throws decode_error if the next byte differs.
  void begin_nested() {
    if (pos_ >= data_.size() || static_cast<std::uint8_t>(data_[pos_]) != detail::code::nested)
      fail_unexpected("nested tuple");
    ++pos_;
    ++depth_;
  }
  // True when the next byte ends the innermost nested tuple (0x00 not followed by 0xff).
  // REQUIRES: depth() > 0.
  bool at_nested_end() const noexcept {
    return pos_ < data_.size() && data_[pos_] == '\0' &&
           !(pos_ + 1 < data_.size() && static_cast<std::uint8_t>(data_[pos_ + 1]) == 0xff);
  }
  // Consumes the terminator of the innermost nested tuple. REQUIRES: depth() > 0.
  // Throws decode_error if the tuple has more elements or is unterminated.
  void end_nested() {
    if (!at_nested_end()) {
      if (pos_ >= data_.size()) fail("unterminated nested tuple");
      fail("expected end of nested tuple (0x00), found " + detail::hex_byte(static_cast<std::uint8_t>(data_[pos_])));
    }
    ++pos_;
    --depth_;
  }

  // Throws decode_error("<expected> at byte <offset()>").
  [[noreturn, gnu::cold]] void fail(std::string_view expected) const { detail::throw_decode_error(expected, offset()); }
  // Throws decode_error("<what> at byte <offset>"), `offset` being absolute (as offset() returns).
  [[noreturn, gnu::cold]] void fail_at(std::size_t offset, std::string_view what) const {
    detail::throw_decode_error(what, offset);
  }
  // Throws decode_error("expected <what>, found type code 0xNN at byte N") (or "found end of
  // input"), describing the next byte. For codecs that see a type code they do not accept.
  [[noreturn, gnu::cold, gnu::noinline]] void fail_unexpected(std::string_view what) const {
    std::string msg = "expected ";
    msg += what;
    if (pos_ >= data_.size())
      msg += ", found end of input";
    else
      msg += ", found type code " + detail::hex_byte(static_cast<std::uint8_t>(data_[pos_]));
    fail(msg);
  }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] void fail_short(std::size_t n) const {
    fail("truncated input: needs " + std::to_string(n) + " bytes, " + std::to_string(data_.size() - pos_) + " left");
  }

  std::string_view data_;
  std::size_t pos_ = 0;
  std::size_t base_ = 0;
  std::size_t depth_ = 0;
};

}  // namespace tuple
KEYSCHEMA_END_NAMESPACE
