package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSubscriptionStreamsBounded: the subscriptions/listen streams a
// proxy relays are capped (here 3 in all): a further one is answered 503
// at once instead of holding another connection and its buffers, and a
// stream that ends gives its room back. Nothing bounded them.
func TestSubscriptionStreamsBounded(t *testing.T) {
	hold := make(chan struct{})
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"cacheScope":"public","ttlMs":60000}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-hold
	})
	defer close(hold)
	base, _ := serveProxy(t, Config{Guard: newGuard(t), Upstream: httpUpstream(t, up.URL), MaxStreams: 3})
	// open starts a stream and returns its status once its headers are
	// in; a stream (200) stays open until ctx ends.
	open := func(ctx context.Context) int {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			<-ctx.Done()
			resp.Body.Close()
		}()
		return resp.StatusCode
	}
	cancels := make([]context.CancelFunc, 3)
	for i := range cancels {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i] = cancel
		if code := open(ctx); code != http.StatusOK {
			t.Fatalf("stream %d: HTTP %d", i+1, code)
		}
	}
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if code := open(ctx); code != http.StatusServiceUnavailable {
		t.Fatalf("a fourth stream past --max-streams 3: HTTP %d, want 503", code)
	}
	// A stream that ends gives its room back.
	cancels[0]()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithCancel(context.Background())
		code := open(ctx)
		if code == http.StatusOK {
			cancel()
			break
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("a stream that ended did not give its room back: HTTP %d", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRepeatedMCPHeadersRefused: two Mcp-Name headers never reach the
// upstream: the proxy read the first, an intermediary may route on the
// last.
func TestRepeatedMCPHeadersRefused(t *testing.T) {
	var calls atomic.Int64
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"cacheScope":"public","ttlMs":60000}}`)
			return
		}
		calls.Add(1)
		writeJSON(w, okResult(body))
	})
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
	req := toolRequest(base, 9, "book", `{}`, "")
	req.Header.Add("Mcp-Name", "delete_everything")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "repeated") || calls.Load() != 0 {
		t.Fatalf("HTTP %d %s (upstream called %d times)", resp.StatusCode, b, calls.Load())
	}
}
