// expect: keyschema::store: Backend does not have `backend_limits limits\(\) const`
// A backend written against the old contract (max_key_size() instead of limits()) is refused at
// the store with a message naming the missing member; the control adds limits().
#include <keyschema/keyschema.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ks = keyschema;
using a = ks::keyspace<"a", std::int64_t, ks::lit<"A">, ks::field<"id", std::uint64_t>>;

class old_backend {
 public:
  using snapshot_type = ks::memory_backend::snapshot_type;
  using cursor_type = ks::memory_backend::cursor_type;
  bool get(std::string_view k, std::string& v, const snapshot_type* s) const { return inner_.get(k, v, s); }
  void write(const ks::write_batch& b, const ks::write_options& o) { inner_.write(b, o); }
  snapshot_type snapshot() const { return inner_.snapshot(); }
  cursor_type cursor(const ks::key_range& r, const snapshot_type* s) const { return inner_.cursor(r, s); }
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  std::size_t max_key_size() const noexcept { return 511; }
#else
  ks::backend_limits limits() const noexcept { return {.max_key_bytes = 511}; }
#endif
 private:
  ks::memory_backend inner_;
};

int main() {
  ks::store<ks::schema<a>, old_backend> db;
  db.put<a>({1}, 2);
  return 0;
}
