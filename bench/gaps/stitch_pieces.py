#!/usr/bin/env python3
"""Put schedules of pieces cut out with slice_problem.py back into one schedule of the whole problem.

    bench/gaps/stitch_pieces.py PROBLEM.json OUT.json OPS:SCHEDULE [OPS:SCHEDULE ...]

Each OPS is the op list given to slice_problem.py (`3-161`, `64-75,80`) and SCHEDULE a schedule of
that piece (a search of it alone), in the piece's numbering; `OPS:=WHOLE.json` takes instead the
subgraphs of a schedule of the whole problem that lie inside OPS (one that crosses OPS is an
error). The pieces are written in the order given, so give them in topological order (islands in
the order of their ops, for instance) and let them cover every op once. Ops and tensors are mapped
back through the numbering slice_problem.py gives them (ops in increasing order, tensors in order of
first mention). The result is a schedule of the whole problem: check it with `annealer evaluate`.
A piece's cut tensors were graph inputs and outputs there; in the whole problem they are written by
the piece that makes them and loaded by the one that reads them, as the piece's schedule priced
them, so where no retention crosses a cut the whole costs the sum of the pieces (a tensor made
inside a piece and read both inside and outside it can break this: slice_problem.py names those).
"""
import argparse
import json

from gap_common import InputError, load_json, run_main
from slice_problem import parse_ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem")
    ap.add_argument("out")
    ap.add_argument("pieces", nargs="+", help="OPS:SCHEDULE or OPS:=WHOLE_SCHEDULE")
    args = ap.parse_args()
    p = load_json(args.problem)
    count = len(p["op_types"])
    out = {"subgraphs": [], "granularities": [], "tensors_to_retain": [], "traversal_orders": []}

    def add(ops, granularity, retain, order):
        out["subgraphs"].append(ops)
        out["granularities"].append(granularity)
        out["tensors_to_retain"].append(retain)
        out["traversal_orders"].append(order)

    for piece in args.pieces:
        if ":" not in piece:
            raise InputError(f"'{piece}' is not OPS:SCHEDULE")
        text, path = piece.split(":", 1)
        ops = parse_ops(text, count)
        inside = set(ops)
        whole = path.startswith("=")
        s = load_json(path[1:] if whole else path)
        orders = s.get("traversal_orders") or [None] * len(s["subgraphs"])
        if whole:
            for i, sg in enumerate(s["subgraphs"]):
                members = set(sg)
                if members <= inside:
                    add(sg, s["granularities"][i], s["tensors_to_retain"][i], orders[i])
                elif members & inside:
                    raise InputError(f"{path[1:]}: subgraph {i} crosses {text}")
            continue
        tensors, seen = [], set()
        for o in ops:
            for t in p["inputs"][o] + p["outputs"][o]:
                if t not in seen:
                    seen.add(t)
                    tensors.append(t)
        for i, sg in enumerate(s["subgraphs"]):
            if any(not 0 <= o < len(ops) for o in sg):
                raise InputError(f"{path}: subgraph {i} names an op outside the piece {text}")
            add([ops[o] for o in sg], s["granularities"][i], [tensors[t] for t in s["tensors_to_retain"][i]],
                orders[i])
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f)
    print(f"{len(out['subgraphs'])} subgraphs from {len(args.pieces)} pieces")


if __name__ == "__main__":
    run_main(main)
