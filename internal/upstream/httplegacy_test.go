package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacyHTTPSessionPerPrincipal: an upstream on the official Go SDK
// that speaks only 2025-11-25 is detected as legacy, and each principal
// gets a session of its own (its whoami tool answers with the session id).
func TestLegacyHTTPSessionPerPrincipal(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Session.ID()}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	l := legacyOf(t, ts.URL)
	if _, legacy := l.Discovery(); !legacy {
		t.Fatal("Discovery says not legacy")
	}
	who := func(principal string) string {
		t.Helper()
		ctx := WithPrincipal(context.Background(), principal)
		b, err := l.Call(ctx, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", principal, err)
		}
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &r); err != nil || string(r.ID) != "7" || len(r.Result.Content) != 1 {
			t.Fatalf("%s: %s", principal, b)
		}
		return r.Result.Content[0].Text
	}
	a1, b1, a2 := who("alice"), who("bob"), who("alice")
	if a1 == "" || a1 != a2 {
		t.Fatalf("alice's session changed: %q then %q", a1, a2)
	}
	if a1 == b1 {
		t.Fatalf("alice and bob share the upstream session %q", a1)
	}
	if strings.TrimSpace(b1) == "" {
		t.Fatal("no session id for bob")
	}
}
