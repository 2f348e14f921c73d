// tests/unit/leveldb_backend_concurrency_test.cpp: keyschema::leveldb_backend with concurrent
// readers and one writer.
//
// The writer commits batches that move every key of a group to the next version together, and
// replace a single marker key; compactions run meanwhile. Readers (gets, snapshots, cursors in
// both directions) must always see whole batches: every key of the group at one version, exactly
// one marker, versions never going backwards. Catch2 assertions are not thread-safe, so the
// threads collect problems and the main thread asserts on them.
#include <catch2/catch.hpp>

#include <keyschema/leveldb.hpp>
#include <keyschema/write_batch.hpp>

#include <support/temp_dir.hpp>

#include <atomic>
#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

using keyschema::key_range;
using keyschema::leveldb_backend;
using keyschema::write_batch;

namespace {

constexpr int group_size = 40;
constexpr int versions = 150;

std::string key(int i) { return "k" + std::to_string(1000 + i); }
// Zero-padded so that versions compare as strings.
std::string version(int v) {
  std::string s = std::to_string(v);
  return std::string(6 - s.size(), '0') + s;
}
std::string marker(int v) { return "m" + version(v); }

struct reader_report {
  std::vector<std::string> problems;
  int iterations = 0;
  void fail(std::string what) {
    if (problems.size() < 10) problems.push_back(std::move(what));
  }
};

// Checks that the entries of one group (in cursor order) are complete and all at one version;
// returns that version ("" after reporting a problem).
std::string check_group(reader_report& r, const std::vector<std::pair<std::string, std::string>>& seen, bool reverse,
                        const char* how) {
  if (seen.size() != group_size) {
    r.fail(std::string(how) + ": " + std::to_string(seen.size()) + " keys instead of " + std::to_string(group_size));
    return {};
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const int index = reverse ? group_size - 1 - static_cast<int>(i) : static_cast<int>(i);
    if (seen[i].first != key(index)) r.fail(std::string(how) + ": key out of order: " + seen[i].first);
    if (seen[i].second != seen[0].second) {
      r.fail(std::string(how) + ": a partial batch: " + seen[0].second + " and " + seen[i].second);
      return {};
    }
  }
  return seen[0].second;
}

void read_loop(const leveldb_backend& db, const std::atomic<bool>& done, reader_report& r) {
  std::string last_seen = version(0);
  const auto monotone = [&](const std::string& v, const char* how) {
    if (v < last_seen) r.fail(std::string(how) + ": went back from " + last_seen + " to " + v);
    else last_seen = v;
  };
  while (!done.load() || r.iterations < 20) {
    const int kind = r.iterations++ % 4;
    if (kind == 0) {  // a snapshot: point reads of the whole group and its marker
      const auto snap = db.snapshot();
      std::vector<std::pair<std::string, std::string>> seen;
      std::string v;
      for (int i = 0; i < group_size; ++i) {
        if (db.get(key(i), v, &snap)) seen.emplace_back(key(i), v);
      }
      const std::string at = check_group(r, seen, false, "snapshot get");
      if (at.empty()) continue;
      if (!db.get(marker(std::stoi(at)), v, &snap)) r.fail("snapshot get: no marker for version " + at);
      monotone(at, "snapshot get");
    } else if (kind == 1 || kind == 2) {  // one cursor per direction, with its implicit snapshot
      const bool reverse = kind == 2;
      std::vector<std::pair<std::string, std::string>> seen;
      for (auto c = db.cursor(key_range{"k", "l", reverse}, nullptr); c.valid(); c.next()) {
        seen.emplace_back(std::string(c.key()), std::string(c.value()));
      }
      const std::string at = check_group(r, seen, reverse, reverse ? "reverse cursor" : "forward cursor");
      if (!at.empty()) monotone(at, "cursor");
    } else {  // markers: exactly one at any time; a plain get never goes back
      int markers = 0;
      for (auto c = db.cursor(key_range{"m", "n", false}, nullptr); c.valid(); c.next()) ++markers;
      if (markers != 1) r.fail("marker cursor: " + std::to_string(markers) + " markers");
      std::string v;
      if (!db.get(key(group_size - 1), v, nullptr)) r.fail("get: the last key is missing");
      else monotone(v, "get");
    }
  }
}

}  // namespace

TEST_CASE("leveldb_backend: readers see whole batches while one writer goes on", "[leveldb][concurrency]") {
  keyschema::testing::temp_dir dir("leveldb");
  keyschema::leveldb_options o;
  o.write_buffer_bytes = 64 << 10;  // memtable switches and compactions while reading
  leveldb_backend db(dir.path() / "db", o);
  {
    write_batch wb;
    for (int i = 0; i < group_size; ++i) wb.put(key(i), version(0));
    wb.put(marker(0), "");
    db.write(wb, {});
  }

  std::atomic<bool> done{false};
  std::vector<reader_report> reports(3);
  std::vector<std::thread> readers;
  for (auto& r : reports) {
    readers.emplace_back([&db, &done, &r] {
      try {
        read_loop(db, done, r);
      } catch (const std::exception& e) {
        r.fail(std::string("exception: ") + e.what());
      }
    });
  }

  std::string writer_problem;
  std::thread writer([&] {
    try {
      const std::string padding(500, 'p');  // fills the memtable faster
      for (int v = 1; v <= versions; ++v) {
        write_batch wb;
        wb.erase(marker(v - 1));
        for (int i = 0; i < group_size; ++i) wb.put(key(i), version(v));
        wb.put(marker(v), padding);
        db.write(wb, {});
        if (v % 50 == 0) db.compact_range({});
      }
    } catch (const std::exception& e) {
      writer_problem = e.what();
    }
    done = true;
  });
  writer.join();
  for (auto& t : readers) t.join();

  CHECK(writer_problem.empty());
  for (const auto& r : reports) {
    CHECK(r.iterations >= 20);
    for (const auto& p : r.problems) FAIL_CHECK(p);
  }
  std::string v;
  REQUIRE(db.get(key(0), v, nullptr));
  CHECK(v == version(versions));
}
