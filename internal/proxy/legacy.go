package proxy

// Legacy clients (2025-11-25, 2025-06-18) on the proxy: they get a session
// from the SDK's stateful handler, whose tools, prompts, resources and
// resource templates mirror the upstream's (and its instructions, and
// completion when the upstream declared it). Each request goes through the proxy's own guarded
// path (Handle) as a 2026-07-28 request built from the session; a request
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
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/legacy"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

// legacyFront is the SDK server legacy sessions talk to.
type legacyFront struct {
	srv *mcp.Server
	mu  sync.Mutex
	// what is mirrored now, by name (URI, URI template): its definition as
	// the upstream listed it, so that an unchanged item is not re-added
	// (each change notifies every session)
	tools, prompts, resources, templates map[string]string
	fresh                                time.Time
	discovered                           atomic.Pointer[upstreamInfo] // a 2026-07-28 HTTP upstream's server/discover
	callSeq                              atomic.Int64
	levels                               sync.Map // *mcp.ServerSession -> mcp.LoggingLevel, from logging/setLevel
}

func (p *Proxy) newLegacyFront() *legacyFront {
	f := &legacyFront{tools: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}, templates: map[string]string{}}
	opts := &mcp.ServerOptions{SupportedProtocolVersions: legacy.ProtocolVersions}
	// Offered when the upstream may have it; initialize withdraws it when
	// the upstream turns out not to (legacyMiddleware).
	if p.upstreamMayHave("completions") {
		opts.CompletionHandler = func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var res *mcp.CompleteResult
			err := p.forwardPlain(ctx, req.Session, req.Extra, "completion/complete", "", req.Params, &res)
			return res, err
		}
	}
	f.srv = mcp.NewServer(&mcp.Implementation{Name: "mrtr-wasm-proxy", Version: "dev"}, opts)
	f.srv.AddReceivingMiddleware(p.legacyMiddleware)
	return f
}

// upstreamInfo is what the upstream declared (capabilities, instructions)
// when the proxy knows it at start: what a stdio child or a legacy HTTP
// upstream answered. An HTTP upstream of 2026-07-28 is not asked here.
type upstreamInfo struct {
	Capabilities map[string]json.RawMessage `json:"capabilities"`
	Instructions string                     `json:"instructions"`
}

func (p *Proxy) upstreamCaps() (*upstreamInfo, bool) {
	d, ok := p.cfg.Upstream.(interface {
		Discovery() (json.RawMessage, bool)
	})
	if !ok {
		return nil, false
	}
	raw, _ := d.Discovery()
	var r upstreamInfo
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return nil, false
	}
	return &r, true
}

// upstreamInfoNow is upstreamCaps, or else the upstream's server/discover
// (asked once it answers; nil while it does not).
func (p *Proxy) upstreamInfoNow(ctx context.Context) *upstreamInfo {
	if info, known := p.upstreamCaps(); known {
		return info
	}
	if info := p.legacy.discovered.Load(); info != nil {
		return info
	}
	msg := []byte(`{"jsonrpc":"2.0","id":"mrtr-proxy-legacy-discover","method":"server/discover","params":{"_meta":{"` +
		mcphttp.MetaProtocolVersion + `":"` + mcphttp.ProtocolVersion + `","` + mcphttp.MetaClientCapabilities + `":{}}}}`)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := p.cfg.Upstream.Call(cctx, msg, http.Header{"Mcp-Method": {"server/discover"}, "Mcp-Protocol-Version": {mcphttp.ProtocolVersion}}, nil)
	var r struct {
		Result *upstreamInfo `json:"result"`
	}
	if err != nil || json.Unmarshal(resp, &r) != nil || r.Result == nil {
		return nil
	}
	p.legacy.discovered.Store(r.Result)
	return r.Result
}

// upstreamHas: the upstream is known to have declared the capability.
func (p *Proxy) upstreamHas(capability string) bool {
	info, _ := p.upstreamCaps()
	if info == nil {
		return false
	}
	_, has := info.Capabilities[capability]
	return has
}

// upstreamMayHave: false only when the upstream's capabilities are known
// at start and lack it (saves a call that would fail).
func (p *Proxy) upstreamMayHave(capability string) bool {
	_, known := p.upstreamCaps()
	return !known || p.upstreamHas(capability)
}

