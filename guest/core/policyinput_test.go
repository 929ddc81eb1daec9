package core

import (
	"strings"
	"testing"
)

func TestPolicyInputOp(t *testing.T) {
	g := New()
	out := string(g.Call([]byte(`{"v":1,"op":"policy.input","decision":"ask","principal":"alice","method":"tools/call","target":"t","ttl":300,"maxRounds":3,` +
		`"inputRequests":{"z":{"method":"roots/list"},"a":{"params":{"message":"hi Ann","mode":"form","requestedSchema":{"type":"object","properties":{"pw":{"type":"string","title":"Password","default":"x"},"n":{"default":1.0,"type":"number","title":"Token count"}}}},"method":"elicitation/create"}}}`)))
	want := `{"v":1,"ok":true,"input":{"inputs":{"a":{"fields":{"n":{"class":"","language":"","reason":""},"pw":{"class":"password","language":"en","reason":"title \"Password\" means password"}},"method":"elicitation/create","params":{"mode":"form","requestedSchema":{"properties":{"n":{"title":"Token count","type":"number"},"pw":{"title":"Password","type":"string"}},"type":"object"}}},"z":{"method":"roots/list"}},"max_rounds":3,"method":"tools/call","principal":"alice","target":"t","ttl_seconds":300}}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	out = string(g.Call([]byte(`{"v":1,"op":"policy.input","decision":"resume","principal":"","method":"tools/call","target":"t"}`)))
	if !strings.Contains(out, `"input":{"max_rounds":0,"method":"tools/call","principal":"","target":"t","ttl_seconds":0}}`) {
		t.Fatal(out)
	}
}

// TestPolicyInputIdentity: the token's scopes (as given) and claims
// (canonical) land in their sorted places; anything else is refused.
func TestPolicyInputIdentity(t *testing.T) {
	g := New()
	out := string(g.Call([]byte(`{"v":1,"op":"policy.input","decision":"resume","principal":"https://as#a","scopes":["mcp","crm:write"],"claims":{"email":"a@x","client_id":"c"},"method":"tools/call","target":"t"}`)))
	want := `{"v":1,"ok":true,"input":{"claims":{"client_id":"c","email":"a@x"},"max_rounds":0,"method":"tools/call","principal":"https://as#a","scopes":["mcp","crm:write"],"target":"t","ttl_seconds":0}}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	for _, bad := range []string{`"scopes":"mcp"`, `"scopes":[1]`, `"claims":[1]`} {
		out := string(g.Call([]byte(`{"v":1,"op":"policy.input","decision":"resume","principal":"a",` + bad + `,"method":"tools/call","target":"t"}`)))
		if !strings.Contains(out, `"ok":false`) || !strings.Contains(out, "mrtr.request.malformed") {
			t.Errorf("%s: %s", bad, out)
		}
	}
}
