#!/usr/bin/env bash
# The exact solver on the five bundled problems: status within the contest's time limit, time to
# prove, exact vs search latency.
#
#   bench/exact.sh
#
# Builds `annealer` if needed (in $BUILD_DIR, default <repo>/build), runs
# `annealer exact PROBLEM --time <contest limit> --json -o OUT` on each problem, re-evaluates the
# schedule with `annealer evaluate --json` (the oracle) and prints one row per problem: status,
# seconds of the solver alone and of the whole command (constructive starts included), states,
# the exact latency, the search's best known latency (docs/performance.md, default config, 2 threads, same
# limits) and the difference. A problem not proven within its limit is run once more with
# $LONG (default 120s) to report its time to prove (or that it still did not).
# Environment: ANNEALER (a binary to use instead of building one), BUILD_DIR, OUT_DIR (default a
# fresh temp dir), PROBLEMS (subset, e.g. PROBLEMS="1 5"), LONG.
# Exit status: 0 if every schedule is valid, else 1.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
build_dir="${BUILD_DIR:-$repo/build}"
out_dir="${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/annealer-exact.XXXXXX")}"
problems="${PROBLEMS:-1 5 9 13 17}"
long="${LONG:-120s}"
mkdir -p "$out_dir"

annealer="$(annealer_binary "$repo" "$build_dir")"

search_best() {  # the search's best at the same limits (docs/performance.md, Quality)
  case "$1" in 1) echo 367001.6 ;; 5) echo 778786.1 ;; 9) echo 44962938.9 ;; 13) echo 16284057.6 ;; 17) echo 4966400 ;; *) echo "" ;; esac
}
field() {  # field NAME FILE: one field of a one-line JSON object
  python3 -c 'import json,sys; v=json.load(open(sys.argv[2]))[sys.argv[1]]; print("null" if v is None else v)' "$1" "$2"
}

status=0
printf '| problem | limit | status | solver s | command s | states | pricings | exact latency | search best | exact - search | time to prove |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for p in $problems; do
  problem="$repo/problems/mlsys-2026-$p.json"
  limit="$(time_limit "$p")"
  out="$out_dir/mlsys-2026-$p.exact.json"
  summary="$out_dir/mlsys-2026-$p.summary.json"
  "$annealer" exact "$problem" --time "${limit}s" --json -o "$out" >"$summary" 2>"$out_dir/mlsys-2026-$p.log" || true
  st="$(field status "$summary")"
  total="$(field total_latency "$summary")"
  valid="no"
  if [[ -f "$out" ]] && "$annealer" evaluate "$problem" "$out" --json >"$out_dir/mlsys-2026-$p.eval.json" 2>/dev/null; then
    valid="yes"
    total="$(field total_latency "$out_dir/mlsys-2026-$p.eval.json")"
  else
    status=1
  fi
  prove="$(field solver_seconds "$summary")"
  if [[ "$st" != "optimal" ]]; then
    longsum="$out_dir/mlsys-2026-$p.long.json"
    "$annealer" exact "$problem" --time "$long" --json >"$longsum" 2>/dev/null || true
    if [[ "$(field status "$longsum")" == "optimal" ]]; then
      prove="$(printf '%.2f s' "$(field solver_seconds "$longsum")") (with --time $long)"
    else
      prove="not proven in $long ($(field states "$longsum") states)"
    fi
  fi
  best="$(search_best "$p")"
  python3 - "$p" "$limit" "$st" "$summary" "$total" "$best" "$prove" "$valid" <<'EOF'
import json, sys
p, limit, st, summary, total, best, prove, valid = sys.argv[1:]
s = json.load(open(summary))
total = float(total)
best = float(best)
diff = total - best
try:
    prove = f"{float(prove):.2f} s"
except ValueError:
    pass
print(f"| mlsys-2026-{p} | {limit} s | {st}{'' if valid == 'yes' else ' (INVALID)'} | {s['solver_seconds']:.2f} | "
      f"{s['seconds']:.2f} | {s['states']:,} | {s['pricings']:,} | {total:,.1f} | {best:,.1f} | {diff:+,.1f} ({diff / best * 100:+.2f} %) | {prove} |")
EOF
done
echo "schedules and logs: $out_dir" >&2
exit $status
