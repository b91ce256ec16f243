#!/usr/bin/env bash
# Deep-graph scaling of the search: N chained copies of a bundled problem (build/stack_problem),
# each searched for the same time with 2 threads. Prints per stack size: ops, moves per second
# (the run's closing summary: moves per second of the workers' time, after the constructive
# starts, which get at most half of the time), time until the first valid schedule
# is on disk (polled every 5 ms from the start of the process), the best latency per copy, and
# the peak resident memory (GNU time, else none). Then the issue-11 targets from this run:
#   moves/s at 64x >= 0.3 x moves/s at 1x; per-copy latency at 32x within 0.5 % of 1x's;
#   first schedule on disk within 1 s and peak memory under 2 GB at ~10,000 ops (the largest N).
# Timings depend on the machine and its load; the ratios within one run are the robust figures.
#
# Usage: bench/scale.sh [build dir (build)] [problem (problems/mlsys-2026-17.json)] [time (10s)]
#                       [stack sizes ("1 4 16 32 64 96")]  [extra annealer arguments...]
set -euo pipefail
# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build_dir=${1:-build}
problem=${2:-problems/mlsys-2026-17.json}
time_limit=${3:-10s}
sizes=${4:-1 4 16 32 64 96}
shift $(( $# < 4 ? $# : 4 ))
extra=("$@")
for tool in annealer stack_problem; do
  [[ -x "$build_dir/$tool" ]] || { echo "scale.sh: $build_dir/$tool is missing (cmake --build --preset release)" >&2; exit 2; }
done
gnu_time=""
if /usr/bin/time -f %M true >/dev/null 2>&1; then gnu_time=/usr/bin/time; fi
# Scratch space next to the binaries (not /tmp, which other jobs on a shared machine clean).
work=$(mktemp -d "$build_dir/scale.XXXXXX")
trap 'rm -rf "$work"' EXIT

declare -A ops mps first per_copy rss
printf '%s, %s per size, 2 threads\n' "$problem" "$time_limit"
printf '%6s %7s %10s %12s %16s %10s\n' copies ops moves/s first_file latency/copy peak_MB
for n in $sizes; do
  stacked="$work/stack$n.json"
  "$build_dir/stack_problem" "$problem" "$n" -o "$stacked" 2>/dev/null
  out="$work/out$n.json"
  log="$work/log$n.txt"
  run_polling "$out" "$log" "$work/rss$n" %M -- "$build_dir/annealer" --time "$time_limit" --threads 2 \
    "${extra[@]}" "$stacked" -o "$out" ||
    { echo "scale.sh: annealer failed on $n copies:" >&2; cat "$log" >&2; exit 1; }
  summary=$(grep '^annealer: best' "$log")
  best=$(sed -E 's/^annealer: best ([0-9,.]+).*/\1/' <<<"$summary" | tr -d ,)
  rate=$(sed -nE 's/.* ([0-9.]+[kM]?) moves\/s.*/\1/p' <<<"$summary")
  ops[$n]=$(sed -nE 's/.*: ([0-9]+) ops,.*/\1/p' "$log" | head -1)
  mps[$n]=$(plain "${rate:-0}")
  first[$n]=$first_ms
  per_copy[$n]=$(awk -v b="$best" -v n="$n" 'BEGIN { printf "%.1f", b / n }')
  rss[$n]=$([[ -n $gnu_time ]] && awk '{ printf "%.0f", $1 / 1024 }' "$work/rss$n" || echo "-")
  printf '%6s %7s %10s %10s ms %16s %10s\n' "$n" "${ops[$n]}" "${mps[$n]}" "${first[$n]}" "${per_copy[$n]}" "${rss[$n]}"
done

echo
echo "Targets (this run):"
has() { [[ " $sizes " == *" $1 "* ]]; }
if has 1 && has 64; then
  awk -v a="${mps[64]}" -v b="${mps[1]}" 'BEGIN { r = b > 0 ? a / b : 0;
    printf "  moves/s 64x / 1x            %6.3f  (target >= 0.3: %s)\n", r, (r >= 0.3 ? "met" : "MISSED") }'
fi
if has 1 && has 32; then
  awk -v a="${per_copy[32]}" -v b="${per_copy[1]}" 'BEGIN { r = (a - b) / b * 100;
    printf "  latency/copy 32x vs 1x      %+6.2f %% (target <= +0.5 %%: %s)\n", r, (r <= 0.5 ? "met" : "MISSED") }'
fi
largest=${sizes##* }
awk -v f="${first[$largest]}" -v o="${ops[$largest]}" -v m="${rss[$largest]}" 'BEGIN {
  printf "  first file at %s ops        %6d ms (target <= 1000 ms: %s)\n", o, f, (f <= 1000 ? "met" : "MISSED");
  if (m != "-") printf "  peak memory at %s ops       %6d MB (target < 2048 MB: %s)\n", o, m, (m < 2048 ? "met" : "MISSED") }'
