package observe

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// TraceGuard wraps a guard with a span per step ("guard ask", "guard
// resume", "guard once"); with tracing off it returns g itself.
func TraceGuard(g Guard, tel *telemetry.Telemetry) Guard {
	if !tel.Enabled() {
		return g
	}
	return &tracedGuard{g, tel}
}

type tracedGuard struct {
	g   Guard
	tel *telemetry.Telemetry
}

func (t *tracedGuard) Ask(ctx context.Context, req *host.Request, in []host.InputRequest, opts ...host.AskOption) (*host.InputRequiredResult, error) {
	ctx, s := StartGuardStep(ctx, t.tel, "guard ask")
	s.SetString("mrtr.target", req.Target)
	r, err := t.g.Ask(ctx, req, in, opts...)
	RecordPolicyVerdict(ctx, s, err)
	EndStep(s, err)
	return r, err
}

func (t *tracedGuard) Resume(ctx context.Context, req *host.Request) (*host.Outcome, error) {
	ctx, s := StartGuardStep(ctx, t.tel, "guard resume")
	s.SetString("mrtr.target", req.Target)
	o, err := t.g.Resume(ctx, req)
	RecordPolicyVerdict(ctx, s, err)
	if o != nil {
		s.SetString("mrtr.outcome", string(o.Status))
		s.SetInt("mrtr.round", o.Round)
	}
	if e, ok := host.AsError(err); ok && e.Reason != "" {
		s.SetString("mrtr.reason", e.Reason)
	}
	EndStep(s, err)
	return o, err
}

func (t *tracedGuard) Once(ctx context.Context, out *host.Outcome, effect func(context.Context) ([]byte, error)) ([]byte, bool, error) {
	return t.once(ctx, func(ctx context.Context) ([]byte, bool, error) { return t.g.Once(ctx, out, effect) })
}

func (t *tracedGuard) OnceTx(ctx context.Context, out *host.Outcome, run func(context.Context, ledger.Op) (ledger.Claim, error)) ([]byte, bool, error) {
	return t.once(ctx, func(ctx context.Context) ([]byte, bool, error) { return t.g.OnceTx(ctx, out, run) })
}

// once traces a Once or OnceTx as one "guard once" step.
func (t *tracedGuard) once(ctx context.Context, f func(context.Context) ([]byte, bool, error)) ([]byte, bool, error) {
	ctx, s := t.tel.StartStep(ctx, "guard once")
	r, replay, err := f(ctx)
	if err == nil {
		if replay {
			s.SetString("mrtr.once", "replay")
		} else {
			s.SetString("mrtr.once", "run")
		}
	}
	EndStep(s, err)
	return r, replay, err
}

// EndStep ends a step's span, recording a guard error, or any error that
// has an ErrorCode (an upstream's), by its stable code, never its text.
func EndStep(s telemetry.Span, err error) {
	var c interface{ ErrorCode() string }
	if e, ok := host.AsError(err); ok {
		s.Fail(e.Code)
		err = nil
	} else if errors.As(err, &c) {
		s.Fail(c.ErrorCode())
		err = nil
	}
	s.End(err)
}

// TracePolicy wraps a guard policy with a span per evaluation ("policy
// ask", "policy resume"); with tracing off it returns p itself. The span
// does not judge the policy's answer: the core reads it (the guard step
// around it records the verdict, RecordPolicyVerdict).
func TracePolicy(p host.Policy, tel *telemetry.Telemetry) host.Policy {
	if !tel.Enabled() || p == nil {
		return p
	}
	return &tracedPolicy{p, tel}
}

type tracedPolicy struct {
	p   host.Policy
	tel *telemetry.Telemetry
}

func (tp *tracedPolicy) Ask(ctx context.Context, q *host.PolicyQuery) (*host.PolicyDecision, error) {
	consulted(ctx)
	ctx, s := tp.tel.StartStep(ctx, "policy ask")
	d, err := tp.p.Ask(ctx, q)
	EndStep(s, err)
	return d, err
}

func (tp *tracedPolicy) Resume(ctx context.Context, q *host.PolicyQuery) (*host.PolicyDecision, error) {
	consulted(ctx)
	ctx, s := tp.tel.StartStep(ctx, "policy resume")
	d, err := tp.p.Resume(ctx, q)
	EndStep(s, err)
	return d, err
}

type consultedKey struct{}

// StartGuardStep starts the span of a guard step ("guard ask", "guard
// resume") that may consult a traced policy; end it with
// RecordPolicyVerdict, then End.
func StartGuardStep(ctx context.Context, tel *telemetry.Telemetry, name string) (context.Context, telemetry.Span) {
	ctx, s := tel.StartStep(ctx, name)
	if !tel.Enabled() {
		return ctx, s
	}
	return context.WithValue(ctx, consultedKey{}, new(atomic.Bool)), s
}

// consulted notes on the guard step's context that a policy was asked.
func consulted(ctx context.Context) {
	if c, _ := ctx.Value(consultedKey{}).(*atomic.Bool); c != nil {
		c.Store(true)
	}
}

// RecordPolicyVerdict sets mrtr.policy.decision on a guard step's span
// from the core's own reading of the policy's answer: "deny" (with
// mrtr.policy.denial, the first denial's code) when the core refused the
// step with mrtr.policy.denied, "allow" when a policy was consulted and
// the core did not refuse on it. Judging the answer here as well was a
// second copy of the core's rule, and it had drifted: an answer with
// allow and a code was traced "allow" while the core refused it.
func RecordPolicyVerdict(ctx context.Context, s telemetry.Span, err error) {
	if e, ok := host.AsError(err); ok && e.Code == host.CodePolicyDenied {
		s.SetString("mrtr.policy.decision", "deny")
		code := e.Reason
		if first, _, ok := e.PolicyDenials(); ok {
			code = first.Code
		}
		if code != "" {
			s.SetString("mrtr.policy.denial", code)
		}
		return
	}
	if c, _ := ctx.Value(consultedKey{}).(*atomic.Bool); c != nil && c.Load() {
		s.SetString("mrtr.policy.decision", "allow")
	}
}

// ServerSpans is the SDK middleware that starts a server span per MCP
// request (not per notification), parented by the caller's traceparent
// (the HTTP header, or _meta on stdio).
func ServerSpans(tel *telemetry.Telemetry) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			var meta map[string]any
			var target string
			if p := req.GetParams(); p != nil {
				if v := reflect.ValueOf(p); v.Kind() != reflect.Pointer || !v.IsNil() {
					meta = p.GetMeta()
					switch p := p.(type) {
					case *mcp.CallToolParamsRaw:
						target = p.Name
					case *mcp.CallToolParams:
						target = p.Name
					case *mcp.GetPromptParams:
						target = p.Name
					case *mcp.ReadResourceParams:
						target = p.URI
					}
				}
			}
			var h map[string][]string
			if ex := req.GetExtra(); ex != nil {
				h = ex.Header
			}
			tp, _ := meta["traceparent"].(string)
			ts, _ := meta["tracestate"].(string)
			ctx, span := tel.StartServer(ctx, method, target, h, tp, ts)
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				span.Fail("tool_error")
			}
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				span.SetInt("rpc.jsonrpc.error_code", int(je.Code))
			}
			EndStep(span, err)
			return res, err
		}
	}
}
