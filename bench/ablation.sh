#!/usr/bin/env bash
# Ablation of the search workers on the five bundled problems at the contest's time limits
# (2 threads): simulated annealing only, genetic only, and both; once with the constructive
# starts (greedy fusion, pattern grouping, the exact solver) in the elite pool and once from the baseline alone,
# where every gain is the workers' own. Prints one total per problem and variant.
#
#   bench/ablation.sh [EXTRA ANNEALER ARGS...]     (about 11 minutes)
#
# Environment: as bench/quality.sh (ANNEALER, BUILD_DIR, PROBLEMS).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
no_starts=(--set constructive.greedy_fusion=false --set constructive.pattern_grouping=false --set exact.time_share=0)
declare -A totals
variants=()
run_variant() {  # name, args...
  local name="$1"; shift
  variants+=("$name")
  local out
  out="$("$repo/bench/quality.sh" "$@" 2>/dev/null || true)"
  while read -r problem total _; do
    totals["$name,$problem"]="$total"
  done < <(grep '^mlsys-' <<<"$out")
}
run_variant "SA+starts" --set workers.sa_share=1 "$@"
run_variant "GA+starts" --set workers.sa_share=0 "$@"
run_variant "both+starts" "$@"
run_variant "SA" --set workers.sa_share=1 "${no_starts[@]}" "$@"
run_variant "GA" --set workers.sa_share=0 "${no_starts[@]}" "$@"
run_variant "both" "${no_starts[@]}" "$@"

printf '%-14s' problem
for v in "${variants[@]}"; do printf ' %14s' "$v"; done
printf '\n'
for n in ${PROBLEMS:-1 5 9 13 17}; do
  p="mlsys-2026-$n"
  printf '%-14s' "$p"
  for v in "${variants[@]}"; do printf ' %14s' "${totals[$v,$p]:--}"; done
  printf '\n'
done
