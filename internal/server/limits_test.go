package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestRunStdioFirstLineBounded: the first stdio message, read to pick the
// era, is bounded as an HTTP body is. A client that sent no newline used
// to have everything it sent buffered.
func TestRunStdioFirstLineBounded(t *testing.T) {
	store := newStore(t)
	s, err := server.New(server.Config{Guard: newGuard(t), CRM: store, PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", mcphttp.MaxBody) + `"}}`)
	var out bytes.Buffer
	err = s.RunStdio(ctx, in, nopCloser{&out})
	if err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("a first line over %d bytes: %v", mcphttp.MaxBody, err)
	}
}

// TestSubscriptionStreamsBounded: serve caps its subscriptions/listen
// streams (here 2 in all): a further one is answered 503 at once. Each
// used to hold a connection and about 70 KB for as long as the client
// liked, without any bound.
func TestSubscriptionStreamsBounded(t *testing.T) {
	ts, _ := newTestServer(t, nil, func(c *server.Config) { c.MaxStreams = 2 })
	open := func(ctx context.Context) int {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/mcp", strings.NewReader(body))
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 2 {
		if code := open(ctx); code != http.StatusOK {
			t.Fatalf("stream %d: HTTP %d", i+1, code)
		}
	}
	if code := open(ctx); code != http.StatusServiceUnavailable {
		t.Fatalf("a third stream past MaxStreams 2: HTTP %d, want 503", code)
	}
}
