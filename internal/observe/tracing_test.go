package observe

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry/otlptest"
)

// fixedPolicy gives the same answer to every ask and resume.
type fixedPolicy struct{ d host.PolicyDecision }

func (p fixedPolicy) Ask(context.Context, *host.PolicyQuery) (*host.PolicyDecision, error) {
	d := p.d
	return &d, nil
}

func (p fixedPolicy) Resume(context.Context, *host.PolicyQuery) (*host.PolicyDecision, error) {
	d := p.d
	return &d, nil
}

// TestTracedPolicyVerdictIsTheCores: the guard ask span records the
// verdict the core reached on the policy's answer, exported to a real
// OTLP receiver. An answer with allow and a code is refused by the core;
// the traced policy used to read it again on its own and record "allow".
func TestTracedPolicyVerdictIsTheCores(t *testing.T) {
	rcv := otlptest.Start(t)
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, "mrtr-wasm", "test")
	if err != nil || !tel.Enabled() {
		t.Fatalf("Setup: %v, %v", tel, err)
	}
	cases := []struct {
		target   string
		answer   host.PolicyDecision
		decision string
		denial   string
	}{
		{"allowed", host.PolicyDecision{Allow: true}, "allow", ""},
		{"allow_with_code", host.PolicyDecision{Allow: true, Code: "policy.custom", Message: "not on Sundays"}, "deny", "policy.custom"},
		{"denied", host.PolicyDecision{Denials: []host.PolicyDenial{{Code: "policy.field_not_allowed", Rule: "fields", Key: "contact", Field: "email", Message: "no email"}}}, "deny", "policy.field_not_allowed"},
	}
	for _, c := range cases {
		g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPolicy(TracePolicy(fixedPolicy{c.answer}, tel)),
			host.WithCompilationCache(filepath.Join(os.TempDir(), "mrtr-wasm-test-cache")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close(ctx) })
		req := &host.Request{Principal: "alice@example.com", Method: "tools/call", Target: c.target,
			Arguments: json.RawMessage(`{}`), Capabilities: json.RawMessage(`{"elicitation":{"form":{}}}`)}
		form := host.Form("contact", "Who should we call?", json.RawMessage(`{"type":"object","properties":{"email":{"type":"string","format":"email"}},"required":["email"]}`))
		_, err = TraceGuard(g, tel).Ask(ctx, req, []host.InputRequest{form})
		if e, ok := host.AsError(err); (c.decision == "deny") != (ok && e.Code == host.CodePolicyDenied) {
			t.Fatalf("%s: ask gave %v", c.target, err)
		}
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans(t)
	for _, c := range cases {
		var step otlptest.Span
		found := false
		for _, sp := range spans {
			if sp.Name == "guard ask" && sp.Attrs["mrtr.target"] == c.target {
				step, found = sp, true
			}
		}
		if !found {
			t.Fatalf("%s: no guard ask span in %v", c.target, otlptest.Names(spans))
		}
		if step.Attrs["mrtr.policy.decision"] != c.decision || step.Attrs["mrtr.policy.denial"] != c.denial {
			t.Errorf("%s: guard ask span decision %q denial %q, want %q %q", c.target,
				step.Attrs["mrtr.policy.decision"], step.Attrs["mrtr.policy.denial"], c.decision, c.denial)
		}
	}
	for _, sp := range spans {
		if sp.Name == "policy ask" && sp.Attrs["mrtr.policy.decision"] != "" {
			t.Errorf("the policy span judges the answer itself: %v", sp.Attrs)
		}
	}
}
