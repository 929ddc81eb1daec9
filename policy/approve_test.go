package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/policies"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

// shippedFS is a changeable copy of the shipped policy directory.
func shippedFS(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(policies.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(policies.FS, p)
		m[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const formCaps = `{"elicitation":{"form":{}}}`

func transferReq(args string) *host.Request {
	return &host.Request{Principal: "alice", Method: "tools/call", Target: "transfer", Arguments: json.RawMessage(args), Capabilities: json.RawMessage(formCaps)}
}

func retry(req *host.Request, state *host.InputRequiredResult, answer string) *host.Request {
	r := *req
	r.RequestState = state.RequestState
	r.InputResponses = json.RawMessage(`{"` + core.ApprovalKey + `":` + answer + `}`)
	return &r
}

const yes = `{"action":"accept","content":{"approve":true}}`

func TestApproveConfirmEndToEnd(t *testing.T) {
	ctx := context.Background()
	fsys := shippedFS(t)
	pol, err := policy.LoadFS(ctx, fsys, "policies")
	if err != nil {
		t.Fatal(err)
	}
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPoolSize(1), host.WithEngine(host.EngineWasm), host.WithPolicy(pol))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)

	// A small transfer needs nothing.
	if out, err := g.Approve(ctx, transferReq(`{"amount":10,"to":"bob"}`)); err != nil || out != nil {
		t.Fatalf("small transfer: %v %v", out, err)
	}

	req := transferReq(`{"amount":5000,"to":"bob"}`)
	first, err := g.Approve(ctx, req)
	if err != nil || first == nil || first.Status != host.InputRequired {
		t.Fatalf("first call: %+v %v", first, err)
	}
	form := string(first.InputRequired.InputRequests[core.ApprovalKey])
	if !strings.Contains(form, `"message":"Transfer 5000 to bob."`) {
		t.Fatalf("form %s", form)
	}

	runs := 0
	effect := func(context.Context) ([]byte, error) { runs++; return []byte(`"sent"`), nil }
	for i := range 3 { // the approved retry, then two replays of it
		out, err := g.Approve(ctx, retry(req, first.InputRequired, yes))
		if err != nil || out.Status != host.Complete {
			t.Fatalf("yes: %+v %v", out, err)
		}
		res, replay, err := g.Once(ctx, out, effect)
		if err != nil || string(res) != `"sent"` || replay != (i > 0) {
			t.Fatalf("once %d: %s %v %v", i, res, replay, err)
		}
	}
	if runs != 1 {
		t.Fatalf("the approved call ran %d times", runs)
	}

	for _, no := range []string{`{"action":"accept","content":{"approve":false}}`, `{"action":"decline"}`} {
		out, err := g.Approve(ctx, retry(req, first.InputRequired, no))
		if err != nil || out.Status != host.Declined || out.Declined[0] != core.ApprovalKey {
			t.Fatalf("%s: %+v %v", no, out, err)
		}
	}
	if out, err := g.Approve(ctx, retry(req, first.InputRequired, `{"action":"cancel"}`)); err != nil || out.Status != host.Cancelled {
		t.Fatalf("cancel: %+v %v", out, err)
	}

	// Changed arguments: the uniform invalid-state error.
	changed := retry(transferReq(`{"amount":5001,"to":"bob"}`), first.InputRequired, yes)
	if _, err := g.Approve(ctx, changed); !errors.Is(err, host.ErrInvalidState) {
		t.Fatalf("changed arguments: %v", err)
	}
	// Resume alone (no approval expected) does not open an approval.
	if _, err := g.Resume(ctx, retry(req, first.InputRequired, yes)); !errors.Is(err, host.ErrInvalidState) {
		t.Fatalf("plain resume: %v", err)
	}

	// A reload that changes the policy voids the approval.
	rev := pol.Info().Revision
	fsys["approve.rego"].Data = append(fsys["approve.rego"].Data, "\n# changed\n"...)
	if err := pol.Reload(ctx); err != nil || pol.Info().Revision == rev {
		t.Fatalf("reload: %v", err)
	}
	_, err = g.Approve(ctx, retry(req, first.InputRequired, yes))
	if e, ok := host.AsError(err); !ok || e.Code != host.CodeStateInvalid || e.Reason != core.ReasonPolicy || e.Message != core.StateInvalidMessage {
		t.Fatalf("after reload: %v", err)
	}
}

func TestApproveFailsClosed(t *testing.T) {
	ctx := context.Background()
	fsys := shippedFS(t)
	fsys["approve.rego"] = &fstest.MapFile{Data: []byte("package mrtr.approve\n\ndecision := {\"approval\": \"maybe\"}\n")}
	pol, err := policy.LoadFS(ctx, fsys, "policies")
	if err != nil {
		t.Fatal(err)
	}
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPoolSize(1), host.WithPolicy(pol))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	if _, err := g.Approve(ctx, transferReq(`{"amount":1}`)); !errors.Is(err, &host.Error{Code: host.CodePolicyDenied}) {
		t.Fatalf("a malformed approve decision: %v", err)
	}
	// Without the approve decision nothing needs approval.
	delete(fsys, "approve.rego")
	delete(fsys, "approve_test.rego")
	if err := pol.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := g.Approve(ctx, transferReq(`{"amount":5000}`)); out != nil || err != nil {
		t.Fatalf("no approve decision: %v %v", out, err)
	}
}

// BenchmarkApproval: a confirm round (the ask, the retry with a yes, the
// ledger's claim) against the same call when the policy requires no
// approval (the approve decision only), same guard, same run.
func BenchmarkApproval(b *testing.B) {
	ctx := context.Background()
	pol, err := policy.Default(ctx)
	if err != nil {
		b.Fatal(err)
	}
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPoolSize(1), host.WithPolicy(pol))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close(ctx)
	effect := func(context.Context) ([]byte, error) { return []byte(`"sent"`), nil }
	b.Run("no-approval", func(b *testing.B) {
		req := transferReq(`{"amount":10,"to":"bob"}`)
		for b.Loop() {
			if out, err := g.Approve(ctx, req); out != nil || err != nil {
				b.Fatal(out, err)
			}
			_, _ = effect(ctx)
		}
	})
	b.Run("confirm", func(b *testing.B) {
		req := transferReq(`{"amount":5000,"to":"bob"}`)
		for b.Loop() {
			first, err := g.Approve(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			out, err := g.Approve(ctx, retry(req, first.InputRequired, yes))
			if err != nil || out.Status != host.Complete {
				b.Fatal(out, err)
			}
			if _, _, err := g.Once(ctx, out, effect); err != nil {
				b.Fatal(err)
			}
		}
	})
}
