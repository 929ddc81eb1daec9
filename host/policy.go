package host

import (
	"context"
	"time"
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
	Method    string
	Target    string
	Inputs    []InputRequest // empty on resume
}

// PolicyDecision is a Policy's answer. A nil decision or Allow false
// refuses; an undefined rule must never turn into an allow.
type PolicyDecision struct {
	Allow bool
	// Code, Rule and Message say which rule denied and why.
	Code    string
	Rule    string
	Message string
	// MaxRounds and TTL, when set, narrow the guard's defaults.
	MaxRounds int
	TTL       time.Duration
}

// WithPolicy consults p on every ask and resume.
func WithPolicy(p Policy) Option { return func(c *config) { c.policy = p } }

func (g *Guard) policyAsk(ctx context.Context, req *Request, inputs []InputRequest, o *askOptions) error {
	p := g.cfg.policy
	if p == nil {
		return nil
	}
	d, err := p.Ask(ctx, &PolicyQuery{Principal: req.Principal, Method: req.Method, Target: req.Target, Inputs: inputs})
	if err := denied(d, err); err != nil {
		return err
	}
	if d.TTL > 0 && (o.ttl == 0 || d.TTL < o.ttl) {
		o.ttl = d.TTL
	}
	if d.MaxRounds > 0 {
		o.maxRounds = d.MaxRounds
	}
	return nil
}

// policyRounds returns the round limit the policy sets for a resume, or 0.
func (g *Guard) policyRounds(ctx context.Context, req *Request) int {
	p := g.cfg.policy
	if p == nil {
		return 0
	}
	d, err := p.Resume(ctx, &PolicyQuery{Principal: req.Principal, Method: req.Method, Target: req.Target})
	if err != nil || d == nil || !d.Allow {
		return 1 // fail closed: no further rounds
	}
	return d.MaxRounds
}

func denied(d *PolicyDecision, err error) error {
	if err != nil {
		return &Error{Code: CodePolicyDenied, Message: "policy evaluation failed", Reason: "policy_error"}
	}
	if d == nil || !d.Allow {
		e := &Error{Code: CodePolicyDenied, Message: "the policy does not allow this request"}
		if d != nil {
			if d.Message != "" {
				e.Message = d.Message
			}
			e.Reason = d.Rule
			if d.Code != "" {
				e.Reason = d.Code + " (" + d.Rule + ")"
			}
		}
		return e
	}
	return nil
}
