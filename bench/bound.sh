#!/usr/bin/env bash
# Tightness of the lower bound on the five bundled problems: bound / best schedule latency.
#
#   bench/bound.sh [SCHEDULE_DIR]
#
# For each problem prints the bound and its parts (`annealer bound --json`), the time that
# command took, the best schedule's latency and the tightness (bound / latency; 1 = the schedule
# is optimal). The latency comes from SCHEDULE_DIR/mlsys-2026-N.json when that file exists
# (re-evaluated by `annealer evaluate --json`), otherwise from a search at the contest's time
# limit with 2 threads. Any schedule below its bound is an error (exit 1): the bound is broken.
# Environment: ANNEALER (a binary instead of building one), BUILD_DIR, OUT_DIR, PROBLEMS
# (subset, e.g. PROBLEMS="1 9"), SEARCH_ARGS (extra search arguments, e.g.
# "--set workers.partial_edge_tiles=true").
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
build_dir="${BUILD_DIR:-$repo/build}"
out_dir="${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/annealer-bound.XXXXXX")}"
problems="${PROBLEMS:-1 5 9 13 17}"
schedule_dir="${1:-}"
mkdir -p "$out_dir"

annealer="$(annealer_binary "$repo" "$build_dir")"


echo "outputs in $out_dir"
printf '%-14s %12s %12s %12s %12s %12s %8s %14s %9s\n' problem compute graph_io traffic combined \
  bound bound_s best tightness
status=0
for n in $problems; do
  name="mlsys-2026-$n"
  problem="$repo/problems/$name.json"
  limit="$(time_limit "$n")"
  if [[ -z "$limit" ]]; then
    echo "unknown problem $n (bundled: 1 5 9 13 17)" >&2
    exit 2
  fi
  started=$(date +%s.%N)
  "$annealer" bound --json "$problem" >"$out_dir/$name.bound.json"
  ended=$(date +%s.%N)
  seconds=$(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.3f", b - a }')
  schedule="$out_dir/$name.json"
  if [[ -n "$schedule_dir" && -f "$schedule_dir/$name.json" ]]; then
    schedule="$schedule_dir/$name.json"
  else
    # shellcheck disable=SC2086
    "$annealer" --threads 2 --time "${limit}s" --quiet ${SEARCH_ARGS:-} "$problem" -o "$schedule"
  fi
  "$annealer" evaluate --json "$problem" "$schedule" >"$out_dir/$name.eval.json" 2>/dev/null
  best=$(json_number total_latency "$out_dir/$name.eval.json")
  bound=$(json_number lower_bound "$out_dir/$name.bound.json")
  tightness=$(awk -v b="$bound" -v t="$best" 'BEGIN { printf "%.4f", b / t }')
  if awk -v b="$bound" -v t="$best" 'BEGIN { exit !(b > t * (1 + 1e-9)) }'; then
    echo "  $name: the schedule ($best) is below the bound ($bound): the bound is wrong" >&2
    status=1
  fi
  printf '%-14s %12.1f %12.1f %12.1f %12.1f %12.1f %8s %14.1f %9s\n' "$name" \
    "$(json_number compute "$out_dir/$name.bound.json")" \
    "$(json_number graph_io "$out_dir/$name.bound.json")" \
    "$(json_number traffic "$out_dir/$name.bound.json")" \
    "$(json_number combined "$out_dir/$name.bound.json")" "$bound" "$seconds" "$best" "$tightness"
done
exit $status
