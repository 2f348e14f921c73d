// tests/conformance/conformance_memory.cpp: the conformance suite (conformance.hpp) on keyschema::memory_backend.
#include <conformance/memory_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::memory_factory
#include <conformance/conformance.hpp>
