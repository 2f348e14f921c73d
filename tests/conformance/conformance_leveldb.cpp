// tests/conformance/conformance_leveldb.cpp: the byte-level contract suite (backend_contract.hpp)
// and the typed conformance suite (conformance.hpp) on keyschema::leveldb_backend.
#include <conformance/leveldb_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::leveldb_factory
#include <conformance/backend_contract.hpp>
#include <conformance/conformance.hpp>
