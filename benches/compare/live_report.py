"""Medians of live.sh's runs and their ratios to kube-runtime's, as a
Markdown table: one row per (rate, runner).

    python3 benches/compare/live_report.py results/live.jsonl [results/live-meta.json]
"""

import json
import statistics
import sys
from collections import defaultdict

MIB = 2**20
ORDER = {"ours": 0, "kube-runtime": 1, "client-go": 2, "client-go-protobuf": 3}
NAMES = {"ours": "kube-informer", "kube-runtime": "kube-runtime", "client-go": "client-go (JSON)",
         "client-go-protobuf": "client-go (protobuf)"}


def main(path, meta_path=None):
    runs = [json.loads(line) for line in open(path) if line.strip()]
    groups = defaultdict(list)
    for run in runs:
        groups[(run["rate"], run["runner"])].append(run)

    def med(key, field):
        return statistics.median(field(run) for run in groups[key])

    print("| rate (updates/s asked; achieved) | runner | runs | CPU µs/event (× kube-runtime) "
          "| system µs/event | peak RSS MiB |")
    print("|---:|---|---:|---:|---:|---:|")
    for key in sorted(groups, key=lambda k: (k[0], ORDER.get(k[1], 9))):
        rate, runner = key
        peer = (rate, "kube-runtime")
        cpu = med(key, lambda r: r["watch_cpu_us_per_event"])
        ratio = "" if runner == "kube-runtime" or peer not in groups else " ({:.2f}×)".format(
            cpu / med(peer, lambda r: r["watch_cpu_us_per_event"]))
        achieved = med(key, lambda r: r["writer"]["rate_achieved"])
        print("| {} ({:.0f}) | {} | {} | {:.0f}{} | {:.0f} | {:.0f} |".format(
            rate, achieved, NAMES.get(runner, runner), len(groups[key]), cpu, ratio,
            med(key, lambda r: r["system_us_per_event"]),
            med(key, lambda r: r["peak_rss"] / MIB),
        ))
    if meta_path:
        meta = json.load(open(meta_path))
        print()
        print("N = {objects} Pods ({mean:,.0f} bytes of JSON each), U = rate × {seconds} s, "
              "{repeats} runs, S = {subscribers}; load average {before} at the start, {after} at the end; "
              "kube-apiserver {apiserver}, etcd {etcd}, kube-runtime {kr}, client-go {cg}; "
              "{date}–{date_end} at {commit}.".format(
                  objects=meta["objects"], mean=meta["created"]["mean_pod_bytes"],
                  seconds=meta["seconds_per_run"], repeats=meta["repeats"],
                  subscribers=meta["subscribers"], before=meta["load_before"], after=meta["load_after"],
                  apiserver=meta["kube_apiserver"], etcd=meta["etcd"], kr=meta["kube_runtime"],
                  cg=meta["client_go"], date=meta["date"], date_end=meta["date_end"],
                  commit=meta["commit"][:7]))


if __name__ == "__main__":
    main(*sys.argv[1:3])
