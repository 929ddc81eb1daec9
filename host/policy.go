package host

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
)

// Policy decides what a deployment allows: which fields and input kinds a
// tool may ask for, how many rounds it gets and how long its state lives.
// The guard core decides what is safe; a Policy narrows that further. The
// policy package (OPA/Rego) is the shipped implementation.
type Policy interface {
	// Ask is consulted before every ask, with what is about to be asked.
	Ask(ctx context.Context, q *PolicyQuery) (*PolicyDecision, error)
	// Resume is consulted before every resume.
	Resume(ctx context.Context, q *PolicyQuery) (*PolicyDecision, error)
}

// PolicyQuery is what a Policy sees.
type PolicyQuery struct {
	Principal string
	// Scopes and Claims are the request's (see Request).
	Scopes []string
	Claims json.RawMessage
	Method string
	Target string
	Inputs []InputRequest // empty on resume
	// TTL and MaxRounds are the guard's own settings, which the policy
	// may narrow and must keep within its bounds.
	TTL       time.Duration
	MaxRounds int
	// Input, when set, is the policy input evaluated as it is (JSON,
	// policies/README.md); otherwise BuildInput has the guard core build
	// it from the fields above.
	Input json.RawMessage
	// Arguments are the call's arguments as sent, for the approve
	// decision only (ApprovalPolicy); the ask and resume decisions never
	// see them.
	Arguments json.RawMessage

	guard   *Guard // the guard that asks, whose core builds the input
	approve bool   // the approve decision's query: BuildInput builds its input
}

// BuildInput returns the policy input of q as the guard core builds it
// (guest/ABI.md, op policy.input), or q.Input when set: one builder for
// every runtime, which also classifies each form field with the core's
// secret detector. ask selects the ask decision's input (with "inputs");
// a query Guard.Approve made gets the approve decision's (with
// "arguments").
// Without withPrincipal the principal is left empty: for a policy that
// never reads it, so that one decision serves every user of a form. The
// token's scopes and claims go in when set (a policy package clears what
// its policy does not read).
func (q *PolicyQuery) BuildInput(ctx context.Context, ask, withPrincipal bool) (json.RawMessage, error) {
	if q.Input != nil {
		return q.Input, nil
	}
	env := []byte(`{"v":1,"op":"policy.input","decision":"resume"`)
	switch {
	case ask:
		env = []byte(`{"v":1,"op":"policy.input","decision":"ask"`)
	case q.approve:
		env = []byte(`{"v":1,"op":"policy.input","decision":"approve"`)
	}
	env = append(env, `,"principal":`...)
	if withPrincipal {
		env = core.AppendJSONString(env, q.Principal)
	} else {
		env = append(env, `""`...)
	}
	if q.Scopes != nil {
		env = append(env, `,"scopes":[`...)
		for i, sc := range q.Scopes {
			if i > 0 {
				env = append(env, ',')
			}
			env = core.AppendJSONString(env, sc)
		}
		env = append(env, ']')
	}
	if q.Claims != nil {
		env = append(env, `,"claims":`...)
		env = append(env, q.Claims...)
	}
	env = append(env, `,"method":`...)
	env = core.AppendJSONString(env, q.Method)
	env = append(env, `,"target":`...)
	env = core.AppendJSONString(env, q.Target)
	env = append(env, `,"ttl":`...)
	env = strconv.AppendInt(env, int64(q.TTL/time.Second), 10)
	env = append(env, `,"maxRounds":`...)
	env = strconv.AppendInt(env, int64(q.MaxRounds), 10)
	var err error
	if ask {
		if env, err = appendInputRequests(env, q.Inputs); err != nil {
			return nil, policyInputError(err)
		}
	} else if q.approve {
		if env, err = appendRaw(env, "arguments", q.Arguments); err != nil {
			return nil, policyInputError(err)
		}
	}
	env = append(env, '}')
	var r response
	if q.guard != nil {
		err = q.guard.call(ctx, env, &r)
	} else {
		err = nativeCall(env, &r)
	}
	if err != nil {
		return nil, policyInputError(err)
	}
	return r.Input, nil
}

// ReadDecision reads a policy's decision document (policies/README.md;
// nil when the policy gave none) as the guard core reads it (guest/ABI.md,
// op policy.decision): deny always wins, an allow needs both limits, and
// anything not shaped as documented refuses. It returns the document as
// read, in the same shape. The shipped policy package uses it, so no host
// judges a decision by its own rule. q may be nil: the core compiled in
// reads it.
func (q *PolicyQuery) ReadDecision(ctx context.Context, document json.RawMessage) (json.RawMessage, error) {
	env, err := appendRaw([]byte(`{"v":1,"op":"policy.decision"`), "document", document)
	if err != nil {
		return nil, err
	}
	env = append(env, '}')
	var r response
	if q != nil && q.guard != nil {
		err = q.guard.call(ctx, env, &r)
	} else {
		err = nativeCall(env, &r)
	}
	if err != nil {
		return nil, err
	}
	return r.Decision, nil
}

// policyInputError refuses a query whose input the core cannot build
// (duplicate keys, params that are not JSON): the ask would fail anyway.
func policyInputError(err error) error {
	e, ok := AsError(err)
	if !ok || e.Code == CodeUnavailable || e.Code == CodeInternal {
		return err
	}
	return &Error{Code: CodePolicyDenied, Message: "the policy input cannot be built: " + e.Message, Reason: "policy_input"}
}

// natives are guard cores for queries that no guard made (lint, tests):
// the same code as guard.wasm, which the vectors prove byte for byte.
var natives = sync.Pool{New: func() any { return core.New() }}

