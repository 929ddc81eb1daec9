package upstream

import (
	"strings"
	"testing"
)

// TestHTTPIDKeepsTheQueryApart: the id (sealed into every state) shows
// no user info, query or fragment, yet two upstreams that differ only in
// their query have two ids, so a state of one never opens at the other.
func TestHTTPIDKeepsTheQueryApart(t *testing.T) {
	id := func(raw string) string {
		u, err := NewHTTP(HTTPOptions{URL: raw})
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		return u.ID()
	}
	a, b := id("https://mcp.example/mcp?tenant=a&key=sk-secret-1"), id("https://mcp.example/mcp?tenant=b&key=sk-secret-1")
	if a == b {
		t.Fatalf("two queries, one id: %s", a)
	}
	for _, s := range []string{a, b, id("https://user:pw@mcp.example/mcp#frag")} {
		if strings.Contains(s, "sk-secret") || strings.Contains(s, "tenant") || strings.Contains(s, "pw") || strings.Contains(s, "frag") {
			t.Errorf("id shows a part of the URL it must not: %s", s)
		}
	}
	if got := id("https://user:pw@mcp.example/mcp"); got != "https://mcp.example/mcp" {
		t.Errorf("id without a query: %s", got)
	}
	if id("https://mcp.example/mcp?tenant=a&key=sk-secret-1") != a {
		t.Error("the id is not stable")
	}
}

// TestDiscoverResultNamingError: a 2026-07-28 server whose discover
// result holds the word "error" (in instructions, say) is taken for
// what it is, not tried as a 2025-era server.
func TestDiscoverResultNamingError(t *testing.T) {
	for b, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":"d","result":{"instructions":"On \"error\", retry."}}`:     true,
		`{"jsonrpc":"2.0","id":"d","error":{"code":-32601,"message":"Method not found"}}`: false,
		`{"jsonrpc":"2.0","id":"d","result":{},"error":{"code":1,"message":"x"}}`:         false,
		`not json`: false,
	} {
		if got := isResult([]byte(b)); got != want {
			t.Errorf("isResult(%s) = %v, want %v", b, got, want)
		}
	}
}
