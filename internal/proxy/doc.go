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
//
// Both eras: a 2025-11-25 client gets a session whose requests are
// answered from the upstream as its principal sees it (legacy.go); a
// 2025-11-25 upstream's server-to-client request in the middle of a call
// becomes a round (legacyup.go). A server-to-client request outside a call has
// nobody to ask, since a 2026-07-28 client is there only during its own
// requests: a stdio child's request is taken as a call's only when exactly
// one call is open on that principal's child (upstream.Stdio), else it is
// answered at once with an error (upstream.RefuseOutsideCall), so the
// server never waits and no other principal's call gets it; an HTTP
// upstream would send it on a GET stream the proxy never opens. roots/list
// is asked only with roots declared (--upstream-roots, off by default: a
// client's roots steer servers such as server-filesystem); a call whose
// client declared no roots answers it "no roots" and goes on.
package proxy
