#!/usr/bin/env bash
# Runs the whole test suite: the crate's unit, integration and doc tests
# (built with clippy's lints, warnings denied, when clippy is installed), then
# the test targets whose behaviour the store's compact cache and the wire
# encoding change again, with the compact cache and protobuf, then every extra suite under scripts/suites/ (conformance against
# client-go, end-to-end against a real kube-apiserver), each of which installs
# what it needs or says plainly that it was skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

# The tests that run again with KUBE_INFORMER_CACHE=compact and
# KUBE_INFORMER_ENCODING=protobuf: the second pass takes both other modes
# at once (the first took the default store and JSON), so that the informer
# and controller suites run in both encodings and both store modes without a
# third pass (about 80 s of a cold run each). A failure there names its test;
# rerun it with one variable at a time to see which mode it needs.
#
# How to decide: the library reads no environment variable (rule A4); the
# modes are read in one place, the test module tests/cache_mode_common (its
# CacheModeExt::cache_from_env, compact_from_env and protobuf_from_env, the
# variables CACHE_ENV and ENCODING_ENV),
# so a test file belongs here when it calls `.cache_from_env()` or
# `compact_from_env()` itself, or through a module of its own (conformance's
# informer_runner), or picks its store writer by the mode (tests/store_common's
# compact_mode, new_writer, assert_same). A file that builds informers or
# stores only through other constructors (factories, shards, projections,
# Writer::new) runs the same in both modes, and so does one that chooses the
# compact cache itself (informer_compact, store_compact). The e2e tests are
# left out: without a cluster they skip, and scripts/suites/e2e.sh runs them.
#
# Each entry is `<test binary>::<module>` for a file of tests/ that is a
# module of one of the binaries grouping them (Cargo.toml's [[test]]
# entries, roots tests/<binary>.rs), or a test target's name for one that is
# a binary of its own (and for the other crates' tests). File names are
# unique in the workspace. `check_compact_targets` below fails when a file
# reads the mode and is missing here, or when an entry names no test.
COMPACT_TARGETS=(
  informer::cache_mode
  controller_layer::controller
  controller_layer::controller_feed
  informer::ext_predicates
  controller_layer::finalizer_rules
  informer::informer_auto_traits
  informer::informer_coalesce
  informer::informer_errors
  informer::informer_failures
  informer::informer_fake_server
  informer::informer_listeners
  informer::informer_model
  informer::informer_polls
  informer::informer_reclaim
  informer::informer_rules
  informer::informer_stop_batch
  informer::informer_stop_prop
  informer::informer_sync_wait
  informer::library_store
  controller_layer::metrics_scrape
  informer::metrics_snapshot
  metrics_tracing
  controller_layer::own_writes
  controller_layer::shard_leader
  controller_layer::shard_member
  controller_layer::shard_stream
  simulations::simulation_configmapgen
  simulations::simulation_finalizer
  simulations::simulation_informer
  simulations::simulation_repeat
  source_logging
  store::store_index
  informer_scripts_match_recorded_client_go
)

# The test binaries of kube-informer's tests/, one name a line (its
# [[test]] entries; autotests is off).
test_binaries() {
  awk '/^\[\[test\]\]/ { t = 1; next } t && /^name = / { gsub(/"/, "", $3); print $3; t = 0 }' Cargo.toml
}

# What a file of tests/ is in COMPACT_TARGETS' terms: `<binary>::<module>`
# when a binary's root declares it as a module, its own name when it is a
# binary, nothing when it is neither (a binary's root, or a file no binary
# builds).
test_name() { # file of tests/
  local name binary
  name="$(basename "$1" .rs)"
  for binary in $(test_binaries); do
    [[ "$binary" == "$name" ]] && { echo "$name"; return; }
    if grep -qE "^mod $name;" "tests/$binary.rs"; then echo "$binary::$name"; return; fi
  done
}

