package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacyHTTPCancelReachesTheServer: a call to a 2025-era HTTP
// upstream that ends early (the client cancelled it, or it timed out) is
// cancelled at the server too, with notifications/cancelled on the
// principal's session naming the id it was sent under: the server stops
// the work nobody will read.
func TestLegacyHTTPCancelReachesTheServer(t *testing.T) {
	stopped := make(chan struct{}, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
			stopped <- struct{}{}
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return &mcp.CallToolResult{}, nil
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	l := legacyOf(t, ts.URL)
	defer l.Close()
	ctx, cancel := context.WithTimeout(WithPrincipal(context.Background(), "alice"), 300*time.Millisecond)
	defer cancel()
	if _, err := l.Call(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}`), nil, nil); err == nil {
		t.Fatal("the call did not end with its context")
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's handler went on after the call ended: no notifications/cancelled reached it")
	}
}