// legacyMiddleware answers initialize with the upstream's instructions
// and without completion when the upstream has none, reads every
// resources/read from the upstream (the upstream, not the mirror, says
// which URIs exist), mirrors the upstream again before a list when the
// mirror is older than the tools TTL, and notes the level a session sets
// with logging/setLevel, which its requests then carry.
func (p *Proxy) legacyMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			ir, ok := res.(*mcp.InitializeResult)
			if err != nil || !ok || ir == nil {
				return res, err
			}
			if info := p.upstreamInfoNow(ctx); info != nil {
				ir.Instructions = info.Instructions
				if _, has := info.Capabilities["completions"]; !has && ir.Capabilities != nil {
					ir.Capabilities.Completions = nil
				}
			}
			return ir, nil
		case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			p.refreshLegacy(ctx)
		case "resources/read":
			if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil {
				return p.legacyResource(ctx, r)
			}
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

// refreshLegacy mirrors the upstream's tools, prompts, resources and
// resource templates (at most once per tools TTL).
func (p *Proxy) refreshLegacy(ctx context.Context) {
	f := p.legacy
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.fresh) < p.tools.ttl {
		return
	}
	ok := true
	mirror := func(method, field, key string, have *map[string]string, add func(raw json.RawMessage) bool, remove func(...string)) {
		items, err := p.listAll(ctx, method, field)
		if err != nil {
			if je, isRPC := err.(*jsonrpc.Error); isRPC && je.Code == jsonrpc.CodeMethodNotFound {
				items = nil // the upstream has none of these
			} else {
				p.log.Warn("legacy session: the upstream's list could not be read", "method", method, "error", errText(err))
				ok = false
				return
			}
		}
		now := make(map[string]string, len(items))
		for _, raw := range items {
			var id map[string]json.RawMessage
			var name string
			if json.Unmarshal(raw, &id) != nil || json.Unmarshal(id[key], &name) != nil || name == "" {
				continue
			}
			if old, seen := (*have)[name]; seen && old == string(raw) {
				now[name] = old
				continue
			}
			if add(raw) {
				now[name] = string(raw)
			}
		}
		var gone []string
		for name := range *have {
			if _, still := now[name]; !still {
				gone = append(gone, name)
			}
		}
		if len(gone) > 0 {
			remove(gone...)
		}
		*have = now
	}
	mirror("tools/list", "tools", "name", &f.tools, func(raw json.RawMessage) bool {
		var t mcp.Tool
		return json.Unmarshal(raw, &t) == nil && p.safeAdd("tool", t.Name, func() { f.srv.AddTool(&t, p.legacyTool(t.Name)) })
	}, f.srv.RemoveTools)
	if p.upstreamMayHave("prompts") {
		mirror("prompts/list", "prompts", "name", &f.prompts, func(raw json.RawMessage) bool {
			var pr mcp.Prompt
			return json.Unmarshal(raw, &pr) == nil && p.safeAdd("prompt", pr.Name, func() { f.srv.AddPrompt(&pr, p.legacyPrompt) })
		}, f.srv.RemovePrompts)
	}
	if p.upstreamMayHave("resources") {
		read := func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return p.legacyResource(ctx, r) // not reached: legacyMiddleware reads first
		}
		mirror("resources/list", "resources", "uri", &f.resources, func(raw json.RawMessage) bool {
			var r mcp.Resource
			return json.Unmarshal(raw, &r) == nil && p.safeAdd("resource", r.URI, func() { f.srv.AddResource(&r, read) })
		}, f.srv.RemoveResources)
		mirror("resources/templates/list", "resourceTemplates", "uriTemplate", &f.templates, func(raw json.RawMessage) bool {
			var t mcp.ResourceTemplate
			return json.Unmarshal(raw, &t) == nil && p.safeAdd("resource template", t.URITemplate, func() { f.srv.AddResourceTemplate(&t, read) })
		}, f.srv.RemoveResourceTemplates)
	}
	if ok {
		f.fresh = time.Now()
	}
}

// safeAdd adds an item the upstream defined; the SDK panics on some it
// cannot serve (a tool without an object schema, a bad URI template), and
// those are left out.
func (p *Proxy) safeAdd(what, name string, add func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Warn("legacy session: an upstream "+what+" cannot be offered to legacy clients", "name", name)
			ok = false
		}
	}()
	add()
	return true
}

