"""The tables of one wire pass for the lab notes: every runner's medians,
the relist and peak-memory tables, the projection target and the profile
buckets, from the JSON lines of `run.sh --wire` (and `--wire-profile`).

    python3 benches/compare/wire_report.py results/wire-TAG.jsonl [--profile results/wire-profile.json]

headline.py builds BENCHMARKS.md's headline from the same files with
`load`, `group` and `figures`.
"""

import json
import statistics
from collections import defaultdict

LABELS = {
    "ours": "kube-informer",
    "ours-protobuf": "kube-informer, protobuf",
    "kube-runtime": "kube-runtime shared",
    "client-go": "client-go",
    "ours-projection": "kube-informer projection (metadata + nodeName + phase)",
    "ours-compact": "kube-informer, compact cache",
    "ours-projection-compact": "kube-informer projection, compact cache",
    "client-go-protobuf": "client-go, protobuf",
    "client-go-metadata": "client-go metadata informer (protobuf)",
    "floor": "floor: a minimal informer on kube's Api::watch",
    "transport": "transport: the watch body read, nothing decoded",
}
# Every runner the flavours table shows, in its order: what each caches and
# how it reads the wire.
FLAVOURS = [
    "client-go",
    "client-go-protobuf",
    "client-go-metadata",
    "ours",
    "ours-protobuf",
    "ours-projection",
    "ours-compact",
    "ours-projection-compact",
    "kube-runtime",
]
MIB = 2**20


def order_of(runner):
    """Where a runner's rows go: the known runners in their order, then the rest."""
    return FLAVOURS.index(runner) if runner in FLAVOURS else len(FLAVOURS)


def load(path):
    with open(path) as lines:
        return [json.loads(line) for line in lines if line.strip()]


def group(runs):
    """(runner, variant, strip, subscribers) -> runs."""
    groups = defaultdict(list)
    for run in runs:
        groups[(run["runner"], run["variant"], run["strip"], run["subscribers"])].append(run)
    return groups


def median(runs, field):
    values = [field(run) for run in runs]
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


FIGURES = {
    "eps": lambda run: run["events_per_second"],
    "seconds": lambda run: run["seconds"],
    "cpu_us": lambda run: run["cpu_us_per_event"],
    "sync": lambda run: run["sync_seconds"],
    "rss_sync": lambda run: run["rss_after_sync"],
    "per_pod": lambda run: run["bytes_per_object"],
    "peak": lambda run: run["peak_rss"],
    "load": lambda run: float(run.get("load_average", "nan").split()[0]) if run.get("load_average") else None,
    "store": lambda run: run["rss_after_sync"] - run["rss_before"],
    "relist_peak": lambda run: run["peak_rss"] - run["rss_before"],
}


def figures(runs):
    return {name: median(runs, field) for name, field in FIGURES.items()}


