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

	guard *Guard // the guard that asks, whose core builds the input
}

// BuildInput returns the policy input of q as the guard core builds it
// (guest/ABI.md, op policy.input), or q.Input when set: one builder for
// every runtime, which also classifies each form field with the core's
// secret detector. ask selects the ask decision's input (with "inputs").
// Without withPrincipal the principal is left empty: for a policy that
// never reads it, so that one decision serves every user of a form. The
// token's scopes and claims go in when set (a policy package clears what
// its policy does not read).
func (q *PolicyQuery) BuildInput(ctx context.Context, ask, withPrincipal bool) (json.RawMessage, error) {
	if q.Input != nil {
		return q.Input, nil
	}
	env := []byte(`{"v":1,"op":"policy.input","decision":"resume"`)
	if ask {
		env = []byte(`{"v":1,"op":"policy.input","decision":"ask"`)
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

// PolicyDecision is a Policy's answer. A nil decision, Allow false or any
// denial refuses: deny always wins, and an undefined rule must never turn
// into an allow.
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
	if err := denied(d, err); err != nil {
		return err
	}
	// The core narrows the guard's own limits with these, never widens
	// them (guest/ABI.md, policyTtl and policyMaxRounds).
	o.ttl, o.maxRounds = d.TTL, d.MaxRounds
	return nil
}

// policyResume returns the round limit the policy sets for a resume (0:
// the guard's own), or the error that refuses it.
func (g *Guard) policyResume(ctx context.Context, req *Request) (askOptions, error) {
	p := g.cfg.policy
	if p == nil {
		return askOptions{}, nil
	}
	d, err := p.Resume(ctx, g.policyQuery(req, nil))
	if err := denied(d, err); err != nil {
		return askOptions{}, err
	}
	return askOptions{maxRounds: d.MaxRounds, ttl: d.TTL}, nil
}

// appendPolicyLimits adds the policy's limits to an ask or resume
// envelope as policyTtl and policyMaxRounds. The core narrows the guard's
// own limits with them, never widens them: the ledger keeps a finished
// round for as long as the guard's own limits let a state of it open
// (rememberSeconds).
func (o askOptions) appendPolicyLimits(env []byte) []byte {
	if o.maxRounds > 0 {
		env = append(env, `,"policyMaxRounds":`...)
		env = strconv.AppendInt(env, int64(o.maxRounds), 10)
	}
	if o.ttl >= time.Second {
		env = append(env, `,"policyTtl":`...)
		env = strconv.AppendInt(env, int64(o.ttl/time.Second), 10)
	}
	return env
}

func denied(d *PolicyDecision, err error) error {
	if err != nil {
		if e, ok := AsError(err); ok && e.Code == CodePolicyDenied {
			return e
		}
		// The evaluation error may quote the request: keep it out.
		return &Error{Code: CodePolicyDenied, Message: "policy evaluation failed", Reason: "policy_error"}
	}
	if d != nil && d.Allow && len(d.Denials) == 0 && d.Code == "" {
		return nil
	}
	first := PolicyDenial{Code: "policy.undecided", Message: "the policy does not allow this request"}
	var all []PolicyDenial
	if d != nil {
		all = d.Denials
		switch {
		case d.Code != "" || d.Message != "":
			first = PolicyDenial{Code: d.Code, Rule: d.Rule, Message: d.Message}
			if first.Message == "" {
				first.Message = "the policy does not allow this request"
			}
		case len(all) > 0:
			first = all[0]
		}
	}
	if len(all) == 0 {
		all = []PolicyDenial{first}
	}
	e := &Error{Code: CodePolicyDenied, Message: first.Message + " (" + first.Code, Reason: first.Code}
	if first.Rule != "" {
		e.Message += ", rule " + first.Rule
		e.Reason += " (" + first.Rule + ")"
	}
	e.Message += ")"
	e.Data, _ = json.Marshal(struct {
		Policy  PolicyDenial   `json:"policy"`
		Denials []PolicyDenial `json:"denials"`
	}{first, all})
	return e
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
