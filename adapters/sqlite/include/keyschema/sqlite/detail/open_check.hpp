// keyschema/sqlite/detail/open_check.hpp: what sqlite_backend checks in a database file before
// it uses (and before it changes) anything in it.
//
// check_file_shape() reads the schema table: an empty database is fine (the backend creates the
// kv table), a database holding keyschema's kv table with exactly its shape is fine, anything
// else is another program's SQLite database and is refused with schema_error naming what it
// holds. placement_tables() lists the tables of placements (kv_<placement>, each of kv's shape).
// quick_check() runs PRAGMA quick_check. They only read, so a refused file is left as it was
// (not even switched to WAL mode).
//
// Thread-safety: use the connection alone.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/sqlite/detail/connection.hpp>
#include <keyschema/sqlite/detail/status.hpp>

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace sqlite_detail {

// The table keyschema keeps its entries in. BLOB values compare with memcmp, shorter first on a
// common prefix: keyschema's unsigned byte order.
inline constexpr std::string_view create_kv_sql =
    "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID";

// The table of placement `name` (keyschema::placed): kv_<name>, and kv for the default placement "".
inline constexpr std::string_view placement_table_prefix = "kv_";
inline std::string placement_table(std::string_view name) {
  return name.empty() ? std::string("kv") : std::string(placement_table_prefix) + std::string(name);
}
// The table's name quoted as an SQL identifier ("kv_my-queues": a placement name may hold '-').
// REQUIRES: valid_placement_name(name) (no '"' to escape).
inline std::string quoted_placement_table(std::string_view name) { return '"' + placement_table(name) + '"'; }
// Whether name is a placement name backend.hpp allows: 1 to 64 characters of [a-z0-9_-].
inline bool valid_placement_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

inline constexpr std::string_view create_table_tail =
    " (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID";

// The CREATE statement of placement name's table ("": kv).
inline std::string create_placement_sql(std::string_view name) {
  return "CREATE TABLE IF NOT EXISTS " + quoted_placement_table(name) + std::string(create_table_tail);
}

// Rows of a query, each column as text (NULL as "NULL").
inline std::vector<std::vector<std::string>> query_rows(connection& c, std::string_view sql, const std::string& where) {
  stmt_ptr st = c.prepare(sql, where);
  std::vector<std::vector<std::string>> rows;
  int rc;
  while ((rc = ::sqlite3_step(st.get())) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0, n = ::sqlite3_column_count(st.get()); i < n; ++i) {
      const unsigned char* t = ::sqlite3_column_text(st.get(), i);
      row.emplace_back(t != nullptr ? reinterpret_cast<const char*>(t) : "NULL");
    }
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) throw_sqlite_error(c.db(), rc, where + " (" + std::string(sql) + ")", "sqlite3_step");
  return rows;
}

// Throws schema_error unless table (a plain name: kv, or kv_<placement> of a valid placement
// name) has exactly the shape of keyschema's kv table.
inline void check_table_shape(connection& c, const std::string& file, const std::string& table,
                              const std::string& where) {
  // PRAGMA table_list: schema, name, type, ncol, wr (WITHOUT ROWID), strict.
  const auto list = query_rows(c, "PRAGMA main.table_list('" + table + "')", where);
  // PRAGMA table_info: cid, name, type, notnull, dflt_value, pk.
  const auto cols = query_rows(c, "PRAGMA main.table_info('" + table + "')", where);
  const bool shape = list.size() == 1 && list[0].size() >= 6 && list[0][3] == "2" && list[0][4] == "1" &&
                     list[0][5] == "1" && cols.size() == 2 && cols[0][1] == "k" && cols[0][2] == "BLOB" &&
                     cols[0][5] == "1" && cols[1][1] == "v" && cols[1][2] == "BLOB" && cols[1][3] == "1" &&
                     cols[1][5] == "0";
  if (!shape) {
    const auto sql = query_rows(c, "SELECT sql FROM sqlite_schema WHERE name = '" + table + "'", where);
    throw schema_error(where + ": " + file + " is an SQLite database whose table " + table + " is not keyschema's " +
                       (table == "kv" ? "table kv" : "placement table " + table) + std::string(create_table_tail) +
                       " (found: " + (sql.empty() ? std::string("?") : sql[0][0]) +
                       "). Nothing was changed; open another path");
  }
}

