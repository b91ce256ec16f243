#!/usr/bin/env bash
# Real models on real accelerators: the table GraphTurbo reports against TVM, per model x
# hardware profile.
#
#   bench/models.sh [ANNEALER ARGS...]
#
# Generates the test models (tests/models/make_models.py, needs /usr/bin/python3 with
# python3-onnx), builds `annealer` if needed, and for each model and profile prints: problem ops
# after lowering, MACs, the layer-by-layer schedule (`annealer baseline`: one op per subgraph at
# its best tiling, every intermediate spilled to slow memory), the same keeping each output in
# fast memory for its only consumer when it fits (`annealer baseline --resident`: what a
# kernel-by-kernel compiler with a large on-chip buffer does), greedy fusion alone (`annealer
# baseline --greedy`), `annealer` after TIME, the lower bound, the gap to it and the speedups
# over both layer-by-layer schedules. Latencies are in cycles of the profile. Every schedule is re-checked by
# `annealer evaluate` (the oracle); an invalid one fails the script.
# Environment: TIME (search time, default 60s), MODELS (default "resnet50 mobilenetv2 vit_b16";
# generated models by name or ONNX files by path),
# PROFILES (default: every built-in profile), ANNEALER, BUILD_DIR, OUT_DIR (schedules, default a
# fresh temp dir). Extra arguments go to every search, e.g. --threads 2.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
build_dir="${BUILD_DIR:-$repo/build}"
out_dir="${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/annealer-models.XXXXXX")}"
time="${TIME:-60s}"
models="${MODELS:-resnet50 mobilenetv2 vit_b16}"
mkdir -p "$out_dir/models"

annealer="$(annealer_binary "$repo" "$build_dir")"
profiles="${PROFILES:-$("$annealer" hardware --json | sed -n 's/^ *"name": "\([^"]*\)".*/\1/p')}"
/usr/bin/python3 "$repo/tests/models/make_models.py" --no-check "$out_dir/models" >/dev/null

# "total latency X, lower bound Y" of the baseline command's summary line.
summary_total() { sed -n 's/.*total latency \([0-9.e+]*\), lower bound.*/\1/p' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
gap() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f %%", (a / b - 1) * 100 }'; }
num() { awk -v a="$1" 'BEGIN { printf "%.0f", a }' | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }

echo "| model | profile | ops | MACs | layer-by-layer | layer-by-layer resident | greedy fusion | annealer $time | lower bound | gap | speedup | speedup over resident |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
status=0
for model in $models; do
  # A generated test model by name, or any ONNX file by path (the torch exports of
  # tests/models/torch/, e.g. MODELS="$(ls tests/models/torch/*_op17.onnx)").
  case "$model" in
    *.onnx) onnx="$model"; model="$(basename "$model" .onnx)" ;;
    *) onnx="$out_dir/models/$model.onnx" ;;
  esac
  for profile in $profiles; do
    base="$out_dir/$model.$profile"
    "$annealer" import "$onnx" --hardware "$profile" -o "$base.problem.json" --json > "$base.import.json"
    ops=$(sed -n 's/.*"matmul_ops": \([0-9]*\), "pointwise_ops": \([0-9]*\), "layout_ops": \([0-9]*\).*/\1 \2 \3/p' "$base.import.json" |
          awk '{ print $1 + $2 + $3 }')
    macs=$(sed -n 's/.*"macs": \([0-9]*\),.*/\1/p' "$base.import.json")
    "$annealer" baseline "$base.problem.json" -o "$base.baseline.json" 2> "$base.baseline.txt"
    "$annealer" baseline --resident "$base.problem.json" -o "$base.resident.json" 2> "$base.resident.txt"
    "$annealer" baseline --greedy "$base.problem.json" -o "$base.greedy.json" 2> "$base.greedy.txt"
    "$annealer" --time "$time" --quiet "$@" "$base.problem.json" -o "$base.schedule.json"
    if ! "$annealer" evaluate "$base.problem.json" "$base.schedule.json" --json > "$base.eval.json" 2>/dev/null; then
      echo "INVALID schedule: $base.schedule.json" >&2
      status=1
      continue
    fi
    layer=$(summary_total "$base.baseline.txt")
    resident=$(summary_total "$base.resident.txt")
    greedy=$(summary_total "$base.greedy.txt")
    total=$(json_number total_latency "$base.eval.json")
    bound=$(json_number lower_bound "$base.eval.json")
    echo "| $model | $profile | $ops | $(num "$macs") | $(num "$layer") | $(num "$resident") | $(num "$greedy") | $(num "$total") | $(num "$bound") | $(gap "$total" "$bound") | $(ratio "$layer" "$total")x | $(ratio "$resident" "$total")x |"
  done
done
echo
echo "schedules and problems: $out_dir"
exit $status
