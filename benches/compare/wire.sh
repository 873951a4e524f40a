#!/usr/bin/env bash
# Wire mode of the side-by-side benchmark; run.sh calls it:
#
#   bash benches/compare/run.sh --wire            # N = 50,000, 3 repeats (WIRE_OBJECTS, WIRE_REPEATS)
#   bash benches/compare/run.sh --wire --quick    # N = 10,000, 1 repeat
#   bash benches/compare/run.sh --wire-profile    # perf profile of each runner (N = WIRE_PROFILE_OBJECTS, 10,000)
#
# WIRE_BEFORE_BIN (a kube-informer-compare binary built from an older
# commit) adds runner ours-before, run from that binary between the others
# in the same passes, its lines kept apart in wire-before-TAG.jsonl: a
# before/after comparison under the same load.
# WIRE_BEFORE_RUNNER (default ours; e.g. ours-compact) is the runner that
# binary runs as ours-before.
# WIRE_SKIP_BUILD=1 skips the build and runs the binaries already there;
# WIRE_BIN names the kube-informer-compare binary to run instead of the build.
# WIRE_STRIPS (default "no yes") picks the strip-managedFields variants run;
# WIRE_RELIST_REPEATS (default 1) repeats the relist runs; WIRE_DEADLINE
# (seconds since the epoch) stops starting runs after that time;
# WIRE_MEASURED_ON is a note on what was measured, shown on the page.
# SETTLE_MB (default 3072; 0: off) is the memory filled and freed before
# each run, so every run starts with memory the host has backed (settle.sh).
#
# WIRE_RUNNERS (default "ours kube-runtime client-go") picks the runners, in
# the order each pass runs them; besides those three: ours-projection
# (kube-informer caching metadata + spec.nodeName + status.phase),
# ours-compact (kube-informer with the compact cache, `compact_cache`),
# ours-projection-compact (the projection in the compact cache),
# client-go-protobuf (the clientset asking for protobuf, as
# kube-controller-manager does) and client-go-metadata (client-go's metadata
# informer, PartialObjectMetadata in protobuf), floor and transport (the
# wire floors of src/wire/floor.rs: a minimal informer on kube's own watch
# stream, and the watch body read without decoding), and ours-protobuf
# (kube-informer asking for protobuf, `Encoding::Protobuf`; since 4a1f850
# its Pods are decoded by the generated decoders, as the compare crate turns
# on kube-informer's `protobuf-generated`; results before that commit are
# the serde-driven decoder's). With either client-go-* or ours-protobuf
# runner the server is started with --protobuf-encoder (the Go runner
# encodes the Pods with k8s.io/api's encoder before the server listens, so
# none of it is in a measured run). WIRE_SUBSCRIBERS (default "1 4") picks
# the subscriber counts of the bursts.
# WIRE_TAG (default: the mode, full or quick; `run.sh --headline` sets
# headline) names the pass: its lines go to results/wire-TAG.jsonl and its
# meta to results/wire-meta-TAG.json, and `python3 wire_report.py
# results/wire-TAG.jsonl` prints its tables. Only `report.sh TAG` writes
# BENCHMARKS.md (its generated part, from one such pass).
#
#   WIRE_TAG=pb WIRE_SUBSCRIBERS=1 WIRE_REPEATS=1 WIRE_RELIST_REPEATS=0 \
#   WIRE_RUNNERS="client-go client-go-protobuf client-go-metadata ours ours-projection kube-runtime" \
#     bash benches/compare/run.sh --wire
#
# One loopback server (`kube-informer-compare serve`) generates the Pods once
# and serves every run; each run is a fresh runner process with its own HTTP
# client: kube-informer and kube-runtime (`kube-informer-compare wire`) and
# client-go (`client-go-runner -wire`). Each prints one JSON line. The
# results are kept in benches/compare/results/wire-TAG.jsonl (and the
# profile in wire-profile.json); headline.py turns a pass of every runner
# into BENCHMARKS.md's table, wire_report.py any pass into the lab notes'
# tables.
set -euo pipefail

what=$1 # yes | profile
mode=$2 # full | quick
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
work="$CARGO_TARGET_DIR/compare"
kept="$here/results"
mkdir -p "$work" "$kept"

