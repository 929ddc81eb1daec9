#!/usr/bin/env bash
# The one guard.wasm in every JavaScript runtime an MCP server runs in:
# installs Deno, Bun and workerd from the npm registry (versions pinned in
# package.json and package-lock.json; `npm ci`), checks that Debian's
# Chromium is there, and runs the shared suite (runtimes/shared/suite.mjs:
# the WASI shim, every shared vector byte for byte, the guard, the OPA
# policy cases) in Node, Deno, Bun, workerd and headless Chromium, then
# the Cloudflare Worker example end to end in `workerd serve`. A runtime
# that is missing fails the run; nothing is skipped.
#
#   runtimes/run.sh            (from anywhere; needs Go, Node >= 20, npm)
set -euo pipefail
cd "$(dirname "$0")"
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

fail() { echo "run.sh: $*" >&2; exit 1; }

echo "== install the runtimes (npm ci)"
../scripts/npm-ci.sh .
bin=node_modules/.bin
CHROMIUM=${MRTR_CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || fail "$CHROMIUM is missing: apt-get install -y chromium"
version() { # name, command...: prints the version, or fails the run
  local v
  v=$("${@:2}" 2>/dev/null | head -1) && [ -n "$v" ] || fail "$1 is missing or does not run ($*)"
  printf '%-8s %s\n' "$1" "$v"
}
version node node --version
version deno "$bin/deno" --version
version bun "$bin/bun" --version
version workerd "$bin/workerd" --version
version chromium "$CHROMIUM" --version

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== guard.wasm and the policy bundle"
MRTR_WASM_SHA256=$(sha256sum ../wasm/guard.wasm | cut -d' ' -f1)
echo "../wasm/guard.wasm sha256 $MRTR_WASM_SHA256"
(cd .. && go run ./cmd/mrtr-wasm policy build policies -o "$tmp/policy-bundle.tar.gz")
MRTR_POLICY_BUNDLE=$tmp/policy-bundle.tar.gz
export MRTR_WASM_SHA256 MRTR_POLICY_BUNDLE

echo "== node: the shared suite (node --test)"
node --test node/

echo "== deno: the shared suite (deno test)"
NO_COLOR=1 "$bin/deno" test --no-check --allow-read --allow-env deno/

echo "== bun: the shared suite (bun test)"
"$bin/bun" test ./bun/

echo "== workerd: the shared suite (workerd test)"
node workerd/gen-config.mjs "$tmp/workerd" "$MRTR_POLICY_BUNDLE" "$MRTR_WASM_SHA256"
(cd "$tmp/workerd" && "$OLDPWD/$bin/workerd" test config.capnp)

echo "== chromium: the shared suite on a page (playwright-core, $CHROMIUM)"
node --test chromium/

echo "== the Cloudflare Worker example in workerd serve, driven by the MCP client"
node --test workerd/example.test.mjs

echo "== every runtime passed: node, deno, bun, workerd, chromium, the worker example"
