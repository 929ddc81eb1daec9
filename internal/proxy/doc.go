// Package proxy is `mrtr-wasm proxy`: the guard in front of an MCP server
// it did not write. Downstream it is an MCP 2026-07-28 server as strict as
// serve (the shared checks of internal/mcphttp, serve's bearer tokens and
// metrics); upstream it relays every message as raw bytes through an
// upstream.Upstream, except input rounds: an upstream's InputRequiredResult
// is linted, policed and sealed by guard.wasm (host.UpstreamAsk), a retry
// is opened and checked there (host.UpstreamResume), answers that are
// missing or invalid are asked again by the proxy itself, and each sealed
// round reaches the upstream at most once through the replay ledger
// (host.OnceForward).
package proxy
