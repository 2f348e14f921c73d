// bench/fixed_iterations.hpp: KEYSCHEMA_BENCH_ITERATIONS=n runs every benchmark that applies
// fixed_iterations exactly n iterations, for instruction counts: bench/callgrind_pairs.sh runs
// each benchmark at two counts and divides the difference of the totals by the difference of the
// counts. Without the variable, Google Benchmark chooses the count as usual.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdlib>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define KEYSCHEMA_BENCH_TOGGLE_COLLECT() CALLGRIND_TOGGLE_COLLECT
#else
#define KEYSCHEMA_BENCH_TOGGLE_COLLECT() ((void)0)
#endif

namespace keyschema_bench {

inline void fixed_iterations(benchmark::internal::Benchmark* b) {
  if (const char* n = std::getenv("KEYSCHEMA_BENCH_ITERATIONS"); n != nullptr && std::atoll(n) > 0)
    b->Iterations(std::atoll(n));
}

// Runs setup() with callgrind's collection off (when run under callgrind, which collects inside
// the benchmark functions: bench/callgrind_pairs.sh), so that set-up work proportional to the
// iteration count (the keys an erase benchmark erases) is not counted as the operation's. Outside
// callgrind it only calls setup().
template <class F>
void not_counted(F&& setup) {
  KEYSCHEMA_BENCH_TOGGLE_COLLECT();
  setup();
  KEYSCHEMA_BENCH_TOGGLE_COLLECT();
}

}  // namespace keyschema_bench
