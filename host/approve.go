package host

import (
	"context"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
)

// ApprovalPolicy is a Policy that can make a call wait for a person's
// approval (the shipped policy package's approve decision).
type ApprovalPolicy interface {
	// Approve is consulted before a call runs, with its arguments
	// (PolicyQuery.Arguments); nil means no approval is needed.
	Approve(ctx context.Context, q *PolicyQuery) (*Approval, error)
}

// Approval is what a policy requires before a call runs.
type Approval struct {
	// Kind is "confirm": the caller answers a yes/no form.
	Kind string
	// Summary says what will happen; the form shows it.
	Summary string
	// Version names the loaded policy and its data (a reload changes
	// it): an approval opens only under the version that required it.
	Version string
}

// Approve applies the policy's approval rule to a call before it acts.
// It returns nil when the policy requires no approval. Otherwise, on the
// first call the Outcome is InputRequired with the guard's own confirm
// form (return Outcome.InputRequired); on the retry it is Resume's
// verdict on that form: Complete only for a yes (act through Once, so the
// approved call runs at most once), Declined for a no or a decline (the
// call was not approved: nothing may run), Cancelled, or InputRequired
// again. A retry whose arguments or policy version changed since the form
// was sealed is CodeStateInvalid. The approval round stands alone: a tool
// that also asks its own questions asks them when no approval is needed.
func (g *Guard) Approve(ctx context.Context, req *Request) (*Outcome, error) {
	ap, err := g.approval(ctx, req)
	if err != nil || ap == nil {
		return nil, err
	}
	if !req.IsRetry() {
		env, err := g.envelope("ask", req)
		if err != nil {
			return nil, err
		}
		env = append(appendApproval(env, ap, true), '}')
		var r response
		if err := g.call(ctx, env, &r); err != nil {
			return nil, err
		}
		return &Outcome{Status: InputRequired, OperationID: r.OperationID, Round: r.Round, InputRequired: r.Result}, nil
	}
	return g.resume(ctx, req, ap)
}

// approval asks the policy whether req needs approval.
func (g *Guard) approval(ctx context.Context, req *Request) (*Approval, error) {
	p, ok := g.cfg.policy.(ApprovalPolicy)
	if !ok {
		return nil, nil
	}
	q := g.policyQuery(req, nil)
	q.Arguments, q.approve = req.Arguments, true
	ap, err := p.Approve(ctx, q)
	if err != nil {
		return nil, evalError(err)
	}
	if ap != nil && ap.Kind != "confirm" {
		return nil, &Error{Code: CodePolicyDenied, Message: "the policy asks for an approval of a kind this guard does not have", Reason: "policy_approval"}
	}
	return ap, nil
}

// appendApproval adds "approval" (guest/ABI.md) to an ask or resume
// envelope; the core checks it.
func appendApproval(env []byte, ap *Approval, summary bool) []byte {
	env = append(env, `,"approval":{"kind":`...)
	env = core.AppendJSONString(env, ap.Kind)
	if summary {
		env = append(env, `,"summary":`...)
		env = core.AppendJSONString(env, ap.Summary)
	}
	env = append(env, `,"policyVersion":`...)
	env = core.AppendJSONString(env, ap.Version)
	return append(env, '}')
}
