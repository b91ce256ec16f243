#!/usr/bin/env python3
"""A schedule's latency layer by layer, a layer ending at each k x k convolution's sum.

    bench/gaps/conv_layers.py PROBLEM.json SCHEDULE.json [--annealer BIN] [--ops A-B]

A layer is the run of ops after one sum of `taps` MatMul outputs (a Pointwise op summing `--taps`
of them, 9 by default: an imported 3x3 convolution) up to and including the next, cut before every
Layout op as well (a pooling window or a stride: DenseNet's transitions, a stem): in DenseNet-121
one dense layer (the BatchNorm and ReLU of each chunk of its concatenation, the 1x1 convolution's
taps and sum, the 3x3's), in ResNet a block's convolution. Each subgraph of the schedule counts for
the layer of its last op (`annealer evaluate --json`); per layer: the native compute of its ops
(base x native tiles, 0 for a Layout op), the schedule's latency, compute and memory time there, and
latency less native compute. `--ops` keeps the layers that overlap a range (an island, say).
"""
import argparse

from gap_common import ceil_div, load_json, run_json, run_main
from slice_problem import parse_ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem")
    ap.add_argument("schedule")
    ap.add_argument("--annealer", default="build/annealer")
    ap.add_argument("--taps", type=int, default=9)
    ap.add_argument("--ops", help="only the layers that overlap these ops")
    args = ap.parse_args()
    p = load_json(args.problem)
    kinds, inputs, outputs = p["op_types"], p["inputs"], p["outputs"]
    widths, heights, native = p["widths"], p["heights"], p["native_granularity"][0]
    producer = {t: o for o, outs in enumerate(outputs) for t in outs}
    ends = [o for o, kind in enumerate(kinds)
            if kind == "Pointwise" and len(inputs[o]) == args.taps
            and all(t in producer and kinds[producer[t]] == "MatMul" for t in inputs[o])]
    # A Layout op (a pooling window, a stride) starts a layer too: DenseNet's transitions, stems.
    ends = sorted(set(ends) | {o - 1 for o, kind in enumerate(kinds) if kind == "Layout" and o > 0} | {len(kinds) - 1})
    layer_of, start = [], 0
    for i, end in enumerate(ends):
        layer_of += [i] * (end + 1 - start)
        start = end + 1

    def native_compute(o):
        if kinds[o] == "Layout":
            return 0
        # A MatMul's base covers its whole reduction (O1), so both kinds pay per output tile.
        out = outputs[o][0]
        return p["base_costs"][o] * ceil_div(heights[out], native) * ceil_div(widths[out], native)

    rows = [[0.0, 0.0, 0.0, 0.0] for _ in ends]
    for o in range(len(kinds)):
        rows[layer_of[o]][0] += native_compute(o)
    evaluated = run_json([args.annealer, "evaluate", args.problem, args.schedule, "--json"])
    for sg in evaluated["subgraphs"]:
        row = rows[layer_of[max(sg["ops"])]]
        row[1] += sg["latency"]
        row[2] += sg["compute_time"]
        row[3] += sg["memory_time"]
    keep = set(parse_ops(args.ops, len(kinds))) if args.ops else None
    print("| layer | ops | native compute | latency | compute | memory | latency - native |")
    print("|---|---|---|---|---|---|---|")
    total = [0.0] * 4
    for i, row in enumerate(rows):
        first = ends[i - 1] + 1 if i > 0 else 0
        if keep is not None and not keep & set(range(first, ends[i] + 1)):
            continue
        total = [a + b for a, b in zip(total, row)]
        print(f"| {i} | {first}–{ends[i]} | {row[0]:,.0f} | {row[1]:,.0f} | {row[2]:,.0f} | {row[3]:,.0f} | "
              f"{row[1] - row[0]:,.0f} |")
    print(f"| all | | {total[0]:,.0f} | {total[1]:,.0f} | {total[2]:,.0f} | {total[3]:,.0f} | "
          f"{total[1] - total[0]:,.0f} |")


if __name__ == "__main__":
    run_main(main)
