#!/usr/bin/env python3
"""FCN-ResNet50 on tpu-v1: layer4's block inputs (and the stem's output) served by retaining the sum before the ReLU.

    bench/gaps/fcn_layer4_serving.py SCHEDULE.json OUT.json
    build/annealer evaluate fcn_resnet50_op17.tpu-v1.json OUT.json

SCHEDULE is a schedule of the imported problem (`annealer import
tests/models/torch/fcn_resnet50_op17.onnx --hardware tpu-v1`) whose subgraphs from the one holding
op 243 to the one holding op 302 are replaced; the rest is kept. The replacement (docs/lower-bound.md,
"Serving chains that hold a MatMul (P44): not landed"):

- each trunk tensor with two readers (a k-split MatMul in another island and a residual add) is
  written once by the subgraph that makes it, which also retains the sum its ReLU reads (an
  ephemeral there, V8); the next subgraph runs the ReLU again from it, for its compute, and
  retains the ReLU's output for the MatMul (R1, R2): the MatMul never loads it;
- the block input T394 is served the same way to the downsample (op 263, `K` = 1024, eight column
  tiles: 8 x 37,384 when loaded), and `conv1` of the first block (op 247, two column tiles) loads
  it instead.

- the stem's last ReLU (op 60) is served the same way to layer2's first `conv1` (op 61): the
  subgraph that ends with it writes its output `T96` (Layout op 78 gathers it, L1) and retains the
  sum `T95`; op 60 runs again in the subgraph of ops 61-63, which then loads nothing of it.

The island ids, tensor ids and op ids are those of the importer at the time of writing; the
script checks the ops it moves and stops with a message if the problem's layout differs.
"""
import argparse
import json

from gap_common import InputError, load_json, run_main

R = [256, 196, 256]   # k = 256 = n: the fewest k-steps per tile, so the least weight streamed alone
ONE = [256, 196, 1]   # a lone Pointwise op

# (ops, granularity or None to keep the input's, tensors retained)
LAYER4 = [
    ([243, 244, 245, 246], R, [393]),     # writes T394, retains the sum T393
    ([246], ONE, [394]),                  # the ReLU again, T394 retained for the downsample
    ([263, 264], R, []),                  # downsample, LHS retained; writes T424
    ([247, 248, 249], None, [398]),       # conv1 of block 1 loads T394 (two column tiles)
    (list(range(250, 261)), None, [418]),
    ([261, 262, 265, 266], R, [425]),     # conv3 + residual: loads T424, writes T426, retains T425
    ([266], ONE, [426]),                  # the ReLU again, T426 retained for conv1 of block 2
    ([267, 268, 269], None, [430]),
    (list(range(270, 281)), None, [450]),
    ([281, 282, 283, 284], R, [454]),     # loads T426, writes T455, retains T454
    ([284], ONE, [455]),
    ([285, 286, 287], None, [459]),
    (list(range(288, 299)), None, [479]),
    ([299, 300, 301, 302], R, [484]),     # loads T455
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("schedule")
    ap.add_argument("out")
    args = ap.parse_args()
    s = load_json(args.schedule)
    subs = s["subgraphs"]
    holding = lambda op: next((i for i, g in enumerate(subs) if op in g), None)
    first, last = holding(243), holding(302)
    if first is None or last is None or first > last:
        raise InputError(f"{args.schedule}: ops 243 and 302 are not where an FCN-ResNet50 schedule has them")
    kept = {tuple(subs[i]): i for i in range(first, last + 1)}
    moved = sorted({op for i in range(first, last + 1) for op in subs[i]})
    if moved != sorted({op for ops, _, _ in LAYER4 for op in ops}):
        raise InputError(f"{args.schedule}: subgraphs {first}-{last} hold ops {moved[0]}-{moved[-1]}, not layer4's")
    part = {"subgraphs": [], "granularities": [], "tensors_to_retain": [], "traversal_orders": []}
    for ops, gran, retain in LAYER4:
        i = kept.get(tuple(ops))
        if gran is None and i is None:
            raise InputError(f"{args.schedule}: no subgraph {ops} to keep the granularity of")
        part["subgraphs"].append(ops)
        part["granularities"].append(gran if gran is not None else s["granularities"][i])
        part["tensors_to_retain"].append(retain)
        orders = s.get("traversal_orders")
        part["traversal_orders"].append(orders[i] if gran is None and orders else None)
    out = {}
    for key in part:
        old = s.get(key) or [None] * len(subs)
        out[key] = old[:first] + part[key] + old[last + 1:]
    # The stem: the subgraph ending with op 60, then [61, 62, 63].
    subs2 = out["subgraphs"]
    j = next((i for i, g in enumerate(subs2) if g and g[-1] == 60), None)
    if j is None or j + 1 >= len(subs2) or subs2[j + 1] != [61, 62, 63] or out["tensors_to_retain"][j]:
        raise InputError(f"{args.schedule}: no subgraph ending with op 60, retaining nothing, before [61, 62, 63]")
    out["tensors_to_retain"][j] = [95]
    subs2[j + 1] = [60, 61, 62, 63]
    out["subgraph_latencies"] = [0] * len(out["subgraphs"])  # evaluate recomputes them (V13 warns)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    run_main(main)
