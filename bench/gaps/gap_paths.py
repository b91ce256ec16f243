#!/usr/bin/env python3
"""How much of a gap on a chip with a weight path (H6) is the bound's: one schedule, priced per
subgraph and per path.

    bench/gaps/gap_paths.py [--annealer BIN] PROBLEM.json SCHEDULE.json [...pairs]

H6 prices a step's memory at max(weight loads / Bw, other transfers / B). The schedule is priced
three times by `annealer evaluate --json`: on the problem itself (latency L_S, compute C_S), with
B made huge (memory_time = the weight path's time W_S, summed over steps) and with Bw made huge
(the activation path's O_S). One markdown row per pair: latency, bound, sum of C_S, W_S and O_S,
and the sum of L_S over the subgraphs whose largest term is each of compute, weight path,
activation path (with the excess of that term over the next one), what the per-step maximum
adds (sum of L_S - max(C_S, W_S, O_S): no part of the bound claims it), next to the bound's parts.
"""
import argparse
import json
import os
import sys
import tempfile

from gap_common import load_json, run_json, run_main

HUGE = 1e15


def evaluate(annealer, problem, schedule_path):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(problem, f)
        path = f.name
    try:
        return run_json([annealer, "evaluate", path, schedule_path, "--json"])
    finally:
        os.unlink(path)


def parts(annealer, problem_path, schedule_path):
    p = load_json(problem_path)
    if not p.get("chip_rules", {}).get("weight_bandwidth"):
        sys.exit(f"gap_paths.py: {problem_path}: chip_rules.weight_bandwidth: no weight path (H6), nothing to split")
    e = run_json([annealer, "evaluate", problem_path, schedule_path, "--json"])
    only_weight = json.loads(json.dumps(p))
    only_weight["slow_memory_bandwidth"] = HUGE
    only_other = json.loads(json.dumps(p))
    only_other["chip_rules"]["weight_bandwidth"] = HUGE
    ew = evaluate(annealer, only_weight, schedule_path)
    eo = evaluate(annealer, only_other, schedule_path)
    rows = []
    for s, w, o in zip(e["subgraphs"], ew["subgraphs"], eo["subgraphs"]):
        rows.append({"ops": s["ops"], "L": s["latency"], "C": s["compute_time"], "W": w["memory_time"],
                     "O": o["memory_time"]})
    return p, e, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annealer", default="build/annealer")
    parser.add_argument("--top", type=int, default=0, help="also print the N costliest subgraphs")
    parser.add_argument("pairs", nargs="+")
    args = parser.parse_args()
    print("| model | latency | bound | gap | Σ C_S | Σ W_S | Σ O_S | compute-bound: Σ L_S | "
          "weight-bound: Σ L_S (excess over C, O) | activation-bound: Σ L_S (excess over C, W) | "
          "per-step max | bound: compute / graph I/O / islands / streaming / memory floor |")
    print("|" + "---|" * 12)
    for problem_path, schedule_path in zip(args.pairs[::2], args.pairs[1::2]):
        p, e, rows = parts(args.annealer, problem_path, schedule_path)
        by = {"C": [0, 0], "W": [0, 0], "O": [0, 0]}
        for r in rows:
            kind = max("CWO", key=lambda k: r[k])
            others = [r[k] for k in "CWO" if k != kind]
            by[kind][0] += r["L"]
            by[kind][1] += r[kind] - max(others)
        name = problem_path.rsplit("/", 1)[-1].removesuffix(".problem.json")
        lat, lb = e["total_latency"], e["lower_bound"]
        print(f"| {name} | {lat:,.0f} | {lb:,.0f} | {100 * (lat - lb) / lb:.1f} % | "
              f"{sum(r['C'] for r in rows):,.0f} | {sum(r['W'] for r in rows):,.0f} | "
              f"{sum(r['O'] for r in rows):,.0f} | {by['C'][0]:,.0f} | {by['W'][0]:,.0f} ({by['W'][1]:,.0f}) | "
              f"{by['O'][0]:,.0f} ({by['O'][1]:,.0f}) | "
              f"{sum(r['L'] - max(r['C'], r['W'], r['O']) for r in rows):,.0f} | {e['lower_bound_compute']:,.0f} / "
              f"{e['lower_bound_graph_io']:,.0f} / {e['lower_bound_islands']:,.0f} / "
              f"{e['lower_bound_streaming']:,.0f} / {e['lower_bound_memory_floor']:,.0f} |")
        if args.top:
            for r in sorted(rows, key=lambda r: -r["L"])[: args.top]:
                print(f"    L {r['L']:10,.0f}  C {r['C']:9,.0f}  W {r['W']:9,.0f}  O {r['O']:9,.0f}  ops {r['ops'][:8]}")


if __name__ == "__main__":
    run_main(main)
