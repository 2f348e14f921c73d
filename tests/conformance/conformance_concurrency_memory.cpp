// tests/conformance/conformance_concurrency_memory.cpp: the threaded conformance cases
// (conformance_concurrency.hpp) on keyschema::memory_backend.
#include <conformance/memory_factory.hpp>

#define KEYSCHEMA_CONFORMANCE_FACTORY keyschema::conformance::memory_factory
#include <conformance/conformance_concurrency.hpp>
