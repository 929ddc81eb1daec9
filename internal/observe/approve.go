package observe

import (
	"cmp"
	"context"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// Approve keeps the policy's approvals when tracing wraps it.
func (tp *tracedPolicy) Approve(ctx context.Context, q *host.PolicyQuery) (*host.Approval, error) {
	ap, ok := tp.p.(host.ApprovalPolicy)
	if !ok {
		return nil, nil
	}
	ctx, s := tp.tel.StartStep(ctx, "policy approve")
	a, err := ap.Approve(ctx, q)
	EndStep(s, err)
	return a, err
}

func (i *instrumented) Approve(ctx context.Context, req *host.Request) (*host.Outcome, error) {
	t := time.Now()
	o, err := i.g.Approve(ctx, req)
	i.m.GuardTime.WithLabelValues("approve").Observe(time.Since(t).Seconds())
	if e, ok := host.AsError(err); ok && e.Code == host.CodeStateInvalid {
		i.m.Rejected.WithLabelValues(cmp.Or(e.Reason, "unknown")).Inc()
	}
	return o, err
}

func (t *tracedGuard) Approve(ctx context.Context, req *host.Request) (*host.Outcome, error) {
	ctx, s := StartGuardStep(ctx, t.tel, "guard approve")
	s.SetString("mrtr.target", req.Target)
	o, err := t.g.Approve(ctx, req)
	RecordPolicyVerdict(ctx, s, err)
	if o != nil {
		s.SetString("mrtr.outcome", string(o.Status))
	}
	EndStep(s, err)
	return o, err
}
