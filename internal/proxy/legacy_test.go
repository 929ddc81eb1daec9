package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacyClientThroughProxy: a 2025-11-25 client (the official Go SDK
// pinned to it) gets a session at the proxy, in front of a 2026-07-28
// upstream on the same SDK that asks with input_required and an
// unsealed requestState. The proxy asks the client on its session,
// re-asks a wrong email itself, and forwards only the valid answer.
func TestLegacyClientThroughProxy(t *testing.T) {
	var calls, booked atomic.Int64
	up := mcp.NewServer(&mcp.Implementation{Name: "unguarded", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "book", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			if r.Params.InputResponses == nil {
				return &mcp.CallToolResult{RequestState: "step=1", InputRequests: mcp.InputRequestMap{
					"contact": &mcp.ElicitParams{Message: "Who is it for?", RequestedSchema: json.RawMessage(
						`{"type":"object","properties":{"name":{"type":"string"},"email":{"type":"string","format":"email"}},"required":["name","email"]}`)},
				}}, nil
			}
			er, _ := r.Params.InputResponses["contact"].(*mcp.ElicitResult)
			if r.Params.RequestState != "step=1" || er == nil || er.Action != "accept" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad retry"}}}, nil
			}
			booked.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked for " + er.Content["email"].(string)}}}, nil
		})
	ups := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(ups.Close)
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, ups.URL))

	var asked []string
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params.Message)
			if len(asked) == 1 {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "email": "not an email"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "email": "ada@example.com"}}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" || cs.ID() == "" {
		t.Fatalf("negotiated %q, session %q", v, cs.ID())
	}
	tl, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tl.Tools) != 1 || tl.Tools[0].Name != "book" {
		t.Fatalf("tools/list: %v %+v", err, tl)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		if res != nil && len(res.Content) > 0 {
			t.Fatalf("book: %v %s", err, res.Content[0].(*mcp.TextContent).Text)
		}
		t.Fatalf("book: %v %+v", err, res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "booked for ada@example.com" {
		t.Fatalf("result %q", got)
	}
	if len(asked) != 2 || !strings.Contains(strings.ToLower(asked[1]), "email") {
		t.Fatalf("want the wrong email re-asked by name, got %q", asked)
	}
	if calls.Load() != 2 || booked.Load() != 1 {
		t.Fatalf("upstream saw %d calls and booked %d times; want 2 and 1 (the re-ask never reaches it)", calls.Load(), booked.Load())
	}
}
