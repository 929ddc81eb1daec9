// Package core is the guard: the code compiled into guard.wasm and, for
// comparison and for the native engine, into Go hosts.
//
// It is pure and deterministic: no I/O, no clock, no randomness of its
// own. A host passes "now" and fresh random bytes in every request that
// needs them, so the same request gives the same bytes in every runtime,
// which is what the shared vectors under testdata/vectors check.
//
// The only entry point is Guard.Call, which takes and returns the JSON
// envelopes described in guest/ABI.md: configure, lint, ask, resume and
// open, plus raw PASETO ops for the official vectors. Go servers should
// use package host, which runs this core for them.
package core
