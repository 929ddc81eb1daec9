// Package conformance holds the fixture tools, resources and prompts that
// the official MCP conformance suite (@modelcontextprotocol/conformance,
// the 2026-07-28 requirement set) calls, registered by
// `mrtr-wasm serve --conformance`. Only the input-required-result-*
// fixtures (fixtures.go) ask for input; the rest (everything.go) are plain.
//
// Every fixture goes through the real guard: its requestState is a sealed
// PASETO token bound to the principal, tool and arguments, so the
// tampered-state scenario is refused by the MAC check, not by spotting the
// "-TAMPERED" suffix the suite appends. Answers a client offers without
// any requestState (the ignore-extra-params and missing-input-response
// scenarios do that) are checked against a freshly sealed ask of the same
// question, exactly as if the client had been asked first.
package conformance
