package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/audit"
)

// serve --audit: a booking's rounds and its one execution are in the
// file as a chain that verifies; no answer or argument value is in it;
// changing a record makes verify name it.
func TestServeAuditLog(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.log")
	s := startServe(t, "--audit", file)
	const name, email, topic = "Audit Person", "audit.person@example.com", "audit-topic-7f3a"
	cs := connect(t, s, tokAlice, false, func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if _, ok := r.Params.RequestedSchema.(map[string]any)["properties"].(map[string]any)["email"]; ok {
			return accept(map[string]any{"name": name, "email": email}), nil
		}
		return accept(map[string]any{"slot": firstSlot(t, r.Params.RequestedSchema), "confirm": true}), nil
	})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book_demo_call", Arguments: map[string]any{"topic": topic}})
	if err != nil || res.IsError {
		t.Fatalf("book_demo_call: %v %+v", err, res)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{name, email, topic} {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("the audit log holds %q", v)
		}
	}
	for _, want := range []string{`"kind":"form.asked"`, `"name":"contact.email","kind":"string/email"`, `"kind":"form.answered"`, `"outcome":"accept"`, `"kind":"executed"`, `"principal":"alice"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the audit log lacks %s:\n%s", want, b)
		}
	}
	sum, err := audit.Verify(file)
	if err != nil || sum.Records < 5 {
		t.Fatalf("verify: %+v %v\n%s", sum, err, b)
	}
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	ls[2] = strings.Replace(ls[2], `"alice"`, `"mallory"`, 1)
	os.WriteFile(file, []byte(strings.Join(ls, "\n")+"\n"), 0o600)
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "verify", file}, &out, &errb); code != exitFindings || !strings.Contains(out.String(), ":3:") {
		t.Fatalf("an edited record: %d %s %s", code, out.String(), errb.String())
	}
}

// With the ledger in the CRM's PostgreSQL tables, the booking runs
// through OnceTx, and the audit log still records its execution.
func TestServeAuditLogTransactional(t *testing.T) {
	setting, _, _ := sharedPostgres(t)
	file := filepath.Join(t.TempDir(), "audit.log")
	s := startServe(t, "--audit", file, "--crm", setting, "--ledger", setting)
	if !strings.Contains(s.logs.String(), `"bookings_tx":true`) {
		t.Fatalf("bookings are not transactional:\n%s", s.logs)
	}
	cs := connect(t, s, tokAlice, false, func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if _, ok := r.Params.RequestedSchema.(map[string]any)["properties"].(map[string]any)["email"]; ok {
			return accept(map[string]any{"name": "Tx Person", "email": "tx.person@example.com"}), nil
		}
		return accept(map[string]any{"slot": firstSlot(t, r.Params.RequestedSchema), "confirm": true}), nil
	})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book_demo_call", Arguments: map[string]any{}})
	if err != nil || res.IsError || bookedID(res) == "" {
		t.Fatalf("book_demo_call: %v %+v", err, res)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"kind":"executed"`)) || bytes.Contains(b, []byte(`"kind":"execution.refused"`)) {
		t.Fatalf("the audit log does not record one execution:\n%s", b)
	}
}
