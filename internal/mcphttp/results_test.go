package mcphttp

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestConformResult(t *testing.T) {
	for _, c := range []struct {
		method, in, want string
	}{
		{"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[]}}`},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":60000}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","cacheScope":"private","tools":[],"ttlMs":60000}}`},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{ }}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete" }}`},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result": {"content":[]}}`,
			`{"jsonrpc":"2.0","id":1,"result": {"resultType":"complete","content":[]}}`},
		// kept byte for byte
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType": "complete","content":[]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType": "complete","content":[]}}`},
		{"resources/read", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","contents":[],"ttlMs":5,"cacheScope":"public"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","contents":[],"ttlMs":5,"cacheScope":"public"}}`},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`},
	} {
		got, err := ConformResult(c.method, []byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("%s %s:\n got %s (%v)\nwant %s", c.method, c.in, got, err, c.want)
			continue
		}
		if !json.Valid(got) {
			t.Errorf("not JSON: %s", got)
		}
	}
}

func TestConformResultRefusesWhatCannotBeValid(t *testing.T) {
	for _, c := range []struct{ method, in string }{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":[]}`},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":7}}`},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task"}}`},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":-1}}`},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":1.5}}`},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"cacheScope":"shared"}}`},
		{"tools/list", `[]`},
	} {
		if got, err := ConformResult(c.method, []byte(c.in)); !errors.Is(err, ErrInvalidResult) {
			t.Errorf("%s %s: %s, %v; want ErrInvalidResult", c.method, c.in, got, err)
		}
	}
}
