package upstream

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// blockingUpstream answers nothing until the request's context ends;
// entered gets a value as each request arrives.
func blockingUpstream(t *testing.T) (*httptest.Server, chan struct{}) {
	entered := make(chan struct{}, 8)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client go
		entered <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(ts.Close)
	return ts, entered
}

var listTools = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)

// A client that goes away mid-call, or whose own deadline passes, says
// nothing about the upstream: Health stays nil (it used to turn /healthz
// to 503 until some later call succeeded). The upstream's own timeout
// still counts.
func TestHTTPHealthIgnoresTheCallersCancel(t *testing.T) {
	ts, entered := blockingUpstream(t)
	u, err := NewHTTP(HTTPOptions{URL: ts.URL, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	if _, err := u.Call(ctx, listTools, nil, nil); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if h := u.Health(); h != nil {
		t.Fatalf("the caller's cancel made the upstream unhealthy: %v", h)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := u.Call(ctx, listTools, nil, nil); err == nil {
		t.Fatal("a call past its caller's deadline succeeded")
	}
	if h := u.Health(); h != nil {
		t.Fatalf("the caller's own deadline made the upstream unhealthy: %v", h)
	}

	u.timeout = 100 * time.Millisecond // the upstream's timeout, not the caller's
	_, err = u.Call(context.Background(), listTools, nil, nil)
	wantCode(t, err, CodeTimeout)
	if u.Health() == nil {
		t.Fatal("an upstream that did not answer within its timeout is healthy")
	}
}

// A legacy (2025-11-25) HTTP upstream's calls set Health like a modern
// one's: down while it cannot be reached, up again after a call succeeds.
func TestLegacyHTTPHealth(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	var handler http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var down atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	u, err := NewHTTP(HTTPOptions{URL: ts.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	up, err := DetectHTTP(context.Background(), u, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := up.(*LegacyHTTP); !ok {
		t.Fatalf("not detected as legacy: %T", up)
	}
	call := func(who string) error {
		_, err := up.Call(WithPrincipal(context.Background(), who), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","arguments":{}}}`), nil, nil)
		return err
	}
	if err := call("alice"); err != nil || up.Health() != nil {
		t.Fatalf("call %v, health %v", err, up.Health())
	}
	down.Store(true)
	// bob's session cannot open; alice's call on her open session fails.
	wantCode(t, call("bob"), CodeUnavailable)
	if up.Health() == nil {
		t.Fatal("the legacy upstream answers 502, Health says ok")
	}
	down.Store(false)
	if err := call("bob"); err != nil || up.Health() != nil {
		t.Fatalf("after the upstream came back: call %v, health %v", err, up.Health())
	}
	ts.Close()
	wantCode(t, call("carol"), CodeUnavailable)
	if up.Health() == nil {
		t.Fatal("the legacy upstream is gone, Health says ok")
	}
}
