#!/usr/bin/env python3
"""Lower estimate of the best schedule of a cut-out convolution, over every tile side.

    bench/gaps/conv_piece_family.py PIECE.problem.json

PIECE is what bench/gaps/slice_problem.py writes for one convolution: m MatMul taps that read one
LHS (a graph input too large to retain) and a weight each, one Pointwise op, their sum, and
optionally a chain of Pointwise ops after it (a bias, a ReLU), fused into the sum's subgraph in
part or whole, the rest in later subgraphs (priced by `chain_rest`). The
exact solver's family (docs/exact-solver.md) takes only sides that divide the dimensions; this
walks every `w, h, k` in 1..n instead, for the same family otherwise (no recomputation): the sum's
subgraph with `j` taps fused, and every other tap in a subgraph of its own (two taps of a
graph-input LHS share no tensor made inside a subgraph: V5 keeps them apart). Each subgraph is priced at max(c1, m1) + max(compute - c1, transfers - m1):
at n_k = 1 its first step apart (c1, m1 that step's compute and transfers at the smallest tile),
at n_k >= 2 the tiles' last k-steps apart (the Pointwise work, the loads of unfused tiles and the
writes are theirs); at most its latency (T1, T2: a sum of per-step maxima); the transfers follow M1 with the four
traversals (raster, row-snake, column-major, column-snake): at n_k = 1 the LHS band stays along a
row and the weight strip along a column (a snake keeps one more slice at each turn, counted at
full size), at n_k >= 2 every step loads both slices. It prints the least subgraph of each kind
and the least total per j: a figure no schedule of the family beats, to set beside `annealer
bound` (a bound over all schedules) and a search (docs/lower-bound.md, "The layer-2 convolution
cut out").
"""
import argparse
import math

from gap_common import InputError, load_json, run_main


def epilogue_chain(p, s):
    """The Pointwise ops after the sum `s`, each reading only the one before (a bias, a ReLU)."""
    made_by = {t: o for o, outs in enumerate(p["outputs"]) for t in outs}
    rest = [o for o, t in enumerate(p["op_types"]) if t == "Pointwise" and o != s]
    chain, last = [], s
    while rest:
        nxt = [o for o in rest if p["inputs"][o] == p["outputs"][last]]
        if len(nxt) != 1 or any(made_by.get(t) not in (None, last) for t in p["inputs"][nxt[0]]):
            raise InputError("the Pointwise ops besides the sum are no chain on its output")
        chain.append(nxt[0])
        rest.remove(nxt[0])
        last = nxt[0]
    return chain


def piece(p):
    types = p["op_types"]
    taps = [o for o, t in enumerate(types) if t == "MatMul"]
    pointwise = [o for o, t in enumerate(types) if t == "Pointwise"]
    sums = [o for o in pointwise if len(p["inputs"][o]) > 1] or pointwise[:1]
    if len(sums) != 1 or not taps or len(taps) + len(pointwise) != len(types):
        raise InputError("expected MatMul taps, one Pointwise sum and a Pointwise chain after it, nothing else")
    lhs = {p["inputs"][o][0] for o in taps}
    if len(lhs) != 1:
        raise InputError("the taps do not read one LHS")
    s = sums[0]
    if sorted(p["inputs"][s]) != sorted(p["outputs"][o][0] for o in taps):
        raise InputError("the Pointwise op is not the sum of the taps' outputs")
    t0 = taps[0]
    a, w0 = p["inputs"][t0]
    o0 = p["outputs"][t0][0]
    H, W, K = p["heights"][o0], p["widths"][o0], p["widths"][a]
    costs = {p["base_costs"][o] for o in taps}
    if len(costs) != 1 or any(p["heights"][p["outputs"][o][0]] != H for o in taps):
        raise InputError("the taps differ in cost or shape")
    cap = p["fast_memory_capacity"]
    if H * W + 1 <= cap or H * K + 1 <= cap:
        raise InputError("a tap's output or the LHS fits in the fast memory: retention, left out here, may pay")
    chain = epilogue_chain(p, s)
    return dict(m=len(taps), H=H, W=W, K=K, cx=costs.pop(), cs=p["base_costs"][s],
                chain=[p["base_costs"][o] for o in chain],
                n=p["native_granularity"][0], cap=p["fast_memory_capacity"],
                B=float(p["slow_memory_bandwidth"]))


def operand_loads(g, h, w, k, j):
    """Elements of the LHS and of j weights loaded over the grid at [w, h, k] (M1)."""
    H, W, K = g["H"], g["W"], g["K"]
    R, C = math.ceil(H / h), math.ceil(W / w)
    A, Wt = H * K, K * W
    if k >= K:
        raster = A + (j * (Wt * R - (R - 1) * K * w) if C > 1 else j * Wt)
        column = (A * C - (C - 1) * h * K if R > 1 else A) + j * Wt
        return min(raster, column)
    return A * C + j * Wt * R


def first_step_split(g, h, w, k, compute, memory, c1, loads1):
    """max(c1, m1) + max(C - c1, M - m1): the first step is a step of its own (T1), its slices
    taken at the smallest tile (any tile may come first)."""
    m1 = loads1 / g["B"]
    return max(c1, m1) + max(compute - c1, memory - m1)


