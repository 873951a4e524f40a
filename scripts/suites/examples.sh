#!/usr/bin/env bash
# Runs the examples and checks that they tell the story they promise:
# quickstart names every kind of notification, including a resync; the
# operator mirrors ConfigMaps and its copies follow every change. (configmapgen
# needs a cluster: the e2e suite runs it.)
set -euo pipefail
cd "$(dirname "$0")/../.."

# quickstart runs as the README's first line runs it, with the default
# features. The operator needs optional layers (its sharded mode
# needs `shard`); it is built with every feature, as the test pass
# built the library, so that build is reused.
cargo build -q --example quickstart
cargo build -q --all-features --example operator

passed=0
failed=0
expect() { # example-output pattern description
  if grep -q -- "$2" <<<"$1"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "examples: missing: $3"
  fi
}

out=$(timeout 60 cargo run -q --example quickstart 2>&1) || { echo "$out"; echo "examples: quickstart failed"; exit 1; }
expect "$out" "Added   default/theme" "quickstart reports an Added notification"
expect "$out" "Updated default/settings: color blue -> purple" "quickstart reports an Updated notification"
expect "$out" "Deleted default/features" "quickstart reports a Deleted notification"
expect "$out" "by a resync" "quickstart shows a resync to the subscriber with a period"
expect "$out" "0 errors" "quickstart ends without errors"

# The operator mirrors ConfigMaps on the fake server; after each change it
# prints the copies the server holds (once they match what the change asks
# for). These lines are the copies, checked here one by one.
out=$(timeout 60 cargo run -q --all-features --example operator -- --fake 2>&1) || { echo "$out"; echo "examples: operator --fake failed"; exit 1; }
a_blue="team-a/apps.features{color=on} team-a/apps.settings{color=blue}"
b_blue="team-b/apps.features{color=on} team-b/apps.settings{color=blue}"
expect "$out" "^1 start (orphan swept): $a_blue $b_blue\$" "operator mirrors both sources into both targets and sweeps the orphan"
purple="team-a/apps.features{color=on} team-a/apps.settings{color=purple} team-b/apps.features{color=on} team-b/apps.settings{color=purple}"
expect "$out" "^2 source data edited: $purple\$" "operator carries a data edit to every copy"
all_three="$purple team-c/apps.features{color=on} team-c/apps.settings{color=purple}"
expect "$out" "^3 team-c labelled a target: $all_three\$" "operator mirrors into a namespace that became a target"
expect "$out" "^4 a copy deleted by hand is restored: $all_three\$" "operator restores a deleted copy"
expect "$out" "^5 features lost its mirror label: team-a/apps.settings{color=purple} team-b/apps.settings{color=purple} team-c/apps.settings{color=purple}\$" "operator removes the copies of a source that lost its label"
expect "$out" "^6 team-a lost its target label: team-b/apps.settings{color=purple} team-c/apps.settings{color=purple}\$" "operator removes the copies from a namespace that lost its label"
expect "$out" "^7 settings deleted: (no copies)\$" "operator removes the copies of a deleted source"
expect "$out" "^stopped after" "operator stops cleanly"

# configmapgen needs a cluster with its CRD: tests/e2e_configmapgen.rs
# installs it, runs the built example as a process against the real
# kube-apiserver of e2e/cluster.sh, and checks the ConfigMaps it writes and
# that SIGTERM stops it. That test is one of the e2e tests, which
# scripts/suites/e2e.sh runs (or says why it skipped them); running it here
# again started a second cluster for the same check.
echo "examples: configmapgen: checked by tests/e2e_configmapgen.rs in scripts/suites/e2e.sh"

echo "examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
