"""Draws a soak's samples as one SVG, written by hand (no plotting package):
the operator's RSS above, its connections to the apiserver below, on one
time axis, with the warm-up shaded, apiserver restarts as red dashed lines,
etcd compactions as grey dotted ones and the churn's end in black.

    python3 plot.py RESULTS_DIR [OUT.svg]    # default RESULTS_DIR/summary.svg
"""

import csv
import json
import math
import os
import sys
from xml.sax.saxutils import escape

WIDTH, LEFT, RIGHT, TOP = 900, 70, 20, 46
PANELS = [  # column, axis label, height, colour, scale
    ("rss_bytes", "RSS (MiB)", 260, "#1f5fa8", 1 / 2**20),
    ("conns_apiserver", "TCP to apiserver", 130, "#2a7a2a", 1),
]
GAP, BOTTOM = 46, 64


def ticks(lo, hi, count=6):
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 x 10^k."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(s * power for s in (1, 2, 5, 10) if s * power >= raw)
    values = [math.floor(lo / step) * step]
    while values[-1] < hi:
        values.append(values[-1] + step)
    return values


def fmt(value):
    return f"{value:g}"


def draw(results, out):
    with open(os.path.join(results, "samples.csv"), newline="") as f:
        rows = [{k: float(v) for k, v in r.items() if v != ""} for r in csv.DictReader(f)]
    events = [json.loads(l) for l in open(os.path.join(results, "events.jsonl"))]
    meta = json.load(open(os.path.join(results, "meta.json")))
    summary_path = os.path.join(results, "summary.json")
    warmup = json.load(open(summary_path))["warmup_seconds"] if os.path.exists(summary_path) else 300

    minutes = [r["t"] / 60 for r in rows]
    x_ticks = ticks(0, max(minutes), 10)
    x_max = x_ticks[-1]
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + sum(p[2] for p in PANELS) + GAP * (len(PANELS) - 1) + BOTTOM

    def x(minute):
        return LEFT + plot_w * minute / x_max

    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="{LEFT}" y="20" font-size="14">Mirror operator soak at {escape(meta["commit"])}: '
        f'{meta["settings"]["minutes"]:g} min of churn at {meta["settings"]["rate"]:g} writes/s, '
        f'{escape(meta["started_utc"])}</text>',
    ]
    top = TOP
    for column, label, h, colour, scale in PANELS:
        values = [r[column] * scale for r in rows]
        y_ticks = ticks(0, max(values) * 1.1)
        y_max = y_ticks[-1]

        def y(value, top=top, h=h, y_max=y_max):
            return top + h - h * value / y_max

        shaded = min(x(warmup / 60), WIDTH - RIGHT) - LEFT
        svg.append(f'<rect x="{LEFT}" y="{top}" width="{shaded:.1f}" height="{h}" fill="#eeeeee"/>')
        for v in y_ticks:
            svg.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#dddddd"/>')
            svg.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{fmt(v)}</text>')
        for m in x_ticks:
            svg.append(f'<line x1="{x(m):.1f}" x2="{x(m):.1f}" y1="{top + h}" y2="{top + h + 4}" stroke="black"/>')
            svg.append(f'<text x="{x(m):.1f}" y="{top + h + 16}" text-anchor="middle">{fmt(m)}</text>')
        for e in events:
            style = {
                "restart-begin": 'stroke="#c0392b" stroke-dasharray="6 3"',
                "compact": 'stroke="#888888" stroke-dasharray="2 3"',
                "churn-end": 'stroke="black"',
            }.get(e["event"])
            if style:
                svg.append(f'<line x1="{x(e["t"] / 60):.1f}" x2="{x(e["t"] / 60):.1f}" y1="{top}" '
                           f'y2="{top + h}" {style}/>')
            if e["event"] == "restart-begin" and top == TOP:
                svg.append(f'<text x="{x(e["t"] / 60) + 3:.1f}" y="{top + 12}" fill="#c0392b">'
                           f'R{e["number"]} {e["signal"]}</text>')
        points = " ".join(f"{x(m):.1f},{y(v):.1f}" for m, v in zip(minutes, values))
        svg.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        svg.append(f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{h}" fill="none" stroke="black"/>')
        svg.append(f'<text transform="translate(16 {top + h / 2}) rotate(-90)" text-anchor="middle">'
                   f'{escape(label)}</text>')
        top += h + GAP
    top -= GAP
    svg.append(f'<text x="{LEFT + plot_w / 2}" y="{top + 34}" text-anchor="middle">minutes since the operator started'
               f' (sampled every {meta["settings"]["sample_seconds"]:g} s)</text>')
    svg.append(f'<text x="{LEFT}" y="{top + 54}" fill="#555555">grey band: warm-up; red dashed: an apiserver '
               f'restart begins (SIGTERM or SIGKILL); grey dotted: etcd compaction; black: churn stops</text>')
    svg.append("</svg>")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(svg) + "\n")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    results = sys.argv[1]
    draw(results, sys.argv[2] if len(sys.argv) == 3 else os.path.join(results, "summary.svg"))


if __name__ == "__main__":
    main()
