#!/usr/bin/env python3
"""Lower estimate of the best schedule of a cut-out MatMul with its epilogue, over every tile side.

    bench/gaps/epilogue_piece_family.py PIECE.problem.json

PIECE is what bench/gaps/slice_problem.py writes for a 1×1 convolution and what follows it: one
MatMul `x` whose LHS (a graph input too large to retain) and weight are graph inputs, then a chain
of Pointwise ops, each reading the one before and possibly one more graph input of its shape (a
BatchNorm, the residual add, the ReLU); the last op's output is the piece's output, too large to
retain. The family is the exact solver's (no recomputation) with every `w, h, k` in 1..n: `x`
with the first `i` chained ops in one subgraph, the rest in later ones. The first subgraph is
priced as conv_piece_family.py prices a tap with its sum (max(c1, m1) + the rest, the first step
or the last k-steps apart, M1's operand loads under the four traversals); its working set holds
the LHS and weight slices, the tiles of the chain's extra inputs, the sink's tile and, at n_k >= 2
with an epilogue, `x`'s accumulator (W4). The later subgraphs pay at least their compute at native
tiles and the load of what they read and the write of the sink. It prints the least per `i`.
"""
import argparse
import math

from conv_piece_family import edges, first_step_split, last_steps_split, operand_loads
from gap_common import InputError, load_json, run_main


def piece(p):
    types = p["op_types"]
    made_by = {t: o for o, outs in enumerate(p["outputs"]) for t in outs}
    mm = [o for o, t in enumerate(types) if t == "MatMul"]
    if len(mm) != 1 or mm[0] != 0 or any(t != "Pointwise" for t in types[1:]):
        raise InputError("expected one MatMul first, then Pointwise ops only")
    a, wt = p["inputs"][0]
    if a in made_by or wt in made_by:
        raise InputError("the MatMul's operands are not graph inputs")
    chain, extra, last = [], [], 0
    for o in range(1, len(types)):
        ins = p["inputs"][o]
        if p["outputs"][last][0] not in ins or any(t in made_by and t != p["outputs"][last][0] for t in ins):
            raise InputError(f"op {o} does not read the op before it and graph inputs only")
        chain.append(p["base_costs"][o])
        extra.append(len(ins) - 1)
        last = o
    out = p["outputs"][0][0]
    H, W, K = p["heights"][out], p["widths"][out], p["widths"][a]
    cap = p["fast_memory_capacity"]
    if H * W + 1 <= cap:
        raise InputError("the output fits in the fast memory: retention, left out here, may pay")
    return dict(m=1, H=H, W=W, K=K, cx=p["base_costs"][0], chain=chain, extra=extra,
                n=p["native_granularity"][0], cap=cap, B=float(p["slow_memory_bandwidth"]))


def least_first_subgraph(g, i):
    H, W, K, n, cap = g["H"], g["W"], g["K"], g["n"], g["cap"]
    out = H * W
    c_tile, e = sum(g["chain"][:i]), sum(g["extra"][:i])
    best = None
    for h in range(1, min(n, H) + 1):
        for w in range(1, min(n, W) + 1):
            for k in range(1, min(n, K) + 1):
                nk = math.ceil(K / k)
                ws = h * k + k * w + (e + 1) * h * w + (h * w if nk > 1 and i > 0 else 0)
                if ws > cap:
                    continue
                tiles = math.ceil(H / h) * math.ceil(W / w)
                compute = tiles * (g["cx"] + c_tile)
                memory = ((e + 1) * out + operand_loads(g, h, w, k, 1)) / g["B"]
                h1, w1 = edges(g, h, w)
                if nk == 1:
                    v = first_step_split(g, h, w, k, compute, memory, g["cx"] + c_tile,
                                         h1 * K + K * w1 + (e + 1) * h1 * w1)
                else:
                    v = last_steps_split(g, h, w, k, compute, memory, 1, c_tile, (e + 1) * out)
                if best is None or v < best[0]:
                    best = (v, h, w, k, compute, memory)
    return best


def rest_of_chain(g, i):
    """Ops i.. of the chain in later subgraphs: at least their compute at native tiles (C1), and
    the load of x's side of the chain, of their extra inputs and the write of the output."""
    if i == len(g["chain"]):
        return 0.0
    tiles = math.ceil(g["H"] / g["n"]) * math.ceil(g["W"] / g["n"])
    moved = (2 + sum(g["extra"][i:])) * g["H"] * g["W"] / g["B"]
    return max(tiles * sum(g["chain"][i:]), moved)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem")
    args = ap.parse_args()
    g = piece(load_json(args.problem))
    totals = []
    for i in range(len(g["chain"]), -1, -1):
        b = least_first_subgraph(g, i)
        if b is None:
            continue
        total = b[0] + rest_of_chain(g, i)
        totals.append(total)
        print("the MatMul with %d of %d chained ops: %.1f at [w %d, h %d, k %d] (compute %d, "
              "transfers %.1f); the piece >= %.1f" % (i, len(g["chain"]), b[0], b[2], b[1], b[3], b[4], b[5], total))
    if not totals:
        raise InputError("no tile fits")
    print("least over i (no recomputation, every tile side): %.1f" % min(totals))


if __name__ == "__main__":
    run_main(main)
