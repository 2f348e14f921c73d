// tests/conformance/conformance_lmdb.cpp: the byte-level contract suite (backend_contract.hpp)
// and the typed conformance suite (conformance.hpp) on keyschema::lmdb_backend.
#include <conformance/lmdb_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::lmdb_factory
#include <conformance/backend_contract.hpp>
#include <conformance/conformance.hpp>
