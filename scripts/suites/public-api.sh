#!/usr/bin/env bash
# Checks kube-informer's public API against the listing checked in at
# public-api.txt (cargo-public-api's simplified listing, every feature on),
# and prints what the listing counts (types, functions and methods, error
# types, sync waits: scripts/public-api-counts.py).
#
# A change to the public surface shows as a diff of public-api.txt in the
# change itself. When the listing differs this suite fails with the diff;
# if the change is meant, regenerate the file and commit it:
#   bash scripts/suites/public-api.sh --bless
#
# cargo-public-api reads rustdoc's JSON, which only a nightly toolchain
# writes; its version must match the format of that nightly. It is
# installed into ~/.cargo/bin when missing. Without a nightly toolchain, or
# without the registry to install the tool from, the suite says "skipped"
# and why; it never passes without comparing.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The version whose rustdoc-JSON format matches the nightly used here; move
# both together.
VERSION=0.52.0
LISTING=public-api.txt
target="${CARGO_TARGET_DIR:-$PWD/target}/public-api"

bless=0
case "${1:-}" in
  --bless) bless=1 ;;
  "") ;;
  *) echo "usage: bash scripts/suites/public-api.sh [--bless]" >&2; exit 2 ;;
esac

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "public-api: skipped: no nightly toolchain (rustup toolchain install nightly), which rustdoc's JSON output needs"
  exit 0
fi
if ! cargo public-api --version 2>/dev/null | grep -qF "$VERSION"; then
  echo "public-api: installing cargo-public-api $VERSION into ~/.cargo/bin"
  # A debug build: it compiles in a fraction of a release build's time on a
  # cold machine (about 2 CPU-minutes against 12 wall-minutes seen for a
  # release build under load), and reading one crate's rustdoc JSON is quick
  # either way. Without debuginfo, too: nothing here steps through it, and
  # generating and linking it is a large part of a debug build's time.
  if ! CARGO_PROFILE_DEV_DEBUG=false cargo install --locked --debug --quiet cargo-public-api --version "$VERSION"; then
    echo "public-api: skipped: cargo-public-api $VERSION could not be installed (is the crates.io registry reachable?)"
    exit 0
  fi
fi

mkdir -p "$target"
fresh="$target/public-api.txt"
# -ss: no blanket impls and no auto-trait impls, which say nothing of this
# crate; derived impls stay (dropping a `Clone` breaks users, and the error
# types are found by their `Error` impls). A library build does not pick the
# Kubernetes version, so name one for k8s-openapi here (as docs.rs does).
# (Not through test-all.sh's clippy-driver, the stable toolchain's.)
env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS K8S_OPENAPI_ENABLED_VERSION=1.34 cargo public-api -ss --all-features \
  -p kube-informer --target-dir "$target" >"$fresh"

python3 scripts/public-api-counts.py "$fresh"

if [[ $bless == 1 ]]; then
  cp "$fresh" "$LISTING"
  echo "public-api: wrote $LISTING"
  exit 0
fi
if ! diff -u "$LISTING" "$fresh"; then
  echo "public-api: FAILED: the public API differs from $LISTING (diff above: - checked in, + now)."
  echo "public-api: if the change is meant, run: bash scripts/suites/public-api.sh --bless, and commit $LISTING"
  exit 1
fi
echo "public-api: the public API matches $LISTING"
