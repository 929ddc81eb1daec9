package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/audit"
	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/observe"
	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// canAsk reports whether a method may return input_required.
func canAsk(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// Handle serves one client request (m, as the bytes body) for principal:
// everything goes to the upstream as is, except an input round. h are the
// headers for the upstream.
func (p *Proxy) Handle(ctx context.Context, m *mcphttp.Message, body []byte, h http.Header, principal string, s Sink) {
	ctx = upstream.WithPrincipal(ctx, principal)
	if p.cfg.Telemetry.Enabled() {
		var span telemetry.Span
		ctx, span = p.cfg.Telemetry.StartServer(ctx, m.Method, m.Target(), h, metaString(m, "traceparent"), metaString(m, "tracestate"))
		w := wireOf(ctx)
		span.SetRequest(string(m.ID), w.protocolVersion, w.sessionID, w.transport)
		s = &tracedSink{s, span}
	}
	if strings.HasPrefix(m.Method, "tasks/") {
		// A task asks with tasks/get and takes the answers with
		// tasks/update: around the guard. server/discover does not offer
		// the extension; a client that uses it anyway is refused here.
		p.up.refused.WithLabelValues("tasks").Inc()
		p.log.Info("refused a tasks request: the proxy does not carry the tasks extension", "method", m.Method)
		s.Final(mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: "mrtr-wasm proxy does not carry the tasks extension (" + m.Method + "): a task's input rounds would go around the guard; call the tool without a task"}))
		return
	}
	if canAsk(m.Method) {
		ctx = p.withTargetLabel(ctx, m, h, principal)
	}
	if canAsk(m.Method) && m.IsRetry() {
		p.resume(ctx, m, body, h, principal, s)
		return
	}
	if canAsk(m.Method) && m.AnswersRound() {
		// Answers without a state: never to the upstream unchecked.
		p.answerAhead(ctx, m, body, h, principal, s)
		return
	}
	if m.Method == "server/discover" {
		s.Final(p.discover(ctx, m, h, principal))
		return
	}
	if canAsk(m.Method) && p.legacyUpstream() {
		s.Final(p.legacyAnswer(ctx, m, body, principal, body, h, s))
		return
	}
	cctx := ctx
	if m.Method == "subscriptions/listen" {
		// Open as long as the client wants: --upstream-timeout bounds
		// only its start.
		cctx = upstream.AsStream(ctx)
	}
	resp, err := p.call(cctx, body, h, s)
	if err != nil {
		s.Final(p.upstreamError(m, err))
		return
	}
	if !isInputRequired(resp) {
		s.Final(resp)
		return
	}
	if !canAsk(m.Method) {
		p.up.refused.WithLabelValues("invalid_result").Inc()
		p.log.Warn("upstream answered input_required to a method that cannot ask", "method", m.Method)
		s.Final(mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the upstream answered input_required to " + m.Method + ", which may not ask for input"}))
		return
	}
	s.Final(p.ask(ctx, m, body, principal, resp, nil))
}

// call sends one message upstream: messages that arrive before the
// response are relayed to the client (a server-to-client request is
// refused instead), and the response returned.
func (p *Proxy) call(ctx context.Context, msg []byte, h http.Header, s Sink) ([]byte, error) {
	start := time.Now()
	resp, err := p.cfg.Upstream.Call(upstream.WithStreamStart(ctx, s.Start), msg, h, func(raw []byte) error {
		if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
			// A batch (no part of 2026-07-28) could carry a request to the
			// client past the check below: dropped, never relayed.
			p.up.refused.WithLabelValues("not_object").Inc()
			p.log.Warn("dropped a message on the upstream's stream that is not a JSON object")
			return nil
		}
		if isServerRequest(raw) {
			p.refuseServerRequest(ctx, raw, h)
			return nil
		}
		return s.Notify(raw)
	})
	p.up.seconds.Observe(time.Since(start).Seconds())
	result := "ok"
	if e, ok := upstream.AsError(err); ok {
		result = e.Code
	} else if err != nil {
		result = "error"
	}
	p.up.calls.WithLabelValues(result).Inc()
	return resp, err
}

