package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestUndeclaredParamHeadersDropped: only the Mcp-Param-* headers the
// tool declares (x-mcp-header), checked against its arguments, reach an
// HTTP upstream; on a tool that declares none, and on other methods,
// none do.
func TestUndeclaredParamHeadersDropped(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]http.Header{} // tool name or method -> headers of its request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[`+
				`{"name":"lookup","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}},`+
				`{"name":"plain","inputSchema":{"type":"object"}}]}}`)
			return
		}
		mu.Lock()
		seen[r.Header.Get("Mcp-Name")+r.Header.Get("Mcp-Method")] = r.Header.Clone()
		mu.Unlock()
		if bytes.Contains(body, []byte(`"prompts/get"`)) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"messages":[]}}`)
			return
		}
		writeJSON(w, okResult(body))
	}))
	t.Cleanup(up.Close)
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
	send := func(req *http.Request) {
		t.Helper()
		req.Header.Set("Mcp-Param-Injected", "whatever")
		req.Header.Set("Mcp-Param-Role", "admin")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || bytes.Contains(b, []byte(`"error"`)) {
			t.Fatalf("HTTP %d %s", resp.StatusCode, b)
		}
	}
	req := toolRequest(base, 1, "lookup", `{"region":"eu"}`, "")
	req.Header.Set("Mcp-Param-Region", "eu")
	send(req)
	send(toolRequest(base, 2, "plain", `{}`, ""))
	send(methodRequest(base, "prompts/get", `"name":"greet","arguments":{}`, "greet"))

	mu.Lock()
	defer mu.Unlock()
	for key, want := range map[string][]string{
		"lookuptools/call": {"Mcp-Param-Region"}, "plaintools/call": nil, "greetprompts/get": nil,
	} {
		h, ok := seen[key]
		if !ok {
			t.Fatalf("the upstream never saw %s (saw %v)", key, seen)
		}
		var got []string
		for k := range h {
			if strings.HasPrefix(k, "Mcp-Param-") {
				got = append(got, k)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: the upstream got %v, want %v", key, got, want)
		}
	}
	if v := seen["lookuptools/call"].Get("Mcp-Param-Region"); v != "eu" {
		t.Errorf("Mcp-Param-Region %q, want eu", v)
	}
}
