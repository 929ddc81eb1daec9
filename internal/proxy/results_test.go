package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A 2026-07-28 client gets valid results whatever the upstream answers:
// what the upstream left out (resultType, ttlMs, cacheScope) is added, a
// result that cannot be made valid becomes an error naming the upstream.
func TestResultsAreValidForTheClientsRevision(t *testing.T) {
	g := newGuard(t)
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		switch {
		case isToolsList(body):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}},{"name":"bad","inputSchema":{"type":"object"}}]}}`)
		case strings.Contains(string(body), `"name":"bad"`):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":42,"content":[]}}`)
		default:
			writeJSON(w, okResult(body))
		}
	})
	base, _ := newProxy(t, g, httpUpstream(t, up.URL))
	m, _ := callTool(t, base, "t", `{}`, "")
	if m.Error != nil || !strings.HasPrefix(string(m.Result), `{"resultType":"complete","content":`) {
		t.Fatalf("a result without resultType: %s %+v", m.Result, m.Error)
	}
	m, _ = callTool(t, base, "bad", `{}`, "")
	if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, "upstream server answered tools/call with a result that is not valid") {
		t.Fatalf("an invalid result: %s %+v", m.Result, m.Error)
	}
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`"resultType":"complete"`, `"ttlMs":0`, `"cacheScope":"private"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("tools/list lacks %s: %s", want, b)
		}
	}
}
