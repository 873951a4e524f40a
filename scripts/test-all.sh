#!/usr/bin/env bash
# Runs the whole test suite: the crate's unit, integration and doc tests, then
# every extra suite under scripts/suites/ (conformance against client-go,
# end-to-end against a real kube-apiserver), each of which installs what it
# needs or says plainly that it was skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test (workspace)"
cargo test --workspace --all-features
# The same suites with the store's compact cache (KUBE_INFORMER_CACHE: the
# testing aid of InformerBuilder::cache_from_env, which the suites' builders
# and writers call); no rebuild.
echo "== cargo test (workspace, compact cache)"
KUBE_INFORMER_CACHE=compact cargo test --workspace --all-features

shopt -s nullglob
for suite in scripts/suites/*.sh; do
  echo "== $(basename "$suite" .sh)"
  bash "$suite"
done
