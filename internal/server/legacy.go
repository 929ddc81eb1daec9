package server

// Legacy clients (MCP 2025-11-25 and 2025-06-18) open with initialize and
// keep a session; they know no input_required result and take elicitation
// as a server-to-client request on that session. They are served by a
// second, stateful SDK server with the same tools, each wrapped so that an
// InputRequiredResult is fulfilled on the session and the tool is called
// again with the answers and its sealed state (internal/legacy, shared
// with the proxy): the same guard, the same ledger, the same round limit
// as a 2026-07-28 client gets.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/legacy"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// Defaults for legacy sessions.
const (
	DefaultSessionIdle = 10 * time.Minute
	DefaultMaxSessions = 1000
)

// legacyTool wraps a tool handler for legacy sessions: it answers the
// tool's input requests on the session and calls the tool again, until the
// tool completes, fails, or the round limit ends it. On a 2026-07-28
// request it is the handler itself.
func (s *Server) legacyTool(h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !legacy.IsLegacy(req.Session) {
			return h(ctx, req)
		}
		p := *req.Params
		caps := legacy.Capabilities(req.Session.InitializeParams())
		args := p.Arguments
		if len(args) == 0 {
			args = json.RawMessage("null")
		}
		observe := func(result string) { s.metrics.LegacyRounds.WithLabelValues(result).Inc() }
		return legacy.Run(ctx, req.Session, s.log, observe, p.Name, func(ctx context.Context, responses json.RawMessage, state string) (*mcp.CallToolResult, error) {
			// Each call of the tool gets a header map of its own, under
			// which its arguments, capabilities and answers are filed for
			// HostRequest (raw.go), as the 2026-07-28 wrappers file them.
			extra := &mcp.RequestExtra{}
			if req.Extra != nil {
				*extra = *req.Extra
			}
			extra.Header = http.Header{}
			if req.Extra != nil && req.Extra.Header != nil {
				extra.Header = req.Extra.Header.Clone()
			}
			rc := &rawCall{arguments: args, capabilities: caps, inputResponses: json.RawMessage("null")}
			cp := p
			cp.InputResponses, cp.RequestState = nil, state
			if responses != nil {
				rc.inputResponses = responses
				if err := json.Unmarshal(responses, &cp.InputResponses); err != nil {
					return nil, err
				}
			}
			done := fileHTTP(extra.Header, rc)
			defer done()
			return h(ctx, &mcp.CallToolRequest{Session: req.Session, Params: &cp, Extra: extra})
		})
	}
}

// RunStdio serves one stdio client, in the era its first message picks:
// an initialize of an earlier revision opens a legacy session; anything
// else is 2026-07-28, with the _meta checks.
func (s *Server) RunStdio(ctx context.Context, in io.Reader, out io.WriteCloser) error {
	rest, old, err := legacy.StdioEra(in, mcphttp.MaxBody)
	if err != nil {
		return err
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(rest), Writer: out}
	if old {
		return s.legacy.Run(ctx, t)
	}
	return s.mcp.Run(ctx, CheckStdio(t))
}
