// Unit tests of memory_backend, the reference backend: versions, snapshots, cursor bounds,
// garbage collection of versions nobody can see, and concurrent readers with one writer.
#include <keyschema/memory_backend.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {
namespace ks = keyschema;

void put(ks::memory_backend& b, std::string_view k, std::string_view v) {
  ks::write_batch wb;
  wb.put(k, v);
  b.write(wb, {});
}
void erase(ks::memory_backend& b, std::string_view k) {
  ks::write_batch wb;
  wb.erase(k);
  b.write(wb, {});
}
std::vector<std::string> keys(const ks::memory_backend& b, ks::key_range r, const ks::memory_backend::snapshot_type* s = nullptr) {
  std::vector<std::string> out;
  for (auto c = b.cursor(r, s); c.valid(); c.next()) out.emplace_back(c.key());
  return out;
}
using strings = std::vector<std::string>;

}  // namespace

TEST_CASE("memory_backend: cursor bounds in both directions", "[memory]") {
  ks::memory_backend b;
  for (const char* k : {"a", "b", "c", "d"}) put(b, k, k);
  CHECK(keys(b, {"b", "d", false}) == strings{"b", "c"});
  CHECK(keys(b, {"b", "d", true}) == strings{"c", "b"});
  CHECK(keys(b, {"", "", true}) == strings{"d", "c", "b", "a"});
  CHECK(keys(b, {"bb", "", false}) == strings{"c", "d"});
  CHECK(keys(b, {"", "a", true}).empty());
  CHECK(keys(b, {"e", "", false}).empty());
  // Binary keys order as unsigned bytes.
  put(b, std::string("\xff", 1), "x");
  put(b, std::string("\x00", 1), "x");
  CHECK(keys(b, {"", "", false}).front() == std::string("\x00", 1));
  CHECK(keys(b, {"", "", false}).back() == std::string("\xff", 1));
}

TEST_CASE("memory_backend: batches apply atomically, later operations win", "[memory]") {
  ks::memory_backend b;
  ks::write_batch wb;
  wb.put("k", "1");
  wb.put("k", "2");
  wb.put("gone", "x");
  wb.erase("gone");
  b.write(wb, {});
  std::string v;
  REQUIRE(b.get("k", v, nullptr));
  CHECK(v == "2");
  CHECK_FALSE(b.get("gone", v, nullptr));
}

TEST_CASE("memory_backend: snapshots and versions", "[memory]") {
  ks::memory_backend b;
  put(b, "k", "v1");
  auto s1 = b.snapshot();
  put(b, "k", "v2");
  erase(b, "k");
  put(b, "n", "new");
  std::string v;
  REQUIRE(b.get("k", v, &s1));
  CHECK(v == "v1");
  CHECK_FALSE(b.get("k", v, nullptr));
  CHECK_FALSE(b.get("n", v, &s1));
  CHECK(keys(b, {"", "", false}, &s1) == strings{"k"});
  CHECK(keys(b, {"", "", false}) == strings{"n"});
}

TEST_CASE("memory_backend: versions nobody can see are collected", "[memory]") {
  ks::memory_backend b;
  for (int i = 0; i < 100; ++i) put(b, "k" + std::to_string(i), "v");
  {
    auto s = b.snapshot();
    for (int i = 0; i < 100; ++i) erase(b, "k" + std::to_string(i));
    CHECK(b.debug_node_count() == 100);  // the snapshot still sees them
    CHECK(keys(b, {"", "", false}, &s).size() == 100);
  }
  // The next write to each key collects it; keys nobody wrote since stay until written.
  for (int i = 0; i < 100; ++i) erase(b, "k" + std::to_string(i));
  CHECK(b.debug_node_count() == 0);
}

TEST_CASE("memory_backend: a cursor survives nodes erased under it", "[memory]") {
  ks::memory_backend b;
  for (int i = 0; i < 10; ++i) put(b, std::string(1, static_cast<char>('a' + i)), "v");
  auto c = b.cursor({"", "", false}, nullptr);
  REQUIRE(c.valid());
  CHECK(c.key() == "a");
  // Erase everything; the cursor's own snapshot keeps its view.
  for (int i = 0; i < 10; ++i) erase(b, std::string(1, static_cast<char>('a' + i)));
  strings seen;
  for (; c.valid(); c.next()) seen.emplace_back(c.key());
  CHECK(seen.size() == 10);
}

TEST_CASE("memory_backend: concurrent readers with one writer keep an invariant", "[memory][concurrency]") {
  // Ten accounts always sum to 1000: the writer moves amounts between two accounts per batch.
  ks::memory_backend b;
  {
    ks::write_batch wb;
    for (int i = 0; i < 10; ++i) wb.put("acct" + std::to_string(i), "100");
    b.write(wb, {});
  }
  std::atomic<bool> stop{false};
  std::atomic<long> checks{0}, violations{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      do {  // at least one check per reader, however fast the writer is
        auto s = b.snapshot();
        long sum = 0;
        int n = 0;
        for (auto c = b.cursor({"acct", "acct\xff", r % 2 == 1}, &s); c.valid(); c.next()) {
          sum += std::stol(std::string(c.value()));
          ++n;
        }
        std::string v;
        long point_sum = 0;
        for (int i = 0; i < 10; ++i) {
          if (b.get("acct" + std::to_string(i), v, &s)) point_sum += std::stol(v);
        }
        if (sum != 1000 || n != 10 || point_sum != 1000) violations.fetch_add(1);
        checks.fetch_add(1);
      } while (!stop.load());
    });
  }
  std::uint64_t x = 88172645463325252ull;
  std::vector<long> bal(10, 100);
  for (int step = 0; step < 3000; ++step) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int from = static_cast<int>(x % 10), to = static_cast<int>((x >> 8) % 10);
    const long amount = std::min<long>(bal[static_cast<std::size_t>(from)], static_cast<long>((x >> 16) % 7));
    bal[static_cast<std::size_t>(from)] -= amount;
    bal[static_cast<std::size_t>(to)] += amount;
    ks::write_batch wb;
    wb.put("acct" + std::to_string(from), std::to_string(bal[static_cast<std::size_t>(from)]));
    wb.put("acct" + std::to_string(to), std::to_string(bal[static_cast<std::size_t>(to)]));
    b.write(wb, {});
  }
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(violations.load() == 0);
  CHECK(checks.load() >= 3);
}