if [[ $mode == quick ]]; then
  objects="${WIRE_OBJECTS:-10000}"
  repeats="${WIRE_REPEATS:-1}"
else
  objects="${WIRE_OBJECTS:-50000}"
  repeats="${WIRE_REPEATS:-3}"
fi
relist_repeats="${WIRE_RELIST_REPEATS:-1}"
read -r -a strips <<<"${WIRE_STRIPS:-no yes}"
read -r -a subscriber_counts <<<"${WIRE_SUBSCRIBERS:-1 4}"
read -r -a runners <<<"${WIRE_RUNNERS:-ours kube-runtime client-go}"
tag="${WIRE_TAG:-$mode}"
before_bin="${WIRE_BEFORE_BIN:-}"
before_runner="${WIRE_BEFORE_RUNNER:-ours}"
[[ -n $before_bin ]] && runners=(ours-before "${runners[@]}")

# ---- build -----------------------------------------------------------------
rust_bin="${WIRE_BIN:-$CARGO_TARGET_DIR/release/kube-informer-compare}"
# WIRE_SKIP_BUILD=1 runs the binaries already built (e.g. while sources are
# being edited).
if [[ -z ${WIRE_SKIP_BUILD:-} ]]; then
  echo "== building the Rust runners and the server (release)"
  nice cargo build --release -p kube-informer-compare
  echo "== building the client-go runner"
  (cd "$here/go" && nice go build -o "$work/client-go-runner" .)
fi
go_bin="$work/client-go-runner"

# ---- server ----------------------------------------------------------------
# shellcheck source=server.sh
source "$here/server.sh"
# shellcheck source=settle.sh
source "$here/settle.sh"
start_wire_server() { # objects
  local encoder=()
  [[ " ${runners[*]} " =~ \ (client-go-protobuf|client-go-metadata|ours-protobuf)\  ]] && encoder=(--protobuf-encoder "$go_bin")
  echo "== starting the loopback server with N = $1 ${encoder[*]}"
  start_server wire "$rust_bin" --objects "$1" "${encoder[@]}"
  echo "   $(cat "$work/wire-server.log") at $server"
}

# runner subscribers strip(yes|no) variant(burst|relist) -> the runner's command line
command_for() {
  local runner=$1 subscribers=$2 strip=$3 variant=$4
  case $runner in
    ours-before)
      echo "$before_bin wire $before_runner --server $server --subscribers $subscribers" \
        "$([[ $strip == yes ]] && echo --strip)" "$([[ $variant == relist ]] && echo --relist)" ;;
    ours | ours-protobuf | ours-projection | ours-compact | ours-projection-compact | kube-runtime | floor | transport)
      echo "$rust_bin wire $runner --server $server --subscribers $subscribers" \
        "$([[ $strip == yes ]] && echo --strip)" "$([[ $variant == relist ]] && echo --relist)" ;;
    client-go | client-go-protobuf | client-go-metadata)
      local flavour=""
      [[ $runner == client-go-protobuf ]] && flavour=-protobuf
      [[ $runner == client-go-metadata ]] && flavour=-metadata
      echo "$go_bin -wire $server $flavour -subscribers $subscribers" \
        "$([[ $strip == yes ]] && echo -strip)" "$([[ $variant == relist ]] && echo -relist)" ;;
  esac
}

# WIRE_DEADLINE (seconds since the epoch): no run starts after it, so a
# measurement squeezed into a time budget ends with what it has.
deadline="${WIRE_DEADLINE:-}"

run_one() { # results runner subscribers strip variant
  local results=$1 runner=$2 subscribers=$3 strip=$4 variant=$5 line status=0
  [[ $runner == ours-before ]] && results="$before_results"
  if [[ -n $deadline && $(date +%s) -ge $deadline ]]; then
    echo "-- $runner S=$subscribers strip=$strip $variant: skipped, past WIRE_DEADLINE" >&2
    return 0
  fi
  echo "-- $runner S=$subscribers strip=$strip $variant (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  settle_memory
  # shellcheck disable=SC2046 # the command line is split on purpose
  line="$($(command_for "$runner" "$subscribers" "$strip" "$variant"))" || status=$?
  if [[ $status -ne 0 || -z $line ]]; then
    echo "   $runner failed (exit $status); no figures recorded" >&2
    return 0
  fi
  # The load average next to each figure: 2 shared cores make it matter.
  line="${line%\}},\"load_average\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
  echo "$line" >>"$results"
  echo "   $line" >&2
}