func nativeCall(env []byte, r *response) error {
	c := natives.Get().(*core.Guard)
	err := json.Unmarshal(c.Call(env), r)
	natives.Put(c)
	if err != nil {
		return &Error{Code: CodeInternal, Message: "the guard core returned an unreadable response"}
	}
	if !r.OK {
		return r.err()
	}
	return nil
}

// PolicyDecision is a Policy's answer, which the guard core reads (as it
// reads the JavaScript host's: guest/ABI.md, "policy"). A nil decision,
// Allow false, a Code or any denial refuses: deny always wins, and an
// undefined rule must never turn into an allow.
type PolicyDecision struct {
	Allow bool
	// Code, Rule and Message say which rule denied and why (the first
	// denial); Denials lists every reason.
	Code    string
	Rule    string
	Message string
	Denials []PolicyDenial
	// MaxRounds and TTL, when set, are the limits for this tool.
	MaxRounds int
	TTL       time.Duration
}

// PolicyDenial is one reason a policy refused: a stable code (for the
// shipped policies, policy.*), the data rule that refused, the input
// request key and form field concerned, and a message for people.
type PolicyDenial struct {
	Code    string `json:"code"`
	Rule    string `json:"rule"`
	Key     string `json:"key,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// WithPolicy consults p on every ask and resume.
func WithPolicy(p Policy) Option { return func(c *config) { c.policy = p } }

func (g *Guard) policyQuery(req *Request, inputs []InputRequest) *PolicyQuery {
	return &PolicyQuery{
		Principal: req.Principal, Scopes: req.Scopes, Claims: req.Claims, Method: req.Method, Target: req.Target, Inputs: inputs,
		TTL: g.cfg.ttl, MaxRounds: g.cfg.maxRounds, guard: g,
	}
}

func (g *Guard) policyAsk(ctx context.Context, req *Request, inputs []InputRequest, o *askOptions) error {
	p := g.cfg.policy
	if p == nil {
		return nil
	}
	d, err := p.Ask(ctx, g.policyQuery(req, inputs))
	if err != nil {
		return evalError(err)
	}
	o.policy = appendDecision(nil, d)
	return nil
}

// policyResume returns the policy's decision on a resume, which the core
// applies, or the error its evaluation ended in.
func (g *Guard) policyResume(ctx context.Context, req *Request) (askOptions, error) {
	p := g.cfg.policy
	if p == nil {
		return askOptions{}, nil
	}
	d, err := p.Resume(ctx, g.policyQuery(req, nil))
	if err != nil {
		return askOptions{}, evalError(err)
	}
	return askOptions{policy: appendDecision(nil, d)}, nil
}

// appendPolicy adds the policy's decision to an ask or resume envelope
// ("policy", guest/ABI.md). The core decides whether it allows, builds the
// refusal, and narrows the guard's own limits with the policy's, never
// widening them: the ledger keeps a finished round for as long as the
// guard's own limits let a state of it open (rememberSeconds).
func (o askOptions) appendPolicy(env []byte) []byte {
	if o.policy == nil {
		return env
	}
	env = append(env, `,"policy":`...)
	return append(env, o.policy...)
}

// appendDecision writes d as the core reads a host policy's answer; nil
// is null, which refuses.
func appendDecision(dst []byte, d *PolicyDecision) []byte {
	if d == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"allow":`...)
	dst = strconv.AppendBool(dst, d.Allow)
	for _, m := range [...]struct{ k, v string }{{"code", d.Code}, {"rule", d.Rule}, {"message", d.Message}} {
		if m.v != "" {
			dst = append(dst, `,"`+m.k+`":`...)
			dst = core.AppendJSONString(dst, m.v)
		}
	}
	if len(d.Denials) > 0 {
		dst = append(dst, `,"denials":[`...)
		for i, x := range d.Denials {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"code":`...)
			dst = core.AppendJSONString(dst, x.Code)
			dst = append(dst, `,"rule":`...)
			dst = core.AppendJSONString(dst, x.Rule)
			dst = append(dst, `,"key":`...)
			dst = core.AppendJSONString(dst, x.Key)
			dst = append(dst, `,"field":`...)
			dst = core.AppendJSONString(dst, x.Field)
			dst = append(dst, `,"message":`...)
			dst = core.AppendJSONString(dst, x.Message)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if d.MaxRounds > 0 {
		dst = append(dst, `,"maxRounds":`...)
		dst = strconv.AppendInt(dst, int64(d.MaxRounds), 10)
	}
	if d.TTL >= time.Second {
		dst = append(dst, `,"ttl":`...)
		dst = strconv.AppendInt(dst, int64(d.TTL/time.Second), 10)
	}
	return append(dst, '}')
}

// evalError is the error of a policy that could not decide. Its own
// mrtr.policy.denied passes as it is; anything else may quote the
// request, so it is replaced.
func evalError(err error) error {
	if e, ok := AsError(err); ok && e.Code == CodePolicyDenied {
		return e
	}
	return &Error{Code: CodePolicyDenied, Message: "policy evaluation failed", Reason: "policy_error"}
}

// PolicyDenials returns why a policy refused, when e is a policy denial:
// the first reason and all of them.
func (e *Error) PolicyDenials() (first PolicyDenial, all []PolicyDenial, ok bool) {
	if e.Code != CodePolicyDenied || len(e.Data) == 0 {
		return PolicyDenial{}, nil, false
	}
	var d struct {
		Policy  PolicyDenial   `json:"policy"`
		Denials []PolicyDenial `json:"denials"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return PolicyDenial{}, nil, false
	}
	return d.Policy, d.Denials, true
}
