package main

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A connect_calendar page that is never submitted: each retry asks again
// as the next round of the same request, so the round limit (2 for this
// tool in policies/data/demo.json) ends the loop, and every round reuses
// the one connect session.
func TestServeConnectLoopStopsAtRoundLimit(t *testing.T) {
	s := startServe(t)
	alice := connect(t, s, tokAlice, true, nil)
	ctx := context.Background()
	callConnect := func(state string) (*mcp.CallToolResult, error) {
		p := &mcp.CallToolParams{Name: "connect_calendar", Arguments: map[string]any{}}
		if state != "" {
			p.RequestState = state
			p.InputResponses = mcp.InputResponseMap{"calendar": &mcp.ElicitResult{Action: "accept"}}
		}
		return alice.CallTool(ctx, p)
	}
	r, err := callConnect("")
	r = needsInput(t, r, err, "calendar")
	url := r.InputRequests["calendar"].(*mcp.ElicitParams).URL
	rounds := 1
	for ; rounds <= 10; rounds++ {
		next, err := callConnect(r.RequestState)
		if err != nil {
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "rounds") {
				t.Fatalf("after %d rounds: want the round limit's -32602, got %v", rounds, err)
			}
			break
		}
		r = needsInput(t, next, err, "calendar")
		if u := r.InputRequests["calendar"].(*mcp.ElicitParams).URL; u != url {
			t.Fatalf("round %d sends another page: %s, first %s", rounds+1, u, url)
		}
	}
	if rounds != 2 {
		t.Fatalf("the not-submitted loop stopped after %d rounds, want the policy's limit of 2", rounds)
	}
	if !strings.Contains(s.logs.String(), `"code":"mrtr.rounds.exceeded"`) {
		t.Errorf("the log does not record the round limit:\n%s", s.logs)
	}
	db, err := sql.Open("sqlite", filepath.Join(s.dir, "data", "crm.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM connect_sessions`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d connect sessions, want 1", n)
	}
}
