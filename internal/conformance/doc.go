// Package conformance holds the fixture tools and prompt that the official
// MCP conformance suite (@modelcontextprotocol/conformance, the
// input-required-result-* scenarios of 2026-07-28) calls, registered by
// `mrtr-wasm serve --conformance`.
//
// Every fixture goes through the real guard: its requestState is a sealed
// PASETO token bound to the principal, tool and arguments, so the
// tampered-state scenario is refused by the MAC check, not by spotting the
// "-TAMPERED" suffix the suite appends. Answers a client offers without
// any requestState (the ignore-extra-params and missing-input-response
// scenarios do that) are checked against a freshly sealed ask of the same
// question, exactly as if the client had been asked first.
package conformance
