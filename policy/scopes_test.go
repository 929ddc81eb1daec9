package policy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// TestScopesReachThePolicy: the shipped oauth data lets update_contact ask
// for a phone number only with the scope crm:write, and the memo never
// hands one caller's decision to a caller with other scopes.
func TestScopesReachThePolicy(t *testing.T) {
	e, err := Default(context.Background(), WithData("oauth"))
	if err != nil {
		t.Fatal(err)
	}
	phone := host.Form("c", "Your phone?", json.RawMessage(`{"type":"object","properties":{"phone":{"type":"string"}}}`))
	q := func(scopes ...string) *host.PolicyQuery {
		return &host.PolicyQuery{Principal: "https://as.example#a", Scopes: scopes, Claims: json.RawMessage(`{"client_id":"x"}`),
			Method: "tools/call", Target: "update_contact", Inputs: []host.InputRequest{phone}, TTL: 300e9, MaxRounds: 2}
	}
	for i := 0; i < 2; i++ { // the second pass comes from the memo
		for _, c := range []struct {
			scopes []string
			allow  bool
		}{{[]string{"mcp", "crm:write"}, true}, {[]string{"mcp"}, false}, {nil, false}, {[]string{"crm:write"}, true}} {
			d, err := e.Ask(context.Background(), q(c.scopes...))
			if err != nil {
				t.Fatal(err)
			}
			if d.Allow != c.allow {
				t.Fatalf("pass %d, scopes %v: allow %v, want %v (%+v)", i, c.scopes, d.Allow, c.allow, d)
			}
			if !c.allow && d.Code != "policy.scope_missing" {
				t.Fatalf("scopes %v: code %q", c.scopes, d.Code)
			}
		}
	}
}
