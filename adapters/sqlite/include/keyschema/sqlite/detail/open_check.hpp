// keyschema/sqlite/detail/open_check.hpp: what sqlite_backend checks in a database file before
// it uses (and before it changes) anything in it.
//
// check_file_shape() reads the schema table: an empty database is fine (the backend creates the
// kv table), a database holding keyschema's kv table with exactly its shape is fine, anything
// else is another program's SQLite database and is refused with schema_error naming what it
// holds. quick_check() runs PRAGMA quick_check. Both only read, so a refused file is left as it
// was (not even switched to WAL mode).
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
  // PRAGMA table_list: schema, name, type, ncol, wr (WITHOUT ROWID), strict.
  const auto list = query_rows(c, "PRAGMA main.table_list('kv')", where);
  // PRAGMA table_info: cid, name, type, notnull, dflt_value, pk.
  const auto cols = query_rows(c, "PRAGMA main.table_info('kv')", where);
  const bool shape = list.size() == 1 && list[0].size() >= 6 && list[0][3] == "2" && list[0][4] == "1" &&
                     list[0][5] == "1" && cols.size() == 2 && cols[0][1] == "k" && cols[0][2] == "BLOB" &&
                     cols[0][5] == "1" && cols[1][1] == "v" && cols[1][2] == "BLOB" && cols[1][3] == "1" &&
                     cols[1][5] == "0";
  if (!shape) {
    const auto sql = query_rows(c, "SELECT sql FROM sqlite_schema WHERE name = 'kv'", where);
    throw schema_error(where + ": " + file + " is an SQLite database whose table kv is not " + expected +
                       " (found: " + (sql.empty() ? std::string("?") : sql[0][0]) +
                       "). Nothing was changed; open another path");
  }
  return false;
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
