#!/usr/bin/env bash
# Differential conformance against client-go (issue 3).
#
# Builds the Go harnesses (client-go v0.34.13 pinned, v0.36.6 the newest
# release tracked, and v0.32.13 for requeue traces), then runs the named corpus under conformance/traces/ and
# $CONFORMANCE_TRACES (default 2000) random traces through both client-go and
# kube-informer, failing on the first difference of any trace. Then the
# informer scripts under conformance/informer-traces/ and random informer
# scripts run through client-go's sharedIndexInformer and our Informer, whose
# notifications per handler must be the same.
#
#   CONFORMANCE_SEED=S      reuse a seed (default: time-based, always printed)
#   CONFORMANCE_TRACES=N    number of random traces
#   CONFORMANCE_INFORMER_SCRIPTS=N   number of random informer scripts (default 200)
#
# Work queue traces (conformance/workqueue-traces/ plus
# $CONFORMANCE_WORKQUEUE_TRACES random ones, default 1000) run through
# client-go's TypedRateLimitingQueue (v0.34.13) and our WorkQueue.
#
# A failing random trace or script reruns alone with the command it prints:
#   cargo run -p kube-informer-conformance -- fifo --seed S --trace N
#   cargo run -p kube-informer-conformance -- informer --seed S --trace N
#   cargo run -p kube-informer-conformance -- workqueue --seed S --trace N
#
# Go modules and build results are cached in Go's usual places (GOMODCACHE,
# GOCACHE); the harness binaries go to target/conformance/.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v go >/dev/null 2>&1; then
  echo "conformance: skipped: the go toolchain is not installed, so client-go cannot run"
  exit 0
fi

out_dir="$PWD/target/conformance"
mkdir -p "$out_dir"
export GOFLAGS=-mod=mod
# The harnesses, built under a lock: .ci/run starts `--prebuild` in the
# background at low priority, so that downloading three client-go releases
# and compiling them uses the time the Rust builds and tests leave idle; the
# suite then waits for that build and finds everything cached.
build_harnesses() {
  cd conformance/go
  go build -o "$out_dir/fifo-trace-v034" ./cmd/fifo-trace
  go build -modfile=go.v032.mod -tags clientgo_v032 -o "$out_dir/fifo-trace-v032" ./cmd/fifo-trace
  go build -o "$out_dir/informer-trace" ./cmd/informer-trace
  go build -modfile=go.v036.mod -o "$out_dir/fifo-trace-v036" ./cmd/fifo-trace
  go build -modfile=go.v036.mod -o "$out_dir/informer-trace-v036" ./cmd/informer-trace
  go build -o "$out_dir/workqueue-trace" ./cmd/workqueue-trace
}
(
  exec {lock}>"$out_dir/build.lock"
  flock "$lock"
  build_harnesses
)
if [[ "${1:-}" == --prebuild ]]; then
  exit 0
fi

# The protobuf decoder's inputs (a few seconds): the message table is what
# the generator writes from the pinned .proto files and Go sources, and the
# test vectors are what Go's encoder writes (tests/protobuf_decode.rs checks
# the decoder against them, and kube-informer-testing's encoder, whose
# tests are in tests/support/src/protobuf/mod.rs, must write them byte for
# byte).
python3 scripts/protobuf/gen_schema.py --check
scripts/protobuf/vectors.sh --check
# The generated Pod decoders (the second design, measured beside the first)
# are what their generator writes from that table and k8s-openapi's sources.
python3 scripts/protobuf/gen_direct.py --check

seed="${CONFORMANCE_SEED:-$(date +%s)}"
traces="${CONFORMANCE_TRACES:-2000}"
# The harness binary, as the workspace pass of scripts/test-all.sh built it
# (`cargo test` builds a package's binaries for its integration tests, with
# every workspace crate, every feature and the dev-dependencies' features),
# so that build is reused. `cargo run -p kube-informer-conformance`, or any
# `cargo build`, which leaves the dev-dependencies out, would resolve
# kube-informer's dependencies' features otherwise and build the library
# and its dependents again.
cargo test -q --workspace --all-features --no-run
run() { CONFORMANCE_GO_DIR="$out_dir" "${CARGO_TARGET_DIR:-target}/debug/conformance" "$@"; }

# Informer scripts: client-go's answers must not vary between runs, must equal
# the recordings (named scripts), and our Informer must give the same answers;
# for the pinned release (named and random scripts, 3 client-go runs each) and
# the newest one tracked (named scripts only: v0.36 backs off on the real clock
# before each relist, growing with consecutive relists, so long random scripts
# outlast the Go harness's 20 s wait).
echo "conformance: seed $seed, informer scripts: the named ones plus ${CONFORMANCE_INFORMER_SCRIPTS:-200} random"
run informer --random "${CONFORMANCE_INFORMER_SCRIPTS:-200}" --seed "$seed"
run informer --client-go v036 --repeat 1
# The store's compact cache must answer the same (CM1): the pinned release's
# scripts again, our informer keeping its objects encoded.
echo "conformance: seed $seed, the informer scripts again with KUBE_INFORMER_CACHE=compact"
KUBE_INFORMER_CACHE=compact run informer --random "${CONFORMANCE_INFORMER_SCRIPTS:-200}" --seed "$seed"

echo "conformance: seed $seed, ${CONFORMANCE_WORKQUEUE_TRACES:-1000} random work queue traces plus the named corpus"
run workqueue --random "${CONFORMANCE_WORKQUEUE_TRACES:-1000}" --seed "$seed"

echo "conformance: seed $seed, $traces random traces plus the named corpus"
# The newest client-go release tracked, then the pinned one (whose summary
# is the last line).
run fifo --random "$traces" --seed "$seed" --client-go v036
run fifo --random "$traces" --seed "$seed"