meta() { # path mode
  local kube_runtime_version client_go_version
  kube_runtime_version="$(grep -A1 '^name = "kube-runtime"$' "$root/Cargo.lock" | sed -n 's/^version = "\(.*\)"$/\1/p')"
  client_go_version="$(awk '$1 == "k8s.io/client-go" {print $2}' "$here/go/go.mod")"
  python3 - "$1" <<EOF
import json, sys
json.dump({
    "mode": "$2",
    "date": "$(date -u +%Y-%m-%dT%H:%MZ)",
    "nproc": "$(nproc)",
    "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')",
    "memory": "$(free -h | awk '/^Mem:/ {print $2}')",
    "kernel": "$(uname -r)",
    "rustc": "$(rustc --version)",
    "go": "$(go version | cut -d' ' -f3)",
    "kube_runtime": "$kube_runtime_version",
    "client_go": "$client_go_version",
    "commit": "$(git -C "$root" rev-parse HEAD)",
    "commit_subject": $(git -C "$root" log -1 --format=%s | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))'),
    "measured_on": $(python3 -c 'import json,os; print(json.dumps(os.environ.get("WIRE_MEASURED_ON", "")))'),
    "load_before": "${load_before:-}",
    "load_after": "$(cut -d' ' -f1-3 /proc/loadavg)",
}, open(sys.argv[1], "w"), indent=1)
EOF
}

# ---- profile ---------------------------------------------------------------
if [[ $what == profile ]]; then
  profile_objects="${WIRE_PROFILE_OBJECTS:-10000}"
  start_wire_server "$profile_objects"
  profiles=()
  for runner in "${runners[@]}"; do
    data="$work/perf-$runner.data"
    echo "== perf record: $runner, N = $profile_objects, S = 4" >&2
    settle_memory
    # shellcheck disable=SC2046
    perf record -e cpu-clock -F 1999 -o "$data" -- $(command_for "$runner" 4 no burst) >"$work/perf-$runner.json" 2>"$work/perf-$runner.log"
    perf report -i "$data" --no-children --sort dso,sym --stdio 2>/dev/null >"$work/perf-$runner.txt"
    profiles+=("$runner=$work/perf-$runner.txt")
  done
  python3 "$here/perf_buckets.py" --out "$kept/wire-profile.json" --objects "$profile_objects" "${profiles[@]}"
  echo "== wrote $kept/wire-profile.json"
  exit 0
fi

# ---- runs ------------------------------------------------------------------
results="$work/wire-$tag.jsonl"
before_results="$work/wire-before-$tag.jsonl"
: >"$results"
[[ -n $before_bin ]] && : >"$before_results"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
start_wire_server "$objects"
burst_pass() {
  for subscribers in "${subscriber_counts[@]}"; do
    for strip in "${strips[@]}"; do
      for runner in "${runners[@]}"; do
        run_one "$results" "$runner" "$subscribers" "$strip" burst
      done
    done
  done
}
relist_pass() {
  for strip in "${strips[@]}"; do
    for runner in "${runners[@]}"; do
      run_one "$results" "$runner" 1 "$strip" relist
    done
  done
}
# Every configuration once (bursts, then relists) before any repeat, so a
# short budget still covers the whole table; the runners alternate so load
# spreads evenly over them.
burst_pass
for _ in $(seq "$relist_repeats"); do relist_pass; done
for _ in $(seq 2 "$repeats"); do burst_pass; done
stop_server

cp "$results" "$kept/wire-$tag.jsonl"
if [[ -n $before_bin ]]; then cp "$before_results" "$kept/wire-before-$tag.jsonl"; fi
meta "$kept/wire-meta-$tag.json" "$mode"
echo "== wrote $kept/wire-$tag.jsonl"
python3 "$here/wire_report.py" "$kept/wire-$tag.jsonl"
