package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/legacy"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/observe"
	"github.com/mrtr-wasm/mrtr-wasm/internal/ops"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/postgres"
)

// Config is everything a Server needs.
type Config struct {
	// Guard guards the demo tools (with the deployment's policy and ledger).
	Guard observe.Guard
	CRM   *crm.Store
	// TxLedger, when set, is the guard's ledger in the CRM's own
	// PostgreSQL database (same Where): a booking then commits in one
	// transaction with the ledger's record of it (Guard.OnceTx).
	TxLedger *postgres.Ledger
	// Auth checks who calls /mcp (--auth-tokens or OAuth) and signs people
	// in on the connect page; nil means no authentication (every caller is
	// Anonymous).
	Auth *identity.Authenticator
	// PublicURL is where browsers reach this server (for /connect links),
	// e.g. http://127.0.0.1:8080.
	PublicURL string
	Logger    *slog.Logger
	// Registry receives the metrics (a fresh one when nil).
	Registry *prometheus.Registry
	// Fixtures, when set, registers more tools, prompts and resources (the
	// conformance fixtures) on the same MCP server.
	// wrap is what each guarded tool handler must go through on s (the
	// legacy server fulfils input rounds on the session).
	Fixtures func(s *mcp.Server, wrap func(mcp.ToolHandler) mcp.ToolHandler, m *observe.Metrics, log *slog.Logger)
	// SSE answers every call on /mcp as an event stream, so that progress
	// notifications reach the client (the conformance fixtures); by
	// default a call is answered with one JSON object.
	SSE bool
	// Options, when set, adjusts the MCP server's options before it is
	// made (the conformance fixtures add a completion handler).
	Options func(*mcp.ServerOptions)
	// ConnectTTL bounds how long a /connect link stays usable (default 15 min).
	ConnectTTL time.Duration
	Version    string
	// Telemetry traces each request and guard step (nil: off).
	Telemetry *telemetry.Telemetry
	// SessionIdle closes a legacy (2025-era) session after this long
	// without a request (default 10 min); MaxSessions caps live legacy
	// sessions (default 1000; beyond it initialize gets HTTP 503).
	SessionIdle time.Duration
	MaxSessions int
	// MaxStreams caps the subscriptions/listen streams open at once
	// (default 1024), 16 of them per principal; beyond, HTTP 503.
	MaxStreams int
	// Ready lists what /readyz checks beside the CRM (the ledger, the
	// policy).
	Ready []ops.Check
}

// Server is the MCP server plus its HTTP surface.
type Server struct {
	cfg     Config
	mcp     *mcp.Server
	legacy  *mcp.Server // the same tools for legacy sessions
	metrics *observe.Metrics
	log     *slog.Logger
	guard   observe.Guard
	streams mcphttp.Streams
	ops     *ops.Lifecycle
	// crossOrigin refuses a connect page POST sent by another site.
	crossOrigin *http.CrossOriginProtection
}

// New builds the server and registers the demo tools.
func New(cfg Config) (*Server, error) {
	if cfg.Guard == nil || cfg.CRM == nil {
		return nil, errors.New("server: a guard and a CRM are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.ConnectTTL == 0 {
		cfg.ConnectTTL = 15 * time.Minute
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.SessionIdle == 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	m := observe.NewMetrics(cfg.Registry)
	s := &Server{cfg: cfg, metrics: m, log: cfg.Logger, streams: mcphttp.Streams{Max: cfg.MaxStreams},
		ops:         ops.New(append([]ops.Check{{Name: "crm", Probe: cfg.CRM.Ping}}, cfg.Ready...)...),
		crossOrigin: connectOrigins(cfg.PublicURL)}
	s.guard = observe.Instrument(observe.TraceGuard(cfg.Guard, cfg.Telemetry), m)
	impl := &mcp.Implementation{Name: "mrtr-wasm", Title: "mrtr-wasm demo CRM", Version: cfg.Version}
	const instructions = "A demo CRM. book_demo_call books a demo call (it asks for a name, a work email and a slot); list_bookings lists your bookings; cancel_booking cancels one after you confirm; connect_calendar connects an outside calendar through a page of this server."
	opts := &mcp.ServerOptions{
		Instructions:              instructions,
		SupportedProtocolVersions: []string{mcphttp.ProtocolVersion},
		Logger:                    sdkLogger(cfg.Logger),
	}
	if cfg.Options != nil {
		cfg.Options(opts)
	}
	s.mcp = mcp.NewServer(impl, opts)
	lopts := &mcp.ServerOptions{
		Instructions:              instructions,
		SupportedProtocolVersions: legacy.ProtocolVersions,
		Logger:                    sdkLogger(cfg.Logger),
	}
	if cfg.Options != nil {
		cfg.Options(lopts)
	}
	s.legacy = mcp.NewServer(impl, lopts)
	if cfg.Telemetry.Enabled() {
		s.mcp.AddReceivingMiddleware(observe.ServerSpans(cfg.Telemetry))
		s.legacy.AddReceivingMiddleware(observe.ServerSpans(cfg.Telemetry))
	}
	s.addDemoTools()
	if cfg.Fixtures != nil {
		cfg.Fixtures(s.mcp, func(h mcp.ToolHandler) mcp.ToolHandler { return h }, m, cfg.Logger)
		cfg.Fixtures(s.legacy, s.legacyTool, m, cfg.Logger)
	}
	return s, nil
}

// MCP returns the SDK server (for stdio).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Legacy returns the SDK server for legacy (2025-era) sessions.
func (s *Server) Legacy() *mcp.Server { return s.legacy }

// addTool registers a tool on both eras' servers; on legacy sessions its
// input rounds are fulfilled on the session.
func (s *Server) addTool(t *mcp.Tool, h mcp.ToolHandler) {
	s.mcp.AddTool(t, h)
	s.legacy.AddTool(t, s.legacyTool(h))
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *observe.Metrics { return s.metrics }

// Lifecycle is the server's readiness and drain (Drain on SIGTERM).
func (s *Server) Lifecycle() *ops.Lifecycle { return s.ops }

// Handler serves /mcp, /connect/, /healthz, /readyz and /metrics.
func (s *Server) Handler() http.Handler { return s.handler(true) }

// OpsHandler serves /connect/, /healthz, /readyz and /metrics, not /mcp: beside
// RunStdio, whose one client is the local user, an MCP endpoint on the
// listener would let any local process act as that user.
func (s *Server) OpsHandler() http.Handler { return s.handler(false) }

func (s *Server) handler(withMCP bool) http.Handler {
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        !s.cfg.SSE,
		MaxRequestBodyBytes: mcphttp.MaxBody,
		Logger:              sdkLogger(s.log),
	})
	sessions := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.legacy }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      s.cfg.SessionIdle,
		MaxRequestBodyBytes: mcphttp.MaxBody,
		Logger:              sdkLogger(s.log),
	})
	var mcpHandler http.Handler = legacy.Router(CheckRequests(sdk, &s.streams), &legacy.Sessions{Handler: sessions, Server: s.legacy, Max: s.cfg.MaxSessions, Principal: identity.RequestPrincipal,
		Refused: s.metrics.LegacySessionsRefused.Inc}, mcphttp.MaxBody)
	mux := http.NewServeMux()
	if a := s.cfg.Auth; a != nil {
		mcpHandler = a.Middleware(mcpHandler)
		if withMCP {
			a.RegisterMetadata(mux, "/mcp")
		}
		if l := a.Login(); l != nil {
			mux.HandleFunc("GET "+l.CallbackPath(), s.connectCallback)
		}
	}
	if withMCP {
		mux.Handle("/mcp", s.ops.Guard(mcpHandler))
	}
	mux.Handle("/connect/", s.connectHandler())
	mux.HandleFunc("GET /healthz", s.ops.Healthz)
	mux.HandleFunc("GET /readyz", s.ops.Readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{}))
	return mux
}

