#!/usr/bin/env bash
# Solution quality on the five bundled problems at the contest's time limits.
#
#   bench/quality.sh [ANNEALER ARGS...]
#
# Builds `annealer` if needed (in $BUILD_DIR, default <repo>/build), runs it on each problem with
# `--threads 2 --time <contest limit>` plus any extra arguments, re-evaluates every schedule with
# `annealer evaluate --json` (the oracle) and prints one row per problem: total latency, lower
# bound, gap, wall time used, validity and the target (the contest's best entries re-priced
# under our spec). Extra arguments go to every run, e.g. the ablation:
#   bench/quality.sh --set workers.sa_share=1    # SA only
#   bench/quality.sh --set workers.sa_share=0    # GA only
#   bench/quality.sh                             # both (the default mix)
# Environment: ANNEALER (a binary to use instead of building one), BUILD_DIR, OUT_DIR (where schedules and logs go; default a fresh temp dir),
# PROBLEMS (subset, e.g. PROBLEMS="1 5").
# Exit status: 0 if every schedule is valid and every run ended within its limit, else 1.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
build_dir="${BUILD_DIR:-$repo/build}"
out_dir="${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/annealer-quality.XXXXXX")}"
problems="${PROBLEMS:-1 5 9 13 17}"
mkdir -p "$out_dir"

annealer="$(annealer_binary "$repo" "$build_dir")"

target() {  # best contest entry re-priced under our spec
  case "$1" in 1) echo 370000 ;; 5) echo 780000 ;; 9) echo 45000000 ;; 13) echo 16650000 ;; 17) echo 4990000 ;; *) echo "" ;; esac
}

echo "annealer quality run: --threads 2 $*"
echo "outputs in $out_dir"
printf '%-14s %14s %14s %9s %12s %6s %12s %7s\n' problem total lower_bound gap time_used valid target result
status=0
met=0
count=0
for n in $problems; do
  name="mlsys-2026-$n"
  limit="$(time_limit "$n")"
  goal="$(target "$n")"
  if [[ -z "$limit" ]]; then
    echo "unknown problem $n (bundled: 1 5 9 13 17)" >&2
    exit 2
  fi
  schedule="$out_dir/$name.json"
  rm -f "$schedule"
  started=$(date +%s.%N)
  run_rc=0
  "$annealer" --threads 2 --time "${limit}s" "$@" "$repo/problems/$name.json" -o "$schedule" \
    2>"$out_dir/$name.log" || run_rc=$?
  ended=$(date +%s.%N)
  used=$(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.2f", b - a }')
  count=$((count + 1))

  valid=no
  total=-
  bound=-
  gap=-
  if [[ $run_rc -eq 0 && -f "$schedule" ]] &&
     "$annealer" evaluate --json "$repo/problems/$name.json" "$schedule" >"$out_dir/$name.eval.json" 2>>"$out_dir/$name.log"; then
    if grep -q '"valid": true' "$out_dir/$name.eval.json"; then valid=yes; fi
    total=$(json_number total_latency "$out_dir/$name.eval.json")
    bound=$(json_number lower_bound "$out_dir/$name.eval.json")
    gap=$(awk -v t="$total" -v b="$bound" 'BEGIN { printf "%.1f%%", (t - b) / b * 100 }')
  fi
  result=missed
  if [[ $valid == yes ]] && awk -v t="$total" -v g="$goal" 'BEGIN { exit !(t <= g) }'; then
    result=met
    met=$((met + 1))
  fi
  over=""
  if awk -v u="$used" -v l="$limit" 'BEGIN { exit !(u > l) }'; then over="!"; status=1; fi
  [[ $valid == yes ]] || status=1
  [[ $run_rc -eq 0 ]] || echo "  $name: annealer exited with $run_rc (see $out_dir/$name.log)" >&2
  fmt_total=$total
  [[ $total == - ]] || fmt_total=$(awk -v t="$total" 'BEGIN { printf "%.1f", t }')
  fmt_bound=$bound
  [[ $bound == - ]] || fmt_bound=$(awk -v b="$bound" 'BEGIN { printf "%.1f", b }')
  printf '%-14s %14s %14s %9s %12s %6s %12s %7s\n' "$name" "$fmt_total" "$fmt_bound" "$gap" \
    "${used}/${limit}s$over" "$valid" "$goal" "$result"
done
echo "targets met: $met/$count"
[[ $status -eq 0 ]] || echo "FAILED: an invalid schedule or a run over its time limit (marked !)" >&2
exit $status
