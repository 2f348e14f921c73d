// (c) only what the store over the memory backend needs: store.hpp, memory_backend.hpp, and the
// headers of the schema features the broker schema uses (struct values, declared counts, indexes).
#include <keyschema/counters.hpp>
#include <keyschema/indexes.hpp>
#include <keyschema/memory_backend.hpp>
#include <keyschema/store.hpp>
#include <keyschema/struct_value.hpp>
#define KS_BENCH_OPEN(db) keyschema::store<broker, keyschema::memory_backend> db
#include "broker_ops.inc"
