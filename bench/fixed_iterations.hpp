// bench/fixed_iterations.hpp: KEYSCHEMA_BENCH_ITERATIONS=n runs every benchmark that applies
// fixed_iterations exactly n iterations, for instruction counts: bench/callgrind_pairs.sh runs
// each benchmark at two counts and divides the difference of the totals by the difference of the
// counts. Without the variable, Google Benchmark chooses the count as usual.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdlib>

namespace keyschema_bench {

inline void fixed_iterations(benchmark::internal::Benchmark* b) {
  if (const char* n = std::getenv("KEYSCHEMA_BENCH_ITERATIONS"); n != nullptr && std::atoll(n) > 0)
    b->Iterations(std::atoll(n));
}

}  // namespace keyschema_bench
