// Package wasm holds guard.wasm, the guard core compiled from ../guest,
// committed so that `go install` and `go run` work from a clean clone.
// `go generate ./wasm` rebuilds it; CI rebuilds it and fails when the
// committed bytes differ from what the source produces.
package wasm

import _ "embed"

//go:generate env GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= go build -buildmode=c-shared -trimpath -buildvcs=false "-ldflags=-s -w -buildid=" -o guard.wasm ../guest

// Guard is the guard.wasm module.
//
//go:embed guard.wasm
var Guard []byte
