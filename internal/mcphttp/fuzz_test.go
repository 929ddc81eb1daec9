package mcphttp

import (
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzParseMessage: any bytes give a message or a JSON-RPC error, never a
// panic; a message's header checks never panic either.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///x","requestState":"s","inputResponses":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}`,
		`nope`, ``, `{}`,
	} {
		f.Add([]byte(s))
	}
	params := []ParamHeader{{Header: "Region", Path: []string{"region"}}, {Header: "Deep", Path: []string{"a", "b"}}}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMessage(b)
		if (m == nil) == (err == nil) {
			t.Fatalf("want exactly one of a message and an error: %v %v", m, err)
		}
		if m == nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("a message from invalid JSON: %q", b)
		}
		h := http.Header{"Mcp-Method": {m.Method}, "Mcp-Name": {m.Target()}, "Mcp-Protocol-Version": {ProtocolVersion},
			"Mcp-Param-Region": {"=?base64?eA==?="}}
		_ = CheckHeaders(h, m, params)
		_ = CheckMeta(m.Method, m.IsCall(), m.Meta())
	})
}
