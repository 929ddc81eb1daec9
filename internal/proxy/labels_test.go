package proxy

import (
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"
)

// metricsText is the proxy's /metrics.
func metricsText(t *testing.T, base string) string {
	t.Helper()
	r, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// methodRequest is a 2026-07-28 request of method to base/mcp with its
// headers; params are the members of its params before _meta.
func methodRequest(base, method, params, name string) *http.Request {
	body := `{"jsonrpc":"2.0","id":9,"method":"` + method + `","params":{` + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	return req
}

// randomName is n random letters.
func randomName(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = 'a' + b[i]%26
	}
	return string(b)
}

// TestMetricLabelsAreAClosedSet: retries with random 20 KB tool names (a
// garbage state: refused before the upstream) leave /metrics as it was,
// counted under "other"; a tool the upstream lists keeps its own label,
// and a resource is "resource", never its URI.
func TestMetricLabelsAreAClosedSet(t *testing.T) {
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[{"name":"book","inputSchema":{"type":"object"}}],"ttlMs":60000,"cacheScope":"public"}}`)
			return
		}
		writeJSON(w, okResult(body))
	})
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
	retry := func(name string) {
		t.Helper()
		m, _ := callTool(t, base, name, `{}`, `,"requestState":"v4.local.garbage","inputResponses":{}`)
		if m.Error == nil || m.Error.Code != -32602 {
			t.Fatalf("garbage state: %+v", m)
		}
	}
	retry("book")
	retry(randomName(20000))
	before := metricsText(t, base)
	for range 200 {
		retry(randomName(20000))
	}
	after := metricsText(t, base)
	t.Logf("/metrics: %d bytes before 200 made-up names, %d after", len(before), len(after))
	if d := len(after) - len(before); d > 2048 || d < -2048 {
		t.Fatalf("/metrics went from %d to %d bytes", len(before), len(after))
	}
	for _, want := range []string{`mrtr_outcomes_total{outcome="rejected",tool="book"} 1`, `mrtr_outcomes_total{outcome="rejected",tool="other"} 201`} {
		if !strings.Contains(after, want) {
			t.Errorf("/metrics has no %s:\n%s", want, after)
		}
	}

	// resources/read: the URI is the client's, never a label.
	uri := "file:///" + randomName(64)
	resp, err := http.DefaultClient.Do(methodRequest(base, "resources/read", `"uri":"`+uri+`","requestState":"v4.local.garbage","inputResponses":{}`, uri))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("resources/read with a garbage state: HTTP %d", resp.StatusCode)
	}
	after = metricsText(t, base)
	if strings.Contains(after, uri[8:]) || !strings.Contains(after, `mrtr_outcomes_total{outcome="rejected",tool="resource"} 1`) {
		t.Errorf("resources/read label:\n%s", after)
	}
}

func TestLabelValueCaps(t *testing.T) {
	for v, want := range map[string]string{
		"book": "book", "": "other", strings.Repeat("a", maxLabel): strings.Repeat("a", maxLabel),
		strings.Repeat("a", maxLabel+1): "other", "bad\xffutf8": "other",
	} {
		if got := labelValue(v); got != want {
			t.Errorf("labelValue(%.20q) = %.20q, want %.20q", v, got, want)
		}
	}
}
