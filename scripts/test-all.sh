#!/usr/bin/env bash
# Runs the whole test suite: the crate's unit, integration and doc tests, then
# the test targets whose behaviour the store's compact cache changes again in
# that mode, then every extra suite under scripts/suites/ (conformance against
# client-go, end-to-end against a real kube-apiserver), each of which installs
# what it needs or says plainly that it was skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

# The test targets that run again with KUBE_INFORMER_CACHE=compact.
#
# How to decide: the library reads no environment variable (rule A4); the
# mode is read in one place, the test-only crate kube-informer-cache-mode's CacheModeExt::cache_from_env
# and compact_from_env (the variable CACHE_ENV there, tests/cache-mode/src/lib.rs),
# so a target belongs here when it calls `.cache_from_env()` or
# `compact_from_env()` itself, or through a module of its own (conformance's
# informer_runner), or picks its store writer by the mode (tests/store_common's
# compact_mode, new_writer, assert_same). A target that builds informers or
# stores only through other constructors (factories, shards, projections,
# Writer::new) runs the same in both modes, and so does one that chooses the
# compact cache itself (informer_compact, store_compact). The e2e tests are
# left out: without a cluster they skip, and scripts/suites/e2e.sh runs them.
# Target names are unique in the workspace. `check_compact_targets` below
# fails when a target reads the mode and is missing here.
COMPACT_TARGETS=(
  cache_mode
  controller
  controller_feed
  ext_predicates
  finalizer_rules
  informer_auto_traits
  informer_coalesce
  informer_errors
  informer_failures
  informer_fake_server
  informer_listeners
  informer_model
  informer_polls
  informer_reclaim
  informer_rules
  informer_stop_batch
  informer_stop_prop
  informer_sync_wait
  library_store
  metrics_scrape
  metrics_snapshot
  metrics_tracing
  own_writes
  shard_leader
  shard_member
  shard_stream
  simulation_configmapgen
  simulation_finalizer
  simulation_informer
  simulation_repeat
  source_logging
  store_index
  informer_scripts_match_recorded_client_go
)

# Every test target that reads the cache mode, one name a line.
mode_readers() {
  local file module dir
  local reads='\.cache_from_env\(|compact_from_env\(|CACHE_ENV|compact_mode\(|new_writer\(|assert_same\('
  for file in tests/*.rs tests/support/tests/*.rs benches/compare/tests/*.rs; do
    [[ "$(basename "$file")" == e2e_* ]] && continue
    if grep -qE "$reads" "$file"; then basename "$file" .rs; fi
  done
  # A helper module that calls it makes every target that includes it one.
  for dir in tests/*/ tests/support/tests/*/; do
    # (tests/store_common reads the mode for the functions the targets
    # call, which `reads` above finds in each target.)
    grep -rqE '\.cache_from_env\(' --include='*.rs' "$dir" || continue
    module="$(basename "$dir")"
    for file in "$(dirname "$dir")"/*.rs; do
      [[ "$(basename "$file")" == e2e_* ]] && continue
      if grep -qE "^mod $module;" "$file"; then basename "$file" .rs; fi
    done
  done
  # The conformance crate's modules that call it, and its tests that use them.
  for module in $(grep -lE '\.cache_from_env\(|compact_from_env\(' conformance/src/*.rs || true); do
    module="$(basename "$module" .rs)"
    for file in conformance/tests/*.rs; do
      if grep -qw "$module" "$file"; then basename "$file" .rs; fi
    done
  done
}

check_compact_targets() {
  local missing
  missing="$(comm -23 <(mode_readers | sort -u) <(printf '%s\n' "${COMPACT_TARGETS[@]}" | sort -u))"
  if [[ -n "$missing" ]]; then
    echo "test-all: these test targets read KUBE_INFORMER_CACHE but are not in COMPACT_TARGETS"
    echo "test-all: (scripts/test-all.sh), so the compact pass would skip them:"
    echo "$missing"
    return 1
  fi
}

if [[ "${1:-}" == --check-compact-targets ]]; then
  check_compact_targets
  exit
fi
check_compact_targets

# Each stage says how long it took, so a slow CI run shows where it went.
stage() { # name command...
  local name=$1 started=$SECONDS
  shift
  echo "== $name"
  "$@"
  echo "test-all: $name took $((SECONDS - started)) s"
}

compact=()
for target in "${COMPACT_TARGETS[@]}"; do compact+=(--test "$target"); done
stage "cargo test (workspace)" cargo test --workspace --all-features
stage "cargo test (compact cache: ${#COMPACT_TARGETS[@]} targets)" \
  env KUBE_INFORMER_CACHE=compact cargo test --workspace --all-features "${compact[@]}"

shopt -s nullglob
for suite in scripts/suites/*.sh; do
  stage "$(basename "$suite" .sh)" bash "$suite"
done
echo "test-all: passed in $SECONDS s"
