package mcphttp

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestSetParamHeadersPassCheckHeaders: the headers SetParamHeaders sets
// are those CheckHeaders accepts, for every kind of primitive and for
// values HTTP would trim or cannot carry.
func TestSetParamHeadersPassCheckHeaders(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","x-mcp-header":"S"},"i":{"type":"integer","x-mcp-header":"I"},"b":{"type":"boolean","x-mcp-header":"B"},"o":{"type":"object","properties":{"d":{"type":"string","x-mcp-header":"D"}}}}}`)
	params := ParamHeadersOf(schema)
	for _, args := range []string{
		`{"s":"eu","i":42,"b":false,"o":{"d":"x"}}`,
		`{"s":" padded\t","i":-1.0e3}`,
		`{"s":"zürich\r\n","b":true,"o":null}`,
		`{"s":null}`,
		`{}`,
	} {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + args + `,"_meta":{"` + MetaProtocolVersion + `":"` + ProtocolVersion + `","` + MetaClientCapabilities + `":{}}}}`)
		m, jerr := ParseMessage(body)
		if jerr != nil {
			t.Fatal(jerr)
		}
		h := http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"t"}, "Mcp-Protocol-Version": {ProtocolVersion}}
		SetParamHeaders(h, m.Arguments(), params)
		if jerr := CheckHeaders(h, m, params); jerr != nil {
			t.Errorf("%s: %v (headers %v)", args, jerr.Message, h)
		}
	}
	if got := EncodeHeader(" a"); got != "=?base64?IGE=?=" {
		t.Errorf("EncodeHeader(%q) = %q", " a", got)
	}
	if got := EncodeHeader("plain value"); got != "plain value" {
		t.Errorf("EncodeHeader(%q) = %q", "plain value", got)
	}
}
