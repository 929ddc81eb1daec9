#!/usr/bin/env bash
# Runs every test of mrtr-wasm: formatting and vet, the reproducibility of
# guard.wasm, and the Go tests (the core natively and through wazero, the
# shared vectors). It installs nothing globally.
set -euo pipefail
cd "$(dirname "$0")"

echo "== gofmt, go vet"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted" >&2; exit 1; fi
go vet ./...
GOOS=wasip1 GOARCH=wasm go vet ./guest/...

echo "== guard.wasm"
scripts/check-wasm.sh

echo "== go test"
go test -count=1 ./...
