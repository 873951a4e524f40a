#!/usr/bin/env bash
# Proves kube-informer is a library others can add and publish:
#   1. msrv: the library (and kube-informer-testing) builds with the toolchain
#      named by `rust-version`;
#   2. downstream: tests/downstream, a crate outside this workspace that picks
#      its own Kubernetes version (k8s-openapi/latest) and TLS stack, builds
#      Pod and DynamicObject informers and passes its tests against
#      kube-informer-testing;
#   3. package: `cargo package` succeeds for kube-informer-testing and
#      kube-informer, and the packaged kube-informer's examples compile from
#      the two .crate files alone, nothing else of this repository, with
#      every feature (so every example, whatever it requires). That compiles
#      both libraries from their .crate files, which is what cargo's own
#      verification would do, so `cargo package` runs with --no-verify
#      rather than build them twice. A check build (type-checked, no code
#      generated or linked) proves what this step is for, that the .crate
#      files hold every source the examples need. (It saves less than one
#      would think: in a cold run most of this step, about 110 s either way,
#      is checking dependencies whose features differ from the workspace
#      pass's.) kube-informer's doc tests run once, in
#      the workspace pass of scripts/test-all.sh, from the same sources: none
#      reads a file of the repository, and what they include (the guide's
#      chapters, the README) is checked to be in the .crate file here, so
#      running them again from it only cost a cold CI run 90 s.
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
# Installs the MSRV toolchain if it is missing, under a lock: .ci/run starts
# `--install-msrv` in the background so that the download overlaps the
# builds before this suite, which then waits for it.
install_msrv() {
  mkdir -p "$target"
  exec {lock}>"$target/msrv-install.lock"
  flock "$lock"
  if ! rustup toolchain list | grep -q "^$msrv"; then
    rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1 || {
      echo "package: the MSRV toolchain $msrv cannot be installed here"
      flock -u "$lock"
      return 1
    }
  fi
  flock -u "$lock"
}
if [[ "${1:-}" == --install-msrv ]]; then
  install_msrv
  exit
fi
msrv_check() {
  install_msrv || return 1
  # Not through test-all.sh's clippy-driver: that is the stable
  # toolchain's compiler, and this check is the MSRV's.
  env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS \
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
  # Cargo names a path package's build after its name, version and path
  # within its workspace: the unpacked kube-informer, the root of its own
  # workspace as the repository's is, would take the same names as the
  # workspace pass's build of the library in this shared target dir, and
  # each build would replace the other's (a later suite then rebuilt every
  # test binary: 240 s of a cold run). A build-metadata suffix on its
  # version (which semver ignores) keeps the two apart; nothing else of the
  # unpacked sources changes.
  sed -i "0,/^version = \"$version\"\$/s//version = \"$version+package-check\"/" "$informer/Cargo.toml"
  # Neither crate is on crates.io yet: their .crate files stand in
  # (kube-informer's tests, examples and doc tests use kube-informer-testing;
  # kube-informer-testing does not depend on kube-informer).
  local patch="patch.crates-io.kube-informer-testing.path=\"$testing\""
  # The unpacked kube-informer-testing is a workspace of its own, whose
  # manifest has none of the repository's profile: its build would carry
  # full debuginfo for every dependency. The repository's profile instead
  # (the same settings as the workspace's and tests/downstream's).
  local debug_profile=(--config 'profile.dev.debug="line-tables-only"'
    --config 'profile.dev.package."*".debug=false')
  # The files the library's docs include (the guide's chapters, and the
  # README, whose code blocks are doc tests) must be in the .crate file.
  # The library's check build below checks the chapters, which it includes
  # in every build; the README is included only when doc tests are collected.
  local missing
  missing=$(sed -n 's/.*include_str!("\.\.\/\([^"]*\)").*/\1/p' src/guide.rs |
    while read -r file; do [[ -f "$informer/$file" ]] || echo "$file"; done)
  if [[ -n "$missing" ]]; then
    echo "package: the docs include files the .crate file lacks: $missing"
    return 1
  fi
  (cd "$informer" &&
    cargo check -q --examples --all-features --config "$patch" --target-dir "$target") &&
    (cd "$testing" && cargo test -q --doc --target-dir "$target" "${debug_profile[@]}")
}
step "examples (every feature) and kube-informer-testing's doc tests from the .crate files" from_packages

echo "package: took $((SECONDS - started)) s"
echo "package: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
