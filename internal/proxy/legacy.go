package proxy

// Legacy clients (2025-11-25, 2025-06-18) on the proxy: they get a session
// from the SDK's stateful handler, which holds nothing of the upstream's:
// every request of the session is answered from the upstream as the
// session's principal sees it (legacyMiddleware). A request becomes a
// 2026-07-28 request through the proxy's own guarded path (Handle); one
// that may ask (tools/call, prompts/get, resources/read) has its input
// rounds fulfilled on the session (internal/legacy), so a legacy client
// meets the same checks, sealing, re-asks and ledger as a modern one.
// Progress and log messages the upstream sends before its answer are
// relayed to the session: progress under the client's own token, log
// messages at the level the client set with logging/setLevel (none until
// it sets one, as the SDK rules).

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/legacy"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// legacyFront is the SDK server legacy sessions talk to. It holds no
// tools, prompts or resources of its own, so what a session sees is its
// principal's (an upstream's private list is never shown to another
// principal).
type legacyFront struct {
	srv     *mcp.Server
	callSeq atomic.Int64
	levels  sync.Map // *mcp.ServerSession -> mcp.LoggingLevel, from logging/setLevel
}

func (p *Proxy) newLegacyFront() *legacyFront {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mrtr-wasm-proxy", Version: p.cfg.Version}, &mcp.ServerOptions{
		SupportedProtocolVersions: legacy.ProtocolVersions,
		// No listChanged: the lists are read from the upstream when asked.
		// What else a session is offered is the upstream's (initialize in
		// legacyMiddleware).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}},
	})
	srv.AddReceivingMiddleware(p.legacyMiddleware)
	return &legacyFront{srv: srv}
}

// legacyMiddleware answers a session's requests from the upstream, as the
// session's principal: tools/list from the proxy's cache of the upstream's
// list; the other lists and completion/complete forwarded as they come;
// tools/call, prompts/get and resources/read through the guarded path
// with their rounds answered on the session. initialize offers what the
// upstream declared, and logging/setLevel is noted for the session's
// requests to carry.
func (p *Proxy) legacyMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			principal, h := p.legacyPrincipal(r.Extra)
			e := p.toolList(ctx, h, principal)
			if e.err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the upstream's tools could not be listed (retry)"}
			}
			res := &mcp.ListToolsResult{Tools: make([]*mcp.Tool, 0, len(e.v.tools))}
			for _, raw := range e.v.tools {
				if t := new(mcp.Tool); json.Unmarshal(raw, t) == nil {
					res.Tools = append(res.Tools, t)
				}
			}
			return res, nil
		case *mcp.CallToolRequest:
			return result(forwardAsking[*mcp.CallToolResult](ctx, p, r.Session, r.Extra, "tools/call", r.Params.Name, r.Params))
		case *mcp.GetPromptRequest:
			return result(forwardAsking[*mcp.GetPromptResult](ctx, p, r.Session, r.Extra, "prompts/get", r.Params.Name, r.Params))
		case *mcp.ReadResourceRequest:
			return result(forwardAsking[*mcp.ReadResourceResult](ctx, p, r.Session, r.Extra, "resources/read", r.Params.URI, r.Params))
		case *mcp.ListPromptsRequest:
			return result(forwardPlain[*mcp.ListPromptsResult](ctx, p, r.Session, r.Extra, "prompts/list", r.Params))
		case *mcp.ListResourcesRequest:
			return result(forwardPlain[*mcp.ListResourcesResult](ctx, p, r.Session, r.Extra, "resources/list", r.Params))
		case *mcp.ListResourceTemplatesRequest:
			return result(forwardPlain[*mcp.ListResourceTemplatesResult](ctx, p, r.Session, r.Extra, "resources/templates/list", r.Params))
		case *mcp.CompleteRequest:
			return result(forwardPlain[*mcp.CompleteResult](ctx, p, r.Session, r.Extra, "completion/complete", r.Params))
		}
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			ir, ok := res.(*mcp.InitializeResult)
			if err != nil || !ok || ir == nil || ir.Capabilities == nil {
				return res, err
			}
			p.offerUpstream(ctx, req.GetExtra(), ir)
			return ir, nil
		case "logging/setLevel":
			res, err := next(ctx, method, req)
			ss, ok := req.GetSession().(*mcp.ServerSession)
			lp, okp := req.GetParams().(*mcp.SetLoggingLevelParams)
			if err == nil && ok && okp && lp != nil {
				if _, had := p.legacy.levels.Swap(ss, lp.Level); !had {
					go func() { _ = ss.Wait(); p.legacy.levels.Delete(ss) }()
				}
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// result is an SDK result or the error, never a typed nil in an interface.
func result[R mcp.Result](r R, err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// offerUpstream sets a session's initialize result to what the upstream
// says of itself, as the session's principal may see it (a 2025
// upstream's initialize result, or a 2026-07-28 upstream's
// server/discover, cached as that allows): its instructions, and the
// prompts, resources and completion capabilities when it declared them
// (never listChanged nor subscribe: the proxy relays neither).
func (p *Proxy) offerUpstream(ctx context.Context, extra *mcp.RequestExtra, ir *mcp.InitializeResult) {
	var self json.RawMessage
	if d, ok := p.cfg.Upstream.(discoverer); ok {
		if init, legacyUp := d.Discovery(); legacyUp {
			self = init
		}
	}
	if self == nil {
		principal, h := p.legacyPrincipal(extra)
		e := p.discovery.get(ctx, cacheKey(principal, h), func(ctx context.Context) (json.RawMessage, cacheHint, error) {
			return p.fetchDiscover(ctx, h, principal)
		})
		if e.err != nil {
			p.log.Warn("legacy session: the upstream's server/discover could not be read; only its tools are offered", "error", e.err.Error())
			return
		}
		self = e.v
	}
	var u struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
		Instructions string                     `json:"instructions"`
	}
	_ = json.Unmarshal(self, &u)
	ir.Instructions = u.Instructions
	if _, ok := u.Capabilities["prompts"]; ok {
		ir.Capabilities.Prompts = &mcp.PromptCapabilities{}
	}
	if _, ok := u.Capabilities["resources"]; ok {
		ir.Capabilities.Resources = &mcp.ResourceCapabilities{}
	}
	if _, ok := u.Capabilities["completions"]; ok {
		ir.Capabilities.Completions = &mcp.CompletionCapabilities{}
	}
}

// legacyPrincipal is who calls on a session, and the headers that go
// upstream for them.
func (p *Proxy) legacyPrincipal(extra *mcp.RequestExtra) (string, http.Header) {
	principal := identity.Anonymous
	in := http.Header{}
	if extra != nil {
		if extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
			principal = extra.TokenInfo.UserID
		}
		if extra.Header != nil {
			in = extra.Header
		}
	}
	return principal, p.upstreamHeaders(in, principal)
}

