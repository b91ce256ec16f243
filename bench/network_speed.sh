#!/usr/bin/env bash
# Search speed on real networks against a contest problem (issue 24, part 3), in one run:
# mlsys-2026-13, ResNet-50 and ViT-B/16 (tests/models/torch/*_op17.onnx imported for tpu-v5e),
# each searched for the same time on 2 threads. Prints per problem: ops, moves per second (the
# run's closing summary: moves over the workers' share of the threads), the time to the first
# search epoch (the starts that run before the workers), the time until the first valid
# schedule is on disk (polled every 5 ms from the start of the process), the best latency, and
# the CPU the run got (user + system over wall time; 200 % = both cores: below that the machine
# was shared and every rate is low). Then the targets:
#   moves/s of each network >= 1/3 of mlsys-2026-13's in this run; a network's first epoch
#   < 0.5 s; first schedule on disk within ~0.05 s.
# Timings depend on the machine and its load; the ratios within one run are the robust figures,
# and they still move by 10-15 % between runs of one binary: ROUNDS (default 3) runs the three
# problems that many times in turn, prints each round, and judges the targets on the median
# round's ratio (the ratios of every round printed beside it).
# Beside the moves per second the summary gives the moves per CPU-second of a worker's thread
# (cpu_rate): it does not depend on what shares the cores (other jobs; on a network, the
# repeated-block start and the exact solver running beside the workers), which the wall-clock
# rate does. Its ratio is printed too, for information: the target is on the wall-clock rate.
#
# Usage: [ROUNDS=3] bench/network_speed.sh [build dir (build)] [time (10s)] [extra annealer arguments...]
set -euo pipefail
# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$(dirname "$0")/.."
build_dir=${1:-build}
time_limit=${2:-10s}
shift $(( $# < 2 ? $# : 2 ))
extra=("$@")
annealer="$build_dir/annealer"
[[ -x $annealer ]] || { echo "network_speed.sh: $annealer is missing (cmake --build --preset release)" >&2; exit 2; }
gnu_time=""
if /usr/bin/time -f %U true >/dev/null 2>&1; then gnu_time=/usr/bin/time; fi
# Scratch space next to the binaries (not /tmp, which other jobs on a shared machine clean).
work=$(mktemp -d "$build_dir/network_speed.XXXXXX")
trap 'rm -rf "$work"' EXIT

names=(mlsys-2026-13 resnet50 vit_b_16)
declare -A input
input[mlsys-2026-13]=problems/mlsys-2026-13.json
for model in resnet50 vit_b_16; do
  "$annealer" import "tests/models/torch/${model}_op17.onnx" --hardware tpu-v5e -o "$work/$model.json" >/dev/null
  input[$model]="$work/$model.json"
done

rounds=${ROUNDS:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "network_speed.sh: ROUNDS=$rounds is not a positive integer" >&2; exit 2; }
# Per problem, "name round" keys; each round runs the three problems in turn.
declare -A mps cps setup first best cpu ops
printf '%s per problem, 2 threads, tpu-v5e for the networks, %d round(s)\n' "$time_limit" "$rounds"
for round in $(seq 1 "$rounds"); do
  printf '\nround %d\n%-14s %5s %10s %10s %12s %11s %14s %6s\n' "$round" problem ops moves/s cpu_rate first_epoch first_file best cpu
  for name in "${names[@]}"; do
    out="$work/$name.out.json"
    log="$work/$name.log"
    rm -f "$out"
    run_polling "$out" "$log" "$work/$name.time" '%U %S %e' -- "$annealer" --time "$time_limit" --threads 2 \
      "${extra[@]}" "${input[$name]}" -o "$out" ||
      { echo "network_speed.sh: annealer failed on $name:" >&2; cat "$log" >&2; exit 1; }
    k="$name $round"
    summary=$(grep '^annealer: best' "$log")
    rate=$(sed -nE 's/.* ([0-9.]+[kM]?) moves\/s.*/\1/p' <<<"$summary")
    mps[$k]=$(plain "${rate:-0}")
    cpu_rate=$(sed -nE 's/.*\(([0-9.]+[kM]?) per worker CPU-second\).*/\1/p' <<<"$summary")
    cps[$k]=$(plain "${cpu_rate:-0}")
    setup[$k]=$(sed -nE 's/.*first epoch at ([0-9.]+) s.*/\1/p' <<<"$summary")
    first[$k]=$first_ms
    best[$k]=$(sed -E 's/^annealer: best ([0-9,.]+).*/\1/' <<<"$summary")
    ops[$name]=$(sed -nE 's/.*: ([0-9]+) ops,.*/\1/p' "$log" | head -1)
    cpu[$k]=$([[ -n $gnu_time ]] && awk '{ printf "%.0f%%", ($1 + $2) / $3 * 100 }' "$work/$name.time" || echo "-")
    printf '%-14s %5s %10s %10s %10s s %8s ms %14s %6s\n' "$name" "${ops[$name]}" "${mps[$k]}" "${cps[$k]}" "${setup[$k]}" \
      "${first[$k]}" "${best[$k]}" "${cpu[$k]}"
  done
done

# The median of the rounds' values (given one per line), and all of them, in round order.
median_of() { sort -g | awk '{ v[NR] = $1 } END { printf "%s", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
# The ratio of mlsys-2026-13's rate to a network's, per round, from the table named by $1.
ratios() {
  local -n table=$1
  local round
  for round in $(seq 1 "$rounds"); do
    awk -v a="${table["$2 $round"]}" -v b="${table["mlsys-2026-13 $round"]}" 'BEGIN { printf "%.2f\n", (a > 0 ? b / a : 0) }'
  done
}
echo
echo "Targets (the median of $rounds round(s); every round's value after it):"
for name in resnet50 vit_b_16; do
  all=$(ratios mps "$name" | paste -sd' ')
  r=$(ratios mps "$name" | median_of)
  awk -v r="$r" -v n="$name" -v all="$all" 'BEGIN {
    printf "  %-9s moves/s: mlsys-2026-13 / %-9s = %5.2fx (target <= 3x: %s; rounds: %s)\n", n, n, r, (r > 0 && r <= 3 ? "met" : "MISSED"), all }'
done
for name in resnet50 vit_b_16; do
  all=$(ratios cps "$name" | paste -sd' ')
  r=$(ratios cps "$name" | median_of)
  awk -v r="$r" -v n="$name" -v all="$all" 'BEGIN {
    printf "  %-9s per worker CPU-second: mlsys-2026-13 / %-9s = %5.2fx (for information; not the target; rounds: %s)\n", n, n, r, all }'
done
# The first-epoch target is the networks'; a contest problem's exact solver runs before the
# workers (exact.time_share of the time), which keeps its deterministic results as they were.
for name in "${names[@]}"; do
  s=$(for round in $(seq 1 "$rounds"); do echo "${setup[$name $round]}"; done | median_of)
  f=$(for round in $(seq 1 "$rounds"); do echo "${first[$name $round]}"; done | median_of)
  awk -v s="$s" -v f="$f" -v n="$name" 'BEGIN {
    target = (n ~ /^mlsys/) ? "not a target" : (s < 0.5 ? "target < 0.5 s: met" : "target < 0.5 s: MISSED");
    printf "  %-14s first epoch %5.2f s (%s), first schedule on disk %4d ms (target ~50 ms: %s)\n",
      n, s, target, f, (f <= 60 ? "met" : "MISSED") }'
done