# Every test file that reads the cache mode, one COMPACT_TARGETS entry a line.
mode_readers() {
  local file module dir
  local reads='\.cache_from_env\(|compact_from_env\(|protobuf_from_env\(|CACHE_ENV|ENCODING_ENV|compact_mode\(|new_writer\(|assert_same\('
  for file in tests/*.rs; do
    [[ "$(basename "$file")" == e2e_* ]] && continue
    if grep -qE "$reads" "$file"; then test_name "$file"; fi
  done
  for file in tests/support/tests/*.rs benches/compare/tests/*.rs; do
    if grep -qE "$reads" "$file"; then basename "$file" .rs; fi
  done
  # A helper module that calls it makes every file that uses it one (a
  # binary's root declares the helper, its modules use it as crate::<helper>).
  for dir in tests/*/ tests/support/tests/*/; do
    # (tests/store_common reads the mode for the functions the tests
    # call, which `reads` above finds in each file.)
    grep -rqE '\.cache_from_env\(' --include='*.rs' "$dir" || continue
    module="$(basename "$dir")"
    for file in "$(dirname "$dir")"/*.rs; do
      [[ "$(basename "$file")" == e2e_* ]] && continue
      grep -qE "^(mod $module;|use crate::$module;)" "$file" || continue
      if [[ "$dir" == tests/support/* ]]; then basename "$file" .rs; else test_name "$file"; fi
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

# Every entry COMPACT_TARGETS may name: the modules of the binaries that
# group tests/, the other test targets of the workspace.
known_tests() {
  local file
  for file in tests/*.rs; do test_name "$file"; done
  for file in tests/support/tests/*.rs benches/compare/tests/*.rs conformance/tests/*.rs; do
    basename "$file" .rs
  done
}

check_compact_targets() {
  local missing unknown file orphans=""
  # With autotests off, a file of tests/ that no binary declares is never
  # built: each must be a [[test]] entry, a binary's root or a module of one.
  for file in tests/*.rs; do
    [[ -n "$(test_name "$file")" ]] || test_binaries | grep -qx "$(basename "$file" .rs)" ||
      orphans+="$file"$'\n'
  done
  if [[ -n "$orphans" ]]; then
    echo "test-all: these files of tests/ are in no test binary (add a mod line to a"
    echo "test-all: tests/<binary>.rs, or a [[test]] entry to Cargo.toml):"
    printf '%s' "$orphans"
    return 1
  fi
  missing="$(comm -23 <(mode_readers | sort -u) <(printf '%s\n' "${COMPACT_TARGETS[@]}" | sort -u))"
  if [[ -n "$missing" ]]; then
    echo "test-all: these tests read KUBE_INFORMER_CACHE but are not in COMPACT_TARGETS"
    echo "test-all: (scripts/test-all.sh), so the compact pass would skip them:"
    echo "$missing"
    return 1
  fi
  unknown="$(comm -13 <(known_tests | sort -u) <(printf '%s\n' "${COMPACT_TARGETS[@]}" | sort -u))"
  if [[ -n "$unknown" ]]; then
    echo "test-all: COMPACT_TARGETS (scripts/test-all.sh) names tests that do not exist:"
    echo "$unknown"
    return 1
  fi
}

# The compact pass's commands, one a line: one run of the grouping binaries
# that hold listed modules, filtered to those modules (each test's name
# starts with its module's), and one of the whole targets listed.
compact_commands() {
  local entry binaries=() filters=() whole=()
  for entry in "${COMPACT_TARGETS[@]}"; do
    if [[ "$entry" == *::* ]]; then
      [[ " ${binaries[*]} " == *" --test ${entry%%::*} "* ]] || binaries+=(--test "${entry%%::*}")
      filters+=("${entry#*::}::")
    else
      whole+=(--test "$entry")
    fi
  done
  echo "cargo test --workspace --all-features ${binaries[*]} -- ${filters[*]}"
  echo "cargo test --workspace --all-features ${whole[*]}"
}

if [[ "${1:-}" == --check-compact-targets ]]; then
  check_compact_targets
  exit
fi
if [[ "${1:-}" == --compact-commands ]]; then
  compact_commands
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

# Clippy's lints come with the test build: the workspace's own crates are
# compiled through clippy-driver, warnings denied, which lints what `cargo
# clippy --workspace --all-targets --all-features -- -D warnings` lints (the
# benches, which `cargo test` does not build, are built on their own below).
# A `cargo clippy` beside the tests would check every dependency a second
# time, in check mode, for nothing else. The wrapper stays set for every
# later build, so each reuses the workspace pass's build of these crates;
# the two suites that build with another toolchain (package.sh's MSRV
# check, public-api.sh's nightly) unset it.
if driver="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)"; then
  export RUSTC_WORKSPACE_WRAPPER="$driver"
  # clippy-driver's argument list, as `cargo clippy -- -D warnings` passes it.
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
  echo "test-all: clippy's lints run in the builds below, warnings denied ($driver)"
else
  echo "test-all: lints: SKIPPED: no clippy-driver here (rustup component add clippy)"
fi

stage "cargo test (workspace)" cargo test --workspace --all-features
stage "benches (built and linted, not run)" cargo test --workspace --all-features --benches --no-run
compact_pass() {
  local command
  while read -r command; do
    echo "+ KUBE_INFORMER_CACHE=compact KUBE_INFORMER_ENCODING=protobuf $command"
    # shellcheck disable=SC2086 # the command's words, none with spaces
    env KUBE_INFORMER_CACHE=compact KUBE_INFORMER_ENCODING=protobuf $command
  done < <(compact_commands)
}
stage "cargo test (compact cache and protobuf: ${#COMPACT_TARGETS[@]} test files)" compact_pass

# Every suite under scripts/suites/, those that need the Go builds last:
# .ci/run builds the Go harnesses and the e2e servers in the background, in
# the CPU time the Rust builds and tests leave idle, and those suites wait
# for them.
go_last=(conformance e2e)
shopt -s nullglob
suites=()
for suite in scripts/suites/*.sh; do
  [[ " ${go_last[*]} " == *" $(basename "$suite" .sh) "* ]] || suites+=("$suite")
done
for name in "${go_last[@]}"; do
  [[ -f "scripts/suites/$name.sh" ]] && suites+=("scripts/suites/$name.sh")
done
for suite in "${suites[@]}"; do
  stage "$(basename "$suite" .sh)" bash "$suite"
done
echo "test-all: passed in $SECONDS s"
