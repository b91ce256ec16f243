#!/usr/bin/env python3
"""How much of ViT-B/16's tpu-v1 gap is the search's: rebuild a schedule's attention heads into
groups that share one run of the block's LayerNorm, and price it.

    bench/gaps/vit_head_groups.py [--annealer BIN] PROBLEM.json SCHEDULE.json OUT.json
                             [--q-groups 4,4,4] [--q-gran 256,256,64]
                             [--v-groups 4,4,4] [--v-gran 64,256,197]

The search's schedules run each head's query and value projections with its attention in one
subgraph that loads the LayerNorm output (197x768, 7,045 cycles over PCIe) for that head alone:
12 loads a block. The rules let several heads share one load instead, by running the LayerNorm
again upstream of their projections (V11 forbids that only before a k-split MatMul, and here the
projections are upstream of the scores or of attn @ V), while H6's weight FIFO (262,144 elements)
caps how many heads a subgraph can hold: each needs 768 x 64 of its weight per step. The edit
replaces, in every block, the subgraphs holding its query/value projections and attention ops by

  - per query group: the LayerNorm, each head's query projection, bias, scale, key transpose,
    scores (the k-loop, K = 64, one k-step at k = 64) and softmax, which is written;
  - per value group: the LayerNorm, each head's value projection, bias and attn @ V (the k-loop,
    K = 197, one k-step), which loads the softmax;

placed where the last of the replaced subgraphs was (after the key projections they read). The
schedule must be one whose query/value subgraphs hold only those ops (and the embedding's ops
run again), as the tpu-v1 searches' do; otherwise the result names the rule it breaks.
ViT-B/16's op layout is checked (a block is 159 ops from its first query projection); anything
else is refused with a one-line error. It prints the latency and the gap of the result
(`annealer evaluate`), whose every rule it checks.
"""
import argparse
import json
import subprocess

from gap_common import InputError, load_json, run_json, run_main

STRIDE = 159          # ops per encoder block
FIRST_Q = 5           # block 0's first query projection
HEADS = 12
# offsets from a block's first query projection, one per head
Q, Q_BIAS, K, K_BIAS, V, V_BIAS, SCALE, K_T, SCORES, SOFTMAX, ATTN_V = (0, 12, 24, 36, 48, 60, 72, 84, 96, 108, 120)
KEYS = ("subgraphs", "granularities", "tensors_to_retain", "traversal_orders", "subgraph_latencies")


def ints(text, what):
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise InputError(f"{what}: not a comma-separated list of integers: {text!r}") from None


def check_layout(p, blocks):
    kinds = p["op_types"]
    def need(op, kind, what):
        if op >= len(kinds) or kinds[op] != kind:
            raise InputError(f"op {op}: expected the {what} ({kind}) of ViT-B/16's layout; not a ViT-B/16 export")
    for b in range(blocks):
        q0 = FIRST_Q + STRIDE * b
        norm = norm_ops(b)[-1]
        need(norm, "Pointwise", "LayerNorm")
        for h in range(HEADS):
            for off, kind, what in ((Q, "MatMul", "query projection"), (V, "MatMul", "value projection"),
                                    (K_T, "Layout", "key transpose"), (SCORES, "MatMul", "scores"),
                                    (ATTN_V, "MatMul", "attn @ V")):
                need(q0 + off + h, kind, what)
            if p["inputs"][q0 + Q + h][0] != p["outputs"][norm][0]:
                raise InputError(f"op {q0 + Q + h}: does not read the LayerNorm op {norm}; not a ViT-B/16 export")


def norm_ops(b):
    # block 0's LayerNorm reads the embedding, which the schedules do not write: run it again too
    return [2, 3, 4] if b == 0 else [FIRST_Q - 1 + STRIDE * b]


def regroup(p, s, blocks, qg, qgran, vg, vgran):
    for b in range(blocks):
        q0 = FIRST_Q + STRIDE * b
        norm = norm_ops(b)
        mine = {q0 + off + h for off in (Q, Q_BIAS, V, V_BIAS, SCALE, K_T, SCORES, SOFTMAX, ATTN_V) for h in range(HEADS)}
        subs = s["subgraphs"]
        idx = [j for j, sg in enumerate(subs) if set(sg) & mine]
        for j in idx:
            if not set(subs[j]) <= mine | set(norm):
                raise InputError(f"subgraph {j}: mixes block {b}'s query/value subgraphs with other ops")
        new = []
        h0 = 0
        for g in qg:
            heads = range(h0, h0 + g)
            h0 += g
            new.append((sorted(norm + [q0 + off + h for h in heads for off in (Q, Q_BIAS, SCALE, K_T, SCORES, SOFTMAX)]), qgran))
        h0 = 0
        for g in vg:
            heads = range(h0, h0 + g)
            h0 += g
            new.append((sorted(norm + [q0 + off + h for h in heads for off in (V, V_BIAS, ATTN_V)]), vgran))
        out = {k: [] for k in KEYS}
        for j in range(len(subs)):
            if j == idx[-1]:
                for ops, gran in new:
                    for k, v in zip(KEYS, (ops, gran, [], None, 0)):
                        out[k].append(v)
            if j in idx:
                continue
            for k in KEYS:
                out[k].append(s[k][j] if k in s else None)
        s = out
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--annealer", default="build/annealer")
    ap.add_argument("problem")
    ap.add_argument("schedule")
    ap.add_argument("out")
    ap.add_argument("--q-groups", default="4,4,4")
    ap.add_argument("--q-gran", default="256,256,64")
    ap.add_argument("--v-groups", default="4,4,4")
    ap.add_argument("--v-gran", default="64,256,197")
    a = ap.parse_args()
    qg, vg = ints(a.q_groups, "--q-groups"), ints(a.v_groups, "--v-groups")
    for what, g in (("--q-groups", qg), ("--v-groups", vg)):
        if sum(g) != HEADS or min(g) < 1:
            raise InputError(f"{what}: groups must be positive and cover the {HEADS} heads: {g}")
    p = load_json(a.problem)
    s = load_json(a.schedule)
    blocks = (len(p["op_types"]) - FIRST_Q) // STRIDE
    if blocks < 1:
        raise InputError(f"{a.problem}: too few ops for a ViT-B/16 export")
    check_layout(p, blocks)
    out = regroup(p, s, blocks, qg, ints(a.q_gran, "--q-gran"), vg, ints(a.v_gran, "--v-gran"))
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(out, f)
    before = run_json([a.annealer, "evaluate", a.problem, a.schedule, "--json"])
    done = subprocess.run([a.annealer, "evaluate", a.problem, a.out, "--json"], capture_output=True, text=True)
    try:
        after = json.loads(done.stdout)
    except ValueError:
        raise InputError(f"{a.out}: annealer evaluate printed no JSON: {done.stderr.strip()}") from None
    if not after.get("valid"):
        raise InputError(f"{a.out}: the regrouped schedule is invalid: {after.get('message')}")
    print(f"before {before['total_latency']:,.1f} (gap {before['gap']:.1f} %)  "
          f"after {after['total_latency']:,.1f} (gap {after['gap']:.1f} %)  bound {after['lower_bound']:,.1f}")


if __name__ == "__main__":
    run_main(main)
