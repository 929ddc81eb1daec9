#!/usr/bin/env bash
# Rebuilds guard.wasm from guest/ into a temporary file and fails when the
# committed wasm/guard.wasm differs: the committed bytes must be exactly
# what the source produces (same Go toolchain, see go.mod).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd wasm && GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= go build -buildmode=c-shared -trimpath -buildvcs=false "-ldflags=-s -w -buildid=" -o "$tmp/guard.wasm" ../guest)
if ! cmp -s "$tmp/guard.wasm" wasm/guard.wasm; then
  echo "wasm/guard.wasm is stale: run 'go generate ./wasm' and commit it" >&2
  echo "committed: $(sha256sum < wasm/guard.wasm)" >&2
  echo "rebuilt:   $(sha256sum < "$tmp/guard.wasm")" >&2
  exit 1
fi
echo "guard.wasm reproducible: $(sha256sum < wasm/guard.wasm | cut -c1-64)"
