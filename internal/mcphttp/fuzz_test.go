package mcphttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
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

// FuzzParseMessageExact holds the one-pass reader to encoding/json's: a
// message parseExact takes is the message parseWire reads, field for
// field, and parseWire takes it too.
func FuzzParseMessageExact(f *testing.F) {
	for _, s := range exactSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tb := bytes.TrimSpace(b)
		if len(tb) == 0 || tb[0] != '{' || !json.Valid(tb) {
			return // ParseMessage refuses these before parseExact
		}
		got, ok := parseExact(tb)
		if !ok {
			return
		}
		want, err := parseWire(tb)
		if err != nil {
			t.Fatalf("parseExact took what parseWire refuses (%s): %q", err.Message, b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseExact read %+v, parseWire %+v: %q", got, want, b)
		}
	})
}

var exactSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	`{"jsonrpc":"2.0","id":"x","method":"resources/read","params":{"uri":"file:///x","requestState":"s","inputResponses":{"a":{"action":"accept"}}}}`,
	`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":null,"requestState":null,"arguments":null,"inputResponses":null,"_meta":null}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":null}`,
	` {"method":"m\u0065thod\u00e9","jsonrpc":"2.0","id":[1,{"a":2}],"params":{"n\u0061me":"\ud800x","_meta":{"k\u00e9":1,"":[]}}} `,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"t\xffx\",\"params\":{}}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"t\",\"params\":{\"_meta\":{\"a\xff\":1,\"a\xfe\":2}}}",
	`{"jsonrpc":"2.0","id":1,"method":"t","params":{"_meta":{"a":1,"a":2}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"t","params":{"name":"t","REQUESTSTATE":"forged"}}`,
	`{"jsonrpc":"2.0","Id":1,"method":"t"}`,
	`{"jsonrpc":"\u0032.0","id":1,"method":"t"}`,
	`{"jsonrpc":"2.0","id":1,"method":"","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"t","params":{"requestState":5}}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"t","params":{"arguments":-0.0e-1}}`,
}

// TestParseExactTakesTheCommonShapes: the one-pass reader takes the
// messages clients send, so the fast path is the path.
func TestParseExactTakesTheCommonShapes(t *testing.T) {
	for _, s := range exactSeeds[:5] {
		m, ok := parseExact(bytes.TrimSpace([]byte(s)))
		if !ok {
			t.Errorf("parseExact did not take %s", s)
			continue
		}
		want, err := parseWire(bytes.TrimSpace([]byte(s)))
		if err != nil || !reflect.DeepEqual(m, want) {
			t.Errorf("%s: parseExact %+v, parseWire %+v (%v)", s, m, want, err)
		}
	}
	// What it leaves to encoding/json: bytes that are not UTF-8 as
	// written, a repeated _meta key, a name in another case, a value
	// of the wrong type, jsonrpc spelt with an escape, an empty method.
	for _, s := range exactSeeds[5:13] {
		if _, ok := parseExact([]byte(s)); ok {
			t.Errorf("parseExact took %q", s)
		}
	}
}

// TestParseMessageNotValidJSON: an object that is not valid JSON is a
// parse error, whatever it holds.
func TestParseMessageNotValidJSON(t *testing.T) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"t"`, `{"jsonrpc":"2.0","id":1,"method":"t"} x`, `{"a":01}`} {
		m, err := ParseMessage([]byte(s))
		if m != nil || err == nil || err.Code != -32700 || err.Message != "the body is not valid JSON" {
			t.Errorf("%s: got %+v, %+v", s, m, err)
		}
	}
}
