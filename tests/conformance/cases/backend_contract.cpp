// tests/conformance/cases/backend_contract.cpp: the byte-level contract suite
// (conformance/backend_contract.hpp) on the backend of this conformance program.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake), so
// registering a backend's conformance program registers both suites.
#include KEYSCHEMA_CONFORMANCE_FACTORY_HEADER
#include <conformance/backend_contract.hpp>
