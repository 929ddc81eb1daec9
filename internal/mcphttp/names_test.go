package mcphttp

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestMemberNamesInAnotherCase: a message is refused when it repeats a
// member, or names a member the checks read in another case, even with
// non-ASCII letters that fold to ASCII (U+017F is "s" to encoding/json).
func TestMemberNamesInAnotherCase(t *testing.T) {
	// The premise: encoding/json takes these for the field.
	var p params
	if err := json.Unmarshal([]byte(`{"reque\u017ftState":"forged"}`), &p); err != nil || p.RequestState == nil || *p.RequestState != "forged" {
		t.Fatalf("encoding/json no longer matches U+017F to s: %v %v", err, p.RequestState)
	}
	const head = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book"`
	for _, c := range []struct {
		msg  string
		code int64 // 0: accepted
	}{
		{head + `,"requestState":"s","inputResponses":{}}}`, 0},
		{head + `,"Arguments2":{},"x":1}}`, 0},
		{head + `,"REQUESTSTATE":"forged"}}`, jsonrpc.CodeInvalidParams},
		{head + `,"requestState":"s","RequestState":"forged"}}`, jsonrpc.CodeInvalidParams},
		{head + `,"reque\u017ftState":"forged"}}`, jsonrpc.CodeInvalidParams},
		{head + `,"InputResponses":{"a":{"action":"accept"}}}}`, jsonrpc.CodeInvalidParams},
		{head + `,"NAME":"delete_account"}}`, jsonrpc.CodeInvalidParams},
		{head + `,"name":"delete_account"}}`, jsonrpc.CodeInvalidParams},
		{head + `,"_META":{}}}`, jsonrpc.CodeInvalidParams},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{}}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","PARAMS":{"name":"x"}}`, jsonrpc.CodeInvalidRequest},
	} {
		m, err := ParseMessage([]byte(c.msg))
		switch {
		case c.code == 0 && err != nil:
			t.Errorf("%s: refused: %v", c.msg, err)
		case c.code != 0 && (err == nil || err.Code != c.code):
			t.Errorf("%s: got %v (message %v), want code %d", c.msg, err, m != nil, c.code)
		}
	}
}

// TestParamHeaderArgumentInAnotherCase: an argument that travels as an
// Mcp-Param-* header must not also be spelled in another case: the header
// would be checked against one and a server could act on the other.
func TestParamHeaderArgumentInAnotherCase(t *testing.T) {
	params := []ParamHeader{{Header: "Region", Path: []string{"region"}}, {Header: "Deep", Path: []string{"a", "b"}}}
	h := func() http.Header {
		return http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"t"}, "Mcp-Protocol-Version": {ProtocolVersion},
			"Mcp-Param-Region": {"eu"}, "Mcp-Param-Deep": {"x"}}
	}
	for _, c := range []struct {
		args string
		ok   bool
	}{
		{`{"region":"eu","a":{"b":"x"}}`, true},
		{`{"region":"eu","Region":"us","a":{"b":"x"}}`, false},
		{`{"REGION":"us","region":"eu","a":{"b":"x"}}`, false},
		{`{"region":"eu","a":{"b":"x","B":"y"}}`, false},
		{`{"region":"eu","A":{"b":"y"},"a":{"b":"x"}}`, false},
		{`{"region":"eu","a":{"b":"x"},"other":1,"OTHER":2}`, true}, // no header reads it
	} {
		m, err := ParseMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + c.args +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + ProtocolVersion + `"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		e := CheckHeaders(h(), m, params)
		if (e == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.args, e, c.ok)
		}
		if e != nil && e.Code != CodeHeaderMismatch {
			t.Errorf("%s: code %d", c.args, e.Code)
		}
	}
}
