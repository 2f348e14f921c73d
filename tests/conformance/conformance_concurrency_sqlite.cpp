// tests/conformance/conformance_concurrency_sqlite.cpp: the threaded conformance cases
// (conformance_concurrency.hpp) on keyschema::sqlite_backend.
#include <conformance/sqlite_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::sqlite_factory
#include <conformance/conformance_concurrency.hpp>
