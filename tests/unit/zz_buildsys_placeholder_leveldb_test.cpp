#include <catch2/catch.hpp>
#include <keyschema/leveldb.hpp>
#include <support/temp_dir.hpp>
#include <memory>
#include <atomic>
#include <string>
#include <thread>
#include <vector>
TEST_CASE("placeholder: leveldb opens") {
  keyschema::testing::temp_dir d("ldb");
  leveldb::Options o; o.create_if_missing = true; leveldb::DB* db = nullptr;
  auto s = leveldb::DB::Open(o, d / "db", &db); REQUIRE(s.ok()); std::unique_ptr<leveldb::DB> g(db);
  CHECK(db->Put({}, "k", "v").ok());
  std::vector<std::thread> ts; std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) ts.emplace_back([&, t] { for (int i = 0; i < 2000; ++i) { if (db->Put({}, std::to_string(t) + "/" + std::to_string(i), std::string(100, 'x')).ok()) ++ok; } });
  for (auto& th : ts) th.join();
  CHECK(ok == 8000);
}
