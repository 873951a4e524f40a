#!/usr/bin/env bash
# Replaces the wire section at the top of BENCHMARKS.md with one built from
# the results kept in benches/compare/results (wire-MODE.jsonl, its meta,
# wire-profile.json and the hand-written WIRE_NOTES.md), keeping the rest of
# the page (the in-memory tables) as it is.
#
#   bash benches/compare/report.sh [full|quick]
set -euo pipefail
mode="${1:-full}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kept="$here/results"
python3 "$here/report.py" --wire-only --markdown "$root/BENCHMARKS.md" \
  --wire-results "$kept/wire-$mode.jsonl" --wire-meta "$kept/wire-meta-$mode.json" \
  --wire-profile "$kept/wire-profile.json" --wire-notes "$here/WIRE_NOTES.md"
echo "== wrote the wire section of $root/BENCHMARKS.md"
