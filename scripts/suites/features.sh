#!/usr/bin/env bash
# Builds kube-informer with each optional layer alone: no default features,
# the default ones, and every feature by itself on top of none.
#
# What CI runs (the default), kept to a few minutes of a cold run:
#   - for every set, clippy on the library alone, warnings denied: the set
#     builds, and no item is left unused by a missing feature. A check
#     build, no code generated: the cheap step that catches most breakage;
#   - the library's unit tests for `none` and `default` only: the smallest
#     and the usual build (every feature at once is test-all.sh's own run).
# Running the unit tests and `cargo check --all-targets` of all eight sets
# took 25-35 minutes cold on two cores, too much for every CI run; ask for
# it with FEATURES_SETS=all, or name the sets to run fully
# (space-separated, `none` and `default` included), e.g.
# FEATURES_SETS="none shard".
#
# In the full run each set has three steps:
#   - the library's clippy, as above;
#   - the library's unit tests;
#   - `cargo check --all-targets`: the tests, examples and benches that
#     the set enables build (examples, benches and the test binaries of
#     their own name their features in `required-features` and are skipped;
#     a test file grouped in a binary has `#[cfg(feature = ...)]` on its
#     `mod` line, so the binary builds without it).
#
# No dev-dependency turns on a feature of kube-informer (the compact-cache
# switch of the tests is a module of the test binaries,
# tests/cache_mode_common), so each set's unit tests and targets build with
# that set's features and no others.
#
# A bash loop: no cargo-hack to install. One target dir with the rest of
# the suite: the dependencies these sets share with it are built once.
set -euo pipefail
cd "$(dirname "$0")/../.."

# A library alone picks no Kubernetes version (its users do), so its own
# builds pick one the way a user's Cargo.toml does, with k8s-openapi's
# feature. (Not with K8S_OPENAPI_ENABLED_VERSION: k8s-openapi's build script
# reruns whenever that variable changes, and every build of it and of what
# depends on it, the test builds' included, would be redone each time a
# step set or unset it.)
lib_alone_version=v1_34

features=(shard leader-election compact prometheus kube-runtime deterministic)
all_sets=(none default "${features[@]}")

flags_of() { # set
  case "$1" in
    none) echo "--no-default-features" ;;
    default) echo "" ;;
    *) echo "--no-default-features --features $1" ;;
  esac
}

# steps_of SET: the steps run for SET.
case "${FEATURES_SETS:-}" in
  "")
    sets=("${all_sets[@]}")
    steps_of() {
      case "$1" in
        none | default) echo "lib-clippy unit-tests" ;;
        *) echo "lib-clippy" ;;
      esac
    }
    ;;
  all)
    sets=("${all_sets[@]}")
    steps_of() { echo "lib-clippy unit-tests all-targets"; }
    ;;
  *)
    read -r -a sets <<<"$FEATURES_SETS"
    steps_of() { echo "lib-clippy unit-tests all-targets"; }
    ;;
esac

passed=0
failed=0
started=$SECONDS
for set in "${sets[@]}"; do
  # shellcheck disable=SC2207
  flags=($(flags_of "$set"))
  step_started=$SECONDS
  for step in $(steps_of "$set"); do
    case "$step" in
      lib-clippy) cmd=(cargo clippy -q -p kube-informer --lib "${flags[@]}"
        --features "k8s-openapi/$lib_alone_version" -- -D warnings) ;;
      unit-tests) cmd=(cargo test -q -p kube-informer --lib "${flags[@]}") ;;
      all-targets) cmd=(cargo check -q -p kube-informer --all-targets "${flags[@]}") ;;
    esac
    if out=$("${cmd[@]}" 2>&1); then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "$out" | tail -n 40
      echo "features: FAILED: $set: $step (${cmd[*]})"
    fi
  done
  echo "features: $set: done in $((SECONDS - step_started)) s"
done

echo "features: ${#sets[@]} sets, $passed steps passed, $failed failed, in $((SECONDS - started)) s"
[ "$failed" -eq 0 ]