// refuseServerRequest answers an upstream's server-to-client request with
// an error that steers its author to input_required, and logs it.
func (p *Proxy) refuseServerRequest(ctx context.Context, raw []byte, h http.Header) {
	var r struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(raw, &r)
	p.up.refused.WithLabelValues("server_request").Inc()
	p.log.Warn("refused a server-to-client request from the upstream: 2026-07-28 servers ask with input_required", "method", r.Method)
	reply := mcphttp.ErrorResponse(r.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: "mrtr-wasm proxy: server-to-client requests (" + r.Method + ") are not allowed on a 2026-07-28 stream; return an InputRequiredResult (resultType \"input_required\") instead"})
	rh := http.Header{"Mcp-Protocol-Version": h["Mcp-Protocol-Version"]}
	if err := p.cfg.Upstream.Send(context.WithoutCancel(ctx), reply, rh); err != nil {
		p.log.Debug("the refusal did not reach the upstream", "error", errText(err))
	}
}

// upstreamError is the client's answer to a failed upstream call.
func (p *Proxy) upstreamError(m *mcphttp.Message, err error) []byte {
	e, ok := upstream.AsError(err)
	if !ok {
		e = upstream.Errorf(upstream.CodeUnavailable, "the upstream failed", err)
	}
	if secs := e.RetryAfterSeconds(); secs > 0 {
		// No room for this principal at the upstream (every stdio child
		// busy): the client retries after secs.
		p.up.busy.WithLabelValues("children").Inc()
		p.log.Info("upstream busy", "method", m.Method, "code", e.Code, "retry_after_s", secs)
		return mcphttp.ErrorResponse(m.ID, busyError(e.Message, secs))
	}
	p.log.Warn("upstream call failed", "method", m.Method, "target", m.Target(), "code", e.Code, "error", errText(e))
	return mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: upstream.JSONRPCCode, Message: e.Message + " (" + e.Code + "; retry)", Data: e.Data()})
}

// lostAnswer answers a forwarded round whose upstream answer was lost
// after the request may have been sent. It is not retryable with the same
// state: the user starts the call again.
func (p *Proxy) lostAnswer(m *mcphttp.Message, err error) []byte {
	e, ok := upstream.AsError(err)
	if !ok {
		e = upstream.Errorf(upstream.CodeUnavailable, "the upstream failed", err)
	}
	p.log.Warn("forwarded round lost its answer; recorded, not sent again", "target", m.Target(), "code", e.Code, "error", errText(e))
	data, _ := json.Marshal(struct {
		Code      string `json:"code"`
		Retryable bool   `json:"retryable"`
	}{e.Code, false})
	return mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: upstream.JSONRPCCode, Data: data,
		Message: e.Message + " (" + e.Code + ") after the answers were sent: they may have taken effect, so the proxy will not send them again; call the tool again to start over"})
}

func (p *Proxy) upstreamCall(ctx context.Context, m *mcphttp.Message, body []byte, principal string) *host.UpstreamCall {
	c := &host.UpstreamCall{Principal: principal, Upstream: p.upID, Request: body, Method: m.Method, Target: m.Target()}
	// The token's scopes and chosen claims, for the policy (as serve).
	if id := identity.FromTokenInfo(auth.TokenInfoFromContext(ctx)); id != nil {
		c.Scopes = id.Scopes
		if len(id.Claims) > 0 {
			c.Claims, _ = json.Marshal(id.Claims)
		}
	}
	return c
}

// ask seals the upstream's InputRequiredResult resp and returns the
// client's answer: the sealed result, or why it was refused.
func (p *Proxy) ask(ctx context.Context, m *mcphttp.Message, body []byte, principal string, resp []byte, after *host.UpstreamOutcome) []byte {
	round, refused := p.sealRound(ctx, m, body, principal, resp, after)
	if refused != nil {
		return refused
	}
	return rpcResult(m.ID, round.Result)
}

