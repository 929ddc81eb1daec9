package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testseam"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

// The guard with the real shipped policy (OPA), through guard.wasm.

var (
	contactSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","title":"Your name"},"email":{"type":"string","title":"Work email","format":"email"}},"required":["name","email"]}`)
	phoneSchema   = json.RawMessage(`{"type":"object","properties":{"phone":{"type":"string","title":"Mobile"}}}`)
)

func policyGuard(t *testing.T, pol host.Policy, opts ...host.Option) *host.Guard {
	t.Helper()
	g, err := host.New(context.Background(), append([]host.Option{host.WithKeys(host.NewKeyring()), host.WithPolicy(pol), host.WithPoolSize(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	return g
}

func toolRequest(tool string) *host.Request {
	return &host.Request{
		Principal: "alice", Method: "tools/call", Target: tool,
		Arguments:    json.RawMessage(`{}`),
		Capabilities: json.RawMessage(`{"elicitation":{"form":{},"url":{}}}`),
	}
}

func TestPolicyAllowsAndDeniesAsks(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.Default(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := policyGuard(t, pol)

	ir, err := g.Ask(ctx, toolRequest("book_demo_call"), []host.InputRequest{host.Form("contact", "Who?", contactSchema)})
	if err != nil || ir.RequestState == "" {
		t.Fatalf("allowed ask: %v %v", ir, err)
	}

	_, err = g.Ask(ctx, toolRequest("book_demo_call"), []host.InputRequest{host.Form("contact", "Who?", phoneSchema)})
	e, ok := host.AsError(err)
	if !ok || e.Code != host.CodePolicyDenied {
		t.Fatalf("want %s, got %v", host.CodePolicyDenied, err)
	}
	// The error says which rule denied and why.
	for _, want := range []string{"policy.field_not_allowed", "tools.book_demo_call", `"phone"`} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
	if e.Reason != "policy.field_not_allowed (tools.book_demo_call)" {
		t.Errorf("reason %q", e.Reason)
	}
	first, all, ok := e.PolicyDenials()
	if !ok || first.Code != "policy.field_not_allowed" || first.Rule != "tools.book_demo_call" || len(all) != 1 || all[0].Key != "contact" || all[0].Field != "phone" {
		t.Errorf("denials %+v %+v %v", first, all, ok)
	}
	if !errors.Is(err, &host.Error{Code: host.CodePolicyDenied}) {
		t.Error("errors.Is by code")
	}

	// URL mode for connect_calendar: its own page yes, elsewhere no.
	if _, err := g.Ask(ctx, toolRequest("connect_calendar"), []host.InputRequest{host.URL("cal", "Connect", "http://127.0.0.1:8080/connect/x")}); err != nil {
		t.Fatal(err)
	}
	_, err = g.Ask(ctx, toolRequest("connect_calendar"), []host.InputRequest{host.URL("cal", "Connect", "https://evil.example/connect/x")})
	if e, _ := host.AsError(err); e == nil || !strings.Contains(e.Reason, "policy.url_host_not_allowed") {
		t.Fatalf("url elsewhere: %v", err)
	}
	// A secret is both unsafe (core) and forbidden (policy): the policy
	// runs first and names its rule.
	_, err = g.Ask(ctx, toolRequest("book_demo_call"), []host.InputRequest{host.Form("k", "Key?", json.RawMessage(`{"type":"object","properties":{"api_key":{"type":"string"}}}`))})
	if e, _ := host.AsError(err); e == nil || e.Reason != "policy.class_forbidden (forbidden_classes)" {
		t.Fatalf("secret: %v", err)
	}
}

// writePolicy writes the shipped .rego files and a data file to a
// directory, to load as an operator's policy.
func writePolicy(t *testing.T, data string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := filepath.Glob("../policies/*.rego")
	if err != nil || len(src) == 0 {
		t.Fatal(err)
	}
	for _, p := range src {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "demo.json"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const oneRoundData = `{"version":1,"limits":{"max_rounds":{"min":1,"max":5},"ttl_seconds":{"min":30,"max":900}},
 "forbidden_classes":["secret"],
 "default":{"kinds":["form"],"classes":["contact.name","contact.email"],"max_rounds":3,"ttl_seconds":300},
 "tools":{"quick":{"kinds":["form"],"classes":["contact.name","contact.email"],"max_rounds":1,"ttl_seconds":60},
  "brief":{"kinds":["form"],"classes":["contact.name","contact.email"],"max_rounds":3,"ttl_seconds":60}}}`

// The policy's round limit and TTL reach the guard: on ask (the TTL
// sealed in the state) and on resume (the round limit).
func TestPolicyRoundsAndTTL(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.Load(ctx, writePolicy(t, oneRoundData))
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	g := policyGuard(t, pol, testseam.Clock[host.Option](clock), host.WithTTL(5*time.Minute), host.WithMaxRounds(3))

	bad := json.RawMessage(`{"c":{"action":"accept","content":{"name":"Ann","email":"not-an-email"}}}`)
	for _, tc := range []struct {
		tool    string
		outcome string // after one wrong answer
	}{
		{"quick", host.CodeRoundsExceeded}, // 1 round: no second chance
		{"other", string(host.InputRequired)},
	} {
		req := toolRequest(tc.tool)
		ir, err := g.Ask(ctx, req, []host.InputRequest{host.Form("c", "Who?", contactSchema)})
		if err != nil {
			t.Fatal(tc.tool, err)
		}
		req.RequestState, req.InputResponses = ir.RequestState, bad
		out, err := g.Resume(ctx, req)
		got := ""
		if e, ok := host.AsError(err); ok {
			got = e.Code
		} else if err == nil {
			got = string(out.Status)
		}
		if got != tc.outcome {
			t.Errorf("%s: after a wrong answer got %q (%v), want %q", tc.tool, got, err, tc.outcome)
		}
	}

	// TTL: quick's state lives 60 s, other's 300 s.
	states := map[string]*host.Request{}
	for _, tool := range []string{"quick", "other"} {
		req := toolRequest(tool)
		ir, err := g.Ask(ctx, req, []host.InputRequest{host.Form("c", "Who?", contactSchema)})
		if err != nil {
			t.Fatal(err)
		}
		req.RequestState = ir.RequestState
		req.InputResponses = json.RawMessage(`{"c":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}}}`)
		states[tool] = req
	}
	// A re-ask is sealed with the tool's TTL too, not the guard's.
	req := toolRequest("brief")
	ir, err := g.Ask(ctx, req, []host.InputRequest{host.Form("c", "Who?", contactSchema)})
	if err != nil {
		t.Fatal(err)
	}
	req.RequestState, req.InputResponses = ir.RequestState, bad
	out, err := g.Resume(ctx, req)
	if err != nil || out.Status != host.InputRequired {
		t.Fatalf("brief after a wrong answer: %v %v", out, err)
	}
	req.RequestState = out.InputRequired.RequestState
	req.InputResponses = json.RawMessage(`{"c":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}}}`)
	states["brief re-asked"] = req

	now.Add(int64(90 * time.Second))
	if _, err := g.Resume(ctx, states["brief re-asked"]); !errors.Is(err, host.ErrInvalidState) {
		t.Errorf("brief's re-ask after 90 s: %v, want an expired state", err)
	}
	if _, err := g.Resume(ctx, states["quick"]); !errors.Is(err, host.ErrInvalidState) {
		t.Errorf("quick after 90 s: %v, want an expired state", err)
	}
	if out, err := g.Resume(ctx, states["other"]); err != nil || out.Status != host.Complete {
		t.Errorf("other after 90 s: %v %v", out, err)
	}
}

// A guard whose own settings are outside the policy's bounds is refused
// with the rule that says so.
func TestPolicyBoundsTheGuardSettings(t *testing.T) {
	ctx := context.Background()
	data := `{"version":1,"limits":{"max_rounds":{"min":1,"max":5},"ttl_seconds":{"min":30,"max":900}},
	 "forbidden_classes":[],"default":{"kinds":["form"],"classes":["contact.name","contact.email"]},"tools":{}}`
	pol, err := policy.Load(ctx, writePolicy(t, data))
	if err != nil {
		t.Fatal(err)
	}
	g := policyGuard(t, pol, host.WithTTL(time.Hour))
	_, err = g.Ask(ctx, toolRequest("other"), []host.InputRequest{host.Form("c", "Who?", contactSchema)})
	e, ok := host.AsError(err)
	if !ok || e.Reason != "policy.ttl_out_of_bounds (input.ttl_seconds)" {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(e.Message, "3600 s; this deployment allows 30 to 900 s") {
		t.Errorf("message %q", e.Message)
	}
}

// A Policy that fails or says nothing refuses; it never allows.
func TestPolicyFailsClosed(t *testing.T) {
	ctx := context.Background()
	for name, p := range map[string]host.Policy{
		"error":        policyFunc(func() (*host.PolicyDecision, error) { return nil, errors.New("boom: alice's data") }),
		"nil decision": policyFunc(func() (*host.PolicyDecision, error) { return nil, nil }),
		"allow false":  policyFunc(func() (*host.PolicyDecision, error) { return &host.PolicyDecision{}, nil }),
		"allow with a denial": policyFunc(func() (*host.PolicyDecision, error) {
			return &host.PolicyDecision{Allow: true, Denials: []host.PolicyDenial{{Code: "x.no", Message: "no"}}}, nil
		}),
	} {
		g := policyGuard(t, p)
		_, err := g.Ask(ctx, toolRequest("t"), []host.InputRequest{host.Form("c", "Who?", contactSchema)})
		e, ok := host.AsError(err)
		if !ok || e.Code != host.CodePolicyDenied {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.Contains(e.Error(), "alice") {
			t.Errorf("%s: the evaluation error leaked: %v", name, e)
		}
	}
}

type policyFunc func() (*host.PolicyDecision, error)

func (f policyFunc) Ask(context.Context, *host.PolicyQuery) (*host.PolicyDecision, error) { return f() }
func (f policyFunc) Resume(context.Context, *host.PolicyQuery) (*host.PolicyDecision, error) {
	return f()
}

// A policy that refuses a retry refuses it, even when the answers are
// complete: the guard never completes a request its policy denies.
func TestPolicyDeniesResume(t *testing.T) {
	ctx := context.Background()
	data := func(min int) string {
		return `{"version":1,"limits":{"max_rounds":{"min":` + strconv.Itoa(min) + `,"max":5},"ttl_seconds":{"min":30,"max":900}},
 "forbidden_classes":["secret"],
"default":{"kinds":["form"],"classes":["contact.name","contact.email"]},"tools":{}}`
	}
	dir := writePolicy(t, data(1))
	pol, err := policy.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	g := policyGuard(t, pol, host.WithMaxRounds(3))
	req := toolRequest("anything")
	ir, err := g.Ask(ctx, req, []host.InputRequest{host.Form("c", "Who?", contactSchema)})
	if err != nil {
		t.Fatal(err)
	}
	req.RequestState = ir.RequestState
	req.InputResponses = json.RawMessage(`{"c":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}}}`)
	// The operator now requires at least 4 rounds, which this guard (3)
	// does not offer: every resume must be refused.
	if err := os.WriteFile(filepath.Join(dir, "data", "demo.json"), []byte(data(4)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pol.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := g.Resume(ctx, req)
	e, ok := host.AsError(err)
	if !ok || e.Code != host.CodePolicyDenied || !strings.Contains(e.Reason, "policy.rounds_out_of_bounds") {
		t.Fatalf("resume after the policy changed: %+v, %v; want %s with policy.rounds_out_of_bounds", out, err, host.CodePolicyDenied)
	}
}
