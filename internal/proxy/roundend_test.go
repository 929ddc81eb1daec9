package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputRound reads an input_required result's requestState ("" when the
// result is not one).
func inputRound(t *testing.T, r rpcMsg) string {
	t.Helper()
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil || ir.ResultType != "input_required" {
		return ""
	}
	return ir.RequestState
}

func pendingCount(p *Proxy) int {
	n := 0
	p.pending.m.Range(func(any, any) bool { n++; return true })
	return n
}

// TestRoundLimitReleasesUpstream (finding 8): in front of server-everything
// (a 2025-era stdio child), answers that never fit the form run into the
// guard's round limit. The client gets that error, the child's
// elicitation/create is answered cancel at once, and the same principal's
// next call that elicits is a fresh round, not a -32601 "arrived outside
// any single call" for five minutes.
func TestRoundLimitReleasesUpstream(t *testing.T) {
	p, err := New(Config{Guard: newGuard(t), Upstream: everythingUpstream(t, false)})
	if err != nil {
		t.Fatal(err)
	}
	caps := `{"elicitation":{"form":{}}}`
	state := inputRound(t, handleTool(t, p, "alice", "trigger-elicitation-request", caps, ""))
	if state == "" {
		t.Fatal("the first call did not ask")
	}
	var last rpcMsg
	for try := 0; ; try++ {
		if try > 12 {
			t.Fatal("no round limit after 12 invalid answers")
		}
		sb, _ := json.Marshal(state)
		last = handleTool(t, p, "alice", "trigger-elicitation-request", caps, `,"requestState":`+string(sb)+
			`,"inputResponses":{"elicitation":{"action":"accept","content":{"name":"Ada","integer":500}}}`)
		if state = inputRound(t, last); state == "" {
			break
		}
	}
	if last.Error == nil || !strings.Contains(strings.ToLower(last.Error.Message), "round") {
		t.Fatalf("at the limit: %+v %s", last.Error, last.Result)
	}
	if n := pendingCount(p); n != 0 {
		t.Fatalf("%d rounds still wait upstream after the round limit", n)
	}
	next := handleTool(t, p, "alice", "trigger-elicitation-request", caps, "")
	if inputRound(t, next) == "" {
		t.Fatalf("the next call of the same principal: %+v %s", next.Error, next.Result)
	}
}

// TestLegacyClientRoundEndReleasesUpstream (finding 8, 2025-era client):
// a legacy session's client whose answers never fit server-everything's
// form ends the call on its side; the child's elicitation/create is
// answered cancel as the call ends, and the session's next call asks
// afresh instead of failing with -32601.
func TestLegacyClientRoundEndReleasesUpstream(t *testing.T) {
	base, p := serveProxy(t, Config{Guard: newGuard(t), Upstream: everythingUpstream(t, false)})
	var bad atomic.Bool
	bad.Store(true)
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			n := 7
			if bad.Load() {
				n = 500 // over the form's maximum of 100
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "integer": n}}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	text := func(res *mcp.CallToolResult) string {
		var all []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				all = append(all, tc.Text)
			}
		}
		return strings.Join(all, "\n")
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "trigger-elicitation-request", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Fatalf("answers that never fit completed the call: %s", text(res))
	}
	if n := pendingCount(p); n != 0 {
		t.Fatalf("%d rounds still wait upstream after the client's side ended the call", n)
	}
	bad.Store(false)
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "trigger-elicitation-request", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(text(res), "Ada") {
		t.Fatalf("the session's next call: %v %s", err, text(res))
	}
}
