#!/usr/bin/env python3
"""Cut a piece out of a problem (and its schedule) to search, bound or solve it on its own.

    bench/gaps/slice_problem.py PROBLEM.json SCHEDULE.json OPS OUT_PREFIX

OPS lists op ids and ranges (`61-81`, `64-75,80`). Writes OUT_PREFIX.problem.json: those ops, in
their order, with the tensors they read or make (a tensor made outside becomes a graph input; one
made inside and read only outside becomes a graph output; the hardware and chip rules as they
were) and OUT_PREFIX.schedule.json: the schedule's subgraphs that lie inside the piece, in order,
with their granularity, traversal and the retained tensors that a later op of the piece reads.
Prints the latency those subgraphs have in the whole schedule (its subgraph_latencies), the
figure a search of the piece is compared with (docs/lower-bound.md, "The gaps on
ascend910-core"). A subgraph that crosses the piece's edge is named on stderr and left out, and
so is a tensor made inside and read both inside and outside (it is no graph output of the
piece): cut the piece elsewhere.
"""
import argparse
import json
import sys

from gap_common import InputError, load_json, run_main


def parse_ops(text, count):
    ops = set()
    for part in text.split(","):
        try:
            if "-" in part:
                a, b = map(int, part.split("-"))
                ops |= set(range(a, b + 1))
            else:
                ops.add(int(part))
        except ValueError:
            raise InputError(f"OPS: '{part}' is not an op id or a range a-b") from None
    bad = [o for o in ops if not 0 <= o < count]
    if bad:
        raise InputError(f"OPS: op {bad[0]} is out of range [0, {count})")
    return sorted(ops)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem")
    ap.add_argument("schedule")
    ap.add_argument("ops")
    ap.add_argument("out_prefix")
    args = ap.parse_args()
    p = load_json(args.problem)
    s = load_json(args.schedule)
    ops = parse_ops(args.ops, len(p["op_types"]))
    inside = set(ops)
    readers = {}
    for o, ins in enumerate(p["inputs"]):
        for t in ins:
            readers.setdefault(t, set()).add(o)
    tensors, index = [], {}

    def tensor(t):
        if t not in index:
            index[t] = len(tensors)
            tensors.append(t)
        return index[t]

    piece = {"widths": [], "heights": [], "inputs": [], "outputs": [], "base_costs": [], "op_types": []}
    op_index = {}
    for o in ops:
        op_index[o] = len(piece["inputs"])
        piece["inputs"].append([tensor(t) for t in p["inputs"][o]])
        piece["outputs"].append([tensor(t) for t in p["outputs"][o]])
        piece["base_costs"].append(p["base_costs"][o])
        piece["op_types"].append(p["op_types"][o])
    piece["widths"] = [p["widths"][t] for t in tensors]
    piece["heights"] = [p["heights"][t] for t in tensors]
    for key in ("fast_memory_capacity", "slow_memory_bandwidth", "native_granularity", "chip_rules"):
        if key in p:
            piece[key] = p[key]
    for o in ops:
        for t in p["outputs"][o]:
            r = readers.get(t, set())
            if r - inside and r & inside:
                print(f"note: tensor {t} (op {o}) is read inside and outside the piece", file=sys.stderr)
    with open(args.out_prefix + ".problem.json", "w", encoding="utf-8") as f:
        json.dump(piece, f)
    out = {"subgraphs": [], "granularities": [], "tensors_to_retain": [], "traversal_orders": []}
    orders = s.get("traversal_orders") or [None] * len(s["subgraphs"])
    latency = 0.0
    for i, sg in enumerate(s["subgraphs"]):
        members = set(sg)
        if not members & inside:
            continue
        if not members <= inside:
            print(f"note: subgraph {i} crosses the piece (ops {sorted(members - inside)} outside): left out",
                  file=sys.stderr)
            continue
        out["subgraphs"].append([op_index[o] for o in sg])
        out["granularities"].append(s["granularities"][i])
        out["tensors_to_retain"].append([index[t] for t in s["tensors_to_retain"][i]
                                         if t in index and readers.get(t, set()) & inside])
        out["traversal_orders"].append(orders[i])
        latency += (s.get("subgraph_latencies") or [0] * len(s["subgraphs"]))[i]
    with open(args.out_prefix + ".schedule.json", "w", encoding="utf-8") as f:
        json.dump(out, f)
    print(f"ops {len(ops)}, subgraphs {len(out['subgraphs'])}, their latency in the whole schedule {latency:,.1f}")


if __name__ == "__main__":
    run_main(main)
