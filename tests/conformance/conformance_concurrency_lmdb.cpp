// tests/conformance/conformance_concurrency_lmdb.cpp: the threaded conformance cases
// (conformance_concurrency.hpp) on keyschema::lmdb_backend.
#include <conformance/lmdb_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::lmdb_factory
#include <conformance/conformance_concurrency.hpp>
