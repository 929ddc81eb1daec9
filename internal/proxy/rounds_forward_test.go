package proxy

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// How a retry's answers reach the upstream: never without a sealed state,
// a lost answer keeps its round claimed, an unsent forward may be sent
// again. Each failed on the code before its fix.

// TestAnswersWithoutSealedStateNeverForwarded: a request with
// inputResponses and no (or an empty) requestState used to go upstream as
// it was: for an upstream that asks without a requestState, or with ""
// (both carried by the proxy), exactly what a forwarded round looks like,
// with nothing checked and no ledger. Now the call goes upstream without
// them, and the answers are checked against what it asks: invalid ones
// are asked again by the proxy; valid ones are forwarded, and only they.
func TestAnswersWithoutSealedStateNeverForwarded(t *testing.T) {
	for _, c := range []struct{ name, upState, sent string }{
		{"none", ``, ``},
		{"empty", `,"requestState":""`, `,"requestState":""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var answered atomic.Int64
			var got atomic.Value
			up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
				switch {
				case isToolsList(body):
					writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
				case bytes.Contains(body, []byte(`"inputResponses"`)):
					answered.Add(1)
					got.Store(string(body))
					writeJSON(w, okResult(body))
				default:
					writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"How many seats?","requestedSchema":{"type":"object","properties":{"seats":{"type":"integer","minimum":1,"maximum":10}},"required":["seats"]}}}}`+c.upState+`}}`)
				}
			})
			base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
			invalid := `,"inputResponses":{"a":{"action":"accept","content":{"seats":100000}}}` + c.sent
			for i := 0; i < 3; i++ {
				m, _ := callTool(t, base, "book", `{}`, invalid)
				if m.Error != nil || !bytes.Contains(m.Result, []byte(`"resultType":"input_required"`)) || !bytes.Contains(m.Result, []byte("v4.local.")) {
					t.Fatalf("invalid answers ahead: want a sealed round asking again, got %s %+v", m.Result, m.Error)
				}
			}
			if n := answered.Load(); n != 0 {
				t.Fatalf("unchecked answers reached the upstream %d times: %v", n, got.Load())
			}
			// Valid answers ahead are forwarded, with the upstream's own
			// state put back, and a key no one asked is not.
			m, _ := callTool(t, base, "book", `{}`, `,"inputResponses":{"a":{"action":"accept","content":{"seats":2}},"zz":{"action":"accept","content":{"x":1}}}`+c.sent)
			if m.Error != nil || answered.Load() != 1 {
				t.Fatalf("valid answers ahead: %s %+v (upstream answered %d times)", m.Result, m.Error, answered.Load())
			}
			body := got.Load().(string)
			if !strings.Contains(body, `"seats":2`) || strings.Contains(body, `"zz"`) || strings.Contains(body, "v4.local.") || strings.Contains(body, `"requestState"`) != (c.upState != "") {
				t.Fatalf("forwarded: %s", body)
			}
		})
	}
}

// TestLostAnswerKeepsTheRoundClaimed: the upstream acts on the
// forwarded round, then its answer fails at the proxy (over --max-body
// here; a timeout or a cut stream does the same). The claim is released,
// so every retry of the same sealed round reaches the upstream again.
func TestLostAnswerKeepsTheRoundClaimed(t *testing.T) {
	var finals atomic.Int64
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		switch {
		case isToolsList(body):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
		case bytes.Contains(body, []byte(`"requestState":"step=1"`)):
			finals.Add(1) // the side effect happens
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"content":[{"type":"text","text":"`+strings.Repeat("x", 4096)+`"}]}}`)
		default:
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"step=1"}}`)
		}
	})
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL, func(o *upstream.HTTPOptions) { o.MaxBody = 2048 }))
	first, _ := callTool(t, base, "pay", `{}`, "")
	st := sealedState(t, first)
	retry := `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"` + st + `"`
	for i := 0; i < 3; i++ {
		m, _ := callTool(t, base, "pay", `{}`, retry)
		if m.Error == nil || !strings.Contains(m.Error.Message, "will not send them again") || !strings.Contains(string(m.Error.Data), `"retryable":false`) {
			t.Fatalf("retry %d: want the recorded, not retryable failure, got %s %+v", i, m.Result, m.Error)
		}
	}
	if n := finals.Load(); n != 1 {
		t.Fatalf("the sealed round reached the upstream %d times, want 1", n)
	}
}

// TestBatchOnUpstreamStreamDropped: a server-to-client request
// inside a JSON array on the upstream's stream is relayed as it is.
func TestBatchOnUpstreamStreamDropped(t *testing.T) {
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: [{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"pw\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"password\":{\"type\":\"string\"}}}}}]\n\n")
		io.WriteString(w, "event: message\ndata: "+okResult(body)+"\n\n")
	})
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
	resp, err := http.DefaultClient.Do(toolRequest(base, 99, "t", `{}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(b, []byte("password")) {
		t.Fatalf("a batched server-to-client request reached the client:\n%s", b)
	}
}

// TestUnsentForwardCanBeRetried: a forward that never left the proxy (the
// upstream refused the connection) releases its claim, so the same
// retry goes through once the upstream is back, and only once.
func TestUnsentForwardCanBeRetried(t *testing.T) {
	var finals atomic.Int64
	handler := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case isToolsList(body):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
		case bytes.Contains(body, []byte(`"requestState":"step=1"`)):
			finals.Add(1)
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"content":[{"type":"text","text":"paid"}]}}`)
		default:
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"step=1"}}`)
		}
	}
	up := httptest.NewServer(http.HandlerFunc(handler))
	addr := up.Listener.Addr().String()
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
	first, _ := callTool(t, base, "pay", `{}`, "")
	retry := `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"` + sealedState(t, first) + `"`
	up.Close()
	m, _ := callTool(t, base, "pay", `{}`, retry)
	if m.Error == nil || !strings.Contains(string(m.Error.Data), `"retryable":true`) {
		t.Fatalf("upstream down: want a retryable error, got %s %+v", m.Result, m.Error)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	back := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(handler)}}
	back.Start()
	t.Cleanup(back.Close)
	for i := 0; i < 2; i++ {
		m, _ = callTool(t, base, "pay", `{}`, retry)
		if m.Error != nil || !strings.Contains(string(m.Result), "paid") {
			t.Fatalf("retry %d after the upstream came back: %s %+v", i, m.Result, m.Error)
		}
	}
	if n := finals.Load(); n != 1 {
		t.Fatalf("the round reached the upstream %d times, want 1", n)
	}
}
