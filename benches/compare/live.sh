#!/usr/bin/env bash
# CPU per event against a real kube-apiserver while a writer updates Pods at
# a steady rate: kube-informer, kube-runtime and client-go, one process at a
# time, side by side in the same passes.
#
#   bash benches/compare/live.sh
#
# Brings up the e2e control plane (e2e/cluster.sh: etcd and kube-apiserver,
# built from their Go modules on first use, which takes many minutes), a
# private one for this script only, torn down on exit. The writer
# (`kube-informer-compare live-writer`) creates N Pods (the wire table's
# Pods) in one namespace. Then, for every rate R and every runner, in a
# rotating order: the runner starts (`kube-informer-compare live ours|
# kube-runtime`, `client-go-runner -live [-protobuf]`), lists the N Pods and prints
# READY; the writer then patches the Pods round robin, U = R × LIVE_SECONDS
# patches at R per second; the runner reports the CPU time (user + system,
# getrusage) it spent from READY until it had seen all U events, divided by
# U, and exits. The writer, the apiserver and etcd run on the same machine
# and are not measured.
#
# Settings (environment):
#   LIVE_OBJECTS (N, default 2000)        LIVE_RATES (default "100 200")
#   LIVE_SECONDS (default 30: U = R × 30)  LIVE_REPEATS (default 2)
#   LIVE_SUBSCRIBERS (default 1)          LIVE_IN_FLIGHT (the writer's, default 32)
#   LIVE_RUNNERS (default "ours kube-runtime client-go client-go-protobuf";
#     client-go-protobuf is client-go asking for protobuf, as Kubernetes' own
#     controllers do: the Rust clients speak JSON only, so client-go's JSON
#     row is the like-for-like one, and this row shows what the encoding is worth)
#   LIVE_DEADLINE (seconds since the epoch: no run starts after it)
#   LIVE_SKIP_BUILD=1 runs the binaries already built.
#
# Every run appends one JSON line to benches/compare/results/live.jsonl (the
# runner's figures, the writer's achieved rate, the load average); the
# conditions go to results/live-meta.json, and live_report.py prints the
# medians. When etcd or kube-apiserver cannot be built or started, the script
# says the step was skipped and why, and exits with status 3: no figures.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
work="$CARGO_TARGET_DIR/compare"
kept="$here/results"
mkdir -p "$work" "$kept"

objects="${LIVE_OBJECTS:-2000}"
# One patch of these Pods costs this kube-apiserver about 6.5 ms of CPU and
# etcd about 1 ms (measured here at 100/s): 200/s keeps the two of them at
# about 1.5 of the 2 cores, the most this machine sustains beside the runner
# and the writer (at 500/s asked it managed 150-180/s while others compiled).
read -r -a rates <<<"${LIVE_RATES:-100 200}"
seconds="${LIVE_SECONDS:-30}"
repeats="${LIVE_REPEATS:-2}"
subscribers="${LIVE_SUBSCRIBERS:-1}"
in_flight="${LIVE_IN_FLIGHT:-32}"
read -r -a runners <<<"${LIVE_RUNNERS:-ours kube-runtime client-go client-go-protobuf}"
deadline="${LIVE_DEADLINE:-}"
namespace=compare-live
results="$kept/live.jsonl"
meta="$kept/live-meta.json"