// PrincipalOf returns the authenticated principal of a request: the
// bearer token's principal, or Anonymous when the server has no
// authentication (and on stdio).
func PrincipalOf(extra *mcp.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return extra.TokenInfo.UserID
	}
	return identity.Anonymous
}

// HostRequest builds the guard's view of a tools/call request, with the
// arguments, inputResponses and clientCapabilities as the client sent them.
func HostRequest(req *mcp.CallToolRequest) (*host.Request, error) {
	return hostRequest(req.Extra, "tools/call", req.Params.Name, req.Params.RequestState)
}

// HostPromptRequest builds the guard's view of a prompts/get request.
func HostPromptRequest(req *mcp.GetPromptRequest) (*host.Request, error) {
	return hostRequest(req.Extra, "prompts/get", req.Params.Name, req.Params.RequestState)
}

func hostRequest(extra *mcp.RequestExtra, method, target, state string) (*host.Request, error) {
	rc, err := rawOf(extra)
	if err != nil {
		return nil, err
	}
	r := &host.Request{
		Principal:    PrincipalOf(extra),
		Method:       method,
		Target:       target,
		Arguments:    rc.arguments,
		Capabilities: rc.capabilities,
		RequestState: state,
	}
	if string(rc.inputResponses) != "null" {
		r.InputResponses = rc.inputResponses
	}
	if err := fillIdentity(r, extra); err != nil {
		return nil, err
	}
	return r, nil
}

// fillIdentity gives the guard (and so the policy) the token's scopes and
// chosen claims.
func fillIdentity(r *host.Request, extra *mcp.RequestExtra) error {
	if extra == nil {
		return nil
	}
	id := identity.FromTokenInfo(extra.TokenInfo)
	if id == nil {
		return nil
	}
	r.Scopes = id.Scopes
	if len(id.Claims) > 0 {
		b, err := json.Marshal(id.Claims)
		if err != nil {
			return err
		}
		r.Claims = b
	}
	return nil
}

// ToInputRequests turns the guard's wire result into the SDK's typed map.
func ToInputRequests(res *host.InputRequiredResult) (mcp.InputRequestMap, error) {
	// The SDK cannot decode an input request without params (roots/list
	// is sent bare): give it the empty params it means.
	in := make(map[string]map[string]json.RawMessage, len(res.InputRequests))
	for k, raw := range res.InputRequests {
		var r map[string]json.RawMessage
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("server: the guard returned an unreadable input request: %w", err)
		}
		if _, ok := r["params"]; !ok {
			r["params"] = json.RawMessage(`{}`)
		}
		in[k] = r
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	m := mcp.InputRequestMap{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("server: the guard returned input requests the SDK cannot carry: %w", err)
	}
	return m, nil
}

// InputRequired returns the CallToolResult that carries an ask.
func InputRequired(res *host.InputRequiredResult) (*mcp.CallToolResult, error) {
	m, err := ToInputRequests(res)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{InputRequests: m, RequestState: res.RequestState}, nil
}

// RPCError maps a guard error to the JSON-RPC error the client gets: the
// code from host.Error.JSONRPCCode, its client-safe message and data,
// never its internal reason.
func RPCError(err error) error {
	if e, ok := host.AsError(err); ok {
		return &jsonrpc.Error{Code: int64(e.JSONRPCCode()), Message: e.Message, Data: e.Data}
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// Text is a complete result with one text block.
func Text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// sdkLogger passes the SDK's warnings and errors on; its per-request info
// lines (a session per stateless request) are noise.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{l.Handler(), slog.LevelWarn}).With("component", "mcp-sdk")
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}
func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}
func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }
