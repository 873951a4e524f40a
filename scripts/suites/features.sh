#!/usr/bin/env bash
# Builds and tests kube-informer with each optional layer alone: no default
# features, the default ones, and every feature by itself on top of none.
# For each set it runs
#   - clippy on the library alone, warnings denied: the set builds, and no
#     item is left unused by a missing feature;
#   - the library's unit tests;
#   - `cargo check --all-targets`: the tests, examples and benches that
#     the set enables build (the others name their features in
#     `required-features` and are skipped).
# The whole workspace with every feature is scripts/test-all.sh's own run.
#
# kube-informer-testing, a dev-dependency, turns on `compact` (for its
# CacheModeExt), so the unit tests and the targets of every set are built
# with `compact` as well; the library's own clippy run, which has no
# dev-dependencies, is the one that checks a set without it.
#
# A bash loop: no cargo-hack to install. One target dir with the rest of
# the suite: the dependencies these sets share with it are built once.
# Set FEATURES_SETS (space-separated, `none` and `default` included) to run
# fewer sets.
set -euo pipefail
cd "$(dirname "$0")/../.."

# A library alone picks no Kubernetes version (its users do): k8s-openapi
# reads it from this variable then. Only the library's own builds get it,
# as in package.sh: k8s-openapi's build script reruns when it changes, so
# the test builds keep the cache the rest of the suite made.
lib_alone_version=1.34

features=(shard leader-election compact prometheus kube-runtime deterministic)
read -r -a sets <<<"${FEATURES_SETS:-none default ${features[*]}}"

flags_of() { # set
  case "$1" in
    none) echo "--no-default-features" ;;
    default) echo "" ;;
    *) echo "--no-default-features --features $1" ;;
  esac
}

passed=0
failed=0
started=$SECONDS
for set in "${sets[@]}"; do
  # shellcheck disable=SC2207
  flags=($(flags_of "$set"))
  step_started=$SECONDS
  for step in lib-clippy unit-tests all-targets; do
    case "$step" in
      lib-clippy) cmd=(env K8S_OPENAPI_ENABLED_VERSION=$lib_alone_version
        cargo clippy -q -p kube-informer --lib "${flags[@]}" -- -D warnings) ;;
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
