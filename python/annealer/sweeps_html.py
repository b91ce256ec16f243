"""`annealer sweep-report RESULTS.csv -o REPORT.html`: one self-contained HTML page of a sweep.

Per model and hardware: latency (best over seeds) and lower bound against each varied key with
the speedup over layer-by-layer beside it, and the Pareto front of latency against the
fast-memory size; then every row, failed points first. The plots are matplotlib SVGs inlined
in the page, so it opens anywhere without a network. Nothing is computed here that the rows do
not hold: the latencies, bounds and speedups are the searches' own.
"""

from __future__ import annotations

import html
import io
import math
import os
import re

from .sweep_results import RESULT_COLUMNS, _write_atomic, read_results, varied_columns

# Varied keys whose values carry units: placed on the axis by the number the engine derived
# for the row (bytes, elements, elements per cycle), labelled with the text as written.
_DERIVED_AXIS = {"fast_memory": "fast_memory_bytes", "fast_memory_capacity": "capacity_elements",
                 "bandwidth": "bandwidth_elements", "slow_memory_bandwidth": "bandwidth_elements"}
_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
_MAX_SERIES = len(_COLORS)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Fixed salt: the same rows give the same page (ids hash the content, so equal ids are equal defs).
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "annealer", "font.size": 9, "axes.titlesize": 10})
    return plt


def _svg(fig) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})  # same page for same rows
    _plt().close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _axis_positions(rows, key):
    """x of each value of `key`: the derived number, the value itself, or its rank."""
    derived = _DERIVED_AXIS.get(key)
    positions = {}
    for row in rows:
        text = row.get(key)
        if text in (None, ""):
            continue
        x = row.get(derived) if derived else _number(text)
        positions.setdefault(text, x)
    if all(x is not None for x in positions.values()):
        return positions, True
    # Categories in the order of their leading numbers, then as text.
    def order(text):
        match = re.match(r"\s*([-+0-9.eE]+)", text)
        return (_number(match.group(1)) if match and _number(match.group(1)) is not None else math.inf, text)
    return {text: i for i, text in enumerate(sorted(positions, key=order))}, False


def _best_by(rows, group_key):
    """The row of lowest latency in each group (over seeds); rows without a latency skipped."""
    best = {}
    for row in rows:
        if row.get("latency") is None:
            continue
        k = group_key(row)
        if k not in best or row["latency"] < best[k]["latency"]:
            best[k] = row
    return best


def _thousands(ax, axis="y", in_bytes=False):
    from matplotlib.ticker import FuncFormatter

    formatter = FuncFormatter(lambda v, _: _bytes(v) if in_bytes else f"{v:,.0f}" if abs(v) >= 100 else f"{v:g}")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(formatter)