def relist_table(groups):
    rows = [
        "| runner | strip managedFields | store: RSS after sync − before (MiB) | relist peak − before (MiB) "
        "| relist peak ÷ store | RSS after sync (MiB) | relist peak RSS (MiB) | relist time (s) | load (1 min) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    runners = sorted({runner for (runner, variant, _, _) in groups if variant == "relist"}, key=order_of)
    for strip in [False, True]:
        for runner in runners:
            runs = groups.get((runner, "relist", strip, 1), [])
            if not runs:
                continue
            found = figures(runs)
            rows.append(
                f"| {LABELS.get(runner, runner)} | {'yes' if strip else 'no'} | {found['store'] / MIB:,.0f} "
                f"| {found['relist_peak'] / MIB:,.0f} | {found['relist_peak'] / found['store']:.2f}× "
                f"| {found['rss_sync'] / MIB:,.0f} | {found['peak'] / MIB:,.0f} | {found['seconds']:.2f} "
                f"| {found['load']:.1f} |"
            )
    if len(rows) == 2:
        return "No relist runs in this pass."
    return "\n".join(rows)


def peak_table(groups):
    """What the largest sampled RSS of each burst was made of."""
    rows = [
        "| runner | S | strip | RSS after sync (MiB) | largest sampled RSS (MiB) | at (s after start) "
        "| heap in use then (MiB) | free heap kept by the allocator then (MiB) | largest subscriber queue |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (runner, variant, strip, subscribers), runs in sorted(groups.items(), key=lambda item: (item[0][3], item[0][2], order_of(item[0][0]))):
        if variant != "burst":
            continue
        # The run with the median peak, so the columns belong together.
        runs = sorted(runs, key=lambda run: run["peak_rss"])
        run = runs[(len(runs) - 1) // 2]
        sample = run.get("peak_sample") or {}
        pending = run.get("most_pending")
        rows.append(
            f"| {LABELS.get(runner, runner)} | {subscribers} | {'yes' if strip else 'no'} | {run['rss_after_sync'] / MIB:,.0f} "
            f"| {sample.get('rss', 0) / MIB:,.0f} | {sample.get('at_seconds', 0):.1f} "
            f"| {sample.get('heap_in_use', 0) / MIB:,.0f} | {sample.get('heap_free_kept', 0) / MIB:,.0f} "
            f"| {'–' if pending is None else f'{pending:,}'} |"
        )
    return "\n".join(rows)


def verdict(met):
    return "**met**" if met else "**missed**"


def flavours_table(runs):
    """One row per runner, strip setting and subscriber count (bursts): the
    figures a side measurement of several runners in the same passes
    compares, with the median 1-minute load of its runs."""
    groups = group(runs)
    rows = [
        "| runner | S | strip managedFields | RSS per cached Pod (bytes) | initial sync (s) | events/s to quiescence "
        "| CPU µs per event | peak RSS (MiB) | runs | load (1 min, median) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = sorted(
        {(s, strip) for (_, variant, strip, s) in groups if variant == "burst"},
    )
    for subscribers, strip in keys:
        for runner in FLAVOURS + sorted({r for (r, *_rest) in groups} - set(FLAVOURS)):
            found_runs = groups.get((runner, "burst", strip, subscribers))
            if not found_runs:
                continue
            found = figures(found_runs)
            load = f"{found['load']:.1f}" if found["load"] is not None else "–"
            rows.append(
                f"| {LABELS.get(runner, runner)} | {subscribers} | {'yes' if strip else 'no'} | {found['per_pod']:,.0f} "
                f"| {found['sync']:.2f} | {found['eps']:,.0f} | {found['cpu_us']:.0f} | {found['peak'] / MIB:,.0f} "
                f"| {len(found_runs)} | {load} |"
            )
    return "\n".join(rows)


def projection_target(runs):
    """The target: kube-informer's projection caches a Pod in no more RSS
    than client-go's metadata-only informer, same strip setting, same run."""
    groups = group(runs)
    lines = ["| target | S | strip | figure | verdict |", "|---|---:|---|---|---|"]
    for (runner, variant, strip, subscribers), mine in sorted(groups.items(), key=lambda item: (item[0][3], item[0][2])):
        if runner != "ours-projection" or variant != "burst":
            continue
        theirs = groups.get(("client-go-metadata", "burst", strip, subscribers))
        if not theirs:
            continue
        a, b = figures(mine)["per_pod"], figures(theirs)["per_pod"]
        lines.append(
            f"| RSS per cached Pod, projection (metadata + 2 fields) ≤ client-go's metadata-only informer | {subscribers} "
            f"| {'yes' if strip else 'no'} | {a:,.0f} vs {b:,.0f} bytes: {a / b:.2f}× | {verdict(a <= b)} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""


def profile_section(profile):
    if not profile:
        return ["Not profiled in this run (`bash benches/compare/run.sh --wire-profile`).", ""]
    buckets = profile["buckets"]
    runners = sorted(profile["runners"], key=order_of)
    lines = [
        f"Tool: {profile['tool']}. {profile['why']}",
        "",
        f"One burst run per runner (N = {profile['objects']:,}, S = 4, no strip), the whole process, "
        "self time per symbol sorted into buckets by symbol and library (benches/compare/perf_buckets.py has the rules).",
        "",
        "| where the CPU time goes | " + " | ".join(LABELS.get(r, r) for r in runners) + " |",
        "|---|" + "---:|" * len(runners),
    ]
    for bucket in buckets:
        lines.append(
            f"| {bucket} | " + " | ".join(f"{profile['runners'][r]['buckets'].get(bucket, 0):.1f}%" for r in runners) + " |"
        )
    lines.append("| samples | " + " | ".join(f"{profile['runners'][r]['samples']:,}" for r in runners) + " |")
    lines.append("")
    for runner in runners:
        top = profile["runners"][runner]["top"]
        lines.append(f"- {LABELS.get(runner, runner)}, top symbols: " + "; ".join(f"`{name}` {share:.1f}%" for name, share in top))
    lines.append("")
    return lines


def main():
    import argparse

    parser = argparse.ArgumentParser(description="The tables of one wire pass, as Markdown.")
    parser.add_argument("results", help="results/wire-TAG.jsonl")
    parser.add_argument("--profile", help="results/wire-profile.json from run.sh --wire-profile")
    args = parser.parse_args()
    found = load(args.results)
    if not found:
        raise SystemExit(f"{args.results} has no runs")
    groups = group(found)
    parts = [
        "### Bursts", "", flavours_table(found), "",
        "### Relist peak (410 on the watch, then a full list of N), S = 1", "", relist_table(groups), "",
        "### What the peak is made of (bursts)", "", peak_table(groups), "",
    ]
    target = projection_target(found)
    if target:
        parts += [target, ""]
    if args.profile:
        with open(args.profile) as profile:
            parts += ["### Where the CPU time goes", ""] + profile_section(json.load(profile))
    print("\n".join(parts))


if __name__ == "__main__":
    main()
