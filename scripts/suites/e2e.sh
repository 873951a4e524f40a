#!/usr/bin/env bash
# End-to-end suite: builds (or reuses) a real etcd and kube-apiserver, starts
# them on loopback, runs every tests/e2e*.rs against them, and stops them.
#
# Skipped, saying why, when KUBE_INFORMER_SKIP_E2E=1 or when the servers cannot
# be built on this machine (no Go toolchain, a module the proxy does not
# serve...). A server that builds but fails to start, or a failing test, fails
# the suite.
set -euo pipefail
cd "$(dirname "$0")/../.."

skip() {
  echo "e2e: SKIPPED: $*"
  exit 0
}

[[ "${KUBE_INFORMER_SKIP_E2E:-0}" == 1 ]] && skip "KUBE_INFORMER_SKIP_E2E=1 was set"
command -v go >/dev/null || skip "no Go toolchain here to build etcd and kube-apiserver"
command -v openssl >/dev/null || skip "openssl is needed to make the test certificates"

# shellcheck source=../../e2e/versions.sh
source e2e/versions.sh
start=$SECONDS
build_log="$(mktemp "${TMPDIR:-/tmp}/kube-informer-e2e-build.XXXXXX")"
if ! bash e2e/build.sh all 2>"$build_log"; then
  tail -25 "$build_log"
  skip "building etcd $ETCD_VERSION / kube-apiserver $KUBE_VERSION failed here (log above, full: $build_log)"
fi
grep '^e2e/build:' "$build_log" || true
rm -f "$build_log"
echo "e2e: servers ready to run after $((SECONDS - start))s (etcd $ETCD_VERSION, kube-apiserver $KUBE_VERSION)"

# tests/e2e_operator.rs (the mirror operator of examples/operator/ through an
# apiserver restart) is one of the tests/e2e*.rs run here; it holds the
# apiserver exclusively while it runs.

# tests/e2e_shard.rs runs replicas of the operator example (sharded mode:
# --shard) as processes, and tests/e2e_configmapgen.rs runs the configmapgen
# example; they are built here because a test cannot build them while
# `cargo test` holds the build lock.
cargo build --workspace --all-features --example operator --example configmapgen

# The write conformance test compares the fake server's writes with this
# apiserver's: the named scripts and 200 random ones from a fresh seed each
# run (printed; WRITE_CONFORMANCE_SEED=<n> repeats it). Only the deliberate
# differences of conformance/writes/DIFFERENCES.md are excused; any other
# fails the suite. (WRITE_CONFORMANCE_EXCUSE_KNOWN_GAPS=1 would excuse the
# gaps of KNOWN_GAPS.md too; none is open.)
echo "e2e: write conformance on a fresh seed; only conformance/writes/DIFFERENCES.md is excused"

# The e2e tests are the modules of one test binary (tests/e2e.rs); they run
# one file at a time, each file's tests four at once, so tests of different
# files never share the apiserver at the same time.
cargo test --workspace --all-features --test e2e --no-run
modules="$(sed -nE 's/^mod (e2e_[a-z0-9_]+);$/\1/p' tests/e2e.rs | grep -vx e2e_support)"
start=$SECONDS
# shellcheck disable=SC2016 # expanded by the inner shell
bash e2e/cluster.sh run -- bash -c '
  failed=0
  for module in '"$(echo $modules)"'; do
    echo "e2e: $module"
    cargo test --workspace --all-features --test e2e -- "$module::" --test-threads=4 || failed=1
  done
  exit $failed'
echo "e2e: cluster up, tests run and cluster down in $((SECONDS - start))s"
