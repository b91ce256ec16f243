#!/usr/bin/env python3
"""Where a schedule pays beyond the islands part of the bound: its subgraphs' latencies summed per
island (P12: every subgraph lies in one island) against the island's value in the bound.

    bench/gaps/gap_islands.py [--annealer BIN] [--top N] PROBLEM.json SCHEDULE.json [...pairs]
    bench/gaps/gap_islands.py --per-island [--annealer BIN] [--top N] PROBLEM.json SCHEDULE.json

One markdown row per pair: the latency, the bound, the islands part, the number of islands, and
the N islands (default 5) where the schedule pays most beyond the island's value, each as
"island (ops, subgraphs): schedule / value". With --per-island (one pair), one row per island,
largest difference first (the first N with --top N > 0): its ops (count, least and largest id), its
value in the bound, the schedule's latency, compute and memory time there, the native compute of
its ops and the difference; the last row sums them. `annealer bound --json` gives each op's island
(`island_of`) and each island's value (`island_values`); `annealer evaluate --json` each subgraph's
latency. The sum over islands of (schedule - value) is latency - islands part: what the other
parts (P16, P35 and the whole-problem ones) and the search must share.
"""
import argparse
import collections

from gap_common import InputError, ceil_div, load_json, run_json, run_main


def priced(annealer, problem_path, schedule_path):
    """The bound, the evaluation, and per island the schedule's subgraphs there (P12: one island each)."""
    bound = run_json([annealer, "bound", problem_path, "--json"])
    if "island_of" not in bound:
        raise InputError(f"{annealer}: bound --json gives no island_of (an older binary)")
    evaluation = run_json([annealer, "evaluate", problem_path, schedule_path, "--json"])
    homes = collections.defaultdict(list)
    for index, subgraph in enumerate(evaluation["subgraphs"]):
        home = {bound["island_of"][op] for op in subgraph["ops"]}
        if len(home) != 1:
            raise InputError(f"{schedule_path}: subgraph {index} spans islands {sorted(home)} (a bound bug)")
        homes[home.pop()].append(subgraph)
    return bound, evaluation, homes


def islands(annealer, problem_path, schedule_path, top):
    bound, evaluation, homes = priced(annealer, problem_path, schedule_path)
    island_of, values = bound["island_of"], bound["island_values"]
    paid = collections.Counter({i: sum(sg["latency"] for sg in sgs) for i, sgs in homes.items()})
    count = collections.Counter({i: len(sgs) for i, sgs in homes.items()})
    size = collections.Counter(island_of)
    rows = sorted(range(len(values)), key=lambda i: (-(paid[i] - values[i]), i))[:top]
    worst = "; ".join(f"{i} ({size[i]} ops, {count[i]} subgraphs): {paid[i]:,.0f} / {values[i]:,.0f}" for i in rows)
    return evaluation["total_latency"], bound, worst


def per_island(annealer, problem_path, schedule_path, top):
    p = load_json(problem_path)
    bound, _, homes = priced(annealer, problem_path, schedule_path)
    island_of, values = bound["island_of"], bound["island_values"]
    n = p["native_granularity"][0]
    members = collections.defaultdict(list)
    for o, i in enumerate(island_of):
        members[i].append(o)

    def native(o):
        if p["op_types"][o] == "Layout":
            return 0
        t = p["outputs"][o][0]
        return p["base_costs"][o] * ceil_div(p["widths"][t], n) * ceil_div(p["heights"][t], n)

    def paid(i, key):
        return sum(sg[key] for sg in homes.get(i, []))

    rows = sorted(range(len(values)), key=lambda i: values[i] - paid(i, "latency"))
    if top > 0:
        rows = rows[:top]
    print("| island | ops | bound | schedule | its compute | its memory | native compute | difference |")
    print("|---|---|---|---|---|---|---|---|")
    for i in rows:
        ops = members[i]
        print(f"| {i} | {len(ops)} ({min(ops)}–{max(ops)}) | {values[i]:,.0f} | {paid(i, 'latency'):,.0f} | "
              f"{paid(i, 'compute_time'):,.0f} | {paid(i, 'memory_time'):,.0f} | {sum(native(o) for o in ops):,.0f} | "
              f"{paid(i, 'latency') - values[i]:,.0f} |")
    total = sum(paid(i, "latency") for i in range(len(values)))
    print(f"| all | {len(island_of)} | {sum(values):,.0f} | {total:,.0f} | | | | {total - sum(values):,.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annealer", default="build/annealer")
    parser.add_argument("--top", type=int, default=5, help="islands listed per pair (--per-island: 0 = all)")
    parser.add_argument("--per-island", action="store_true", help="one row per island of one pair")
    parser.add_argument("pairs", nargs="+")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        raise InputError("give PROBLEM.json SCHEDULE.json pairs")
    if args.per_island:
        if len(args.pairs) != 2:
            raise InputError("--per-island takes one PROBLEM.json SCHEDULE.json pair")
        per_island(args.annealer, args.pairs[0], args.pairs[1], args.top)
        return
    print("| model | latency | bound | islands part | islands | where the schedule pays most beyond an island's value: island (ops, subgraphs): schedule / value |")
    print("|" + "---|" * 6)
    for problem_path, schedule_path in zip(args.pairs[::2], args.pairs[1::2]):
        latency, bound, worst = islands(args.annealer, problem_path, schedule_path, args.top)
        name = problem_path.rsplit("/", 1)[-1].removesuffix(".problem.json")
        print(f"| {name} | {latency:,.0f} | {bound['lower_bound']:,.0f} | {bound['islands']:,.0f} | "
              f"{bound['island_count']} | {worst} |")


if __name__ == "__main__":
    run_main(main)
