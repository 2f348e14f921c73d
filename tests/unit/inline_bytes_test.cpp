// detail::inline_bytes (a scan's bounds, an LMDB cursor's bound): the bytes survive copies,
// moves and reassignment on both sides of the inline capacity, a moved-from object is empty, and
// data() points into the object exactly when the bytes fit.
#include <keyschema/detail/inline_bytes.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <utility>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace inline_bytes_test {

namespace {
using bytes16 = keyschema::detail::inline_bytes<16>;

// n bytes that differ from position to position and include NUL and 0xff.
std::string pattern(std::size_t n, char seed) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(seed + static_cast<char>(i * 37)));
  if (n > 1) s[1] = '\0';
  if (n > 2) s[2] = '\xff';
  return s;
}

bool holds_inline(const bytes16& b) {
  const char* self = reinterpret_cast<const char*>(&b);
  return b.data() >= self && b.data() < self + sizeof(b);
}
}  // namespace

TEST_CASE("inline_bytes keeps its bytes through copies, moves and reassignment", "[store][bounds]") {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17},
                              std::size_t{300}}) {
    INFO(n << " bytes");
    const std::string want = pattern(n, 'a');
    bytes16 b(want);
    CHECK(b.view() == want);
    CHECK(b.size() == n);
    CHECK(b.empty() == (n == 0));
    CHECK(holds_inline(b) == (n <= 16));

    bytes16 copy(b);  // copy: both keep the bytes
    CHECK(copy.view() == want);
    CHECK(b.view() == want);
    CHECK(holds_inline(copy) == (n <= 16));

    bytes16 moved(std::move(copy));  // move: the source is empty and still usable
    CHECK(moved.view() == want);
    CHECK(holds_inline(moved) == (n <= 16));
    CHECK(copy.empty());
    CHECK(copy.view().empty());
    copy.assign("again");
    CHECK(copy.view() == "again");

    // Assignments across the capacity, both ways.
    for (const std::size_t m : {std::size_t{0}, std::size_t{5}, std::size_t{16}, std::size_t{40}}) {
      const std::string other = pattern(m, 'x');
      bytes16 target(other);
      target = b;  // copy assignment
      CHECK(target.view() == want);
      CHECK(holds_inline(target) == (n <= 16));
      bytes16 source(other);
      target = std::move(source);  // move assignment
      CHECK(target.view() == other);
      CHECK(holds_inline(target) == (m <= 16));
      CHECK(source.empty());
      target.assign(want);  // assign over what it held
      CHECK(target.view() == want);
    }

    // overwrite: room for exactly the bytes the caller writes.
    char* p = b.overwrite(n + 1);
    for (std::size_t i = 0; i <= n; ++i) p[i] = 'z';
    CHECK(b.view() == std::string(n + 1, 'z'));
    CHECK(holds_inline(b) == (n + 1 <= 16));
  }
}

}  // namespace inline_bytes_test
