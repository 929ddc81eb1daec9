package server

// Legacy clients (MCP 2025-11-25 and 2025-06-18) open with initialize and
// keep a session; they know no input_required result and take elicitation
// as a server-to-client request on that session. They are served by a
// second, stateful SDK server with the same tools, each wrapped so that an
// InputRequiredResult is fulfilled on the session and the tool is called
// again with the answers and its sealed state: the same guard, the same
// ledger, the same round limit as a 2026-07-28 client gets.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LegacyProtocolVersions are the earlier revisions served on sessions.
var LegacyProtocolVersions = []string{"2025-11-25", "2025-06-18"}

// Defaults for legacy sessions.
const (
	DefaultSessionIdle = 10 * time.Minute
	DefaultMaxSessions = 1000
	// legacyRoundCap stops a tool that keeps asking whatever the guard's
	// round limit says (a tool that asks without the guard).
	legacyRoundCap = 16
)

// CodeServerBusy is the JSON-RPC error for a refused new session.
const CodeServerBusy = -32000

// isLegacy reports whether ss is a session opened by a pre-2026-07-28
// initialize.
func isLegacy(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion < ProtocolVersion
}

// legacyCapabilities states what the session's client declared at
// initialize in the form a 2026-07-28 request carries in _meta.
func legacyCapabilities(ip *mcp.InitializeParams) map[string]any {
	caps := map[string]any{}
	if ip == nil || ip.Capabilities == nil {
		return caps
	}
	c := ip.Capabilities
	if e := c.Elicitation; e != nil {
		el := map[string]any{}
		if e.Form != nil || e.URL == nil { // an empty elicitation object means form (2025-06-18)
			el["form"] = map[string]any{}
		}
		if e.URL != nil {
			el["url"] = map[string]any{}
		}
		caps["elicitation"] = el
	}
	if c.Sampling != nil {
		s := map[string]any{}
		if c.Sampling.Tools != nil {
			s["tools"] = map[string]any{}
		}
		caps["sampling"] = s
	}
	if c.RootsV2 != nil {
		caps["roots"] = map[string]any{}
	}
	return caps
}

// legacyTool wraps a tool handler for legacy sessions: it answers the
// tool's input requests on the session and calls the tool again, until the
// tool completes, fails, or the round limit ends it. On a 2026-07-28
// request it is the handler itself.
func (s *Server) legacyTool(h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !isLegacy(req.Session) {
			return h(ctx, req)
		}
		p := *req.Params
		caps, err := json.Marshal(legacyCapabilities(req.Session.InitializeParams()))
		if err != nil {
			return nil, err
		}
		args := p.Arguments
		if len(args) == 0 {
			args = json.RawMessage("null")
		}
		rc := &rawCall{arguments: args, capabilities: caps, inputResponses: json.RawMessage("null")}
		p.InputResponses, p.RequestState = nil, ""
		for round := 0; ; round++ {
			// Each call of the tool gets a header map of its own, under
			// which its arguments, capabilities and answers are filed for
			// HostRequest (raw.go), as the 2026-07-28 wrappers file them.
			extra := &mcp.RequestExtra{Header: http.Header{}}
			if req.Extra != nil {
				*extra = *req.Extra
				extra.Header = req.Extra.Header.Clone()
				if extra.Header == nil {
					extra.Header = http.Header{}
				}
			}
			done := fileHTTP(extra.Header, &rawCall{arguments: rc.arguments, capabilities: rc.capabilities, inputResponses: rc.inputResponses})
			r := &mcp.CallToolRequest{Session: req.Session, Params: &p, Extra: extra}
			res, err := h(ctx, r)
			done()
			if err != nil {
				return legacyError(err)
			}
			if res == nil || res.InputRequests == nil {
				return res, nil
			}
			if round >= legacyRoundCap {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the tool kept asking past the round limit"}
			}
			responses, err := fulfil(ctx, req.Session, res.InputRequests)
			if err != nil {
				s.metrics.LegacyRounds.WithLabelValues("client_error").Inc()
				s.log.Warn("legacy round not answered", "tool", p.Name, "error", err.Error())
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
					Text: "The client did not answer this tool's question: " + err.Error()}}}, nil
			}
			s.metrics.LegacyRounds.WithLabelValues("answered").Inc()
			// The answers as the SDK decoded them from the client's
			// response (a session's responses are not captured as sent).
			if rc.inputResponses, err = json.Marshal(responses); err != nil {
				return nil, err
			}
			p.InputResponses, p.RequestState = responses, res.RequestState
		}
	}
}

