#!/bin/bash
# The engine at real-chip ratios: every bundled problem with the numbers of every built-in
# hardware profile (annealer hardware NAME --apply), then its lower bound, a short search and
# the evaluation of the result. One line per (problem, profile):
#   problem.profile  tiles-that-fit  bound  baseline  best  gap%  subgraphs  search-seconds  valid
# Usage: bench/hardware_ratios.sh [BUILD_DIR] [SEARCH_TIME]   (defaults: build, 3s; the binary
# is $ANNEALER when set, as in the other bench scripts)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/common.sh"
time=${2:-3s}
annealer="$(annealer_binary "$root" "${1:-$root/build}")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
profiles=$("$annealer" hardware --json | python3 -c 'import json, sys; print(" ".join(p["name"] for p in json.load(sys.stdin)))')
printf '%-34s %10s %14s %14s %14s %8s %4s %6s %s\n' case tiles_fit bound baseline best gap% sgs secs valid
for problem in "$root"/problems/*.json; do
  for profile in $profiles; do
    name=$(basename "$problem" .json).$profile
    "$annealer" hardware "$profile" --apply "$problem" -o "$work/$name.json" 2>/dev/null
    bound=$("$annealer" bound --json "$work/$name.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["lower_bound"])')
    start=$(date +%s.%N)
    log=$("$annealer" --time "$time" "$work/$name.json" "$work/$name.out.json" 2>&1)
    secs=$(python3 -c "import time; print(round(time.time() - $start, 1))")
    baseline=$(grep -o 'baseline [0-9,.]*' <<<"$log" | head -1 | tr -d ',' | cut -d' ' -f2)
    "$annealer" evaluate --json "$work/$name.json" "$work/$name.out.json" 2>/dev/null >"$work/eval.json" || true
    fit=$("$annealer" hardware "$profile" --json | python3 -c 'import json, sys; print(round(json.load(sys.stdin)["derived"]["tiles_that_fit"], 1))')
    python3 - "$work/eval.json" "$name" "$fit" "$bound" "$baseline" "$secs" <<'PY'
import json, sys
path, name, fit, bound, baseline, secs = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception:
    d = {"valid": False}
if d.get("valid"):
    gap = "%.1f" % d["gap"] if d["gap"] is not None else "n/a"
    print("%-34s %10s %14.1f %14s %14.1f %8s %4d %6s %s" % (name, fit, float(bound), baseline, d["total_latency"], gap, len(d["subgraphs"]), secs, "valid"))
else:
    print("%-34s %10s %14.1f %14s %14s %8s %4s %6s %s" % (name, fit, float(bound), baseline, "-", "-", "-", secs, "INVALID " + d.get("message", "")))
PY
  done
done
