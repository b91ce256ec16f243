// The single Google Benchmark entry point of annealer_bench; bench/*.cc only register cases.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
