#include <benchmark/benchmark.h>
#include <keyschema/error.hpp>
static void bm_nothing(benchmark::State& s) { for (auto _ : s) benchmark::DoNotOptimize(s.iterations()); }
BENCHMARK(bm_nothing);
