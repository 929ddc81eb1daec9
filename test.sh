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

echo "== go test -race (host, native engine)"
go test -race -count=1 ./host -run '^Test(API|Pool|Key|ParseKeys|GenerateKey|Schema)' -skip '/wasm$'

echo "== fuzz smoke (the seed corpora also run in go test)"
for t in FuzzCall FuzzOpen FuzzResume FuzzLint FuzzCanonical; do
  go test ./guest/core -run XXX -fuzz "^$t\$" -fuzztime "${FUZZTIME:-10s}" -fuzzminimizetime 5s
done
