#!/usr/bin/env bash
# What a chip's rules (docs/cost-model.md H1-H6) change, per model and profile with rules: the
# layer-by-layer baseline and a search of TIME on the problem with the rules and on the same
# problem without them (its chip_rules object removed: the contest's model at the chip's
# numbers; with a weight path, H6, every byte at the weight path's bandwidth, one path as the
# profile had before it), and whether the schedule found without the rules is valid on the chip.
#
#   bench/chip_rules.sh [ANNEALER ARGS...]
#
# Environment: TIME (search time, default 20s), MODELS (default "resnet50 mobilenetv2";
# generated test models by name or ONNX files by path, e.g. tests/models/torch/*_op17.onnx),
# PROFILES (default: every built-in profile with rules), ANNEALER, BUILD_DIR, OUT_DIR. Extra
# arguments go to every search, e.g. --threads 2. Every schedule is re-checked by `annealer
# evaluate` (the oracle) on its own problem; an invalid one fails the script.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
build_dir="${BUILD_DIR:-$repo/build}"
out_dir="${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/annealer-chip-rules.XXXXXX")}"
time="${TIME:-20s}"
models="${MODELS:-resnet50 mobilenetv2}"
mkdir -p "$out_dir/models"
annealer="$(annealer_binary "$repo" "$build_dir")"
# Every built-in profile whose `annealer hardware NAME` lists chip rules.
with_rules() {
  for name in $("$annealer" hardware --json | sed -n 's/^ *"name": "\([^"]*\)".*/\1/p'); do
    if "$annealer" hardware "$name" | grep -q "chip rules"; then echo "$name"; fi
  done
}
profiles="${PROFILES:-$(with_rules | tr '\n' ' ')}"
/usr/bin/python3 "$repo/tests/models/make_models.py" --no-check "$out_dir/models" >/dev/null

summary_total() { sed -n 's/.*total latency \([0-9.e+]*\), lower bound.*/\1/p' "$1"; }
eval_total() { sed -n 's/^ *"total_latency": \([0-9.e+]*\),.*/\1/p' "$1"; }
num() { awk -v a="$1" 'BEGIN { printf "%.0f", a }' | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
change() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f %%", (a / b - 1) * 100 }'; }

echo "| model | profile | layer-by-layer without rules | with rules | change | annealer $time without rules | with rules | change | schedule without rules, on the chip |"
echo "|---|---|---|---|---|---|---|---|---|"
status=0
invalid_on_chip=0
pairs=0
for model in $models; do
  case "$model" in
    *.onnx) onnx="$model"; model="$(basename "$model" .onnx)" ;;
    *) onnx="$out_dir/models/$model.onnx" ;;
  esac
  for profile in $profiles; do
    base="$out_dir/$model.$profile"
    "$annealer" import "$onnx" --hardware "$profile" -o "$base.rules.json" > /dev/null
    /usr/bin/python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); r = p.pop("chip_rules", {}); p["slow_memory_bandwidth"] = r.get("weight_bandwidth") or p["slow_memory_bandwidth"]; json.dump(p, open(sys.argv[2], "w"))' \
      "$base.rules.json" "$base.plain.json"
    for variant in plain rules; do
      "$annealer" baseline "$base.$variant.json" -o "$base.$variant.baseline.json" 2> "$base.$variant.baseline.txt"
      "$annealer" --time "$time" --quiet "$@" "$base.$variant.json" -o "$base.$variant.schedule.json"
      if ! "$annealer" evaluate "$base.$variant.json" "$base.$variant.schedule.json" --json > "$base.$variant.eval.json" 2>/dev/null; then
        echo "INVALID schedule: $base.$variant.schedule.json" >&2
        status=1
      fi
    done
    # The simpler model's schedule on the chip: valid (and its latency there) or its first broken rule.
    if "$annealer" evaluate "$base.rules.json" "$base.plain.schedule.json" --json > "$base.cross.json" 2>/dev/null; then
      cross="valid, $(num "$(eval_total "$base.cross.json")")"
    else
      cross="invalid: $(sed -n 's/.*"message": "\([^"]*\)".*/\1/p' "$base.cross.json" | cut -c1-90)"
      invalid_on_chip=$((invalid_on_chip + 1))
    fi
    pairs=$((pairs + 1))
    lp=$(summary_total "$base.plain.baseline.txt"); lr=$(summary_total "$base.rules.baseline.txt")
    sp=$(eval_total "$base.plain.eval.json"); sr=$(eval_total "$base.rules.eval.json")
    echo "| $model | $profile | $(num "$lp") | $(num "$lr") | $(change "$lr" "$lp") | $(num "$sp") | $(num "$sr") | $(change "$sr" "$sp") | $cross |"
  done
done
echo
echo "schedules found without the rules that are invalid on the chip: $invalid_on_chip of $pairs"
echo "schedules and problems: $out_dir"
exit $status
