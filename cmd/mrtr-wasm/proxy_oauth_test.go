package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/internal/oidcop"
)

// TestProxyOAuth: the proxy is an OAuth protected resource of a real
// OpenID provider, as serve is (one internal/identity): no token gets 401
// with the challenge, a token for the proxy reaches the upstream, and the
// client's token reaches the upstream only with --upstream-pass-token.
func TestProxyOAuth(t *testing.T) {
	op := oidcop.Start(t)
	var mu sync.Mutex
	var seen []string // Authorization headers of upstream tools/call requests
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		id := "null"
		if i := strings.Index(string(b), `"id":`); i >= 0 {
			id = strings.SplitN(strings.SplitN(string(b)[i+5:], ",", 2)[0], "}", 2)[0]
		}
		switch {
		case strings.Contains(string(b), `"tools/call"`):
			mu.Lock()
			seen = append(seen, r.Header.Get("Authorization"))
			mu.Unlock()
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"ok"}]}}`)
		case strings.Contains(string(b), `"tools/list"`):
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"tools":[]}}`)
		default:
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"cacheScope":"public","ttlMs":0}}`)
		}
	}))
	t.Cleanup(up.Close)

	post := func(base, token string) (*http.Response, string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(b)
	}

	for _, pass := range []bool{false, true} {
		args := []string{"--oauth-issuer", op.Issuer, "--oauth-scopes", "mcp", "--upstream", up.URL}
		if pass {
			args = append(args, "--upstream-pass-token")
		}
		base, logs := startProxy(t, args...)
		res, _ := post(base, "")
		if ch := res.Header.Get("WWW-Authenticate"); res.StatusCode != 401 || !strings.Contains(ch, `resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`) {
			t.Fatalf("no token: %d %q", res.StatusCode, ch)
		}
		tok := op.Token(t, "agent-alice", base+"/mcp", "mcp")
		res, body := post(base, tok)
		if res.StatusCode != 200 || !strings.Contains(body, `"ok"`) {
			t.Fatalf("a valid token did not reach the tool: %d %s", res.StatusCode, body)
		}
		mu.Lock()
		last := seen[len(seen)-1]
		mu.Unlock()
		if pass && last != "Bearer "+tok {
			t.Fatalf("--upstream-pass-token: the upstream saw %q", last)
		}
		if !pass && last != "" {
			t.Fatal("the client's token reached the upstream without --upstream-pass-token")
		}
		if strings.Contains(logs.String(), strings.Split(tok, ".")[2]) {
			t.Fatal("a token reached the proxy's log")
		}
	}
}
