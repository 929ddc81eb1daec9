// Package ops is what a fleet's orchestrator sees of serve and the proxy:
// /healthz (the process lives), /readyz (what it needs answers: the
// ledger, the policy, the CRM or the upstream) and a drain on shutdown.
//
// On SIGTERM an instance turns not ready, so that its load balancer stops
// sending to it, refuses each new MCP request with a retryable error
// (HTTP 503 with Retry-After, JSON-RPC -32000) rather than dropping its
// connection, lets the requests in flight finish within a grace period,
// and then stops. A refused client retries on another instance; with a
// shared ledger and keys, any round of a request may land anywhere.
package ops