// forwardAsking runs a request that may ask for input (its params as the
// SDK decoded them) through the guarded path until it completes, each
// round fulfilled on the session.
func forwardAsking[R legacy.Result](ctx context.Context, p *Proxy, ss *mcp.ServerSession, extra *mcp.RequestExtra, method, target string, params mcp.Params) (R, error) {
	fields, token, err := legacyFields(method, params)
	if err != nil {
		var zero R
		return zero, err
	}
	caps := legacy.Capabilities(ss.InitializeParams())
	observe := func(result string) { p.metrics.LegacyRounds.WithLabelValues(result).Inc() }
	// A round the session's client never answered (it failed, went away,
	// or the session closed) still holds a 2025-era upstream's request:
	// it is answered cancel as the request ends.
	var last string
	defer func() {
		if last == "" {
			return
		}
		principal, _ := p.legacyPrincipal(extra)
		if key, _, ok := p.roundOf(last, principal); ok {
			p.endRound(key, `{"action":"cancel"}`, "abandoned", true)
		}
	}()
	return legacy.RunOf(ctx, ss, p.log, observe, target, func(ctx context.Context, responses json.RawMessage, state string) (R, error) {
		var res R
		raw, err := p.forwardLegacy(ctx, ss, extra, method, target, fields, token, caps, responses, state)
		last = stateOfResult(raw)
		if err != nil {
			return res, err
		}
		if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &res) != nil {
			return res, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the upstream's result cannot be carried to this client"}
		}
		return res, nil
	})
}

// forwardPlain forwards a request that cannot ask (the lists,
// completion/complete) with the client's params (its cursor included).
func forwardPlain[R mcp.Result](ctx context.Context, p *Proxy, ss *mcp.ServerSession, extra *mcp.RequestExtra, method string, params mcp.Params) (R, error) {
	var res R
	fields, token, err := legacyFields(method, params)
	if err != nil {
		return res, err
	}
	raw, err := p.forwardLegacy(ctx, ss, extra, method, "", fields, token, legacy.Capabilities(ss.InitializeParams()), nil, "")
	if err != nil {
		return res, err
	}
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &res) != nil {
		return res, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the upstream's result cannot be carried to this client"}
	}
	return res, nil
}

