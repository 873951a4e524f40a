#!/usr/bin/env bash
# Work queue throughput side by side in one run: the crate's `WorkQueue`
# (criterion bench `queue`) and client-go's work queue (Go benchmarks in
# conformance/go/internal/workqueuebench), same three shapes over the same
# 10,000 keys, each next to its language's channel floor. The two alternate
# for ROUNDS rounds (default 3) so that load on a shared machine falls on
# both alike; prints one table of per-iteration times (median over rounds,
# with the range) and the ratios of the medians.
#
# Run: bash benches/queue_vs_client_go.sh   (needs cargo and go; ~8 min)
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d "${TMPDIR:-/tmp}/queue-vs-client-go.XXXXXX")"
trap 'rm -rf "$out"' EXIT

rounds="${ROUNDS:-3}"
cargo bench --bench queue --no-run >/dev/null 2>&1
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for _ in $(seq "$rounds"); do
  cargo bench --bench queue -- --warm-up-time 1 --measurement-time 3 --noplot >>"$out/rust.txt" 2>&1
  (cd conformance/go && go test -run '^$' -bench . -benchtime 2s -count 1 ./internal/workqueuebench/) >>"$out/go.txt" 2>&1
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$out/rust.txt" "$out/go.txt" <<'PY'
import re, statistics, sys

UNITS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}
rust = {}
name = None
for line in open(sys.argv[1]):
    m = re.match(r"^(workqueue/\S+)", line)
    if m:
        name = m.group(1)
    m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
    if m and name:
        rust.setdefault(name, []).append(float(m.group(1)) * UNITS[m.group(2)])
        name = None
go = {}
for line in open(sys.argv[2]):
    m = re.match(r"^Benchmark(\w+?)-\d+\s+\d+\s+([\d.]+) ns/op", line)
    if m:
        go.setdefault(m.group(1), []).append(float(m.group(2)) / 1e6)

def median(samples, key):
    return statistics.median(samples[key])

def cell(samples, key):
    v = samples[key]
    return f"{statistics.median(v):.2f} ({min(v):.2f}–{max(v):.2f})"

print(f"rounds: {len(rust['workqueue/batch/work_queue'])}; median (min–max) per iteration")
print("| shape | WorkQueue (ms) | client-go plain queue (ms) | client-go rate-limiting queue (ms) | mpsc floor (ms) | Go channel floor (ms) | client-go plain / WorkQueue | client-go rate-limiting / WorkQueue | WorkQueue / mpsc |")
print("|---|---|---|---|---|---|---|---|---|")
for shape, go_name in [("batch", "Batch"), ("interleaved", "Interleaved"), ("dedup", "Dedup")]:
    keys = {
        "ours": (rust, f"workqueue/{shape}/work_queue"),
        "floor": (rust, f"workqueue/{shape}/mpsc_floor"),
        "plain": (go, f"{go_name}Plain"),
        "limiting": (go, f"{go_name}RateLimiting"),
        "channel": (go, f"{go_name}Channel"),
    }
    m = {k: median(*v) for k, v in keys.items()}
    c = {k: cell(*v) for k, v in keys.items()}
    print(f"| {shape} | {c['ours']} | {c['plain']} | {c['limiting']} | {c['floor']} | {c['channel']} "
          f"| {m['plain'] / m['ours']:.2f}× | {m['limiting'] / m['ours']:.2f}× | {m['ours'] / m['floor']:.1f}× |")
PY