// sealRound is ask's guard step: the sealed round, or the client's answer
// that refuses it.
func (p *Proxy) sealRound(ctx context.Context, m *mcphttp.Message, body []byte, principal string, resp []byte, after *host.UpstreamOutcome) (*host.UpstreamRound, []byte) {
	t := time.Now()
	sctx, span := observe.StartGuardStep(ctx, p.cfg.Telemetry, "guard ask")
	round, err := p.cfg.Guard.UpstreamAsk(sctx, p.upstreamCall(ctx, m, body, principal), resp, after)
	observe.RecordPolicyVerdict(sctx, span, err)
	observe.EndStep(span, err)
	p.metrics.GuardTime.WithLabelValues("ask").Observe(time.Since(t).Seconds())
	if err != nil {
		p.audit(audit.Refusal(p.auditRecord("form.refused", m, body, principal), err))
		return nil, p.refusedAsk(m, err)
	}
	r := p.auditRecord("form.asked", m, body, principal)
	r.Round, r.OperationID, r.Fields = round.Round, round.OperationID, audit.FieldsOfJSON(round.Result)
	p.audit(r)
	p.metrics.Asks.WithLabelValues(targetLabel(ctx)).Inc()
	p.up.rounds.WithLabelValues("sealed").Inc()
	return round, nil
}

// refusedAsk answers an upstream round the guard or the policy refused.
// A refused form never reaches the user: a tool gets a tool error naming
// the field and the rule, for the server's author.
func (p *Proxy) refusedAsk(m *mcphttp.Message, err error) []byte {
	e, ok := host.AsError(err)
	if !ok {
		return mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"})
	}
	switch {
	case e.Code == host.CodeCapabilityMissing:
		p.up.refused.WithLabelValues("capability").Inc()
		p.log.Info("upstream asked for a kind the client did not declare", "target", m.Target(), "code", e.Code)
		return mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: int64(e.JSONRPCCode()), Message: e.Message, Data: e.Data})
	case e.Code == host.CodeRoundsExceeded || e.Code == "mrtr.upstream.invalid_result" || e.JSONRPCCode() == -32603:
		if e.Code == "mrtr.upstream.invalid_result" {
			p.up.refused.WithLabelValues("invalid_result").Inc()
		}
		p.log.Warn("upstream round refused", "target", m.Target(), "code", e.Code)
		return mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: int64(e.JSONRPCCode()), Message: e.Message, Data: e.Data})
	}
	// A lint error or a policy denial: the form is the server's bug.
	field, rule, code, why := "", "", e.Code, e.Message
	if first, all, ok := e.PolicyDenials(); ok {
		d := first
		for _, x := range all {
			if x.Key != "" {
				d = x
				break
			}
		}
		field, rule, code, why = d.Key, d.Rule, d.Code, d.Message
		if d.Field != "" {
			field += "." + d.Field
		}
	} else if fs := e.Findings(); len(fs) > 0 {
		field, code, why, rule = fs[0].Key, fs[0].Code, fs[0].Message, "guard core"
		if fs[0].Field != "" {
			field += "." + fs[0].Field
		}
	}
	p.up.refused.WithLabelValues("form").Inc()
	p.log.Warn("refused an upstream form", "target", m.Target(), "field", field, "code", code, "rule", rule)
	msg := "mrtr-wasm proxy refused what this server asked for: field " + field + " (" + code
	if rule != "" {
		msg += ", rule " + rule
	}
	msg += "): " + why + ". Server author: ask for secrets and data like this in URL mode (elicitation mode \"url\"), never in a form."
	if m.Method != "tools/call" {
		return mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg})
	}
	text, _ := json.Marshal(msg)
	return rpcResult(m.ID, json.RawMessage(`{"content":[{"type":"text","text":`+string(text)+`}],"isError":true}`))
}

