// (b) the umbrella header, the broker schema and a store over the memory backend.
#include <keyschema/keyschema.hpp>
#define KS_BENCH_OPEN(db) keyschema::store<broker, keyschema::memory_backend> db
#include "broker_ops.inc"