// True when the database has no schema object yet (a new or zero-length file). Throws
// schema_error when it holds objects but no kv table of keyschema's shape.
// Errors: schema_error (a foreign database; what() lists what it holds); backend_error
// "sqlite3_step"/"sqlite3_prepare_v3" with SQLITE_NOTADB (not an SQLite database) or
// SQLITE_CORRUPT (a damaged schema page).
inline bool check_file_shape(connection& c, const std::string& file, const std::string& where) {
  const auto objects = query_rows(c, "SELECT type, name FROM sqlite_schema ORDER BY name", where);
  if (objects.empty()) return true;
  std::string found;
  bool has_kv = false;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (objects[i][1] == "kv" && objects[i][0] == "table") has_kv = true;
    if (i < 8) found += (i ? ", " : "") + objects[i][0] + " " + objects[i][1];
  }
  if (objects.size() > 8) found += ", ... (" + std::to_string(objects.size()) + " objects)";
  const std::string expected = "keyschema's table kv (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID";
  if (!has_kv) {
    throw schema_error(where + ": " + file + " is an SQLite database of another program (it holds " + found +
                       "; no table kv), not " + expected + ". Nothing was changed; open another path");
  }
  check_table_shape(c, file, "kv", where);
  return false;
}

// The placement names of the placement tables the database holds (tables named kv_<placement>,
// in name order), each checked to have kv's shape.
// Errors: schema_error - a table whose name starts with kv_ (in any letter case: SQLite's names
// are case-insensitive) that is no placement table: its suffix is not a placement name
// ([a-z0-9_-], 1 to 64 characters), or its shape is not kv's (what() names the table and its
// CREATE statement). Nothing was changed. Remedy: rename the table (the kv_ names are keyschema's)
// or open another path. backend_error "sqlite3_step"/"sqlite3_prepare_v3" as check_file_shape.
inline std::vector<std::string> placement_tables(connection& c, const std::string& file, const std::string& where) {
  const auto rows = query_rows(c,
                               "SELECT name, type FROM sqlite_schema WHERE lower(substr(name, 1, 3)) = 'kv_' "
                               "ORDER BY name",
                               where);
  std::vector<std::string> names;
  for (const auto& r : rows) {
    const std::string name = r[0].substr(placement_table_prefix.size());
    if (r[1] != "table" || r[0].substr(0, placement_table_prefix.size()) != placement_table_prefix ||
        !valid_placement_name(name)) {
      throw schema_error(where + ": " + file + " holds the " + r[1] + " " + r[0] + ", a name of keyschema's " +
                         "placement tables (kv_<placement>, the placement 1 to 64 characters of [a-z0-9_-]) that is " +
                         "no such table. Nothing was changed; rename it or open another path");
    }
    check_table_shape(c, file, r[0], where);
    names.push_back(name);
  }
  return names;
}

// PRAGMA quick_check: b-tree structure, page links, record formats, NOT NULL and STRICT types.
// Errors: backend_error "sqlite3_step" with SQLITE_CORRUPT (code 11) naming the first problems
// quick_check reports, or SQLite's own error when it cannot read the file.
inline void quick_check(connection& c, const std::string& file, const std::string& where) {
  const auto rows = query_rows(c, "PRAGMA quick_check(5)", where);
  if (rows.size() == 1 && rows[0][0] == "ok") return;
  std::string problems;
  for (const auto& r : rows) problems += (problems.empty() ? "" : "; ") + r[0];
  throw backend_error(where + ": " + file + " is damaged (PRAGMA quick_check: " + problems +
                          "); restore it from a backup (the sqlite3 shell's .recover salvages what is readable)",
                      "sqlite3_step", SQLITE_CORRUPT);
}

}  // namespace sqlite_detail
KEYSCHEMA_END_NAMESPACE
