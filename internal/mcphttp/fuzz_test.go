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
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","REQUESTSTATE":"forged"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","Name":"u"}}`,
	} {
		f.Add([]byte(s))
	}
	params := []ParamHeader{{Header: "Region", Path: []string{"region"}}, {Header: "Deep", Path: []string{"a", "b"}}}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMessage(b)
		if m == nil && err == nil {
			t.Fatalf("neither a message nor an error: %q", b)
		}
		if err != nil {
			if m != nil && (m.Method != "" || m.Target() != "" || m.IsRetry()) {
				t.Fatalf("a refused message carries more than its id: %+v", m)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("a message from invalid JSON: %q", b)
		}
		// What the checks read is what a reader of the exact names reads
		// (the guard core, most servers).
		var top map[string]json.RawMessage
		if json.Unmarshal(b, &top) != nil {
			t.Fatalf("a message encoding/json cannot read into a map: %q", b)
		}
		var method string
		_ = json.Unmarshal(top["method"], &method)
		var ps map[string]json.RawMessage
		_ = json.Unmarshal(top["params"], &ps)
		var target string
		if m.Method == "resources/read" {
			_ = json.Unmarshal(ps["uri"], &target)
		} else {
			_ = json.Unmarshal(ps["name"], &target)
		}
		var state *string
		if ps["requestState"] != nil {
			_ = json.Unmarshal(ps["requestState"], &state)
		}
		if method != m.Method || target != m.Target() || (state == nil) != (m.p.RequestState == nil) || (state != nil && *state != *m.p.RequestState) {
			t.Fatalf("the checks read method %q, target %q, state %v; the exact names say %q, %q, %v: %q", m.Method, m.Target(), m.p.RequestState, method, target, state, b)
		}
		h := http.Header{"Mcp-Method": {m.Method}, "Mcp-Name": {m.Target()}, "Mcp-Protocol-Version": {ProtocolVersion},
			"Mcp-Param-Region": {"=?base64?eA==?="}}
		_ = CheckHeaders(h, m, params)
		_ = CheckMeta(m.Method, m.IsCall(), m.Meta())
	})
}
