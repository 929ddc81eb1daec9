// Package mcphttp holds the MCP 2026-07-28 checks that serve and proxy
// share at the HTTP boundary: the required _meta, the protocol version
// header, the =?base64?…?= header form, the body limit, and (for the proxy,
// which has no SDK server to do them) the Host, Content-Type, Accept,
// Mcp-Method, Mcp-Name and Mcp-Param-* header checks. Errors are written
// as JSON-RPC errors with the spec's codes.
package mcphttp
