// tests/support/ref_backend.hpp: a backend that forwards to another backend object it does not
// own, optionally reporting small backend_limits. Lets tests open several stores, one after
// another, over the same in-memory database (reopen, fingerprint checks) and exercise every limit
// the store checks (the real engines' per-batch limits are far too large to reach in a test).
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/memory_backend.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace keyschema_test {

template <class Inner = keyschema::memory_backend>
class ref_backend {
 public:
  using snapshot_type = typename Inner::snapshot_type;
  using cursor_type = typename Inner::cursor_type;

  // limits: what limits() reports (unlimited by default); write() does not enforce them, so a
  // test sees what the store itself refuses. Also counts write() calls and their largest batch.
  explicit ref_backend(Inner& inner, keyschema::backend_limits limits = {}) : inner_(&inner), limits_(limits) {}

  bool get(std::string_view k, std::string& v, const snapshot_type* s) const { return inner_->get(k, v, s); }
  void write(const keyschema::write_batch& b, const keyschema::write_options& o) {
    ++writes_;
    largest_write_ = std::max(largest_write_, b.size());
    inner_->write(b, o);
  }
  snapshot_type snapshot() const { return inner_->snapshot(); }
  cursor_type cursor(const keyschema::key_range& r, const snapshot_type* s) const { return inner_->cursor(r, s); }
  keyschema::backend_limits limits() const noexcept { return limits_; }

  std::size_t writes() const noexcept { return writes_; }
  std::size_t largest_write() const noexcept { return largest_write_; }

 private:
  Inner* inner_;
  keyschema::backend_limits limits_;
  std::size_t writes_ = 0;
  std::size_t largest_write_ = 0;
};

static_assert(keyschema::backend<ref_backend<>>);

}  // namespace keyschema_test
