package policy

import (
	"bytes"
	"context"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

var _ host.ApprovalPolicy = (*Engine)(nil)

// Approve evaluates the approve decision (policies/approve.rego) for a
// call about to run: nil when it needs no approval. The approval carries
// the policy's Revision, so a reload voids approvals granted before it.
// Not memoised: the input holds the call's arguments.
func (e *Engine) Approve(ctx context.Context, q *host.PolicyQuery) (*host.Approval, error) {
	c := e.cur.Load()
	if c.approve == nil {
		return nil, nil
	}
	in, err := c.visible(q).BuildInput(ctx, false, c.principal)
	if err != nil {
		return nil, err
	}
	v, err := ast.ValueFromReader(bytes.NewReader(in))
	if err != nil {
		return nil, &host.Error{Code: host.CodePolicyDenied, Message: "the policy input is not JSON", Reason: "policy_input"}
	}
	rs, err := c.approve.Eval(ctx, rego.EvalParsedInput(v))
	if err != nil {
		return nil, err
	}
	// Fail closed: anything but {} or a confirm with a summary refuses.
	var doc map[string]any
	if len(rs) == 1 && len(rs[0].Expressions) == 1 {
		doc, _ = rs[0].Expressions[0].Value.(map[string]any)
	}
	if doc == nil {
		return nil, undecidedApproval()
	}
	if len(doc) == 0 {
		return nil, nil
	}
	kind, _ := doc["approval"].(string)
	summary, _ := doc["summary"].(string)
	if kind != "confirm" || summary == "" {
		return nil, undecidedApproval()
	}
	return &host.Approval{Kind: kind, Summary: summary, Version: c.revision}, nil
}

func undecidedApproval() error {
	return &host.Error{Code: host.CodePolicyDenied, Message: "the approve decision is neither {} nor {\"approval\":\"confirm\",\"summary\":…} (" + CodeUndecided + ")", Reason: CodeUndecided + " (approve)"}
}