// resume checks a retry of a sealed round: the guard asks again itself,
// or the round is forwarded once with the upstream's state put back.
func (p *Proxy) resume(ctx context.Context, m *mcphttp.Message, body []byte, h http.Header, principal string, s Sink) {
	t := time.Now()
	sctx, span := observe.StartGuardStep(ctx, p.cfg.Telemetry, "guard resume")
	out, err := p.cfg.Guard.UpstreamResume(sctx, p.upstreamCall(ctx, m, body, principal))
	if out != nil {
		span.SetString("mrtr.outcome", string(out.Status))
	}
	observe.RecordPolicyVerdict(sctx, span, err)
	observe.EndStep(span, err)
	p.metrics.GuardTime.WithLabelValues("resume").Observe(time.Since(t).Seconds())
	ar := p.auditRecord("form.answered", m, body, principal)
	if err != nil {
		p.audit(audit.Refusal(ar, err))
	} else {
		ar.Outcome, ar.Round, ar.OperationID, ar.AnswersDigest = audit.Outcome(out.Status), out.Round, out.OperationID, out.AnswersDigest
		if out.Status == host.InputRequired {
			ar.Fields = audit.FieldsOfJSON(out.InputRequired)
		}
		p.audit(ar)
	}
	if err != nil {
		e, ok := host.AsError(err)
		if !ok {
			s.Final(mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}))
			return
		}
		if e.Code == host.CodeStateInvalid {
			reason := e.Reason
			if reason == "" {
				reason = "unknown"
			}
			p.metrics.Rejected.WithLabelValues(labelValue(reason)).Inc()
		}
		p.up.rounds.WithLabelValues("rejected").Inc()
		p.metrics.Outcomes.WithLabelValues(targetLabel(ctx), "rejected").Inc()
		p.log.Info("retry refused", "target", m.Target(), "code", e.Code, "reason", e.Reason)
		if roundOver(e.Code) {
			p.endRoundOf(m, principal)
		}
		s.Final(mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: int64(e.JSONRPCCode()), Message: e.Message, Data: e.Data}))
		return
	}
	p.noteDropped(m, out.Dropped)
	if out.Status == host.InputRequired {
		if key, lc, ok := p.roundOf(m.RequestState(), principal); ok {
			p.noteState(lc, key, stateOfResult(out.InputRequired)) // the same round, asked again
		}
		p.up.rounds.WithLabelValues("reasked").Inc()
		p.metrics.Outcomes.WithLabelValues(targetLabel(ctx), "input_required").Inc()
		s.Final(rpcResult(m.ID, out.InputRequired))
		return
	}
	p.metrics.Outcomes.WithLabelValues(targetLabel(ctx), labelValue(string(out.Status))).Inc()
	octx, ospan := p.cfg.Telemetry.StartStep(ctx, "guard once")
	res, replay, err := p.cfg.Guard.OnceForward(octx, out, func(ectx context.Context) ([]byte, error) {
		p.up.rounds.WithLabelValues("forwarded").Inc()
		if p.legacyUpstream() {
			if key, ok := pendingKeyOf(out.Forward); ok {
				return p.continueLegacy(ectx, m, body, principal, key, out, s)
			}
			// A 2025-era server's own input_required round: its answer
			// may hold server-to-client requests, and a further round is
			// read as awaitLegacy reads any.
			resp, jerr := p.runLegacy(ectx, m, body, principal, out.Forward, h, out, s)
			if jerr != nil {
				return nil, jerr // the claim is released: nothing was sent
			}
			return resp, nil
		}
		resp, err := p.call(ectx, out.Forward, h, s)
		if err != nil {
			if upstream.Unsent(err) {
				return nil, err // the claim is released: a retry may send it
			}
			// The round may have reached the upstream and taken effect:
			// the failure is its recorded result, and no replay sends it
			// again.
			return p.lostAnswer(m, err), nil
		}
		if isInputRequired(resp) {
			// The upstream asks again: a further round of the same
			// logical request, counted on.
			return p.ask(ectx, m, body, principal, resp, out), nil
		}
		return resp, nil
	})
	if err == nil && replay {
		ospan.SetString("mrtr.once", "replay")
	}
	observe.EndStep(ospan, err)
	p.auditForward(m, principal, out, replay, err)
	switch {
	case err == nil && replay:
		p.up.rounds.WithLabelValues("replayed").Inc()
		p.metrics.Effects.WithLabelValues(targetLabel(ctx), "replay").Inc()
		s.Final(withID(res, m.ID))
	case err == nil:
		p.metrics.Effects.WithLabelValues(targetLabel(ctx), "run").Inc()
		s.Final(res)
	case res != nil:
		// Forwarded, but the ledger did not record it: answer with it.
		p.log.Error("forwarded round not recorded in the ledger", "target", m.Target(), "error", err.Error())
		s.Final(res)
	default:
		p.metrics.Effects.WithLabelValues(targetLabel(ctx), "error").Inc()
		if _, ok := upstream.AsError(err); ok {
			s.Final(p.upstreamError(m, err))
			return
		}
		if je := (*jsonrpc.Error)(nil); errors.As(err, &je) { // errStartAgain, errPendingFull
			s.Final(mcphttp.ErrorResponse(m.ID, je))
			return
		}
		e, ok := host.AsError(err)
		if !ok {
			s.Final(mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}))
			return
		}
		s.Final(mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: int64(e.JSONRPCCode()), Message: e.Message, Data: e.Data}))
	}
}

