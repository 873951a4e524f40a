#!/usr/bin/env bash
# The watch burst as each kind of server writes it, under each allocator:
# the two Rust runners (and optionally an older build of kube-informer) side
# by side in the same passes.
#
#   bash benches/compare/chunking.sh
#
# Chunkings (CHUNK_MODES, default "backlog event rate=1000 rate=5000"):
#   backlog   up to 64 KiB of events per HTTP chunk, as fast as read (best case)
#   event     one chunk per event, each flushed (kube-apiserver when the client keeps up)
#   rate=N    one chunk per event, N events per second (a live cluster's steady state)
# CHUNK_ALLOCATORS (default "system mimalloc"; "jemalloc" too if it builds):
#   the runners' global allocator, one build of kube-informer-compare each.
# CHUNK_OBJECTS (default 10000: N Pods, U = 2N updates, D = N/10 deletes),
# CHUNK_SUBSCRIBERS (default "1 4"), CHUNK_REPEATS (default 2),
# CHUNK_BEFORE_REF (a git ref: its src/ is built with this benches/compare
# and run as runner ours-before), CHUNK_FLOORS=1 (the wire floors `floor`
# and `transport` as runners too), CHUNK_SKIP_BUILD=1 (no build: the
# binaries already in $CARGO_TARGET_DIR/compare), CHUNK_DEADLINE (seconds since the epoch:
# no run starts after it), SETTLE_MB (memory filled and freed before each
# run, default 3072, 0 off: settle.sh).
#
# Each run is a fresh process (`kube-informer-compare wire`) against one
# loopback server per chunking; every line goes to
# benches/compare/results/chunking.jsonl, and chunking_report.py prints the
# medians and the ratios to kube-runtime.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
work="$CARGO_TARGET_DIR/compare"
mkdir -p "$work" "$here/results"

read -r -a modes <<<"${CHUNK_MODES:-backlog event rate=1000 rate=5000}"
read -r -a allocators <<<"${CHUNK_ALLOCATORS:-system mimalloc}"
read -r -a subscriber_counts <<<"${CHUNK_SUBSCRIBERS:-1 4}"
objects="${CHUNK_OBJECTS:-10000}"
repeats="${CHUNK_REPEATS:-2}"
before_ref="${CHUNK_BEFORE_REF:-}"
deadline="${CHUNK_DEADLINE:-}"
results="$here/results/chunking.jsonl"
: >"$results"

# The allocator is a cfg of the compare crate (see its Cargo.toml), passed
# in RUSTFLAGS; glibc's malloc needs none. RUSTFLAGS is part of every
# crate's build, so each allocator builds in a target dir of its own (one
# would otherwise rebuild every dependency each time it switched).
rustflags_for() { [[ $1 == system ]] || echo "--cfg compare_allocator=\"$1\""; }
target_for() { # base-target-dir allocator
  if [[ $2 == system ]]; then echo "$1"; else echo "$1/alloc-$2"; fi
}

# ---- builds ------------------------------------------------------------------
for allocator in "${allocators[@]}"; do
  # CHUNK_SKIP_BUILD=1: run the binaries already in $work (compare-ALLOCATOR).
  [[ ${CHUNK_SKIP_BUILD:-0} == 1 && -x $work/compare-$allocator ]] && continue
  echo "== building kube-informer-compare ($allocator)" >&2
  target="$(target_for "$CARGO_TARGET_DIR" "$allocator")"
  RUSTFLAGS="$(rustflags_for "$allocator")" CARGO_TARGET_DIR="$target" \
    nice cargo build -q --release -p kube-informer-compare
  cp "$target/release/kube-informer-compare" "$work/compare-$allocator"
done
if [[ -n $before_ref ]]; then
  tree="$work/before-tree"
  rm -rf "$tree"
  mkdir -p "$tree"
  # `tar -m`: the files get the time of extraction, not the commit's. With
  # the commit's times, a build of another ref left in the same target dir
  # could look newer than these sources, and cargo would run it unrebuilt.
  git -C "$root" archive "$before_ref" | tar -x -m -C "$tree"
  # The harness of this tree, the crate of the older one.
  rm -rf "$tree/benches/compare"
  cp -r "$here" "$tree/benches/compare"
  # A target dir of its own: cargo names a path package's build by its path
  # within its workspace, the same in both trees, so in a shared target
  # dir the next build of this tree was taken as fresh and copied the older
  # tree's binary.
  for allocator in "${allocators[@]}"; do
    echo "== building kube-informer-compare at $before_ref ($allocator)" >&2
    target="$(target_for "$work/before-target" "$allocator")"
    (cd "$tree" && RUSTFLAGS="$(rustflags_for "$allocator")" CARGO_TARGET_DIR="$target" \
      nice cargo build -q --release -p kube-informer-compare)
    cp "$target/release/kube-informer-compare" "$work/compare-before-$allocator"
  done
fi

# ---- server ------------------------------------------------------------------
# shellcheck source=server.sh
source "$here/server.sh"
# shellcheck source=settle.sh
source "$here/settle.sh"

run_one() { # runner binary label subscribers
  local line status=0
  if [[ -n $deadline && $(date +%s) -ge $deadline ]]; then
    echo "-- $3 S=$4: skipped, past CHUNK_DEADLINE" >&2
    return 0
  fi
  settle_memory
  line="$("$2" wire "$1" --server "$server" --subscribers "$4")" || status=$?
  if [[ $status -ne 0 || -z $line ]]; then
    echo "   $3 failed (exit $status)" >&2
    return 0
  fi
  line="${line/\"runner\":\"$1\"/\"runner\":\"$3\"}"
  line="${line%\}},\"load_average\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
  echo "$line" >>"$results"
  echo "   $line" | cut -c1-220 >&2
}

runners=(ours kube-runtime)
[[ -n $before_ref ]] && runners=(ours ours-before kube-runtime)
# CHUNK_FLOORS=1: the two wire floors too (src/wire/floor.rs): a minimal
# informer on kube's Client, and the watch body alone.
[[ ${CHUNK_FLOORS:-0} == 1 ]] && runners+=(floor transport)
turn=0
for mode in "${modes[@]}"; do
  echo "== chunking $mode, N = $objects" >&2
  start_server chunking "$work/compare-${allocators[0]}" --objects "$objects" --chunking "$mode"
  for _ in $(seq "$repeats"); do
    for subscribers in "${subscriber_counts[@]}"; do
      for allocator in "${allocators[@]}"; do
        echo "-- S=$subscribers $allocator (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
        # Each runner takes each place in turn: the first run after the
        # server starts, or after another runner's process, can be slower
        # (seen under mimalloc: a 2-3x initial sync with the system time
        # to match), whichever runner it is. `settle_memory` removes the
        # cause found for it (settle.sh); the turns stay.
        for i in "${!runners[@]}"; do
          runner="${runners[(i + turn) % ${#runners[@]}]}"
          case $runner in
            ours) run_one ours "$work/compare-$allocator" ours "$subscribers" ;;
            ours-before) run_one ours "$work/compare-before-$allocator" ours-before "$subscribers" ;;
            kube-runtime | floor | transport) run_one "$runner" "$work/compare-$allocator" "$runner" "$subscribers" ;;
          esac
        done
        turn=$((turn + 1))
      done
    done
  done
  stop_server
done
python3 "$here/chunking_report.py" "$results"