// listAll reads every page (at most 20) of one of the upstream's lists and
// returns its items as the upstream wrote them. An error answer is
// returned as a *jsonrpc.Error.
func (p *Proxy) listAll(ctx context.Context, method, field string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	h := http.Header{"Mcp-Method": {method}, "Mcp-Protocol-Version": {mcphttp.ProtocolVersion}}
	cursor := ""
	for page := 0; page < 20; page++ {
		params := map[string]any{"_meta": map[string]any{mcphttp.MetaProtocolVersion: mcphttp.ProtocolVersion, mcphttp.MetaClientCapabilities: map[string]any{}}}
		if cursor != "" {
			params["cursor"] = cursor
		}
		pb, _ := json.Marshal(params)
		mb, _ := json.Marshal(method)
		msg := `{"jsonrpc":"2.0","id":"mrtr-proxy-legacy-list-` + strconv.Itoa(page) + `","method":` + string(mb) + `,"params":` + string(pb) + `}`
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := p.cfg.Upstream.Call(cctx, []byte(msg), h, nil)
		cancel()
		if err != nil {
			return nil, err
		}
		var r struct {
			Result map[string]json.RawMessage `json:"result"`
			Error  *jsonrpc.Error             `json:"error"`
		}
		if err := json.Unmarshal(resp, &r); err != nil {
			return nil, err
		}
		if r.Error != nil {
			return nil, r.Error
		}
		var items []json.RawMessage
		if raw, ok := r.Result[field]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, err
			}
		}
		out = append(out, items...)
		var next string
		_ = json.Unmarshal(r.Result["nextCursor"], &next)
		if next == "" {
			break
		}
		cursor = next
	}
	return out, nil
}

// legacyTool forwards a legacy session's tools/call through the guarded
// path, answering its input rounds on the session.
func (p *Proxy) legacyTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return forwardAsking[*mcp.CallToolResult](ctx, p, req.Session, req.Extra, "tools/call", name, req.Params)
	}
}

// legacyPrompt forwards prompts/get as legacyTool does tools/call.
func (p *Proxy) legacyPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return forwardAsking[*mcp.GetPromptResult](ctx, p, req.Session, req.Extra, "prompts/get", req.Params.Name, req.Params)
}

// legacyResource forwards resources/read as legacyTool does tools/call.
func (p *Proxy) legacyResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return forwardAsking[*mcp.ReadResourceResult](ctx, p, req.Session, req.Extra, "resources/read", req.Params.URI, req.Params)
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
	return legacy.RunOf(ctx, ss, p.log, observe, target, func(ctx context.Context, responses json.RawMessage, state string) (R, error) {
		var res R
		raw, err := p.forwardLegacy(ctx, ss, extra, method, target, fields, token, caps, responses, state)
		if err != nil {
			return res, err
		}
		if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &res) != nil {
			return res, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the upstream's result cannot be carried to this client"}
		}
		return res, nil
	})
}

// forwardPlain forwards a request that cannot ask (completion/complete)
// and decodes its result into out.
func (p *Proxy) forwardPlain(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra, method, target string, params mcp.Params, out any) error {
	fields, token, err := legacyFields(method, params)
	if err != nil {
		return err
	}
	raw, err := p.forwardLegacy(ctx, ss, extra, method, target, fields, token, legacy.Capabilities(ss.InitializeParams()), nil, "")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the upstream's result cannot be carried to this client"}
	}
	return nil
}

// legacyFields are a session request's params as the upstream gets them:
// every field the client sent, except _meta (rebuilt by forwardLegacy) and
// the retry fields (the proxy's own); and the client's progress token.
func legacyFields(method string, params mcp.Params) (map[string]json.RawMessage, any, error) {
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
	principal := server.Anonymous
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		principal = extra.TokenInfo.UserID
	}
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
	h := http.Header{"Mcp-Method": {encodeHeader(method)}, "Mcp-Protocol-Version": {mcphttp.ProtocolVersion}}
	if target != "" {
		h.Set("Mcp-Name", encodeHeader(target))
	}
	s := &sessionSink{ctx: ctx, ss: ss, token: token, p: p}
	p.Handle(ctx, m, body, p.upstreamHeaders(h, principal), principal, s)
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
