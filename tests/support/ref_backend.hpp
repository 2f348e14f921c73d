// tests/support/ref_backend.hpp: a backend that forwards to another backend object it does not
// own, optionally with a smaller maximum key size. Lets tests open several stores, one after
// another, over the same in-memory database (reopen, fingerprint checks) and exercise limits.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/memory_backend.hpp>

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace keyschema_test {

template <class Inner = keyschema::memory_backend>
class ref_backend {
 public:
  using snapshot_type = typename Inner::snapshot_type;
  using cursor_type = typename Inner::cursor_type;

  explicit ref_backend(Inner& inner, std::size_t max_key = std::numeric_limits<std::size_t>::max())
      : inner_(&inner), max_key_(max_key) {}

  bool get(std::string_view k, std::string& v, const snapshot_type* s) const { return inner_->get(k, v, s); }
  void write(const keyschema::write_batch& b, const keyschema::write_options& o) { inner_->write(b, o); }
  snapshot_type snapshot() const { return inner_->snapshot(); }
  cursor_type cursor(const keyschema::key_range& r, const snapshot_type* s) const { return inner_->cursor(r, s); }
  std::size_t max_key_size() const noexcept { return max_key_; }

 private:
  Inner* inner_;
  std::size_t max_key_;
};

static_assert(keyschema::backend<ref_backend<>>);

}  // namespace keyschema_test