// legacyError turns the guard's -32021 (the client declared no such
// kind) into a result a legacy client shows: its request cannot be asked
// again with other capabilities on this session.
func legacyError(err error) (*mcp.CallToolResult, error) {
	var je *jsonrpc.Error
	if errors.As(err, &je) && je.Code == -32021 {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: "This tool needs to ask you something, and your client did not declare the capability for it (" + je.Message + ")."}}}, nil
	}
	return nil, err
}

// fulfil sends each input request to the client on its session, one at a
// time (a person answers one form after another).
func fulfil(ctx context.Context, ss *mcp.ServerSession, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	out := make(mcp.InputResponseMap, len(reqs))
	for k, ir := range reqs {
		var (
			resp mcp.InputResponse
			err  error
		)
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			resp, err = ss.Elicit(ctx, p)
		case *mcp.CreateMessageParams:
			resp, err = ss.CreateMessage(ctx, p)
		case *mcp.CreateMessageWithToolsParams:
			resp, err = ss.CreateMessageWithTools(ctx, p)
		case *mcp.ListRootsParams:
			resp, err = ss.ListRoots(ctx, p)
		default:
			err = fmt.Errorf("input request %q has a kind this server cannot send on a session (%T)", k, ir)
		}
		if err != nil {
			return nil, err
		}
		out[k] = resp
	}
	return out, nil
}

// legacyHTTP is the stateful SDK handler for legacy sessions, with a cap
// on live sessions.
type legacyHTTP struct {
	sdk  http.Handler
	srv  *mcp.Server
	max  int
	busy func()
}

func (l *legacyHTTP) live() int {
	n := 0
	for range l.srv.Sessions() {
		n++
	}
	return n
}

// isLegacyRequest says whether an /mcp request belongs to a legacy
// session: it names one, or it is an initialize (which the 2026-07-28
// revision does not have).
func isLegacyRequest(r *http.Request, body []byte) bool {
	if r.Header.Get("Mcp-Session-Id") != "" {
		return true
	}
	if len(body) == 0 {
		return false
	}
	var p struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &p) == nil && p.Method == "initialize"
}

// eraRouter sends legacy traffic to the session handler and everything
// else to the 2026-07-28 one.
func eraRouter(modern http.Handler, legacy *legacyHTTP) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					http.Error(w, "request body exceeds 1 MiB", http.StatusRequestEntityTooLarge)
					return
				}
				http.Error(w, "failed to read the body", http.StatusBadRequest)
				return
			}
			body = b
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		if !isLegacyRequest(r, body) {
			modern.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Mcp-Session-Id") == "" && legacy.live() >= legacy.max {
			if legacy.busy != nil {
				legacy.busy()
			}
			var p struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(body, &p)
			w.Header().Set("Retry-After", "5")
			writeRPCError(w, http.StatusServiceUnavailable, p.ID, &jsonrpc.Error{Code: CodeServerBusy, Message: "too many sessions: try again later"})
			return
		}
		legacy.sdk.ServeHTTP(w, r)
	})
}

// RunStdio serves one stdio client, in the era its first message picks:
// an initialize of an earlier revision opens a legacy session; anything
// else is 2026-07-28, with the _meta checks.
func (s *Server) RunStdio(ctx context.Context, in io.Reader, out io.WriteCloser) error {
	br := bufio.NewReaderSize(in, 64<<10)
	first, err := br.ReadBytes('\n')
	if err != nil && (len(first) == 0 || !errors.Is(err, io.EOF)) {
		return err
	}
	rest := io.NopCloser(io.MultiReader(bytes.NewReader(first), br))
	var p struct {
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	_ = json.Unmarshal(first, &p)
	t := &mcp.IOTransport{Reader: rest, Writer: out}
	if p.Method == "initialize" && p.Params.ProtocolVersion < ProtocolVersion {
		return s.legacy.Run(ctx, t)
	}
	return s.mcp.Run(ctx, CheckStdio(t))
}