// metaString reads a string from the request's _meta.
func metaString(m *mcphttp.Message, key string) string {
	var v string
	if raw, ok := m.Meta()[key]; ok {
		_ = json.Unmarshal(raw, &v)
	}
	return v
}

// tracedSink ends the request's server span with its answer: an error
// answer marks it failed with the JSON-RPC code.
type tracedSink struct {
	Sink
	span telemetry.Span
}

func (t *tracedSink) Final(raw []byte) {
	var r struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if json.Unmarshal(raw, &r) == nil {
		switch {
		case r.Error != nil:
			t.span.SetResponseError(int64(r.Error.Code))
		case r.Result != nil && r.Result.IsError:
			t.span.Fail("tool_error")
		}
	}
	t.span.End(nil)
	t.Sink.Final(raw)
}

// isInputRequired reports whether resp (a JSON-RPC response, valid JSON)
// is a result with resultType input_required to some client. A result that
// cannot hold the word, not even spelt with \u escapes, is not read. One
// that repeats a key, or spells "result" or "resultType" also in another
// case (a client decoding with encoding/json reads names in any case and
// keeps the last), counts as one: the guard then reads it, and seals it or
// refuses it, so that no spelling slips an unsealed round past the guard.
func isInputRequired(resp []byte) bool {
	if !rawjson.MayContain(resp, "input_required") {
		return false
	}
	ms, err := rawjson.Object(resp)
	if errors.Is(err, rawjson.ErrNotObject) {
		return false
	}
	if err != nil {
		return true // a repeated member: the guard reads it
	}
	res, found, ambiguous := exactMember(ms, "result")
	if ambiguous {
		return true
	}
	if !found {
		return false
	}
	rv := resp[res.Start:res.End]
	rms, err := rawjson.Object(rv)
	if errors.Is(err, rawjson.ErrNotObject) {
		return false
	}
	if err != nil {
		return true
	}
	rt, found, ambiguous := exactMember(rms, "resultType")
	if ambiguous {
		return true
	}
	if !found {
		return false
	}
	s, _ := rawjson.String(rv[rt.Start:rt.End])
	return s == "input_required"
}