def _axis_figure(rows, key, varied, title):
    plt = _plt()
    positions, numeric = _axis_positions(rows, key)
    others = [k for k in varied if k != key]
    best = _best_by(rows, lambda r: (r.get(key), tuple(r.get(k) for k in others)))
    series = {}
    for (value, rest), row in best.items():
        if value in (None, ""):
            continue
        series.setdefault(rest, []).append((positions[value], row))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    names = sorted(series, key=lambda rest: [str(v) for v in rest])
    for i, rest in enumerate(names[:_MAX_SERIES]):
        points = sorted(series[rest], key=lambda p: p[0])
        color = _COLORS[i % len(_COLORS)]
        label = ", ".join(f"{k}={v}" for k, v in zip(others, rest) if v not in (None, "")) or "latency"
        xs = [x for x, _ in points]
        left.plot(xs, [r["latency"] for _, r in points], "o-", color=color, label=label)
        left.plot(xs, [r["lower_bound"] for _, r in points], "s--", color=color, alpha=0.55, markersize=4)
        proven = [(x, r["latency"]) for x, r in points if r.get("proof")]
        if proven:
            left.plot(*zip(*proven), "*", color="#2ca02c", markersize=12, zorder=5)
        right.plot(xs, [r.get("speedup") or math.nan for _, r in points], "o-", color=color, label=label)
    # Every seed, faint: the spread the best hides.
    xs = [positions[r[key]] for r in rows if r.get(key) not in (None, "") and r.get("latency") is not None]
    ys = [r["latency"] for r in rows if r.get(key) not in (None, "") and r.get("latency") is not None]
    left.plot(xs, ys, ".", color="grey", alpha=0.35, markersize=4, zorder=1)
    ticks = sorted(positions.items(), key=lambda item: item[1])
    for ax in (left, right):
        if numeric and len(ticks) > 1 and ticks[0][1] > 0 and ticks[-1][1] / ticks[0][1] > 20:
            ax.set_xscale("log")
        ax.set_xticks([x for _, x in ticks])
        ax.set_xticklabels([text for text, _ in ticks], rotation=30 if len(ticks) > 5 else 0)
        ax.minorticks_off()
        ax.set_xlabel(key)
        ax.grid(True, alpha=0.3)
    _thousands(left)
    left.set_ylabel("latency (cycles; dashed: lower bound)")
    left.set_title(f"{title}: latency against {key}")
    right.set_ylabel("speedup over layer-by-layer (x)")
    right.set_title("speedup over layer-by-layer")
    if len(names) > 1 or others:
        right.legend(fontsize=7, loc="best")
    if len(names) > _MAX_SERIES:
        right.text(0.01, 0.01, f"{len(names) - _MAX_SERIES} more series not drawn", transform=right.transAxes,
                   fontsize=7)
    return _svg(fig)


def pareto_front(points):
    """(memory, latency, row) points not dominated by one with no more memory and no more latency."""
    front = []
    for memory, latency, row in sorted(points, key=lambda p: (p[0], p[1])):
        if not front or latency < front[-1][1]:
            front.append((memory, latency, row))
    return front


def _pareto_figure(rows, varied, title):
    plt = _plt()
    points = []
    for row in rows:
        memory = row.get("fast_memory_bytes") if row.get("fast_memory_bytes") is not None else row.get("capacity_elements")
        if row.get("latency") is not None and memory is not None:
            points.append((memory, row["latency"], row))
    if not points:
        return None, []
    in_bytes = all(r.get("fast_memory_bytes") is not None for _, _, r in points)
    front = pareto_front(points)
    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.plot([p[0] for p in points], [p[1] for p in points], ".", color="grey", alpha=0.5, label="every point")
    ax.step([p[0] for p in front], [p[1] for p in front], "o-", where="post", color="#d62728",
            label="Pareto front")
    memories = sorted({p[0] for p in points})
    if len(memories) > 1 and memories[0] > 0 and memories[-1] / memories[0] > 20:
        ax.set_xscale("log")
    _thousands(ax)
    if len(memories) <= 12:  # ticks at the sizes swept, not at powers of ten
        ax.set_xticks(memories)
        ax.set_xticklabels([_bytes(m) if in_bytes else f"{m:,.0f}" for m in memories])
        ax.minorticks_off()
    else:
        _thousands(ax, "x", in_bytes)
    ax.set_xlabel("fast memory" if in_bytes else "fast-memory capacity (elements)")
    ax.set_ylabel("latency (cycles)")
    ax.set_title(f"{title}: latency against fast-memory size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return _svg(fig), front


def _fmt(value, key=None):
    if value is None or value == "":
        return ""
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, float):
        if key == "gap":
            return f"{value:.2f} %"
        if key == "speedup":
            return f"{value:.2f}x"
        if key in ("seconds",):
            return f"{value:.1f}"
        if key == "fast_memory_bytes":
            return _bytes(value)
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _bytes(value):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.4g} {unit}"
    return f"{value:.0f} B"


def _table(rows, columns):
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cls = ' class="failed"' if row.get("error") and row.get("latency") is None else ""
        cells = "".join(f"<td>{html.escape(_fmt(row.get(c), c))}</td>" for c in columns)
        body.append(f"<tr{cls}>{cells}</tr>")
    return f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; border-top: 1px solid #ccc; padding-top: .8em; }
