#!/usr/bin/env python3
"""Where a schedule pays beyond the ops' native compute, by kind of subgraph.

    bench/gaps/gap_classes.py [--annealer BIN] [--top N] PROBLEM.json SCHEDULE.json [...pairs]

For each (problem, schedule) pair prints one markdown row (docs/lower-bound.md, "The gaps on
ascend910-core"): the latency, the bound, the compute part (base x native tiles, every op once),
the compute the schedule spends beyond its subgraphs' ops at native tiles (sum over subgraphs
of C_S - native compute of its ops: more tiles than native, e.g. where a chip's buffer caps the
tile, plus recomputation, whose native share is given apart), the part of that overhead in
subgraphs whose accumulator or vector buffer (H1) is at least 75 % full, and the memory time
no compute of its own subgraph hides (sum of max(0, L_S - C_S)) split by the subgraph's
MatMuls: one MatMul with K > n (a k-loop; its Pointwise ops beside it), one with K <= n,
several, none. With --top N, the N groups of subgraphs (same MatMul shape, or same number of
MatMuls) with the largest unhidden memory follow each row.
"""
import argparse
import collections

from gap_common import ceil_div, load_json, run_json, run_main


def analyse(annealer, problem_path, schedule_path, top):
    p = load_json(problem_path)
    e = run_json([annealer, "evaluate", problem_path, schedule_path, "--json"])
    n = p["native_granularity"][0]
    rules = p.get("chip_rules") or {}
    producer = {t: o for o, outs in enumerate(p["outputs"]) for t in outs}

    def native(o):
        t = p["outputs"][o][0]
        return p["base_costs"][o] * ceil_div(p["widths"][t], n) * ceil_div(p["heights"][t], n)

    runs = collections.Counter(o for sg in e["subgraphs"] for o in sg["ops"])
    repeats = sum(native(o) * (c - 1) for o, c in runs.items())
    overhead = full = 0.0
    unhidden = collections.Counter()
    groups = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, None])
    for sg in e["subgraphs"]:
        ops = sg["ops"]
        extra = sg["compute_time"] - sum(native(o) for o in ops)
        overhead += extra
        tight = any(cap and sg.get(key, 0) >= 0.75 * cap for key, cap in
                    (("peak_accumulator", rules.get("accumulator_capacity", 0)),
                     ("peak_vector", rules.get("vector_capacity", 0))))
        if tight:
            full += extra
        excess = max(0.0, sg["latency"] - sg["compute_time"])
        matmuls = [o for o in ops if p["op_types"][o] == "MatMul"]
        if not matmuls:
            kind, key = "none", ("no MatMul", len(ops))
        elif len(matmuls) > 1:
            kind, key = "several", (f"{len(matmuls)} MatMuls", len(ops))
        else:
            lhs, rhs = p["inputs"][matmuls[0]]
            kind = "k-loop" if p["widths"][lhs] > n else "one"
            key = (f"{p['heights'][lhs]}x{p['widths'][lhs]} @ {p['heights'][rhs]}x{p['widths'][rhs]}"
                   + (" (weight)" if rhs not in producer else ""), len(ops))
        unhidden[kind] += excess
        if excess > 0:
            g = groups[key]
            g[0] += 1
            g[1] += excess
            g[2] += sg["latency"]
            g[3] += sg["compute_time"]
            g[4] = (sg["granularity"], sg["tiles"], sg["k_steps"])
    f = lambda x: f"{round(x):,}"
    name = problem_path.rsplit("/", 1)[-1].replace(".problem.json", "")
    print(f"| {name} | {f(e['total_latency'])} | {f(e['lower_bound'])} | {f(e['lower_bound_compute'])} | "
          f"{f(overhead)} ({f(repeats)} recomputed) | {f(full)} | {f(sum(unhidden.values()))} | "
          f"{f(unhidden['k-loop'])} | {f(unhidden['one'])} | {f(unhidden['several'])} | {f(unhidden['none'])} |")
    for key, (count, excess, latency, compute, shape) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"|   {key[0]}, {key[1]} ops | {count} subgraphs | L {f(latency)} | C {f(compute)} | "
              f"unhidden {f(excess)} | g, tiles, k-steps {shape} | | | | | |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annealer", default="build/annealer")
    parser.add_argument("--top", type=int, default=0, help="list the N costliest subgraph groups per pair")
    parser.add_argument("files", nargs="+", help="PROBLEM.json SCHEDULE.json pairs")
    args = parser.parse_args()
    if len(args.files) % 2:
        parser.error("give PROBLEM.json SCHEDULE.json pairs")
    print("| pair | latency | bound | compute part | Σ C_S − native (recomputed) | of it with a buffer ≥ 75 % full "
          "| Σ (L_S − C_S) | one MatMul, K > n | one MatMul, K ≤ n | several MatMuls | no MatMul |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i in range(0, len(args.files), 2):
        analyse(args.annealer, args.files[i], args.files[i + 1], args.top)


if __name__ == "__main__":
    run_main(main)