// isServerRequest reports whether raw (valid JSON) is a request to some
// client: a method and an id. As above, a message that repeats a key or
// spells "id" or "method" also in another case counts as one (and is
// refused, never relayed).
func isServerRequest(raw []byte) bool {
	if !containsFoldASCII(raw, `"id"`) && !bytes.Contains(raw, []byte(`\u`)) {
		return false
	}
	ms, err := rawjson.Object(raw)
	if errors.Is(err, rawjson.ErrNotObject) {
		return false
	}
	if err != nil {
		return true // a repeated member: refused, never relayed
	}
	id, hasID, amb1 := exactMember(ms, "id")
	m, hasMethod, amb2 := exactMember(ms, "method")
	if amb1 || amb2 {
		return true
	}
	if !hasID || !hasMethod || string(raw[id.Start:id.End]) == "null" {
		return false
	}
	method, _ := rawjson.String(raw[m.Start:m.End])
	return method != ""
}

// exactMember finds the member name in ms. ambiguous: another member's
// name equals it in another case, which a client decoding with
// encoding/json may read instead.
func exactMember(ms []rawjson.Member, name string) (m rawjson.Member, found, ambiguous bool) {
	for _, x := range ms {
		switch k := string(x.Key); {
		case k == name:
			m, found = x, true
		case strings.EqualFold(k, name):
			ambiguous = true
		}
	}
	return m, found, ambiguous
}

// containsFoldASCII reports whether b holds word (ASCII, lower case) in
// any ASCII case.
func containsFoldASCII(b []byte, word string) bool {
	for i := 0; i+len(word) <= len(b); i++ {
		j := 0
		for ; j < len(word); j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != word[j] {
				break
			}
		}
		if j == len(word) {
			return true
		}
	}
	return false
}

// audit appends r to the audit log, if there is one.
func (p *Proxy) audit(r audit.Record) {
	if p.cfg.Audit == nil {
		return
	}
	if err := p.cfg.Audit.Append(r); err != nil {
		p.log.Error("audit record not written", "error", err.Error())
	}
}

// auditRecord is a record of kind about m; its arguments appear only as
// a digest.
func (p *Proxy) auditRecord(kind string, m *mcphttp.Message, body []byte, principal string) audit.Record {
	r := audit.Record{Kind: kind, Principal: principal, Method: m.Method, Target: m.Target()}
	if p.cfg.Audit != nil {
		r.ArgumentsDigest = audit.DigestOf(m.Arguments())
	}
	return r
}

// auditForward records what became of a checked round: forwarded to the
// upstream (executed), answered from the ledger (replayed), or not sent.
func (p *Proxy) auditForward(m *mcphttp.Message, principal string, out *host.UpstreamOutcome, replay bool, err error) {
	r := audit.Record{Kind: "executed", Principal: principal, Method: m.Method, Target: m.Target(),
		Round: out.Round, OperationID: out.OperationID, Outcome: audit.Outcome(out.Status), AnswersDigest: out.ForwardDigest}
	switch {
	case err != nil:
		r.Kind, r.Rule = "execution.refused", "error"
		if e, ok := host.AsError(err); ok {
			r.Rule = e.Code
		} else if e, ok := upstream.AsError(err); ok {
			r.Rule = e.Code
		}
	case replay:
		r.Kind = "replayed"
	}
	p.audit(r)
}

// wire is where a request came from, for its span: the MCP revision its
// client speaks, its session (a 2025-era client's) and the transport.
type wire struct{ protocolVersion, sessionID, transport string }

type wireKey struct{}

func withWire(ctx context.Context, w wire) context.Context {
	return context.WithValue(ctx, wireKey{}, w)
}

// wireOf is ctx's wire; by default a 2026-07-28 client over HTTP.
func wireOf(ctx context.Context) wire {
	if w, ok := ctx.Value(wireKey{}).(wire); ok {
		return w
	}
	return wire{protocolVersion: mcphttp.ProtocolVersion, transport: "tcp"}
}
