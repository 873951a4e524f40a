#!/usr/bin/env bash
# A soak of the mirror operator (examples/operator) against a real etcd and
# kube-apiserver on loopback: a steady churn of its sources, copies and
# target namespaces, an apiserver restart every 5 minutes, etcd compactions
# every 3, the operator's memory, connections, errors and reconciles
# sampled throughout, and at the end a check that the copies are exactly
# what the sources and namespaces ask for. Not part of CI; RELIABILITY.md
# has what it found.
#
#   bash scripts/soak/run.sh                  # 30 minutes of churn
#   SOAK_MINUTES=3 bash scripts/soak/run.sh   # a short try
#   SOAK_TAG=name bash scripts/soak/run.sh    # results under results/name
#
# Settings are soak.py's (SOAK_MINUTES, SOAK_RATE, SOAK_RESTART_EVERY,
# SOAK_COMPACT_EVERY, SOAK_SAMPLE_SECONDS, SOAK_SEED, SOAK_OPERATOR_RESYNC);
# RUST_LOG, when set, replaces the operator's log filter
# (warn,kube_informer=info).
#
# Steps: build the operator (--all-features, dev profile), start a private
# cluster with e2e/cluster.sh run (its own state directory, stopped at the
# end, also on ^C), run soak.py in it, then report.py (the figures, to
# summary.json and stdout) and plot.py (summary.svg). The exit status is
# soak.py's: 0 when the end check held.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tag="${SOAK_TAG:-$(date -u +%Y%m%dT%H%M%SZ)}"
results="$here/results/$tag"
mkdir -p "$results"

echo "soak: building the operator" >&2
(cd "$repo" && nice -n 5 cargo build --all-features --example operator --message-format short)
operator="$repo/target/debug/examples/operator"

# The watch-cache-less second apiserver is of no use here: one less process
# on a shared machine.
status=0
(cd "$repo" && KUBE_INFORMER_E2E_NOCACHE_APISERVER=0 \
  bash e2e/cluster.sh run -- python3 "$here/soak.py" "$operator" "$results") || status=$?

python3 "$here/report.py" "$results" || status=$((status ? status : 3))
python3 "$here/plot.py" "$results" || status=$((status ? status : 3))
echo "soak: results in $results (exit $status)" >&2
exit "$status"
