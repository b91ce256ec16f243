#!/usr/bin/env python3
"""How much of a gap is the bound's: one schedule of an imported model, priced per subgraph.

    bench/gaps/gap_parts.py [--annealer BIN] [--before BIN] PROBLEM.json SCHEDULE.json [...pairs]

For each (problem, schedule) pair prints one markdown row (docs/lower-bound.md, "How much of
each gap is the bound's"): the latency, the bound (and, with --before, an older binary's bound),
the sum over subgraphs of max(C_S, M_S), of C_S and of M_S (`annealer evaluate --json`), the
compute and graph I/O parts, the memory time no compute of its own subgraph hides
(sum over memory-bound subgraphs of M_S - C_S), the share of it in subgraphs that hold a
weight-heavy op (an op whose own weight traffic exceeds its own compute), the per-op estimate
sum over ops of max(0, W/B - c) (W: its graph inputs, streamed once per column / row tile when
K > n, P5, and its output when that is a graph output; c: base x native tiles) -- what a bound
would add if no op could borrow another's compute -- and P14's valid share of it.
"""
import argparse

from gap_common import ceil_div, load_json, run_json, run_main


def row(annealer, before, problem_path, schedule_path):
    p = load_json(problem_path)
    e = run_json([annealer, "evaluate", problem_path, schedule_path, "--json"])
    new = run_json([annealer, "bound", problem_path, "--json"])
    old = run_json([before, "bound", problem_path, "--json"]) if before else None
    n = p["native_granularity"][0]
    bandwidth = p["slow_memory_bandwidth"]
    producer = {t: o for o, outs in enumerate(p["outputs"]) for t in outs}
    consumed = {t for ins in p["inputs"] for t in ins}
    size = lambda t: p["widths"][t] * p["heights"][t]

    def compute(o):
        t = p["outputs"][o][0]
        return p["base_costs"][o] * ceil_div(p["heights"][t], n) * ceil_div(p["widths"][t], n)

    def own_traffic(o):
        ins, out = p["inputs"][o], p["outputs"][o][0]
        total = 0
        for slot, t in enumerate(ins):
            if t in producer:
                continue
            s = size(t)
            if p["op_types"][o] == "MatMul" and p["widths"][ins[0]] > n:
                s *= ceil_div(p["widths"][out], n) if slot == 0 else ceil_div(p["heights"][out], n)
            total += s
        if p["op_types"][o] == "MatMul" and out not in consumed:
            total += size(out)
        return total / bandwidth

    ops = range(len(p["op_types"]))
    heavy = {o for o in ops if p["op_types"][o] == "MatMul" and own_traffic(o) > compute(o)}
    per_op = sum(max(0.0, own_traffic(o) - compute(o)) for o in heavy)
    subgraphs = e["subgraphs"]
    latency = e["total_latency"]
    sum_max = sum(max(s["compute_time"], s["memory_time"]) for s in subgraphs)
    sum_c = sum(s["compute_time"] for s in subgraphs)
    sum_m = sum(s["memory_time"] for s in subgraphs)
    bound_memory = [s for s in subgraphs if s["memory_time"] > s["compute_time"]]
    excess = sum(s["memory_time"] - s["compute_time"] for s in bound_memory)
    excess_heavy = sum(s["memory_time"] - s["compute_time"] for s in bound_memory if heavy & set(s["ops"]))
    bound = new["lower_bound"]
    gap = lambda b: f"{100 * (latency - b) / b:.0f} %"
    before_cells = f"{old['lower_bound']:,.0f} | {gap(old['lower_bound'])} | " if old else ""
    name = problem_path.rsplit("/", 1)[-1].removesuffix(".json")
    return (f"| {name} | {latency:,.0f} | {before_cells}{bound:,.0f} | {gap(bound)} | {sum_max:,.0f} | "
            f"{sum_c:,.0f} | {new['compute']:,.0f} | {sum_m:,.0f} | {new['graph_io']:,.0f} | "
            f"{len(bound_memory)} of {len(subgraphs)}: {excess:,.0f} | {excess_heavy:,.0f} | "
            f"{per_op:,.0f} | {new['streaming'] - new['compute']:,.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annealer", default="build/annealer")
    parser.add_argument("--before", help="an older annealer binary whose bound to show too")
    parser.add_argument("files", nargs="+", help="PROBLEM.json SCHEDULE.json pairs")
    args = parser.parse_args()
    if len(args.files) % 2:
        parser.error("give PROBLEM.json SCHEDULE.json pairs")
    before = "bound before | gap before | " if args.before else ""
    print(f"| model | latency | {before}bound | gap | Σ max(C_S, M_S) | Σ C_S | compute part | Σ M_S | "
          "graph I/O | memory-bound subgraphs: Σ (M_S − C_S) | of it beside a weight-heavy op | "
          "per-op estimate | P14's gain |")
    print("|" + "---|" * (15 if args.before else 13))
    for i in range(0, len(args.files), 2):
        print(row(args.annealer, args.before, args.files[i], args.files[i + 1]))


if __name__ == "__main__":
    run_main(main)
