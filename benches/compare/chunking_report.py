"""Medians of chunking.sh's runs and their ratios to kube-runtime's, as a
Markdown table: one row per (chunking, subscribers, allocator, runner)."""

import json
import statistics
import sys
from collections import defaultdict

MIB = 2**20
ORDER = {"ours": 0, "ours-before": 1, "kube-runtime": 2, "floor": 3, "transport": 4}


def main(path):
    runs = [json.loads(line) for line in open(path) if line.strip()]
    groups = defaultdict(list)
    for run in runs:
        key = (run.get("chunking", "?"), run["subscribers"], run.get("allocator", "?"), run["runner"])
        groups[key].append(run)

    def med(key, field):
        return statistics.median(field(run) for run in groups[key])

    print("| chunking | S | allocator | runner | runs | watch CPU µs/event (× kube-runtime) "
          "| system µs/event | events/s to quiescence (×) | initial sync s (×) | peak RSS MiB (×) |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], ORDER.get(k[3], 9))):
        chunking, subscribers, allocator, runner = key
        peer = (chunking, subscribers, allocator, "kube-runtime")

        def cell(field, fmt):
            value = med(key, field)
            if runner == "kube-runtime" or peer not in groups:
                return fmt.format(value)
            return (fmt + " ({:.2f}×)").format(value, value / med(peer, field))

        events = lambda run: run["events"]
        print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            chunking, subscribers, allocator, runner, len(groups[key]),
            cell(lambda r: r["watch_cpu_us_per_event"], "{:.0f}"),
            cell(lambda r: r["system_seconds"] / events(r) * 1e6, "{:.0f}"),
            cell(lambda r: r["events_per_second"], "{:,.0f}"),
            cell(lambda r: r["sync_seconds"], "{:.2f}"),
            cell(lambda r: r["peak_rss"] / MIB, "{:,.0f}"),
        ))


if __name__ == "__main__":
    main(sys.argv[1])
