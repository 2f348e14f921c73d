// tests/conformance/conformance_concurrency_leveldb.cpp: the threaded conformance cases
// (conformance_concurrency.hpp) on keyschema::leveldb_backend.
#include <conformance/leveldb_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::leveldb_factory
#include <conformance/conformance_concurrency.hpp>
