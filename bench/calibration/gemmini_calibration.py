#!/usr/bin/python3
"""The gemmini-default profile against Gemmini measured in RTL simulation, layer by layer.

Usage:  /usr/bin/python3 bench/calibration/gemmini_calibration.py [--annealer build/annealer] [--time 5s]
            [--out DIR] [--layers N]

Measured: every unique convolution and the fully-connected layer of ResNet-50 (batch 1), run on
a 16x16 int8 Gemmini in FireSim with Gemmini's own tiler (`tiled_conv_auto`,
`tiled_matmul_auto`), from the repository of DOSA (Hong et al., "DOSA: Differentiable Model-Based
One-Loop Search for DNN Accelerators", MICRO 2023): ucb-bar/dosa,
data/firesim_test_data/dataset.csv, column target.gemmini_auto_cycle, the rows of the
configuration whose accumulator holds 3,136 rows of 16 int32 (200,704 B) and whose scratchpad
16,064 rows of 16 int8 (257,024 B), the one the issue quotes (conv1 2,577,699 cycles); layer
counts from dataset/workloads/resnet50/layer_count.yaml of the same repository.

Predicted: each layer alone, imported with `annealer import` (Conv: k*k tap MatMuls and a sum, the
first layer as its im2col MatMul; FC: one MatMul) for gemmini-default with that configuration's
two memory sizes, then (a) the layer-by-layer baseline, (b) a search of --time, each with the
profile's chip rules and without them. Prints a Markdown table and the totals; exits 1 if a
schedule fails the oracle.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

# (R, C, K, P, stride, count, FireSim cycles): R x R kernel, C -> K channels, P x P output.
MEASURED = [
    (7, 3, 64, 112, 2, 1, 2577699),
    (1, 64, 64, 56, 1, 1, 212475),
    (3, 64, 64, 56, 1, 3, 538484),
    (1, 64, 256, 56, 1, 4, 557954),
    (1, 256, 64, 56, 1, 2, 859685),
    (1, 256, 128, 56, 1, 1, 1273454),
    (3, 128, 128, 28, 2, 1, 649677),
    (1, 128, 512, 28, 1, 4, 506921),
    (1, 256, 512, 28, 2, 1, 2831689),
    (1, 512, 128, 28, 1, 3, 632840),
    (3, 128, 128, 28, 1, 3, 630513),
    (1, 512, 256, 28, 1, 1, 1013370),
    (3, 256, 256, 14, 2, 1, 657000),
    (1, 256, 1024, 14, 1, 6, 386739),
    (1, 512, 1024, 14, 2, 1, 1710236),
    (1, 1024, 256, 14, 1, 5, 543853),
    (3, 256, 256, 14, 1, 5, 746664),
    (1, 1024, 512, 14, 1, 1, 824885),
    (3, 512, 512, 7, 2, 1, 1102638),
    (1, 512, 2048, 7, 1, 3, 580950),
    (1, 1024, 2048, 7, 2, 1, 1010835),
    (1, 2048, 512, 7, 1, 2, 649782),
    (3, 512, 512, 7, 1, 2, 777089),
    (0, 2048, 1000, 1, 1, 1, 511246),  # R = 0: the fully-connected layer
]
SCRATCHPAD = "257024 B"
ACCUMULATOR = "200704 B"


def layer_model(r, c, k, p, stride, path):
    """One Conv (or Gemm), stripped weights, NCHW batch 1, 'same' padding."""
    def stripped(name, dims):
        t = TensorProto()
        t.name, t.data_type = name, TensorProto.FLOAT
        t.dims.extend(dims)
        return t
    if r == 0:
        node = helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)
        graph = helper.make_graph([node], "fc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k])],
                                  [stripped("w", [k, c])])
    else:
        pad = (r - 1) // 2
        h = p * stride
        node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[r, r], strides=[stride, stride],
                                pads=[pad] * 4, dilations=[1, 1], group=1)
        graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k, p, p])],
                                  [stripped("w", [k, c, r, r])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def run(cmd):
    return subprocess.run(cmd, check=False, capture_output=True, text=True)


def main():
    parser = argparse.ArgumentParser()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--annealer", default=os.path.join(repo, "build", "annealer"))
    parser.add_argument("--time", default="5s")
    parser.add_argument("--out", default=None)
    parser.add_argument("--layers", type=int, default=len(MEASURED))
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="annealer-gemmini-calibration.")
    os.makedirs(out, exist_ok=True)

    # gemmini-default with the measured configuration's two memories.
    with open(os.path.join(repo, "hardware", "gemmini-default.yaml")) as f:
        text = f.read()
    text = re.sub(r"^name: .*$", "name: gemmini-dosa", text, flags=re.M)
    text = re.sub(r"^fast_memory: .*$", "fast_memory: " + SCRATCHPAD, text, flags=re.M)
    text = re.sub(r"^staging_buffer: .*$", "staging_buffer: " + SCRATCHPAD, text, flags=re.M)
    text = re.sub(r"^accumulator_buffer: .*$", "accumulator_buffer: " + ACCUMULATOR, text, flags=re.M)
    profile = os.path.join(out, "gemmini-dosa.yaml")
    with open(profile, "w") as f:
        f.write(text)

    def total(problem, schedule):
        result = run([args.annealer, "evaluate", problem, schedule, "--json"])
        if result.returncode != 0:
            print("INVALID: " + schedule + ": " + result.stdout.strip(), file=sys.stderr)
            sys.exit(1)
        return json.loads(result.stdout)["total_latency"]

    rows = []
    for i, (r, c, k, p, stride, count, measured) in enumerate(MEASURED[: args.layers]):
        name = "fc" if r == 0 else f"conv{r}x{r}_{c}_{k}_{p}_s{stride}"
        base = os.path.join(out, name)
        layer_model(r, c, k, p, stride, base + ".onnx")
        result = run([args.annealer, "import", base + ".onnx", "--hardware", profile, "-o", base + ".rules.json"])
        if result.returncode != 0:
            sys.exit(result.stderr)
        with open(base + ".rules.json") as f:
            problem = json.load(f)
        problem.pop("chip_rules", None)
        with open(base + ".plain.json", "w") as f:
            json.dump(problem, f)
        predicted = {}
        for variant in ("rules", "plain"):
            p_json = f"{base}.{variant}.json"
            run([args.annealer, "baseline", p_json, "-o", f"{base}.{variant}.baseline.json"])
            predicted[variant + " baseline"] = total(p_json, f"{base}.{variant}.baseline.json")
            run([args.annealer, "--time", args.time, "--quiet", "--threads", "2", p_json, "-o",
                 f"{base}.{variant}.search.json"])
            predicted[variant + " search"] = total(p_json, f"{base}.{variant}.search.json")
        rows.append((name, count, measured, predicted))
        print(f"{name}: measured {measured}, " + ", ".join(f"{k} {v:.0f}" for k, v in predicted.items()),
              file=sys.stderr)

    def err(a, m):
        return f"{(a / m - 1) * 100:+.0f} %"

    print("| layer | count | FireSim cycles | baseline, rules | error | search, rules | error | search, no rules | error |")
    print("|---|---|---|---|---|---|---|---|---|")
    sums = {"measured": 0.0, "rules baseline": 0.0, "rules search": 0.0, "plain search": 0.0, "plain baseline": 0.0}
    for name, count, measured, pr in rows:
        print(f"| {name} | {count} | {measured:,} | {pr['rules baseline']:,.0f} | {err(pr['rules baseline'], measured)} "
              f"| {pr['rules search']:,.0f} | {err(pr['rules search'], measured)} "
              f"| {pr['plain search']:,.0f} | {err(pr['plain search'], measured)} |")
        sums["measured"] += count * measured
        for key in ("rules baseline", "rules search", "plain search", "plain baseline"):
            sums[key] += count * pr[key]
    m = sums["measured"]
    print(f"| **ResNet-50 (x counts)** | | **{m:,.0f}** | **{sums['rules baseline']:,.0f}** | "
          f"{err(sums['rules baseline'], m)} | **{sums['rules search']:,.0f}** | {err(sums['rules search'], m)} "
          f"| **{sums['plain search']:,.0f}** | {err(sums['plain search'], m)} |")
    print(f"\nplain baseline total {sums['plain baseline']:,.0f} ({err(sums['plain baseline'], m)})")


if __name__ == "__main__":
    main()
