"""Turns the in-memory runners' JSON lines into a Markdown page and a PNG
plot (the wire harness has its own: headline.py for BENCHMARKS.md,
wire_report.py for the lab notes).

Called by run.sh, which writes the page to target/compare/in-memory-MODE.md;
can be rerun on a saved results file:
    python report.py --results R.jsonl --meta M.json --markdown OUT.md --plot OUT.png
"""

import argparse
import json
import os
import statistics
from collections import defaultdict

RUNNERS = ["ours", "ours-coalesce", "kube-runtime", "client-go", "floor"]
LABELS = {
    "ours": "(a) kube-informer",
    "ours-coalesce": "(a) kube-informer, slow one on Lag::Coalesce",
    "kube-runtime": "(b) kube-runtime shared store",
    "client-go": "(c) client-go informer",
    "floor": "(d) floor",
}


def mib(value):
    return f"{value / 2**20:,.0f}"


def ratio(value, reference):
    return f"{value / reference:.2f}×" if reference else "–"


def load(path):
    with open(path) as lines:
        return [json.loads(line) for line in lines if line.strip()]


def medians(runs):
    """One run per configuration: the one with the median time, carrying the
    number of runs and the fastest and slowest events/s seen."""
    groups = defaultdict(list)
    for run in runs:
        key = (run["runner"], run["objects"], run["updates"], run["subscribers"], run["slow"])
        groups[key].append(run)
    chosen = []
    for group in groups.values():
        group.sort(key=lambda run: run["seconds"])
        median = dict(group[(len(group) - 1) // 2])
        median["repeats"] = len(group)
        median["eps_min"] = min(run["events_per_second"] for run in group)
        median["eps_max"] = max(run["events_per_second"] for run in group)
        chosen.append(median)
    return chosen


def throughput_table(runs, objects):
    rows = [
        "| S | runner | events/s (median) | spread over runs | time (s) | vs client-go | vs floor "
        "| notifications per subscriber | peak RSS (MiB) | peak − before (MiB) | bytes per cached object |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    by_s = defaultdict(dict)
    for run in runs:
        if run["objects"] == objects and not run["slow"] and run["updates"] == 2 * objects:
            by_s[run["subscribers"]][run["runner"]] = run
    for subscribers in sorted(by_s):
        group = by_s[subscribers]
        go = group.get("client-go", {}).get("events_per_second")
        floor = group.get("floor", {}).get("events_per_second")
        for runner in RUNNERS:
            run = group.get(runner)
            if not run:
                continue
            eps = run["events_per_second"]
            per_object = run["bytes_per_object"]
            rows.append(
                f"| {subscribers} | {LABELS[runner]} | {eps:,.0f} "
                f"| {run['eps_min']:,.0f}–{run['eps_max']:,.0f} ({run['repeats']} runs) | {run['seconds']:.3f} "
                f"| {ratio(eps, go)} | {ratio(eps, floor)} | {run['deliveries_per_subscriber']:,} "
                f"| {mib(run['peak_rss'])} | {mib(run['peak_rss'] - run['rss_before'])} | {per_object:,.0f} |"
            )
    return "\n".join(rows)


def slow_pairs(runs):
    """(runner, updates) -> (run without the slow subscriber, run with it)."""
    pairs = defaultdict(dict)
    for run in runs:
        if run["subscribers"] != 4 or run["objects"] != 10000:
            continue
        pairs[(run["runner"], run["updates"])]["slow" if run["slow"] else "normal"] = run
        # Without a slow subscriber nobody lags, so the lag policy changes
        # nothing: the Coalesce variant's baseline is runner (a)'s own run.
        if run["runner"] == "ours" and not run["slow"]:
            pairs[("ours-coalesce", run["updates"])]["normal"] = run
    return {key: (pair["normal"], pair["slow"]) for key, pair in pairs.items() if len(pair) == 2}


def queued(run):
    value = run.get("slow_queued")
    return "–" if value is None else f"{value:,}"


def slow_table(pairs):
    rows = [
        "| U | runner | others' time without the slow one (s) | others' time with it (s) | delay "
        "| peak − before, with it (MiB) | peak − before, without (MiB) | slow one's backlog when the others finished "
        "| notifications queued for the slow one then |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (runner, updates) in sorted(pairs, key=lambda key: (key[1], RUNNERS.index(key[0]))):
        normal, slow = pairs[(runner, updates)]
        rows.append(
            f"| {updates:,} | {LABELS[runner]} | {normal['seconds']:.3f} | {slow['seconds']:.3f} "
            f"| {slow['seconds'] / normal['seconds']:.1f}× | {mib(slow['peak_rss'] - slow['rss_before'])} "
            f"| {mib(normal['peak_rss'] - normal['rss_before'])} | {slow['slow_backlog']:,} "
            f"| {queued(slow)} |"
        )
    return "\n".join(rows)


def plot(runs, pairs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({run["objects"] for run in runs if not run["slow"] and run["updates"] == 2 * run["objects"]})
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for objects, style in zip(sizes, ["-o", "--s"]):
        for runner in RUNNERS:
            points = sorted(
                (run["subscribers"], run["events_per_second"])
                for run in runs
                if run["runner"] == runner
                and run["objects"] == objects
                and not run["slow"]
                and run["updates"] == 2 * objects
            )
            if points:
                xs, ys = zip(*points)
                left.plot(xs, ys, style, label=f"{LABELS[runner]}, N={objects:,}", color=f"C{RUNNERS.index(runner)}")
    left.set_xscale("log", base=2)
    left.set_xticks([1, 4, 16], ["1", "4", "16"])
    left.set_xlabel("subscribers S")
    left.set_ylabel("events/s to quiescence")
    left.set_title("Throughput (U = 2N, 10% deleted)")
    left.grid(alpha=0.3)
    left.legend(fontsize=7)

    for runner in RUNNERS:
        points = sorted((updates, (slow["peak_rss"] - slow["rss_before"]) / 2**20) for (name, updates), (_, slow) in pairs.items() if name == runner)
        if points:
            xs, ys = zip(*points)
            right.plot(xs, ys, "-o", label=LABELS[runner], color=f"C{RUNNERS.index(runner)}")
    right.set_xlabel("updates U (N = 10,000, S = 4, one subscriber sleeps 1 ms)")
    right.set_ylabel("peak RSS − RSS before the run (MiB)")
    right.set_title("Slow variant: peak memory as U grows")
    right.grid(alpha=0.3)
    right.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def apiserver_section(runs):
    parts = ["## Against a real kube-apiserver", ""]
    if not runs:
        parts += [
            "Not measured in this run: the e2e harness's etcd and kube-apiserver were not cached "
            "(build them with `bash e2e/build.sh`), or the cluster did not start.",
            "",
        ]
        return "\n".join(parts)
    first = runs[0]
    parts += [
        f"One throwaway cluster from `e2e/cluster.sh` (etcd and kube-apiserver on loopback, "
        f"sharing the 2 cores with the programs). Each run: a fresh namespace, an informer on "
        f"its ConfigMaps with {first['subscribers']} subscribers, synced; then the clock starts, "
        f"{first['objects']:,} small ConfigMaps are created with {first['creates_in_flight']} "
        "requests in flight, and it stops when every subscriber has been told about all of them. "
        "Runs alternate between the two programs; the table shows medians (and the spread). "
        "The API server's create rate bounds both; *lag after the last create* is the time "
        "between the last create's response and the last subscriber's notification.",
        "",
        "| runner | runs | time to all seen (s) | creates alone (s) | lag after the last create (µs) |",
        "|---|---:|---:|---:|---:|",
    ]
    for runner in ["ours", "client-go"]:
        mine = [run for run in runs if run["runner"] == runner]
        if not mine:
            continue
        total = [run["seconds"] for run in mine]
        create = [run["create_seconds"] for run in mine]
        lag = [run["lag_after_last_create_seconds"] * 1e6 for run in mine]
        parts.append(
            f"| {LABELS[runner]} | {len(mine)} | {statistics.median(total):.3f} ({min(total):.3f}–{max(total):.3f}) "
            f"| {statistics.median(create):.3f} | {statistics.median(lag):,.0f} ({min(lag):,.0f}–{max(lag):,.0f}) |"
        )
    parts.append("")
    return "\n".join(parts)


def verdict(met):
    return "**met**" if met else "**missed**"


def targets(runs, pairs, sizes):
    """The in-memory harness's targets for runner (a), each met or missed
    with its figure. What holds a missed target back is written by hand in
    NOTES.md ("What holds the missed targets back"), from profiles."""
    lines = [
        "Computed from the tables above (median runs). Throughput targets use S = 4.",
        "",
        "| target | N | figure | verdict |",
        "|---|---:|---|---|",
    ]
    find = {(r["runner"], r["objects"], r["subscribers"]): r for r in runs if not r["slow"] and r["updates"] == 2 * r["objects"]}
    for objects in sizes:
        ours = find.get(("ours", objects, 4))
        if not ours:
            continue
        eps = ours["events_per_second"]
        for other, factor, text in [("kube-runtime", 5, "≥ 5× kube-runtime's events/s"), ("client-go", 3, "≥ 3× client-go's events/s")]:
            run = find.get((other, objects, 4))
            if run:
                got = eps / run["events_per_second"]
                lines.append(f"| {text} | {objects:,} | {eps:,.0f} vs {run['events_per_second']:,.0f}: {got:.2f}× | {verdict(got >= factor)} |")
        floor = find.get(("floor", objects, 4))
        if floor:
            got = floor["seconds"] / ours["seconds"] * ours["events"] / floor["events"]
            lines.append(
                f"| no more than 3× the floor's time (events/s ≥ floor / 3) | {objects:,} | {eps:,.0f} vs floor {floor['events_per_second']:,.0f}: "
                f"{floor['events_per_second'] / eps:.2f}× the floor's time | {verdict(eps >= floor['events_per_second'] / 3)} |"
            )
        per_object = ours["bytes_per_object"]
        lines.append(f"| store overhead ≤ 150 bytes per cached object | {objects:,} | {per_object:,.0f} bytes (floor's map alone: {floor['bytes_per_object']:,.0f}) | {verdict(per_object <= 150)} |" if floor else f"| store overhead ≤ 150 bytes per cached object | {objects:,} | {per_object:,.0f} bytes | {verdict(per_object <= 150)} |")
    for updates in sorted({u for (name, u) in pairs if name == "ours"}):
        normal, slow = pairs[("ours", updates)]
        delay = slow["seconds"] / normal["seconds"]
        lines.append(f"| one slow subscriber (Lag::Unbounded): others within 1.1× of their time without it | 10,000, U = {updates:,} | {slow['seconds']:.3f} s vs {normal['seconds']:.3f} s: {delay:.2f}× | {verdict(delay <= 1.1)} |")
    coalesce = sorted((u, pair[1]) for (name, u), pair in pairs.items() if name == "ours-coalesce")
    unbounded = dict((u, pair[1]) for (name, u), pair in pairs.items() if name == "ours")
    if len(coalesce) >= 2 and all(run.get("slow_queued") is not None for _, run in coalesce):
        figure = "; ".join(
            f"U = {u:,}: {run['slow_queued']:,} queued"
            + (f" (Lag::Unbounded: {unbounded[u]['slow_queued']:,})" if unbounded.get(u, {}).get("slow_queued") is not None else "")
            for u, run in coalesce
        )
        keys = coalesce[0][1]["objects"]
        first, last = coalesce[0][1]["slow_queued"], coalesce[-1][1]["slow_queued"]
        # Flat: bounded by two per key whatever U, and not growing with U
        # beyond noise (a tenth of the key count).
        flat = max(run["slow_queued"] for _, run in coalesce) <= 2 * keys and last - first <= keys / 10
        lines.append(
            f"| Lag::Coalesce: the slow one's pending queue flat as U grows (notifications queued when the others finished) "
            f"| {keys:,} | {figure} | {verdict(flat)} |"
        )
    lines.append("")
    return lines


def markdown(runs, meta, pairs):
    sizes = sorted({run["objects"] for run in runs if not run["slow"] and run["updates"] == 2 * run["objects"]})
    measured = sorted({run["runner"] for run in runs}, key=RUNNERS.index)
    parts = [
        "# The in-memory harness: kube-informer side by side",
        "",
        "Generated by `bash benches/compare/run.sh"
        + (" --quick" if meta["mode"] == "quick" else "")
        + f"` on {meta['date']}. Plot: [benches/compare/plot.png](benches/compare/plot.png).",
        "",
        "## Machine and versions",
        "",
        f"- CPU: {meta['cpu']}, {meta['nproc']} cores; memory {meta['memory']}; Linux {meta['kernel']}",
        f"- Load average (1, 5, 15 min) before the runs: {meta['load_before']}; after: {meta['load_after']}. "
        "A load above the core count means other work shared the CPU and the figures are noisy.",
        f"- {meta['rustc']}; Go {meta['go']}",
        f"- kube-runtime {meta['kube_runtime']} (feature `unstable-runtime-subscribe`); client-go {meta['client_go']}",
        f"- Runners measured: {', '.join(LABELS[r] for r in measured)}",
    ]
    for note in meta.get("notes", []):
        parts.append(f"- {note}")
    if meta.get("ours_note"):
        parts.append(f"- **{meta['ours_note']}.** No figures are shown for it; the other runners are measured as usual.")
    parts += [
        "",
        "## Workload",
        "",
        "One file, generated once per (N, U) with a fixed seed and read by every runner "
        "(`kube-informer-compare generate`): N ConfigMaps of about 2.8 KB of JSON each "
        "(5 labels, 3 annotations, 10 data entries, managedFields) in 20 namespaces, delivered "
        "as an initial list; then U `MODIFIED` events on keys drawn uniformly; then `DELETED` "
        "events for 10% of the keys. Every runner decodes the whole file into memory before "
        "its clock starts, so no figure includes JSON decoding.",
        "",
        "Each subscriber counts its notifications and touches the object (reads its "
        "resourceVersion and data size). *Quiescence*: every subscriber has seen everything "
        "it will be told. events/s = (N + U + D) / clocked time. The clock runs over the "
        "initial list up to quiescence, stops while memory is read, then runs over the "
        "updates and deletes up to quiescence. Every run is a fresh process. Runs without a "
        "slow subscriber are repeated; the tables show the run with the median time and the "
        "spread of events/s over the repeats.",
        "",
        "Memory: resident size from `/proc/self/status`. *bytes per cached object* = "
        "(VmRSS after the initial list − VmRSS before it) / N, after handing free pages back "
        "(`malloc_trim` in Rust, `debug.FreeOSMemory` in Go); it counts what a runner adds "
        "on top of the decoded events, which are already in memory. *peak RSS* = VmHWM, "
        "reset just before the clock starts, so it includes the decoded workload; *peak − before* "
        "leaves the workload out. Compare that column across languages: the decoded workload "
        "itself is about twice as large in Rust, because k8s-openapi keeps each managedFields "
        "entry's `fieldsV1` as a `serde_json::Value` tree where Go keeps the raw bytes.",
        "",
        "## Throughput and memory (U = 2N)",
        "",
        "Ratios divide the runner's events/s by client-go's and by the floor's at the same N "
        "and S (above 1× = faster).",
        "",
    ]
    for objects in sizes:
        parts += [f"### N = {objects:,}", "", throughput_table(runs, objects), ""]
    parts += [
        "## Slow subscriber (N = 10,000, S = 4)",
        "",
        "Subscriber 0 sleeps 1 ms after each notification (tokio::time::sleep in Rust, "
        "time.Sleep in Go). The run ends when the other three have seen everything; "
        "*delay* = their time with the slow one / their time in the median run without it. "
        "The slow one's backlog is what it had still to see at that moment. A delay below 1× "
        "is not a mistake: while the slow subscriber holds its backlog, the objects the "
        "updates replace stay alive, so nobody pays for freeing them during the run. Rust "
        "frees a replaced object on the spot (tearing down its maps and strings), and a "
        "profile of the floor's clocked part shows that teardown next to the per-message "
        "cross-thread wake-ups as its main costs.",
        "",
        slow_table(pairs),
        "",
        "## How each runner works, and what its figures mean",
        "",
        "- **(a) kube-informer**: `Informer::builder_from_stream` over a stream of source "
        "events (`ListStart`, `Listed` per list item, `ListDone` with the list's resourceVersion, "
        "then `Modified` / `Deleted`), default options (no indexers, no transform), one "
        "`subscribe(SubscribeOptions::default())` per subscriber drained by its own task. Each "
        "subscriber gets N + U + D notifications. In the slow variant the default "
        "`Lag::Unbounded` gives the slow one its own unbounded queue; the `Lag::Coalesce` row "
        "subscribes the slow one with `Lag::Coalesce` (newest state per key while it lags), so "
        "it is told fewer notifications and its backlog column counts against N + U + D all the same.",
        "- **(b) kube-runtime**: `reflector::store_shared(256)` (256 is the buffer kube-rs's "
        "examples use) written by `WatchStreamExt::reflect_shared` from a stream of "
        "`watcher::Event` (`Init`, `InitApply` per list item, `InitDone`, then `Apply` / "
        "`Delete`), one `ReflectHandle` per subscriber. Its subscribers are told about applied "
        "objects only, so each gets N + U notifications where the others get N + U + D. "
        "The reflector stores a clone of every object (its writer clones the event's object), "
        "which shows in its bytes per cached object. A handle carries a reference and reads "
        "the object from the store when polled; if the object was deleted meanwhile, the "
        "handle returns `Pending` without a wake-up and that subscriber stops for good. The "
        "runner therefore lets every subscriber (the slow one included) drain the updates "
        "before it feeds the deletes; that wait is inside the clock. The broadcast buffer is "
        "bounded, so one slow handle holds the reflector back, and every other subscriber with it.",
        "- **(c) client-go**: `cache.NewSharedIndexInformer` (no indexers, no resync) with "
        "one `ResourceEventHandlerFuncs` per subscriber, fed by a `ListWatch` that returns the "
        "pre-built list and one watch that sends the pre-built events; the run checks that "
        "the reflector listed exactly once. GOMAXPROCS is the core count.",
        "- **(d) floor**: one task puts each event into a `HashMap<String, Arc<ConfigMap>>` "
        "and sends the `Arc` into S unbounded tokio channels, drained by S tasks. No key "
        "queue, no deltas, no replay: what any informer must at least spend on this runtime.",
        "- Rust runners use tokio's multi-thread runtime with as many workers as cores.",
        "",
        "## Targets of the in-memory harness",
        "",
    ]
    parts += targets(runs, pairs, sizes) if "ours" in measured else [
        "Not evaluated: runner (a) was not measured, so none of the targets (≥ 5× kube-runtime, "
        "≥ 3× client-go, ≤ 3× the floor, ≤ 150 bytes of store overhead per object, slow "
        "subscriber delay ≤ 1.1×) can be called met or missed yet."
    ]
    parts.append("")
    return "\n".join(parts)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", required=True)
    parser.add_argument("--meta", required=True)
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--plot", required=True)
    parser.add_argument("--apiserver", help="JSON lines of the real kube-apiserver step, if it ran")
    args = parser.parse_args()
    runs = medians(load(args.results))
    with open(args.meta) as meta_file:
        meta = json.load(meta_file)
    pairs = slow_pairs(runs)
    page = markdown(runs, meta, pairs)
    apiserver_runs = load(args.apiserver) if args.apiserver and os.path.exists(args.apiserver) else []
    page += apiserver_section(apiserver_runs)
    with open(args.markdown, "w") as out:
        out.write(page)
    plot(runs, pairs, args.plot)


if __name__ == "__main__":
    main()
