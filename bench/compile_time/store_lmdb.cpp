// (d) the store over one adapter (LMDB): the adapter's header instead of the memory backend's.
#include <keyschema/counters.hpp>
#include <keyschema/indexes.hpp>
#include <keyschema/lmdb.hpp>
#include <keyschema/store.hpp>
#include <keyschema/struct_value.hpp>
#define KS_BENCH_OPEN(db) keyschema::store<broker, keyschema::lmdb_backend> db("/nonexistent")
#include "broker_ops.inc"
