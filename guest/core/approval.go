package core

// ApprovalKey is the input request key of the guard's own confirm form.
// No application may ask under it (lint refuses the key), so an answer to
// it is always an answer to the form the core built.
const ApprovalKey = "mrtr.approval"

// ApprovalField is the confirm form's one field: a boolean, yes to run.
const ApprovalField = "approve"

const (
	maxSummaryLen       = 2048
	maxPolicyVersionLen = 128
)

// approval is the envelope's "approval": what the host's policy decided
// about this call (guest/ABI.md).
type approval struct {
	summary string // what will happen, as the policy wrote it (ask only)
	version string // the policy's version the approval is bound to
}

// readApproval reads root's "approval" member; nil when there is none.
// ask needs the summary, resume only the version.
func (g *Guard) readApproval(root int32, ask bool) (*approval, *Error) {
	p := &g.p
	a := p.get(root, "approval")
	if a < 0 || p.kindOf(a) == jNull {
		return nil, nil
	}
	if p.kindOf(a) != jObject {
		return nil, newError(CodeRequestMalformed, "\"approval\" must be an object {kind, summary, policyVersion}")
	}
	if kind, _ := p.string(p.get(a, "kind")); kind != "confirm" {
		return nil, newError(CodeRequestMalformed, "\"approval\" needs \"kind\": confirm")
	}
	ap := &approval{}
	var ok bool
	if ap.version, ok = p.string(p.get(a, "policyVersion")); !ok || ap.version == "" || len(ap.version) > maxPolicyVersionLen || !validKey(ap.version) {
		return nil, newError(CodeRequestMalformed, "\"approval\" needs \"policyVersion\": 1 to "+itoa(maxPolicyVersionLen)+" printable characters naming the loaded policy")
	}
	if ask {
		if ap.summary, ok = p.string(p.get(a, "summary")); !ok || ap.summary == "" || len(ap.summary) > maxSummaryLen {
			return nil, newError(CodeRequestMalformed, "\"approval\" needs \"summary\": what will happen, 1 to "+itoa(maxSummaryLen)+" bytes")
		}
	}
	return ap, nil
}

// confirmRequest is the confirm form: the policy's summary as the message
// and one required yes/no. No default: nothing is approved by a client
// that submits the form untouched.
func (ap *approval) confirmRequest() pending {
	params := append([]byte(`{"mode":"form","message":`), appendString(nil, ap.summary)...)
	params = append(params, `,"requestedSchema":{"type":"object","properties":{"`+ApprovalField+`":{"type":"boolean","title":"Approve","description":"Yes runs it now, once. No rejects it: nothing runs."}},"required":["`+ApprovalField+`"]}}`...)
	return pending{key: ApprovalKey, method: "elicitation/create", kind: kindForm, params: params}
}

// approved reports whether the accepted confirm content r says yes.
func approved(p *parser, r int32) bool {
	return p.kindOf(p.get(p.get(r, "content"), ApprovalField)) == jTrue
}
