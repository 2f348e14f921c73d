// tests/conformance/conformance_lmdb.cpp: the conformance suite (conformance.hpp) on keyschema::lmdb_backend.
#include <conformance/lmdb_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::lmdb_factory
#include <conformance/conformance.hpp>
