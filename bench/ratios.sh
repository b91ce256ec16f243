#!/usr/bin/env bash
# The issue-3 evaluator targets on mlsys-2026-17 (baseline and fused schedules), median of 3
# repetitions, printed as a table after the benchmark output.
# Usage: bench/ratios.sh [build dir, default build]
set -euo pipefail
build_dir=${1:-build}
exec "$build_dir/annealer_bench" --benchmark_filter='mlsys-2026-17/(baseline|fused)$' \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
