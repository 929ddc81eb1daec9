package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/policies"
)

// Engine is a loaded policy. It implements host.Policy; give it to the
// guard with host.WithPolicy. It is safe for concurrent use, and Reload
// swaps the whole policy at once: every request sees the old policy or
// the new one, never a mix.
type Engine struct {
	src      source
	cur      atomic.Pointer[compiled]
	reloadMu sync.Mutex
}

var _ host.Policy = (*Engine)(nil)

// Load reads the policy in dir: its .rego files (not the _test.rego
// ones) and a data file (see WithData and WithDataFile). A policy that
// does not parse or compile, or data that does not have the documented
// shape, fails here with the file and line: never at the first request.
func Load(ctx context.Context, dir string, opts ...Option) (*Engine, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, LoadErrors{{File: dir, Msg: "cannot read the policy directory: " + pathErr(err)}}
	}
	if !st.IsDir() {
		return nil, LoadErrors{{File: dir, Msg: "not a directory"}}
	}
	return LoadFS(ctx, os.DirFS(dir), dir, opts...)
}

// LoadFS is Load from a file system; name is how messages call it.
func LoadFS(ctx context.Context, fsys fs.FS, name string, opts ...Option) (*Engine, error) {
	e := &Engine{src: source{fsys: fsys, dir: name}}
	for _, o := range opts {
		o(&e.src)
	}
	c, err := e.src.load(ctx)
	if err != nil {
		return nil, err
	}
	e.cur.Store(c)
	return e, nil
}

// Default loads the shipped policies (package policies, embedded) with
// data/demo.json unless an option says otherwise.
func Default(ctx context.Context, opts ...Option) (*Engine, error) {
	return LoadFS(ctx, policies.FS, "policies", opts...)
}

// Reload reads the policy again and swaps it in whole. On any error the
// current policy stays and the error says why.
func (e *Engine) Reload(ctx context.Context) error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	c, err := e.src.load(ctx)
	if err != nil {
		return err
	}
	e.cur.Store(c)
	return nil
}

// Info describes the loaded policy.
type Info struct {
	Dir      string // the policy directory
	DataFile string // the data file in use
	Revision string // a digest of every file, for logs
}

// Info describes the policy in use now.
func (e *Engine) Info() Info {
	c := e.cur.Load()
	return Info{Dir: e.src.dir, DataFile: c.data.name, Revision: c.revision}
}

// Data returns the data in use now (do not modify it).
func (e *Engine) Data() *Data { return e.cur.Load().data.data }

// DataLine is the line of the data file where the value at the JSON
// pointer starts.
func (e *Engine) DataLine(pointer string) int { return e.cur.Load().data.ix.Line(pointer) }

// Decision is what the policy decided.
type Decision struct {
	Allow      bool     `json:"allow"`
	Deny       []Denial `json:"deny"`
	MaxRounds  int      `json:"max_rounds"`
	TTLSeconds int      `json:"ttl_seconds"`
	// Rules names the data rules that applied ("tools.NAME", "default").
	Rules []string `json:"rules"`
}

// Denial is one reason to refuse: the guard's type, so a decision needs
// no conversion (policies/README.md lists the codes).
type Denial = host.PolicyDenial

// CodeUndecided is the denial when the policy gives no usable decision.
const CodeUndecided = "policy.undecided"

// AskInput is the policy input of an ask (policies/README.md).
type AskInput struct {
	Principal  string                  `json:"principal"`
	Scopes     []string                `json:"scopes,omitempty"`
	Claims     map[string]any          `json:"claims,omitempty"`
	Method     string                  `json:"method"`
	Target     string                  `json:"target"`
	TTLSeconds int                     `json:"ttl_seconds"`
	MaxRounds  int                     `json:"max_rounds"`
	Inputs     map[string]InputRequest `json:"inputs"`
}

// InputRequest is one input request as the policy sees it: the wire
// shape, {"method", "params"}.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Ask decides whether a tool may ask what it is about to ask.
func (e *Engine) Ask(ctx context.Context, q *host.PolicyQuery) (*host.PolicyDecision, error) {
	d, err := e.cur.Load().decide(ctx, 'a', q)
	if err != nil {
		return nil, err
	}
	return d.Host(), nil
}

