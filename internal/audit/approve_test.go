package audit_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/audit"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

// TestApprovalRecords: a confirm approval asked, rejected and granted, as
// records of a chain that verifies, without the arguments' values.
func TestApprovalRecords(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.Default(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPoolSize(1), host.WithPolicy(pol))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(file, 0)
	if err != nil {
		t.Fatal(err)
	}
	ag := audit.Wrap(g, l, func(err error) { t.Error(err) })

	req := &host.Request{Principal: "alice", Method: "tools/call", Target: "transfer",
		Arguments: json.RawMessage(`{"amount":987654,"to":"zqxbob"}`), Capabilities: json.RawMessage(`{"elicitation":{}}`)}
	first, err := ag.Approve(ctx, req)
	if err != nil || first.Status != host.InputRequired {
		t.Fatalf("%+v %v", first, err)
	}
	for _, v := range []string{"false", "true"} {
		r := *req
		r.RequestState = first.InputRequired.RequestState
		r.InputResponses = json.RawMessage(`{"` + core.ApprovalKey + `":{"action":"accept","content":{"approve":` + v + `}}}`)
		if _, err := ag.Approve(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	small := *req
	small.Arguments = json.RawMessage(`{"amount":1,"to":"zqxbob"}`)
	if out, err := ag.Approve(ctx, &small); out != nil || err != nil {
		t.Fatalf("no approval needed: %v %v", out, err)
	}
	l.Close()
	if _, err := audit.Verify(file); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(file)
	var kinds []string
	for _, ln := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r audit.Record
		_ = json.Unmarshal([]byte(ln), &r)
		kinds = append(kinds, r.Kind)
	}
	if got := strings.Join(kinds, ","); got != "audit.started,approval.asked,approval.rejected,approval.granted" {
		t.Fatalf("kinds %s", got)
	}
	for _, v := range []string{"987654", "zqxbob"} {
		if strings.Contains(string(raw), v) {
			t.Fatalf("an argument's value %q is in the audit log", v)
		}
	}
}
