// tests/conformance/conformance_leveldb.cpp: the conformance suite (conformance.hpp) on keyschema::leveldb_backend.
#include <conformance/leveldb_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::leveldb_factory
#include <conformance/conformance.hpp>
