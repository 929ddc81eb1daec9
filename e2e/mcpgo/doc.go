// Package mcpgo runs mrtr-wasm proxy in front of a server written with
// github.com/mark3labs/mcp-go, a Go MCP library that decodes JSON with
// encoding/json (member names in any case, the last copy winning). It is
// its own module, so that the library is a dependency of this test only.
//
//	cd e2e/mcpgo && go test ./...
package mcpgo
