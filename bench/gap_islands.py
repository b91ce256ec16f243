#!/usr/bin/env python3
"""Where a schedule pays beyond the islands part of the bound: its subgraphs' latencies summed per
island (P12: every subgraph lies in one island) against the island's value in the bound.

    bench/gap_islands.py [--annealer BIN] [--top N] PROBLEM.json SCHEDULE.json [...pairs]

One markdown row per pair: the latency, the bound, the islands part, the number of islands, and
the N islands (default 5) where the schedule pays most beyond the island's value, each as
"island (ops, subgraphs): schedule / value". `annealer bound --json` gives each op's island
(`island_of`) and each island's value (`island_values`); `annealer evaluate --json` each subgraph's
latency. The sum over islands of (schedule - value) is latency - islands part: what the other
parts (P16, P35 and the whole-problem ones) and the search must share.
"""
import argparse
import collections

from gap_common import InputError, run_json, run_main


def islands(annealer, problem_path, schedule_path, top):
    bound = run_json([annealer, "bound", problem_path, "--json"])
    evaluation = run_json([annealer, "evaluate", problem_path, schedule_path, "--json"])
    island_of, values = bound["island_of"], bound["island_values"]
    paid = collections.Counter()
    count = collections.Counter()
    for index, subgraph in enumerate(evaluation["subgraphs"]):
        homes = {island_of[op] for op in subgraph["ops"]}
        if len(homes) != 1:
            raise InputError(f"{schedule_path}: subgraph {index} spans islands {sorted(homes)} (a bound bug)")
        home = homes.pop()
        paid[home] += subgraph["latency"]
        count[home] += 1
    size = collections.Counter(island_of)
    rows = sorted(range(len(values)), key=lambda i: (-(paid[i] - values[i]), i))[:top]
    worst = "; ".join(f"{i} ({size[i]} ops, {count[i]} subgraphs): {paid[i]:,.0f} / {values[i]:,.0f}" for i in rows)
    return evaluation["total_latency"], bound, worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annealer", default="build/annealer")
    parser.add_argument("--top", type=int, default=5, help="islands listed per pair")
    parser.add_argument("pairs", nargs="+")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        raise InputError("give PROBLEM.json SCHEDULE.json pairs")
    print("| model | latency | bound | islands part | islands | where the schedule pays most beyond an island's value: island (ops, subgraphs): schedule / value |")
    print("|" + "---|" * 6)
    for problem_path, schedule_path in zip(args.pairs[::2], args.pairs[1::2]):
        latency, bound, worst = islands(args.annealer, problem_path, schedule_path, args.top)
        name = problem_path.rsplit("/", 1)[-1].removesuffix(".problem.json")
        print(f"| {name} | {latency:,.0f} | {bound['lower_bound']:,.0f} | {bound['islands']:,.0f} | "
              f"{bound['island_count']} | {worst} |")


if __name__ == "__main__":
    run_main(main)