// legacyFields are a session request's params as the upstream gets them:
// every field the client sent, except _meta (rebuilt by forwardLegacy) and
// the retry fields (the proxy's own); and the client's progress token.
func legacyFields(method string, params mcp.Params) (map[string]json.RawMessage, any, error) {
	if params == nil || reflect.ValueOf(params).IsNil() { // a list asked without params
		return map[string]json.RawMessage{}, nil, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, nil, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, nil, err
	}
	var token any
	if rp, ok := params.(interface{ GetProgressToken() any }); ok {
		token = rp.GetProgressToken()
	}
	delete(fields, "_meta")
	delete(fields, "inputResponses")
	delete(fields, "requestState")
	if a, ok := fields["arguments"]; method == "tools/call" && (!ok || string(a) == "null") {
		fields["arguments"] = json.RawMessage("{}")
	}
	return fields, token, nil
}

// forwardLegacy runs one 2026-07-28 request built from a legacy session's
// request through Handle and returns its result, or its error as a
// *jsonrpc.Error.
func (p *Proxy) forwardLegacy(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra, method, target string, fields map[string]json.RawMessage, token any, caps, responses json.RawMessage, state string) (json.RawMessage, error) {
	principal, in := p.legacyPrincipal(extra)
	meta := map[string]any{mcphttp.MetaProtocolVersion: mcphttp.ProtocolVersion, mcphttp.MetaClientCapabilities: caps}
	if token != nil {
		meta["progressToken"] = token
	}
	if lv, ok := p.legacy.levels.Load(ss); ok {
		meta["io.modelcontextprotocol/logLevel"] = lv
	}
	params := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		params[k] = v
	}
	params["_meta"] = meta
	if len(responses) > 0 {
		params["inputResponses"], params["requestState"] = responses, state
	}
	pb, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	mb, _ := json.Marshal(method)
	body := []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(p.legacy.callSeq.Add(1), 10) + `,"method":` + string(mb) + `,"params":` + string(pb) + `}`)
	m, jerr := mcphttp.ParseMessage(body)
	if jerr != nil {
		return nil, jerr
	}
	h := fetchHeaders(in, method)
	if target != "" {
		h.Set("Mcp-Name", mcphttp.EncodeHeader(target))
	}
	if method == "tools/call" {
		// The Mcp-Param-* headers a 2026-07-28 client sends (an upstream
		// of that era checks them), checked as such a client's are.
		params := p.paramHeaders(ctx, in, principal, target)
		mcphttp.SetParamHeaders(h, m.Arguments(), params)
		check := h.Clone()
		check.Set("Mcp-Name", target)
		if jerr := mcphttp.CheckHeaders(check, m, params); jerr != nil {
			return nil, jerr
		}
	}
	s := &sessionSink{ctx: ctx, ss: ss, token: token, p: p}
	w := wire{sessionID: ss.ID(), transport: "tcp"}
	if ip := ss.InitializeParams(); ip != nil {
		w.protocolVersion = ip.ProtocolVersion
	}
	p.Handle(withWire(ctx, w), m, body, h, principal, s)
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(s.final, &r); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the proxy could not read the upstream's answer"}
	}
	if r.Error != nil {
		return nil, r.Error
	}
	return r.Result, nil
}

// sessionSink keeps the final answer and relays to the legacy session what
// the SDK lets a server send there during a request: progress (under the
// client's own token, only when the client gave one) and log messages (the
// SDK drops those below the level the client set, and all of them until
// it sets one). Other notifications (list changes, resource updates) are
// the upstream's session business and are not relayed.
type sessionSink struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	p     *Proxy
	final []byte
}

var (
	progressMark = []byte(`"notifications/progress"`)
	messageMark  = []byte(`"notifications/message"`)
)

func (*sessionSink) Start() {}

func (s *sessionSink) Notify(raw []byte) error {
	var n struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	switch {
	case s.ss == nil:
	case bytes.Contains(raw, progressMark) && s.token != nil:
		var pp mcp.ProgressNotificationParams
		if json.Unmarshal(raw, &n) != nil || n.Method != "notifications/progress" || json.Unmarshal(n.Params, &pp) != nil {
			return nil
		}
		if !sameToken(pp.ProgressToken, s.token) {
			return nil
		}
		pp.ProgressToken = s.token
		if err := s.ss.NotifyProgress(s.ctx, &pp); err != nil {
			s.p.log.Debug("legacy session: progress not relayed", "error", err.Error())
		}
	case bytes.Contains(raw, messageMark):
		var lm mcp.LoggingMessageParams
		if json.Unmarshal(raw, &n) != nil || n.Method != "notifications/message" || json.Unmarshal(n.Params, &lm) != nil {
			return nil
		}
		if err := s.ss.Log(s.ctx, &lm); err != nil {
			s.p.log.Debug("legacy session: log message not relayed", "error", err.Error())
		}
	}
	// A notification the client cannot get never ends the request.
	return nil
}

func (s *sessionSink) Final(raw []byte) { s.final = raw }

// sameToken compares progress tokens as JSON (a number may come back as
// another Go type than the client's).
func sameToken(a, b any) bool {
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}
