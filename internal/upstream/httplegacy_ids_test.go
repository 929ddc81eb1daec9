package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two calls of one principal in flight at once with the same client id
// share one legacy HTTP session: the upstream used to refuse the second
// ("duplicate in-flight request ID"). Each is now sent under an id of the
// proxy's and answered under its own. The tool waits until both calls are
// in, so they overlap whatever the machine's load.
func TestLegacyHTTPSameClientIDConcurrently(t *testing.T) {
	var mu sync.Mutex
	in, both := 0, make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "meet", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		if in++; in == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(20 * time.Second):
			return nil, fmt.Errorf("the other call never came")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "met"}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	l := legacyOf(t, ts.URL)
	ctx := WithPrincipal(context.Background(), "alice")
	if _, err := l.Call(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`), nil, nil); err != nil {
		t.Fatal(err) // alice's session is open before the two calls
	}
	var wg sync.WaitGroup
	for _, id := range []string{`1`, `1`} {
		wg.Go(func() {
			b, err := l.Call(ctx, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"meet","arguments":{}}}`), nil, nil)
			var r struct {
				ID     json.RawMessage `json:"id"`
				Result struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"result"`
			}
			if err != nil || json.Unmarshal(b, &r) != nil || string(r.ID) != id || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "met" {
				t.Errorf("a call of alice's with id %s: %s %v", id, b, err)
			}
		})
	}
	wg.Wait()
}

// A client's id of any JSON-RPC form comes back as it was sent.
func TestLegacyHTTPRestoresTheClientsID(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	u, _ := NewHTTP(HTTPOptions{URL: ts.URL, Timeout: time.Minute})
	up, err := DetectHTTP(context.Background(), u, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{`"a\u00e9\"b"`, `-7`, `"mrtr-proxy-init"`, `9007199254740993`} {
		b, err := up.Call(WithPrincipal(context.Background(), "bob"), []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list","params":{}}`), nil, nil)
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err != nil || json.Unmarshal(b, &r) != nil || string(r.ID) != id || r.Result == nil {
			t.Errorf("id %s: %s %v", id, b, err)
		}
	}
}

// A client's notifications/cancelled names its call by the client's id:
// it reaches the upstream with the id the call was sent under, and the
// server's handler is cancelled.
func TestLegacyHTTPCancelNamesTheSentID(t *testing.T) {
	entered, cancelled := make(chan struct{}, 1), make(chan bool, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		select {
		case <-ctx.Done():
			cancelled <- true
		case <-time.After(20 * time.Second):
			cancelled <- false
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	u, _ := NewHTTP(HTTPOptions{URL: ts.URL, Timeout: time.Minute})
	up, err := DetectHTTP(context.Background(), u, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithPrincipal(context.Background(), "alice")
	go func() {
		_, _ = up.Call(ctx, []byte(`{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"wait","arguments":{}}}`), nil, nil)
	}()
	<-entered
	if err := up.Send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1","reason":"gone"}}`), nil); err != nil {
		t.Fatal(err)
	}
	if !<-cancelled {
		t.Fatal("the client's cancel did not reach its call")
	}
}
