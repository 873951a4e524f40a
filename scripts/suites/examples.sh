#!/usr/bin/env bash
# Runs the examples that need no cluster and checks that they tell the story
# they promise: quickstart names every kind of notification, including a
# resync; the operator demo reconciles and sees its deployment go.
set -euo pipefail
cd "$(dirname "$0")/../.."

cargo build -q --example quickstart --example operator

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

out=$(timeout 60 cargo run -q --example operator -- --fake 2>&1) || { echo "$out"; echo "examples: operator --fake failed"; exit 1; }
expect "$out" "wants 2 pods, sees 2" "operator sees both pods of its deployment"
expect "$out" "deployment web is gone" "operator sees the deployment deleted"

echo "examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
