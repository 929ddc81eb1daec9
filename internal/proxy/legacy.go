package proxy

// Legacy clients (2025-11-25, 2025-06-18) on the proxy: they get a session
// from the SDK's stateful handler, whose tools mirror the upstream's. Each
// call goes through the proxy's own guarded path (Handle) as a 2026-07-28
// request built from the session, and its input rounds are fulfilled on
// the session (internal/legacy), so a legacy client meets the same checks,
// sealing, re-asks and ledger as a modern one.

import (
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
	srv     *mcp.Server
	mu      sync.Mutex
	tools   map[string]bool
	fresh   time.Time
	callSeq atomic.Int64
}

func (p *Proxy) newLegacyFront() *legacyFront {
	return &legacyFront{
		srv: mcp.NewServer(&mcp.Implementation{Name: "mrtr-wasm-proxy", Version: "dev"}, &mcp.ServerOptions{
			SupportedProtocolVersions: legacy.ProtocolVersions,
		}),
		tools: map[string]bool{},
	}
}

// refresh mirrors the upstream's tools (at most once per tools TTL).
func (p *Proxy) refreshLegacyTools(ctx context.Context) {
	f := p.legacy
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.fresh) < p.tools.ttl {
		return
	}
	tools, err := p.listToolDefs(ctx)
	if err != nil {
		p.log.Warn("legacy session: the upstream's tools could not be listed", "error", errText(err))
		return
	}
	seen := map[string]bool{}
	for _, t := range tools {
		seen[t.Name] = true
		f.srv.AddTool(t, p.legacyTool(t.Name))
	}
	var gone []string
	for name := range f.tools {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	f.srv.RemoveTools(gone...)
	f.tools, f.fresh = seen, time.Now()
}

// listToolDefs reads the upstream's tools/list (every page) as SDK tools.
func (p *Proxy) listToolDefs(ctx context.Context) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	h := http.Header{"Mcp-Method": {"tools/list"}, "Mcp-Protocol-Version": {mcphttp.ProtocolVersion}}
	cursor := ""
	for page := 0; page < 20; page++ {
		params := map[string]any{"_meta": map[string]any{mcphttp.MetaProtocolVersion: mcphttp.ProtocolVersion, mcphttp.MetaClientCapabilities: map[string]any{}}}
		if cursor != "" {
			params["cursor"] = cursor
		}
		pb, _ := json.Marshal(params)
		msg := `{"jsonrpc":"2.0","id":"mrtr-proxy-legacy-tools-` + strconv.Itoa(page) + `","method":"tools/list","params":` + string(pb) + `}`
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := p.cfg.Upstream.Call(cctx, []byte(msg), h, nil)
		cancel()
		if err != nil {
			return nil, err
		}
		var r struct {
			Result struct {
				Tools      []*mcp.Tool `json:"tools"`
				NextCursor string      `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(resp, &r); err != nil {
			return nil, err
		}
		out = append(out, r.Result.Tools...)
		if r.Result.NextCursor == "" {
			break
		}
		cursor = r.Result.NextCursor
	}
	return out, nil
}

// legacyTool forwards a legacy session's tools/call through the guarded
// path, answering its input rounds on the session.
func (p *Proxy) legacyTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		principal := server.Anonymous
		if req.Extra != nil && req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
			principal = req.Extra.TokenInfo.UserID
		}
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
