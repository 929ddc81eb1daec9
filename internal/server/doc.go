// Package server is the MCP 2026-07-28 server behind `mrtr-wasm serve`:
// the official Go SDK's Streamable HTTP (stateless) and stdio transports,
// the guarded demo tools (book_demo_call, list_bookings,
// connect_calendar), the /connect page for URL-mode elicitation (its
// sign-in and who calls come from internal/identity), /healthz and
// /metrics.
//
// The SDK does the JSON-RPC, the transports, server/discover, resultType
// and the header checks. protocol.go fills the two gaps found in SDK
// v1.8.0 for a server that speaks only 2026-07-28: a request without the
// required _meta is otherwise served as a legacy (pre-2026) request, and
// the =?base64?…?= form of Mcp-Name and Mcp-Method is not decoded before
// it is compared with the body.
package server
