package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// `proxy --stdio --upstream URL --upstream-oauth-*`: a local stdio client
// in front of a remote HTTP upstream that wants an OAuth token: the proxy
// gets its own by client credentials and sends it with every upstream
// request (server/discover included); the secret never reaches the log.
func TestProxyStdioUpstreamOAuth(t *testing.T) {
	op := oidcop.Start(t)
	var mu sync.Mutex
	var seen []string // Authorization of every upstream request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(b, &m)
		switch {
		case strings.Contains(string(b), `"tools/call"`):
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"resultType":"complete","content":[{"type":"text","text":"ok"}]}}`)
		default:
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"u","version":"1"},"cacheScope":"public","ttlMs":0}}`)
		}
	}))
	t.Cleanup(up.Close)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(oidcop.AgentSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in, out, logs := startStdioProxy(t, "--upstream", up.URL, "--upstream-oauth-token-url", op.Issuer+"oauth/token",
		"--upstream-oauth-client-id", "agent-alice", "--upstream-oauth-client-secret-file", secret, "--upstream-oauth-scopes", "mcp")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	if _, err := fmt.Fprintf(in, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{%s,"name":"echo","arguments":{}}}`+"\n", meta); err != nil {
		t.Fatal(err)
	}
	if !out.Scan() || !strings.Contains(out.Text(), `"text":"ok"`) {
		t.Fatalf("tools/call: %q\n%s", out.Text(), logs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("the upstream saw %d requests", len(seen))
	}
	for i, a := range seen {
		tok, ok := strings.CutPrefix(a, "Bearer ")
		if !ok || strings.Count(tok, ".") != 2 {
			t.Fatalf("upstream request %d: Authorization %q, want the proxy's access token", i, a)
		}
	}
	if strings.Contains(logs.String(), oidcop.AgentSecret) || strings.Contains(logs.String(), strings.Split(seen[0], ".")[2]) {
		t.Fatal("the client secret or the token reached the log")
	}
}