def last_steps_split(g, h, w, k, compute, memory, j, c_tile, io_last):
    """At n_k >= 2: max over the tiles' last k-steps + max over the others (T1, T2). The last
    steps hold the Pointwise work (c_tile a tile), the loads of unfused tiles and the writes
    (io_last), and the last k-range's share of the operand slices, which every step loads."""
    H, W, K = g["H"], g["W"], g["K"]
    R, C = math.ceil(H / h), math.ceil(W / w)
    k_last = K - (math.ceil(K / k) - 1) * k
    c_last = R * C * (c_tile + g["cx"] * j * k_last / K)
    m_last = (io_last + (C * H * K + R * j * K * W) * k_last / K) / g["B"]
    return max(c_last, m_last) + max(compute - c_last, memory - m_last)


def edges(g, h, w):
    H, W = g["H"], g["W"]
    return H - (math.ceil(H / h) - 1) * h, W - (math.ceil(W / w) - 1) * w


def least_sum_subgraph(g, j):
    H, W, K, n, cap, m = g["H"], g["W"], g["K"], g["n"], g["cap"], g["m"]
    out = H * W
    best = None
    for h in range(1, min(n, H) + 1):
        for w in range(1, min(n, W) + 1):
            for k in (range(1, min(n, K) + 1) if j else (1,)):
                nk = math.ceil(K / k) if j else 1
                ws = (m - j + 1) * h * w
                if j:
                    ws += h * k + j * k * w + (j * h * w if nk > 1 else 0)
                if ws > cap:
                    continue
                tiles = math.ceil(H / h) * math.ceil(W / w)
                compute = tiles * (g["cs"] + g["cx"] * j)
                memory = ((m - j) * out + out + (operand_loads(g, h, w, k, j) if j else 0)) / g["B"]
                h1, w1 = edges(g, h, w)
                if nk == 1:   # the first step is a whole tile: its inputs, the weights' slices, its write
                    v = first_step_split(g, h, w, k, compute, memory, g["cs"] + g["cx"] * j,
                                         (m - j) * h1 * w1 + (h1 * K + j * K * w1 if j else 0) + h1 * w1)
                else:         # the last k-steps apart: they alone load the unfused tiles and write
                    v = last_steps_split(g, h, w, k, compute, memory, j, g["cs"], (m - j) * out + out)
                if best is None or v < best[0]:
                    best = (v, h, w, k, compute, memory)
    return best


def least_tap_subgraph(g, p):
    H, W, K, n, cap = g["H"], g["W"], g["K"], g["n"], g["cap"]
    best = None
    for h in range(1, min(n, H) + 1):
        for w in range(1, min(n, W) + 1):
            for k in range(1, min(n, K) + 1):
                if h * k + p * k * w + p * h * w > cap:
                    continue
                tiles = math.ceil(H / h) * math.ceil(W / w)
                compute = tiles * g["cx"] * p
                memory = (p * H * W + operand_loads(g, h, w, k, p)) / g["B"]
                h1, w1 = edges(g, h, w)
                if k >= K:
                    v = first_step_split(g, h, w, k, compute, memory, g["cx"] * p,
                                         h1 * K + p * K * w1 + p * h1 * w1)
                else:
                    v = last_steps_split(g, h, w, k, compute, memory, p, 0, p * H * W)
                v /= p
                if best is None or v < best[0]:
                    best = (v, h, w, k, compute, memory)
    return best


def chain_rest(g, i):
    """The chained ops after the first i, in later subgraphs: the first of them loads the sum's
    side of the chain (too large to retain, as the taps' outputs are), the last writes the piece's
    output, and each op pays its base per tile at tiles no larger than native (C1)."""
    rest = g["chain"][i:]
    if not rest:
        return 0.0
    tiles = math.ceil(g["H"] / g["n"]) * math.ceil(g["W"] / g["n"])
    return max(tiles * sum(rest), 2 * g["H"] * g["W"] / g["B"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem")
    ap.add_argument("--max-fused", type=int, default=1000, help="largest j tried")
    args = ap.parse_args()
    g = piece(load_json(args.problem))
    b = least_tap_subgraph(g, 1)
    if b is None:
        raise InputError("no tile fits a tap alone")
    print("a tap alone: %.1f at [w %d, h %d, k %d] (compute %d, transfers %.1f)"
          % (b[0], b[2], b[1], b[3], b[4], b[5]))
    per_tap = b[0]
    totals = []
    for j in range(0, min(args.max_fused, g["m"]) + 1):
        for i in range(len(g["chain"]) + 1):
            b = least_sum_subgraph(dict(g, cs=g["cs"] + sum(g["chain"][:i])), j)
            if b is None:
                continue
            total = b[0] + (g["m"] - j) * per_tap + chain_rest(g, i)
            totals.append(total)
            print("sum with %d taps%s fused: %.1f at [w %d, h %d, k %d] (compute %d, transfers %.1f); "
                  "the piece >= %.1f" % (j, " and %d of its %d chained ops" % (i, len(g["chain"]))
                                          if g["chain"] else "", b[0], b[2], b[1], b[3], b[4], b[5], total))
    print("least over j (no recomputation, every tile side): %.1f" % min(totals))


if __name__ == "__main__":
    run_main(main)
