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

    # A pass is one (repeat, rate): every runner once, back to back, so the
    # ratio within a pass compares runs made under about the same load.
    by_pass = {(run["repeat"], run["rate"], run["runner"]): run["watch_cpu_us_per_event"] for run in runs}

    def pass_ratios(rate, runner):
        ratios = []
        for (repeat, pass_rate, name), cpu in sorted(by_pass.items()):
            peer = by_pass.get((repeat, pass_rate, "kube-runtime"))
            if name == runner and pass_rate == rate and peer:
                ratios.append("{:.2f}".format(cpu / peer))
        return ", ".join(ratios)

    print("| rate (updates/s asked; achieved) | runner | runs | CPU µs/event (× kube-runtime) "
          "| range | same-pass ratios to kube-runtime | system µs/event | peak RSS MiB |")
    print("|---:|---|---:|---:|---:|---|---:|---:|")
    for key in sorted(groups, key=lambda k: (k[0], ORDER.get(k[1], 9))):
        rate, runner = key
        peer = (rate, "kube-runtime")
        cpu = med(key, lambda r: r["watch_cpu_us_per_event"])
        ratio = "" if runner == "kube-runtime" or peer not in groups else " ({:.2f}×)".format(
            cpu / med(peer, lambda r: r["watch_cpu_us_per_event"]))
        achieved = med(key, lambda r: r["writer"]["rate_achieved"])
        cpus = [r["watch_cpu_us_per_event"] for r in groups[key]]
        print("| {} ({:.0f}) | {} | {} | {:.0f}{} | {:.0f}–{:.0f} | {} | {:.0f} | {:.0f} |".format(
            rate, achieved, NAMES.get(runner, runner), len(groups[key]), cpu, ratio,
            min(cpus), max(cpus), "" if runner == "kube-runtime" else pass_ratios(rate, runner),
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