log() { echo "$*" >&2; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
skipped() {
  log "== live step skipped: $*"
  log "   no figures were recorded"
  exit 3
}

# ---- build -----------------------------------------------------------------
rust_bin="$CARGO_TARGET_DIR/release/kube-informer-compare"
go_bin="$work/client-go-runner"
if [[ -z ${LIVE_SKIP_BUILD:-} ]]; then
  log "== building the Rust runners and the writer (release)"
  nice cargo build -q --release -p kube-informer-compare
  log "== building the client-go runner"
  (cd "$here/go" && nice go build -o "$go_bin" .)
fi

# ---- control plane ---------------------------------------------------------
# The build alone can take 10-20 minutes on 2 cores the first time; its
# output says why when it fails.
log "== etcd and kube-apiserver (e2e/build.sh; cached after the first build)"
build_log="$work/live-e2e-build.log"
if ! bash "$root/e2e/build.sh" >"$build_log" 2>&1; then
  skipped "e2e/build.sh could not build etcd or kube-apiserver: $(tail -3 "$build_log" | tr '\n' ' ') (full log: $build_log)"
fi

# A cluster of this script's own (never one a developer or another script
# left up), without the second, watch-cache-less apiserver, which nothing
# here uses and which would take CPU from the runs.
KUBE_INFORMER_E2E_DIR="$(mktemp -d "${TMPDIR:-/tmp}/kube-informer-live.XXXXXX")"
export KUBE_INFORMER_E2E_DIR PRIVATE_CLUSTER=1 KUBE_INFORMER_E2E_NOCACHE_APISERVER=0
runner_pid=""
cleanup() {
  if [[ -n $runner_pid ]]; then
    kill "$runner_pid" 2>/dev/null || true
    wait "$runner_pid" 2>/dev/null || true
  fi
  bash "$root/e2e/cluster.sh" down || true
  rmdir "$KUBE_INFORMER_E2E_DIR" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "== starting the control plane"
up_log="$work/live-e2e-up.log"
if ! bash "$root/e2e/cluster.sh" up >"$up_log" 2>&1; then
  skipped "e2e/cluster.sh up failed: $(tail -3 "$up_log" | tr '\n' ' ') (full log: $up_log)"
fi
# shellcheck disable=SC1090
source "$(bash "$root/e2e/cluster.sh" env-file)"
kubeconfig="$KUBE_INFORMER_E2E_KUBECONFIG"
log "   kube-apiserver $KUBE_INFORMER_E2E_KUBE_VERSION, etcd $KUBE_INFORMER_E2E_ETCD_VERSION, state in $KUBE_INFORMER_E2E_DIR"

# ---- Pods ------------------------------------------------------------------
load_before="$(load)"
uptime_before="$(uptime)"
# Taken now: the binaries were built from the tree as it is at the start.
dirty="$(git -C "$root" status --porcelain -- src benches/compare | wc -l)"
date_start="$(date -u +%Y-%m-%dT%H:%MZ)"
log "== creating $objects Pods in $namespace (load $load_before)"
created="$("$rust_bin" live-writer create --kubeconfig "$kubeconfig" --namespace "$namespace" --objects "$objects")"
log "   $created"

# ---- runs ------------------------------------------------------------------
: >"$results"
sequence=0 # updates made so far: each run's patches continue the count

# runner updates -> the runner's command line
command_for() {
  local timeout=$(($2 / 20 + 300))
  case $1 in
    ours | kube-runtime)
      echo "$rust_bin live $1 --kubeconfig $kubeconfig --objects $objects --updates $2 --subscribers $subscribers --timeout-secs $timeout" ;;
    client-go)
      echo "$go_bin -live $kubeconfig -objects $objects -updates $2 -subscribers $subscribers -timeout ${timeout}s" ;;
    client-go-protobuf)
      echo "$go_bin -live $kubeconfig -protobuf -objects $objects -updates $2 -subscribers $subscribers -timeout ${timeout}s" ;;
  esac
}