table { border-collapse: collapse; font-size: .8em; margin: .5em 0 1em; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; } td:nth-child(-n+3) { text-align: left; }
tr.failed td { background: #fde8e8; } .note { color: #555; font-size: .85em; }
.wide { overflow-x: auto; } svg { max-width: 100%; height: auto; }
"""


def report_html(rows, title="sweep") -> str:
    if not rows:
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
                "<body><h1>No rows yet</h1></body></html>")
    varied = varied_columns(rows[0].keys())
    failed = [r for r in rows if r.get("error") and r.get("latency") is None]
    groups = {}
    for row in rows:
        groups.setdefault((row["model"], row["hardware"]), []).append(row)
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{_STYLE}</style></head><body>"]
    out.append(f"<h1>Sweep {html.escape(title)}</h1>")
    out.append(f"<p>{len(rows)} points: {len(groups)} model x hardware pairs, varied: "
               f"{html.escape(', '.join(varied) or 'nothing')}, seeds: "
               f"{html.escape(', '.join(sorted({str(r['seed']) for r in rows}, key=int)))}; "
               f"{len(failed)} failed. Latencies are in cycles of each profile (the contest's time units "
               f"for a problem's own hardware), so compare them within a pair, not across. Lines: the best "
               f"of the seeds; grey dots: every seed; dashed: the lower bound; green stars: proven "
               f"optimal.</p>")
    summary_columns = ["model", "hardware", "points", "best latency", "at", "lower bound", "gap", "speedup range"]
    summary = []
    for (model, hardware), group in groups.items():
        ok = [r for r in group if r.get("latency") is not None]
        best = min(ok, key=lambda r: r["latency"]) if ok else None
        speedups = [r["speedup"] for r in ok if r.get("speedup")]
        summary.append({
            "model": model, "hardware": hardware, "points": len(group),
            "best latency": best["latency"] if best else None,
            "at": ", ".join(f"{k}={best[k]}" for k in varied if best and best.get(k)) +
                  (f" seed={best['seed']}" if best else ""),
            "lower bound": best["lower_bound"] if best else None, "gap": best["gap"] if best else None,
            "speedup range": f"{min(speedups):.2f}x - {max(speedups):.2f}x" if speedups else "",
        })
    out.append(_table(summary, summary_columns))
    for (model, hardware), group in groups.items():
        name = f"{os.path.basename(model)} on {hardware}"
        out.append(f"<h2>{html.escape(name)}</h2>")
        for key in varied:
            if len({r.get(key) for r in group if r.get(key) not in (None, "")}) >= 1:
                out.append(f'<div class="fig">{_axis_figure(group, key, varied, name)}</div>')
        svg, front = _pareto_figure(group, varied, name)
        if svg:
            out.append(f'<div class="fig">{svg}</div>')
            out.append("<p class='note'>Pareto front (no point has less fast memory and a lower latency):</p>")
            out.append(_table([dict(r, memory=m) for m, _, r in front],
                              [*varied, "seed", "fast_memory_bytes", "capacity_elements", "latency", "lower_bound", "gap",
                               "speedup"]))
        if not varied:
            out.append(_table(group, ["seed", "latency", "lower_bound", "gap", "speedup", "proof"]))
    columns = ["model", "hardware", *varied, *(name for name, _ in RESULT_COLUMNS if name != "schedule")]
    out.append("<h2>Every point</h2>")
    ordered = failed + [r for r in rows if r not in failed]
    out.append(f'<div class="wide">{_table(ordered, columns)}</div>')
    out.append("<p class='note'>Written by annealer sweep-report (docs/sweeps.md).</p></body></html>")
    return "".join(out)


def write_report(results, path) -> None:
    """results: a results CSV's path or the rows annealer.sweep returned."""

    if isinstance(results, (str, os.PathLike)):
        title = os.path.basename(os.fspath(results))
        rows = read_results(results)
    else:
        title, rows = "sweep", list(results)
    _write_atomic(os.fspath(path), report_html(rows, title).encode())
