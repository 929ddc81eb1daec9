package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// A legacy upstream's round stays open for PendingTTL (5 min by default),
// and the upstream call under it is no longer cut at --upstream-timeout:
// a user who answers after the upstream timeout (but within the round's
// time) gets the tool's answer, not mrtr.upstream.timeout.
func TestLegacyRoundOutlastsTheUpstreamTimeout(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "roots", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text := "no roots"
		if res, err := r.Session.ListRoots(ctx, nil); err == nil {
			text = "roots:"
			for _, root := range res.Roots {
				text += " " + root.URI
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	const timeout = 2 * time.Second
	up, err := upstream.DetectHTTP(context.Background(), httpUpstream(t, ts.URL, func(o *upstream.HTTPOptions) { o.Timeout = timeout }), true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Guard: newGuard(t), Upstream: up}) // PendingTTL: the default 5 min
	if err != nil {
		t.Fatal(err)
	}
	r := handleTool(t, p, "alice", "roots", `{"roots":{}}`, "")
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil || ir.ResultType != "input_required" {
		t.Fatalf("want a roots round: %+v %s", r.Error, r.Result)
	}
	time.Sleep(timeout + 200*time.Millisecond) // the user answers after the upstream timeout
	sb, _ := json.Marshal(ir.RequestState)
	r = handleTool(t, p, "alice", "roots", `{"roots":{}}`, `,"requestState":`+string(sb)+`,"inputResponses":{"roots":{"roots":[{"uri":"file:///srv/alice"}]}}`)
	if !strings.Contains(string(r.Result), `"roots: file:///srv/alice"`) {
		t.Fatalf("answered within the round's time: %+v %s", r.Error, r.Result)
	}
}
