package proxy

// Legacy clients (2025-11-25, 2025-06-18) on the proxy: they get a session
// from the SDK's stateful handler, whose tools/list is the upstream's as
// the session's principal sees it. Each call goes through the proxy's own guarded path (Handle) as a 2026-07-28
// request built from the session, and its input rounds are fulfilled on
// the session (internal/legacy), so a legacy client meets the same checks,
// sealing, re-asks and ledger as a modern one.

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/legacy"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

// legacyFront is the SDK server legacy sessions talk to. It holds no
// tools of its own: a session's tools/list and tools/call are answered by
// legacyTools, so the list a session sees is its principal's (an
// upstream's private list is never shown to another principal).
type legacyFront struct {
	srv     *mcp.Server
	callSeq atomic.Int64
}

func (p *Proxy) newLegacyFront() *legacyFront {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mrtr-wasm-proxy", Version: p.cfg.Version}, &mcp.ServerOptions{
		SupportedProtocolVersions: legacy.ProtocolVersions,
		// No listChanged: the list is read from the upstream when asked.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}},
	})
	srv.AddReceivingMiddleware(p.legacyTools)
	return &legacyFront{srv: srv}
}

// legacyTools answers a session's tools/list with the upstream's tools as
// the session's principal sees them (cached as the upstream's cacheScope
// and ttlMs allow), and sends its tools/call through the guarded path,
// answering its input rounds on the session.
func (p *Proxy) legacyTools(next mcp.MethodHandler) mcp.MethodHandler {
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
			return p.legacyCall(ctx, r)
		}
		return next(ctx, method, req)
	}
}

// legacyPrincipal is who calls on a session, and the headers that go
// upstream for them.
func (p *Proxy) legacyPrincipal(extra *mcp.RequestExtra) (string, http.Header) {
	principal := server.Anonymous
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

// legacyCall forwards a legacy session's tools/call through the guarded
// path, answering its input rounds on the session.
func (p *Proxy) legacyCall(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	principal, _ := p.legacyPrincipal(req.Extra)
	name := req.Params.Name
	caps := legacy.Capabilities(req.Session.InitializeParams())
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	observe := func(result string) { p.metrics.LegacyRounds.WithLabelValues(result).Inc() }
	return legacy.Run(ctx, req.Session, p.log, observe, name, func(ctx context.Context, responses json.RawMessage, state string) (*mcp.CallToolResult, error) {
		return p.forwardLegacy(ctx, name, args, caps, responses, state, principal)
	})
}

// forwardLegacy runs one 2026-07-28 tools/call built from a legacy
// session's call through Handle and decodes its answer.
func (p *Proxy) forwardLegacy(ctx context.Context, name string, args, caps, responses json.RawMessage, state, principal string) (*mcp.CallToolResult, error) {
	nb, _ := json.Marshal(name)
	body := []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(p.legacy.callSeq.Add(1), 10) + `,"method":"tools/call","params":{"_meta":{"` +
		mcphttp.MetaProtocolVersion + `":"` + mcphttp.ProtocolVersion + `","` + mcphttp.MetaClientCapabilities + `":` + string(caps) + `},"name":` + string(nb) + `,"arguments":` + string(args))
	if len(responses) > 0 {
		sb, _ := json.Marshal(state)
		body = append(body, `,"inputResponses":`+string(responses)+`,"requestState":`+string(sb)...)
	}
	body = append(body, "}}"...)
	m, jerr := mcphttp.ParseMessage(body)
	if jerr != nil {
		return nil, jerr
	}
	h := p.upstreamHeaders(http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {name}, "Mcp-Protocol-Version": {mcphttp.ProtocolVersion}}, principal)
	s := &collectSink{}
	p.Handle(ctx, m, body, h, principal, s)
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
	res := &mcp.CallToolResult{}
	if err := json.Unmarshal(r.Result, res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the upstream's result cannot be carried to this client"}
	}
	return res, nil
}

// collectSink keeps the final answer; notifications that arrive before it
// are not relayed to a legacy session.
type collectSink struct{ final []byte }

func (*collectSink) Start()              {}
func (*collectSink) Notify([]byte) error { return nil }
func (s *collectSink) Final(raw []byte)  { s.final = raw }
