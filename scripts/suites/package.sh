#!/usr/bin/env bash
# Proves kube-informer is a library others can add and publish:
#   1. msrv: the library (and kube-informer-testing) builds with the toolchain
#      named by `rust-version`;
#   2. downstream: tests/downstream, a crate outside this workspace that picks
#      its own Kubernetes version (k8s-openapi/latest) and TLS stack, builds
#      Pod and DynamicObject informers and passes its tests against
#      kube-informer-testing;
#   3. package: `cargo package` succeeds for kube-informer-testing and
#      kube-informer, and the packaged kube-informer's examples and doc tests
#      compile and pass from the two .crate files alone, nothing else of this
#      repository. That builds both libraries from their .crate files, which
#      is what cargo's own verification would do, so `cargo package` runs
#      with --no-verify rather than build them twice.
# Builds share this repository's target/ so later runs are quick.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target="${CARGO_TARGET_DIR:-$root/target}"
started=$SECONDS
passed=0
failed=0
step() { # name command...
  local name=$1 t0=$SECONDS
  shift
  if "$@"; then
    passed=$((passed + 1))
    echo "package: $name ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    echo "package: $name FAILED"
  fi
}

# A library alone (no dev-dependencies) has no k8s-openapi version feature;
# its check picks one the way a user's Cargo.toml does (see features.sh on
# why not K8S_OPENAPI_ENABLED_VERSION).
lib_alone_version=v1_34

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
msrv_check() {
  if ! rustup toolchain list | grep -q "^$msrv"; then
    rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1 || {
      echo "package: the MSRV toolchain $msrv cannot be installed here"
      return 1
    }
  fi
  cargo "+$msrv" check -q --all-features --lib --features "k8s-openapi/$lib_alone_version" \
    -p kube-informer -p kube-informer-testing --target-dir "$target/msrv"
}
step "msrv $msrv" msrv_check

downstream() {
  (cd tests/downstream && cargo test -q --target-dir "$target")
}
step "downstream crate (k8s-openapi/latest)" downstream

package() {
  cargo package -q --no-verify --allow-dirty -p kube-informer-testing -p kube-informer
}
step "cargo package" package

# The unpacked crates live outside this workspace (cargo would take them for
# members of it otherwise), at a fixed place so their builds are reused.
from_packages() {
  local version work informer testing
  version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
  work="${TMPDIR:-/tmp}/kube-informer-package-check"
  rm -rf "$work"
  mkdir -p "$work"
  tar -xzf "$target/package/kube-informer-$version.crate" -C "$work"
  tar -xzf "$target/package/kube-informer-testing-$version.crate" -C "$work"
  # The archives keep their files' old mtimes, and the unpacked crates sit at
  # the same path every run: without a fresh mtime a build left in the
  # target dir by an earlier run of older sources would count as fresh.
  find "$work" -type f -exec touch {} +
  informer="$work/kube-informer-$version"
  testing="$work/kube-informer-testing-$version"
  # Neither crate is on crates.io yet: their .crate files stand in
  # (kube-informer's tests, examples and doc tests use kube-informer-testing;
  # kube-informer-testing does not depend on kube-informer).
  local patch="patch.crates-io.kube-informer-testing.path=\"$testing\""
  (cd "$informer" &&
    cargo build -q --examples --config "$patch" --target-dir "$target" &&
    cargo test -q --doc --all-features --config "$patch" --target-dir "$target") &&
    (cd "$testing" && cargo test -q --doc --target-dir "$target")
}
step "examples and doc tests from the .crate files" from_packages

echo "package: took $((SECONDS - started)) s"
echo "package: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
