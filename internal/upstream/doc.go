// Package upstream is the MCP server behind `mrtr-wasm proxy`: the
// Upstream interface that the proxy calls, its stable retryable errors,
// and the two transports that implement it (Streamable HTTP in http.go, a
// supervised stdio child in stdio.go).
//
// A transport moves raw JSON-RPC bytes and never re-encodes them: the
// proxy checks and relays the bytes the upstream sent.
package upstream