run_one() { # runner rate repeat place
  local runner=$1 rate=$2 repeat=$3 place=$4
  local updates=$((rate * seconds)) out="$work/live-$1.out" err="$work/live-$1.err"
  local writer status=0 line load_start
  if [[ -n $deadline && $(date +%s) -ge $deadline ]]; then
    log "-- $runner R=$rate: skipped, past LIVE_DEADLINE"
    return 0
  fi
  load_start="$(load)"
  log "-- $runner R=$rate U=$updates run $repeat place $place (load $load_start)"
  # shellcheck disable=SC2046 # the command line is split on purpose
  $(command_for "$runner" "$updates") >"$out" 2>"$err" &
  runner_pid=$!
  until grep -q '^READY' "$out" 2>/dev/null; do
    if ! kill -0 "$runner_pid" 2>/dev/null; then
      wait "$runner_pid" || status=$?
      runner_pid=""
      log "   $runner exited before READY (exit $status): $(tail -3 "$err")"
      return 0
    fi
    sleep 0.05
  done
  if ! writer="$("$rust_bin" live-writer update --kubeconfig "$kubeconfig" --namespace "$namespace" \
    --objects "$objects" --updates "$updates" --rate "$rate" --from "$sequence" --in-flight "$in_flight")"; then
    sequence=$((sequence + updates))
    log "   the writer failed; $runner stopped, no figures recorded"
    kill "$runner_pid" 2>/dev/null || true
    wait "$runner_pid" 2>/dev/null || true
    runner_pid=""
    return 0
  fi
  sequence=$((sequence + updates))
  wait "$runner_pid" || status=$?
  runner_pid=""
  line="$(grep -v '^READY' "$out" | tail -1)"
  if [[ $status -ne 0 || -z $line ]]; then
    log "   $runner failed (exit $status): $(tail -3 "$err")"
    return 0
  fi
  line="$(jq -c --argjson writer "$writer" --arg rate "$rate" --arg repeat "$repeat" --arg place "$place" \
    --arg load_start "$load_start" --arg load_end "$(load)" \
    '. + {rate: ($rate | tonumber), repeat: ($repeat | tonumber), place: ($place | tonumber),
          writer: $writer, load_average_start: $load_start, load_average_end: $load_end}' <<<"$line")"
  echo "$line" >>"$results"
  log "   $(jq -c '{cpu_us: .watch_cpu_us_per_event, sys_us: .system_us_per_event, watch_s: .watch_seconds,
    sync_s: .sync_seconds, peak_mib: (.peak_rss / 1048576 | floor), rate_achieved: .writer.rate_achieved,
    max_late_s: .writer.max_sent_late_seconds}' <<<"$line")"
}

# Every runner takes every place in the order in turn: the first process
# after a pause, or after another runner's, may meet a colder machine.
turn=0
for repeat in $(seq "$repeats"); do
  for rate in "${rates[@]}"; do
    for i in "${!runners[@]}"; do
      run_one "${runners[(i + turn) % ${#runners[@]}]}" "$rate" "$repeat" "$((i + 1))"
      # A moment for the apiserver to drop the ended watch.
      sleep 1
    done
    turn=$((turn + 1))
  done
done
load_after="$(load)"

log "== deleting the Pods"
"$rust_bin" live-writer delete --kubeconfig "$kubeconfig" --namespace "$namespace" >/dev/null ||
  log "   the delete failed (the cluster goes down anyway)"

kube_runtime_version="$(grep -A1 '^name = "kube-runtime"$' "$root/Cargo.lock" | sed -n 's/^version = "\(.*\)"$/\1/p')"
client_go_version="$(awk '$1 == "k8s.io/client-go" {print $2}' "$here/go/go.mod")"
jq -n --argjson created "$created" \
  --arg date "$date_start" --arg date_end "$(date -u +%Y-%m-%dT%H:%MZ)" \
  --arg commit "$(git -C "$root" rev-parse HEAD)" \
  --arg dirty "$dirty" \
  --arg nproc "$(nproc)" --arg cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
  --arg kernel "$(uname -r)" --arg rustc "$(rustc --version)" --arg go "$(go version | cut -d' ' -f3)" \
  --arg kube_runtime "$kube_runtime_version" --arg client_go "$client_go_version" \
  --arg kube_apiserver "$KUBE_INFORMER_E2E_KUBE_VERSION" --arg etcd "$KUBE_INFORMER_E2E_ETCD_VERSION" \
  --arg objects "$objects" --arg rates "${rates[*]}" --arg seconds "$seconds" --arg repeats "$repeats" \
  --arg subscribers "$subscribers" --arg in_flight "$in_flight" \
  --arg load_before "$load_before" --arg load_after "$load_after" \
  --arg uptime_before "$uptime_before" --arg uptime_after "$(uptime)" \
  '{date: $date, date_end: $date_end, commit: $commit, uncommitted_files: ($dirty | tonumber),
    nproc: $nproc, cpu: $cpu, kernel: $kernel, rustc: $rustc, go: $go,
    kube_runtime: $kube_runtime, client_go: $client_go, kube_apiserver: $kube_apiserver, etcd: $etcd,
    objects: ($objects | tonumber), rates: $rates, seconds_per_run: ($seconds | tonumber),
    repeats: ($repeats | tonumber), subscribers: ($subscribers | tonumber), writer_in_flight: ($in_flight | tonumber),
    created: $created, load_before: $load_before, load_after: $load_after,
    uptime_before: $uptime_before, uptime_after: $uptime_after}' >"$meta"
log "== wrote $results and $meta"
python3 "$here/live_report.py" "$results" "$meta"
