package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry/otlptest"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, serve exports a server span per
// request (parented by the caller's traceparent) and a span per guard
// step, to a real OTLP/HTTP receiver.
func TestServeExportsTraces(t *testing.T) {
	rcv := otlptest.Start(t)
	s := startServe(t)
	const trace, parent = "5bf92f3577b34da6a3ce929d0e0e4736", "10f067aa0ba902b7"
	post := func(id int, params string) map[string]json.RawMessage {
		body := `{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}},"name":"book_demo_call","arguments":{}` + params + `}}`
		req, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader(body))
		for k, v := range map[string]string{
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "book_demo_call",
			"traceparent": "00-" + trace + "-" + parent + "-01",
		} {
			req.Header.Set(k, v)
		}
		resp, err := httpClient(tokAlice).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r map[string]json.RawMessage
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return r
	}
	r := post(1, "")
	if !bytes.Contains(r["result"], []byte(`"input_required"`)) {
		t.Fatalf("first call: %v", r)
	}
	r = post(2, `,"requestState":"v4.local.forged","inputResponses":{}`)
	if !bytes.Contains(r["error"], []byte("-32602")) {
		t.Fatalf("forged retry: %v", r)
	}

	deadline := time.Now().Add(10 * time.Second)
	var spans []otlptest.Span
	for {
		spans = rcv.Spans(t)
		n := 0
		for _, sp := range spans {
			if sp.Name == "tools/call book_demo_call" {
				n++
			}
		}
		if _, ok := otlptest.Find(spans, "guard resume"); ok && n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans: %v", otlptest.Names(spans))
		}
		time.Sleep(50 * time.Millisecond)
	}
	byID := map[string]otlptest.Span{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
		if sp.TraceID != trace {
			t.Errorf("%s: trace %s, want the caller's", sp.Name, sp.TraceID)
		}
		if sp.Service != "mrtr-wasm" {
			t.Errorf("%s: service %q", sp.Name, sp.Service)
		}
		for k, v := range sp.Attrs {
			if strings.Contains(v, "forged") || strings.Contains(v, tokAlice) {
				t.Errorf("%s: attribute %s=%q leaks the request", sp.Name, k, v)
			}
		}
	}
	parentName := func(sp otlptest.Span) string {
		if sp.ParentID == parent {
			return "caller"
		}
		return byID[sp.ParentID].Name
	}
	for _, c := range []struct{ name, parent string }{
		{"guard ask", "tools/call book_demo_call"},
		{"policy ask", "guard ask"},
		{"guard resume", "tools/call book_demo_call"},
	} {
		sp, ok := otlptest.Find(spans, c.name)
		if !ok || parentName(sp) != c.parent {
			t.Errorf("%s: parent %q, want %q (spans %v)", c.name, parentName(sp), c.parent, otlptest.Names(spans))
		}
	}
	for _, sp := range spans {
		if sp.Name == "tools/call book_demo_call" && (parentName(sp) != "caller" || sp.Kind.String() != "SPAN_KIND_SERVER" || sp.Attrs["gen_ai.tool.name"] != "book_demo_call") {
			t.Errorf("server span %+v", sp)
		}
	}
	res, _ := otlptest.Find(spans, "guard resume")
	if !res.Error || res.Attrs["error.type"] != "mrtr.state.invalid" || res.Attrs["mrtr.reason"] == "" {
		t.Errorf("guard resume span: %+v", res)
	}
}
