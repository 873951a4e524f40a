#!/usr/bin/env bash
# Regenerates the part of BENCHMARKS.md between its headline markers, and
# benches/compare/headline.svg, from one wire pass kept in
# benches/compare/results (wire-TAG.jsonl and wire-meta-TAG.json), with
# headline.py; the rest of the page is written by hand. Takes a second.
#
#   bash benches/compare/report.sh [TAG]   # default: headline (run.sh --headline's pass)
set -euo pipefail
tag="${1:-headline}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kept="$here/results"
python3 "$here/headline.py" "$kept/wire-$tag.jsonl" "$kept/wire-meta-$tag.json" \
  --page "$root/BENCHMARKS.md" --svg "$here/headline.svg"
echo "== wrote the headline of $root/BENCHMARKS.md and $here/headline.svg from results/wire-$tag.jsonl"
