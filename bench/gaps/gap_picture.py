#!/usr/bin/env python3
"""The gap distribution of `bench/models.sh` tables: a picture and a summary per profile.

    bench/gaps/gap_picture.py TABLE.md [TABLE.md ...] [-o PICTURE.png] [--title TEXT]

Reads every markdown table `bench/models.sh` printed into the files (rows of other tables
are skipped: a table counts when its header has "model", "profile" and "gap" columns), draws
one row of dots per profile (a dot per model: its gap between the search's latency and the
lower bound, in %), the profile's median as a bar, and the 10 % and 25 % lines of issue 24's
targets; the three worst models above 25 % are named. Prints per profile: models, median, how many
are at or under 10 %, how many above 25 %, the worst; then the same over every pair.
A later row for the same model and profile replaces an earlier one, so a re-run of some
models can be appended to the full table.
"""
import argparse
import statistics
import sys


def parse_tables(paths):
    rows = {}
    for path in paths:
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except OSError as e:
            sys.exit(f"gap_picture.py: {path}: {e.strerror}")
        header = None
        for number, line in enumerate(lines, 1):
            if not line.startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None or {"model", "profile", "gap"} <= set(cells):
                # A table's header (also one that follows another table with no blank line).
                header = cells if {"model", "profile", "gap"} <= set(cells) else []
                continue
            if not header or set(cells[0]) <= set("-: "):
                continue
            if len(cells) != len(header):
                sys.exit(f"gap_picture.py: {path}:{number}: {len(cells)} cells, the header has {len(header)}")
            row = dict(zip(header, cells))
            text = row["gap"].replace("%", "").strip()
            try:
                gap = float(text)
            except ValueError:
                sys.exit(f"gap_picture.py: {path}:{number}: gap '{row['gap']}' is not a number")
            rows[(row["model"], row["profile"])] = gap
    if not rows:
        sys.exit("gap_picture.py: no bench/models.sh table (model, profile and gap columns) in " + " ".join(paths))
    return rows


def summary_line(name, gaps, worst):
    return (f"| {name} | {len(gaps)} | {statistics.median(gaps):.1f} % | "
            f"{sum(g <= 10 for g in gaps)} | {sum(g > 25 for g in gaps)} | {worst[1]:.1f} % ({worst[0]}) |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+")
    parser.add_argument("-o", "--output", help="PNG (or SVG) to write; without it only the summary")
    parser.add_argument("--title", default="Gap to the lower bound per profile")
    args = parser.parse_args()
    rows = parse_tables(args.tables)
    profiles = sorted({p for _, p in rows})
    short = lambda m: m.removesuffix("_op17").removesuffix("_op13")

    print("| profile | models | median gap | at or under 10 % | above 25 % | worst |")
    print("|---|---|---|---|---|---|")
    for p in profiles:
        gaps = {short(m): g for (m, q), g in rows.items() if q == p}
        print(summary_line(p, list(gaps.values()), max(gaps.items(), key=lambda kv: kv[1])))
    everything = {f"{short(m)} on {p}": g for (m, p), g in rows.items()}
    print(summary_line("every pair", list(everything.values()), max(everything.items(), key=lambda kv: kv[1])))

    if not args.output:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.75 * len(profiles) + 1.6))
    for y, p in enumerate(profiles):
        items = sorted((g, short(m)) for (m, q), g in rows.items() if q == p)
        xs = [max(g, 0.0) for g, _ in items]
        # A small deterministic vertical spread so that equal gaps stay visible.
        ys = [y + ((i % 5) - 2) * 0.07 for i in range(len(xs))]
        ax.scatter(xs, ys, s=18, color="#3a6ea5", alpha=0.8, zorder=3)
        median = statistics.median(g for g, _ in items)
        ax.plot([median, median], [y - 0.3, y + 0.3], color="black", linewidth=2, zorder=4)
        # The three worst above 25 % are named; more would overprint one another.
        for (g, m), x, yy in list(zip(items, xs, ys))[-3:]:
            if g > 25:
                ax.annotate(m, (x, yy), xytext=(3, 4), textcoords="offset points", fontsize=7)
    for x, style in ((10, "--"), (25, ":")):
        ax.axvline(x, color="#b03030", linestyle=style, linewidth=1, zorder=2)
    ax.set_yticks(range(len(profiles)), profiles)
    ax.set_ylim(-0.6, len(profiles) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("gap between the search's latency and the lower bound (%); bar: median; lines: 10 % and 25 %")
    ax.set_title(args.title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    tmp = args.output + ".tmp"
    fig.savefig(tmp, dpi=110, format=args.output.rsplit(".", 1)[-1])
    import os
    os.replace(tmp, args.output)


if __name__ == "__main__":
    main()
