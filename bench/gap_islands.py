#!/usr/bin/env python3
"""Where a gap sits, island by island: the bound's value of each island (P12) against what the
schedule's subgraphs in that island cost.

    bench/gap_islands.py [--annealer BIN] [--top N] PROBLEM.json SCHEDULE.json

Every subgraph lies in one island (docs/lower-bound.md, "Islands (P12)"): a subgraph's island is
that of its ops (`annealer bound --json`: `island_of`, `island_values`). Prints one markdown row
per island, largest difference first (the first N with --top): its ops (count, least and largest
id), the island's value in the bound, the schedule's latency there, its compute and memory time
(`annealer evaluate --json`), the native compute of the island's ops and the difference. The last
line sums the islands (the islands part, and the schedule's total).
"""
import argparse
import collections

from gap_common import InputError, ceil_div, load_json, run_json, run_main


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--annealer", default="build/annealer")
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("problem")
    ap.add_argument("schedule")
    args = ap.parse_args()
    p = load_json(args.problem)
    bound = run_json([args.annealer, "bound", args.problem, "--json"])
    e = run_json([args.annealer, "evaluate", args.problem, args.schedule, "--json"])
    if "island_of" not in bound:
        raise InputError(f"{args.annealer}: bound --json gives no island_of (an older binary)")
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

    latency, compute, memory = (collections.Counter() for _ in range(3))
    for sg in e["subgraphs"]:
        i = island_of[sg["ops"][0]]
        latency[i] += sg["latency"]
        compute[i] += sg["compute_time"]
        memory[i] += sg["memory_time"]
    rows = sorted(range(len(values)), key=lambda i: values[i] - latency[i])
    if args.top:
        rows = rows[:args.top]
    print("| island | ops | bound | schedule | its compute | its memory | native compute | difference |")
    print("|---|---|---|---|---|---|---|---|")
    for i in rows:
        ops = members[i]
        print(f"| {i} | {len(ops)} ({min(ops)}–{max(ops)}) | {values[i]:,.0f} | {latency[i]:,.0f} | "
              f"{compute[i]:,.0f} | {memory[i]:,.0f} | {sum(native(o) for o in ops):,.0f} | "
              f"{latency[i] - values[i]:,.0f} |")
    print(f"| all | {len(island_of)} | {sum(values):,.0f} | {sum(latency.values()):,.0f} | | | | "
          f"{sum(latency.values()) - sum(values):,.0f} |")


if __name__ == "__main__":
    run_main(main)