// Resume decides the round limit and TTL of a retry.
func (e *Engine) Resume(ctx context.Context, q *host.PolicyQuery) (*host.PolicyDecision, error) {
	d, err := e.cur.Load().decide(ctx, 'r', q)
	if err != nil {
		return nil, err
	}
	return d.Host(), nil
}

// decide evaluates a guard query on one loaded policy, through its memo.
func (c *compiled) decide(ctx context.Context, entry byte, q *host.PolicyQuery) (*Decision, error) {
	// The exact query first (a hash, no JSON work, no guard call); then
	// the input the guard core builds (without messages and defaults, and
	// without the principal unless the policy reads it), shared by every
	// user of a form.
	q = c.visible(q)
	exact := memoKey(entry, q, c.principal)
	if d := c.memo.get(exact); d != nil {
		return d, nil
	}
	in, err := q.BuildInput(ctx, entry == 'a', c.principal)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write([]byte{entry})
	h.Write(in)
	var k [32]byte
	h.Sum(k[:0])
	if d := c.memo.get(k); d != nil {
		c.memo.put(exact, d)
		return d, nil
	}
	d, err := c.evalInput(ctx, entry, in, q)
	if err != nil {
		return nil, err
	}
	c.memo.put(k, d)
	c.memo.put(exact, d)
	return d, nil
}

// evalQuery evaluates a guard query without the memo: the core builds
// the input, OPA decides.
func (c *compiled) evalQuery(ctx context.Context, entry byte, q *host.PolicyQuery) (*Decision, error) {
	q = c.visible(q)
	in, err := q.BuildInput(ctx, entry == 'a', c.principal)
	if err != nil {
		return nil, err
	}
	return c.evalInput(ctx, entry, in, q)
}

func (c *compiled) evalInput(ctx context.Context, entry byte, in []byte, q *host.PolicyQuery) (*Decision, error) {
	v, err := ast.ValueFromReader(bytes.NewReader(in))
	if err != nil {
		return nil, &host.Error{Code: host.CodePolicyDenied, Message: "the policy input is not JSON", Reason: "policy_input"}
	}
	pq := c.resume
	if entry == 'a' {
		pq = c.ask
	}
	return c.eval(ctx, pq, v, q)
}

// Eval evaluates a raw policy input (JSON, shaped as policies/README.md
// says) at an entrypoint: AskEntrypoint or ResumeEntrypoint.
func (e *Engine) Eval(ctx context.Context, entrypoint string, input []byte) (*Decision, error) {
	c := e.cur.Load()
	v, err := ast.ValueFromReader(bytes.NewReader(input))
	if err != nil {
		return nil, fmt.Errorf("policy: the input is not JSON: %w", err)
	}
	switch entrypoint {
	case AskEntrypoint:
		return c.eval(ctx, c.ask, v, nil)
	case ResumeEntrypoint:
		return c.eval(ctx, c.resume, v, nil)
	}
	return nil, fmt.Errorf("policy: unknown entrypoint %q (want %s or %s)", entrypoint, AskEntrypoint, ResumeEntrypoint)
}

// eval evaluates the policy and has the guard core read its decision
// document (host.PolicyQuery.ReadDecision; q's guard, or the core
// compiled in when nil): the rule every host shares.
func (c *compiled) eval(ctx context.Context, pq rego.PreparedEvalQuery, in ast.Value, q *host.PolicyQuery) (*Decision, error) {
	rs, err := pq.Eval(ctx, rego.EvalParsedInput(in))
	if err != nil {
		return nil, err
	}
	var doc json.RawMessage
	if len(rs) == 1 && len(rs[0].Expressions) == 1 {
		if doc, err = json.Marshal(rs[0].Expressions[0].Value); err != nil {
			return nil, err
		}
	}
	raw, err := q.ReadDecision(ctx, doc)
	if err != nil {
		return nil, err
	}
	var d Decision
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("policy: the guard core's reading of the decision: %w", err)
	}
	return &d, nil
}

// Host turns the decision into the guard's.
func (d *Decision) Host() *host.PolicyDecision {
	hd := &host.PolicyDecision{
		Allow:     d.Allow,
		MaxRounds: d.MaxRounds,
		TTL:       time.Duration(d.TTLSeconds) * time.Second,
	}
	hd.Denials = append(hd.Denials, d.Deny...)
	if len(d.Deny) > 0 {
		hd.Code, hd.Rule, hd.Message = d.Deny[0].Code, d.Deny[0].Rule, d.Deny[0].Message
	}
	return hd
}
