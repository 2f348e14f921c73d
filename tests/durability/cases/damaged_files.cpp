// tests/durability/cases/damaged_files.cpp: durability cases: damaged and missing files.
//
// What holds on every file engine: each kind of damage the engine's traits make to a closed
// database (a damaged log record or page, a damaged or missing metadata file, a truncated file,
// a file of another format) is refused at open with a backend_error naming the database, never a
// crash (each open runs in a forked child), and nothing is repaired, dropped or adopted: the
// damaged file is left as it was and a second open refuses it again. And what is not damage (an
// intact database; a log that ends inside a record, as a crash while appending leaves it) opens
// with every record it must hold. The engines' own damage cases (what is found only on read, the
// documented salvage options, what the engine cannot detect) are in <engine>.cpp.
//
// Compiled once per engine, into its unit_group_<engine> (see durability.hpp).
#include <durability/durability.hpp>

#include <optional>
#include <string>

namespace keyschema::durability::damaged_files {

TEST_CASE("damaged files: a damaged or missing file is refused at open with an error naming the database; "
          "nothing is repaired or dropped",
          "[damaged_files]") {
  for (const damage& d : engine::damages()) {
    DYNAMIC_SECTION(d.name) {
      temp_dir dir(std::string(engine::name) + "-damaged");
      const fs::path path = dir.path() / "db";
      const fs::path file = d.make(path);
      const std::optional<std::string> before = contents(file);
      for (int attempt = 0; attempt < 2; ++attempt) {  // a failed open drops or rewrites nothing
        INFO("open " << attempt + 1 << " of the damaged database");
        const refusal r = open_refused<backend_type>(path);
        INFO("refused: " << r.call << " (" << r.code << "): " << r.what);
        CHECK(contains(r.what, path.string()));
        if (d.check) d.check(r, path);
      }
      CHECK(contents(file) == before);  // left as it was
    }
  }
}

TEST_CASE("damaged files: what is not damage (an intact file, a log a crash cut inside its last record) opens "
          "with every record it holds",
          "[damaged_files]") {
  for (const not_damage& d : engine::not_damaged()) {
    DYNAMIC_SECTION(d.name) {
      temp_dir dir(std::string(engine::name) + "-not-damaged");
      const fs::path path = dir.path() / "db";
      const int expected = d.make(path);
      REQUIRE(expected > 0);
      backend_type db(path);
      CHECK(present(db, d.pad) == first_n(expected));
    }
  }
}

}  // namespace keyschema::durability::damaged_files
