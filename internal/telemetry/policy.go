package telemetry

import (
	"context"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// Policy wraps a guard policy with a span per evaluation ("policy ask",
// "policy resume"); with tracing off it returns p itself.
func (t *Telemetry) Policy(p host.Policy) host.Policy {
	if t == nil || p == nil {
		return p
	}
	return &tracedPolicy{p, t}
}

type tracedPolicy struct {
	p host.Policy
	t *Telemetry
}

func (tp *tracedPolicy) Ask(ctx context.Context, q *host.PolicyQuery) (*host.PolicyDecision, error) {
	ctx, s := tp.t.StartStep(ctx, "policy ask")
	d, err := tp.p.Ask(ctx, q)
	endDecision(s, d, err)
	return d, err
}

func (tp *tracedPolicy) Resume(ctx context.Context, q *host.PolicyQuery) (*host.PolicyDecision, error) {
	ctx, s := tp.t.StartStep(ctx, "policy resume")
	d, err := tp.p.Resume(ctx, q)
	endDecision(s, d, err)
	return d, err
}

// endDecision records allow/deny and the first denial's code (a stable
// policy.* code, never an answer).
func endDecision(s Span, d *host.PolicyDecision, err error) {
	if d != nil {
		if d.Allow {
			s.SetString("mrtr.policy.decision", "allow")
		} else {
			s.SetString("mrtr.policy.decision", "deny")
			code := d.Code
			if code == "" && len(d.Denials) > 0 {
				code = d.Denials[0].Code
			}
			s.SetString("mrtr.policy.denial", code)
		}
	}
	s.End(err)
}
