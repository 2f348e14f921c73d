// keyschema/lmdb/detail/status.hpp: turning LMDB return codes into keyschema exceptions.
//
// Every LMDB call returns an int: 0 (MDB_SUCCESS), one of LMDB's own codes (MDB_MAP_FULL, ...) or
// an errno value. throw_status() raises keyschema::backend_error carrying the LMDB function
// name, the code and mdb_strerror()'s text, so a log line shows both what keyschema was doing and
// what LMDB said.
//
// Thread-safety: stateless functions, callable from any thread.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>

#include <lmdb.h>

#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

// "<what>: <LMDB's text for rc>". mdb_strerror returns a static string for LMDB's codes and
// strerror()'s text for errno values.
inline std::string lmdb_message(std::string_view what, int rc) {
  std::string m(what);
  m += ": ";
  const char* text = ::mdb_strerror(rc);
  m += text != nullptr ? text : "unknown LMDB error";
  return m;
}

// Throws backend_error(lmdb_message(what, rc), native_call, rc).
// REQUIRES: rc != MDB_SUCCESS.
[[noreturn]] inline void throw_status(std::string_view what, const char* native_call, int rc) {
  throw backend_error(lmdb_message(what, rc), native_call, rc);
}

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE
