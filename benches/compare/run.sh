#!/usr/bin/env bash
# Side-by-side benchmark: builds every runner, generates the shared workload,
# runs one runner at a time.
#
#   bash benches/compare/run.sh --headline  # BENCHMARKS.md's pass: every runner, N = 50,000, then
#                                           # the page's table, targets and headline.svg (report.sh);
#                                           # with WIRE_TAG=x, results/wire-x.jsonl and the page untouched
#   bash benches/compare/run.sh --wire      # wire mode, N = 50,000 (WIRE_OBJECTS, WIRE_REPEATS,
#                                           # WIRE_RUNNERS, WIRE_TAG to change; wire.sh)
#   bash benches/compare/run.sh --wire --quick   # wire mode, N = 10,000, one run each
#   bash benches/compare/run.sh --wire-profile   # perf profile of each runner, N = 10,000, S = 4
#   bash benches/compare/run.sh             # in-memory, N = 10,000 and 100,000 (about 17 minutes on 2 cores)
#   bash benches/compare/run.sh --quick     # in-memory, N = 10,000 only, small U (about 5 minutes)
#
# (CPU per event against a real kube-apiserver at a steady update rate is
# live.sh, run on its own: bash benches/compare/live.sh.)
#
# Wire mode starts the loopback server (`kube-informer-compare serve`) and runs
# the runners against it, each in its own process with its own HTTP client;
# the results go to benches/compare/results/wire-TAG.jsonl. --headline runs
# every runner headline.py knows (WIRE_TAG=headline) and regenerates the part
# of BENCHMARKS.md between its markers and benches/compare/headline.svg from
# that one pass. The in-memory page goes to target/compare/in-memory-MODE.md
# with benches/compare/plot.png; NOTES.md keeps what was learnt from it.
#
# Runners: (a) kube-informer's Informer (`ours`; in the slow variant also
# `ours-coalesce`, the slow subscriber on Lag::Coalesce),
# (b) kube-runtime's shared reflector, (c) client-go's shared informer,
# (d) the floor. Each prints one JSON line; report.py turns them into the page.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
work="$CARGO_TARGET_DIR/compare"
mkdir -p "$work"

mode=full
wire=no
for arg in "$@"; do
  case "$arg" in
    --quick) mode=quick ;;
    --wire) wire=yes ;;
    --wire-profile) wire=profile ;;
    --headline) wire=headline ;;
    *) echo "usage: bash benches/compare/run.sh [--quick] [--wire | --wire-profile | --headline]" >&2; exit 2 ;;
  esac
done
if [[ $wire == headline ]]; then
  # One pass with every runner the page shows, then the page from it. With
  # another WIRE_TAG it is a trial of the pipeline: the headline is printed
  # and the page is left as it is.
  tag="${WIRE_TAG:-headline}"
  WIRE_TAG="$tag" WIRE_RUNNERS="$(cd "$here" && python3 -c 'import headline; print(" ".join(headline.RUNNERS))')" \
    bash "$here/wire.sh" yes "$mode"
  if [[ $tag == headline ]]; then
    exec bash "$here/report.sh" headline
  fi
  exec python3 "$here/headline.py" "$here/results/wire-$tag.jsonl" "$here/results/wire-meta-$tag.json"
fi
if [[ $wire != no ]]; then
  exec bash "$here/wire.sh" "$wire" "$mode"
fi

if [[ $mode == quick ]]; then
  sizes=(10000)
  slow_updates=(5000 10000 20000)
else
  sizes=(10000 100000)
  slow_updates=(10000 20000 40000)
fi
subscriber_counts=(1 4 16)
# Runs without a slow subscriber last a second or less, so each is repeated
# and report.py keeps the median: one run on a shared machine says little.
repeats=3
slow_objects=10000
slow_subscribers=4
seed=1

# ---- build -----------------------------------------------------------------
echo "== building the Rust runners (release)"
cargo build --release -p kube-informer-compare
rust_bin="$CARGO_TARGET_DIR/release/kube-informer-compare"

echo "== building the client-go runner"
(cd "$here/go" && go build -o "$work/client-go-runner" .)
go_bin="$work/client-go-runner"

# ---- workloads -------------------------------------------------------------
workload() { # objects updates -> path (generated once; the seed makes it reproducible)
  local path="$work/workload-n$1-u$2-seed$seed.jsonl"
  if [[ ! -s $path ]]; then
    echo "== generating $path" >&2
    "$rust_bin" generate --objects "$1" --updates "$2" --seed "$seed" --out "$path.tmp"
    mv "$path.tmp" "$path"
  fi
  echo "$path"
}

# ---- runs ------------------------------------------------------------------
results="$work/results-$mode.jsonl"
: >"$results"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

run_one() { # runner workload subscribers [--slow]
  local runner=$1 file=$2 subscribers=$3 slow=${4:-}
  local line status=0
  echo "-- $runner S=$subscribers ${slow:+slow }$(basename "$file")" >&2
  case $runner in
    ours | ours-coalesce | kube-runtime | floor)
      line="$("$rust_bin" run "$runner" --workload "$file" --subscribers "$subscribers" $slow)" || status=$? ;;
    client-go)
      line="$("$go_bin" -workload "$file" -subscribers "$subscribers" ${slow:+-slow})" || status=$? ;;
  esac
  if [[ $status -ne 0 ]]; then
    echo "   $runner failed (exit $status); no figures recorded" >&2
    return 0
  fi
  echo "$line" >>"$results"
  echo "   $line" >&2
}

runners=(ours kube-runtime client-go floor)

for objects in "${sizes[@]}"; do
  file="$(workload "$objects" $((objects * 2)))"
  for subscribers in "${subscriber_counts[@]}"; do
    for _ in $(seq "$repeats"); do
      for runner in "${runners[@]}"; do
        run_one "$runner" "$file" "$subscribers"
      done
    done
  done
done

# The slow variant: one of S subscribers sleeps 1 ms per notification. Each
# U is also run without the slow subscriber, the baseline for the delay.
for updates in "${slow_updates[@]}"; do
  file="$(workload "$slow_objects" "$updates")"
  for runner in "${runners[@]}"; do
    if [[ $updates -ne $((slow_objects * 2)) ]]; then
      for _ in $(seq "$repeats"); do run_one "$runner" "$file" "$slow_subscribers"; done
    fi
    run_one "$runner" "$file" "$slow_subscribers" --slow
  done
  # Runner (a) again with the slow subscriber on Lag::Coalesce; its baseline
  # is runner (a)'s run without a slow subscriber (nobody lags there).
  run_one ours-coalesce "$file" "$slow_subscribers" --slow
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- real kube-apiserver (optional) ----------------------------------------
# Only when the e2e harness's etcd and kube-apiserver are already built: time
# from creating 2,000 ConfigMaps until all 4 subscribers have seen them, ours
# against client-go, each on a fresh namespace of one throwaway cluster.
apiserver_results="$work/apiserver-$mode.jsonl"
: >"$apiserver_results"
source "$root/e2e/versions.sh"
if [[ -x $KUBE_APISERVER_BIN && -x $ETCD_BIN ]]; then
  echo "== real kube-apiserver: 2,000 ConfigMaps, S = 4"
  KUBE_INFORMER_E2E_NOCACHE_APISERVER=0 bash "$root/e2e/cluster.sh" run -- bash -c '
    for _ in 1 2 3; do
      "$1" apiserver --kubeconfig "$KUBE_INFORMER_E2E_KUBECONFIG" --objects 2000 --subscribers 4 >>"$3" || echo "   ours failed" >&2
      "$2" -apiserver-kubeconfig "$KUBE_INFORMER_E2E_KUBECONFIG" -objects 2000 -subscribers 4 >>"$3" || echo "   client-go failed" >&2
    done' _ "$rust_bin" "$go_bin" "$apiserver_results" || echo "   the cluster run failed; no apiserver figures" >&2
else
  echo "== e2e binaries not cached in $E2E_BIN_DIR: skipping the real kube-apiserver step"
fi

# ---- report ----------------------------------------------------------------
venv="$HOME/.cache/kube-informer/venv"
if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
  echo "== installing matplotlib into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet matplotlib
fi

kube_runtime_version="$(grep -A1 '^name = "kube-runtime"$' "$root/Cargo.lock" | sed -n 's/^version = "\(.*\)"$/\1/p')"
client_go_version="$(awk '$1 == "k8s.io/client-go" {print $2}' "$here/go/go.mod")"
meta="$work/meta-$mode.json"
"$venv/bin/python" - "$meta" <<EOF
import json, sys
json.dump({
    "mode": "$mode",
    "date": "$(date -u +%Y-%m-%dT%H:%MZ)",
    "nproc": "$(nproc)",
    "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')",
    "memory": "$(free -h | awk '/^Mem:/ {print $2}')",
    "kernel": "$(uname -r)",
    "rustc": "$(rustc --version)",
    "go": "$(go version | cut -d' ' -f3)",
    "kube_runtime": "$kube_runtime_version",
    "client_go": "$client_go_version",
    "load_before": "$load_before",
    "load_after": "$load_after",
}, open(sys.argv[1], "w"), indent=1)
EOF

page="$work/in-memory-$mode.md"
"$venv/bin/python" "$here/report.py" \
  --results "$results" --meta "$meta" \
  --markdown "$page" --plot "$here/plot.png" \
  --apiserver "$apiserver_results"
echo "== wrote $page and $here/plot.png"
