// tests/conformance/conformance_memory.cpp: the byte-level contract suite (backend_contract.hpp)
// and the typed conformance suite (conformance.hpp) on keyschema::memory_backend.
#include <conformance/memory_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::memory_factory
#include <conformance/backend_contract.hpp>
#include <conformance/conformance.hpp>
