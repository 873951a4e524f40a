#!/usr/bin/env bash
# Writes the protobuf decoder's test vectors (tests/protobuf-vectors/) with
# Go's own encoder: conformance/go/cmd/protobuf-vectors, on the Go module
# the conformance harness pins (k8s.io/api v0.34.13).
#
#   scripts/protobuf/vectors.sh          rewrite the checked-in vectors
#   scripts/protobuf/vectors.sh --check  fail if Go writes other bytes than
#                                        the checked-in ones
#
# `tests/protobuf_decode.rs` asserts that each NAME.pb decodes to the value
# NAME.json decodes to; `tests/protobuf_wire.rs` does the same for the list
# pages, Status bodies and watch stream in wire/.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v go >/dev/null 2>&1; then
  echo "protobuf vectors: skipped: the go toolchain is not installed"
  exit 0
fi

dest="$PWD/tests/protobuf-vectors"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
(cd conformance/go && GOFLAGS=-mod=mod go run ./cmd/protobuf-vectors "$out")

if [[ "${1:-}" == "--check" ]]; then
  if ! diff -r "$dest" "$out" >/dev/null; then
    diff -rq "$dest" "$out" || true
    echo "protobuf vectors: Go's encoder writes other vectors than tests/protobuf-vectors/ holds;"
    echo "  run scripts/protobuf/vectors.sh and look at the difference"
    exit 1
  fi
  echo "protobuf vectors: the checked-in vectors are what Go writes"
else
  rm -rf "$dest"
  mkdir -p "$dest"
  cp -r "$out"/. "$dest"/
  echo "protobuf vectors: wrote $(find "$dest" -type f | wc -l) files to tests/protobuf-vectors/"
fi
