// tests/conformance/conformance_concurrency_rocksdb.cpp: the threaded conformance cases
// (conformance_concurrency.hpp) on keyschema::rocksdb_backend.
#include <conformance/rocksdb_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::rocksdb_factory
#include <conformance/conformance_concurrency.hpp>
