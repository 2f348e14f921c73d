#include <catch2/catch.hpp>
#include <support/temp_dir.hpp>
#include <keyschema/error.hpp>
#include <filesystem>
TEST_CASE("placeholder: temp_dir") {
  std::filesystem::path p;
  { keyschema::testing::temp_dir d("x"); p = d.path(); CHECK(std::filesystem::is_directory(p)); }
  CHECK_FALSE(std::filesystem::exists(p));
}
