// (e) the umbrella header and the broker schema's declarations, no store: what including the
// library and declaring a schema costs before any operation is instantiated.
#include <keyschema/keyschema.hpp>
#define KS_BENCH_NO_STORE
#include "broker_ops.inc"
