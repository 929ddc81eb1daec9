package audit

import (
	"context"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// Approve records a confirm approval: asked (the first call, or asked
// again), granted (a yes: by the caller), rejected (a no or a decline),
// cancelled, refused or expired. A call that needs no approval leaves no
// record here.
func (a *guard) Approve(ctx context.Context, req *host.Request) (*host.Outcome, error) {
	out, err := a.Guard.Approve(ctx, req)
	if err == nil && out == nil {
		return nil, nil
	}
	r := base(req)
	switch {
	case err != nil:
		r.Kind, r.Outcome, r.Rule = "approval.refused", "refused", codeOf(err)
		if e, ok := host.AsError(err); ok && e.Reason == "expired" {
			r.Kind, r.Outcome = "expired", ""
		}
	case out.Status == host.InputRequired:
		r.Kind, r.Round, r.OperationID, r.Fields = "approval.asked", out.Round, out.OperationID, FieldsOf(out.InputRequired)
		if req.IsRetry() {
			r.Outcome = "invalid"
		}
	case out.Status == host.Complete:
		r.Kind, r.Outcome, r.By = "approval.granted", "accept", req.Principal
		r.Round, r.OperationID, r.AnswersDigest = out.Round, out.OperationID, out.AnswersDigest
	case out.Status == host.Declined:
		r.Kind, r.Outcome, r.By, r.Round, r.OperationID = "approval.rejected", "decline", req.Principal, out.Round, out.OperationID
	case out.Status == host.Cancelled:
		r.Kind, r.Outcome, r.Round, r.OperationID = "approval.rejected", "cancel", out.Round, out.OperationID
	}
	a.put(r)
	return out, err
}
