package proxy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/audit"
	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/legacy"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/observe"
	"github.com/mrtr-wasm/mrtr-wasm/internal/ops"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// Config is everything a Proxy needs.
type Config struct {
	// Guard seals and opens the proxy's states (with the deployment's
	// policy and ledger).
	Guard *host.Guard
	// Upstream is the server behind the proxy.
	Upstream upstream.Upstream
	// Auth checks who calls (--auth-tokens or OAuth access tokens); nil:
	// every caller is identity.Anonymous.
	Auth *identity.Authenticator
	// PassToken sends the client's own bearer token upstream (off by
	// default: the upstream never sees it).
	PassToken bool
	// ForwardPrincipal, when set, is the header that carries the
	// authenticated principal to an HTTP upstream.
	ForwardPrincipal string
	Logger           *slog.Logger
	// Registry receives the metrics (a fresh one when nil).
	Registry *prometheus.Registry
	// ToolsTTL bounds how long the upstream's tools/list and
	// server/discover stay cached (default 1 min); within it their own
	// ttlMs and cacheScope decide.
	ToolsTTL time.Duration
	// ToolsMinTTL is the least time they stay cached, even when the
	// upstream says ttlMs 0 ("stale at once; the client MAY re-fetch
	// every time"): without it a ttlMs-0 upstream costs a tools/list
	// round trip on every tools/call. Default (0) 1 s; negative: none,
	// re-fetch whenever the upstream's ttlMs has run out.
	ToolsMinTTL time.Duration
	// FetchTimeout bounds each request the proxy makes of its own
	// (tools/list, server/discover), the start of a principal's stdio
	// child included (default 10 s; the CLI gives --upstream-timeout: a
	// child slower to start than that failed every first tools/list).
	FetchTimeout time.Duration
	// Version is the proxy's, in its server/discover (default "dev").
	Version string
	// SessionIdle closes a legacy (2025-era) client's session after this
	// long without a request (default 10 min); MaxSessions caps live
	// legacy sessions (default 1000).
	SessionIdle time.Duration
	MaxSessions int
	// MaxStreams caps the subscriptions/listen streams relayed at once
	// (default 1024), 16 of them per principal; beyond, HTTP 503.
	MaxStreams int
	// MaxSessionsPerPrincipal caps one principal's live legacy sessions
	// (default 16): its least recently used one is closed for a new one.
	MaxSessionsPerPrincipal int
	// PendingTTL is how long a legacy upstream's open request waits for
	// its round's retry before it is answered cancel (default 5 min, the
	// default state TTL).
	PendingTTL time.Duration
	// MaxPending caps the calls of a 2025-era upstream held open (in
	// flight, or waiting for a round's retry) overall (default 1024), and
	// MaxPendingPerPrincipal per principal (default 16); past either, a
	// call is refused before it reaches the upstream (-32000, HTTP 503).
	MaxPending, MaxPendingPerPrincipal int
	// Telemetry traces each request, guard step and upstream call (nil: off).
	Telemetry *telemetry.Telemetry
	// Ready lists what /readyz checks beside the upstream (the ledger,
	// the policy).
	Ready []ops.Check
	// Audit, when set, receives every sealed round, answer, refusal and
	// forward as a hash-chained record (--audit).
	Audit *audit.Log
}

// Proxy serves MCP downstream and forwards upstream.
type Proxy struct {
	cfg      Config
	streams  mcphttp.Streams
	log      *slog.Logger
	metrics  *observe.Metrics
	up       *upMetrics
	tools    *scopedCache[toolList]
	upID     string
	legacy   *legacyFront
	pending  pendingRounds // rounds of a legacy upstream waiting for their retry
	sessions *legacy.Sessions
	ops      *ops.Lifecycle

	// the upstream's server/discover, for the proxy's own
	discovery *scopedCache[json.RawMessage]
}

type upMetrics struct {
	calls   *prometheus.CounterVec // mrtr_upstream_calls_total{result}
	seconds prometheus.Histogram   // mrtr_upstream_seconds
	refused *prometheus.CounterVec // mrtr_upstream_refused_total{what}
	rounds  *prometheus.CounterVec // mrtr_proxy_rounds_total{outcome}
	dropped *prometheus.CounterVec // mrtr_proxy_dropped_answer_fields_total{kind}
	busy    *prometheus.CounterVec // mrtr_proxy_busy_total{pool}
}

// New builds a proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Guard == nil || cfg.Upstream == nil {
		return nil, errors.New("proxy: a guard and an upstream are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.ToolsTTL <= 0 {
		cfg.ToolsTTL = time.Minute
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 10 * time.Second
	}
	if cfg.ToolsMinTTL == 0 {
		cfg.ToolsMinTTL = time.Second
	}
	p := &Proxy{cfg: cfg, log: cfg.Logger, metrics: observe.NewMetrics(cfg.Registry), upID: cfg.Upstream.ID()}
	p.ops = ops.New(append([]ops.Check{{Name: "upstream", Probe: p.upstreamReady}}, cfg.Ready...)...)
	p.cfg.Upstream = upstream.Traced(cfg.Upstream, cfg.Telemetry)
	p.up = &upMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_upstream_calls_total", Help: "Calls to the upstream, by result: ok, or the upstream error code.",
		}, []string{"result"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mrtr_upstream_seconds", Help: "Time of each upstream call, streamed messages included.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 2, 16),
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_upstream_refused_total", Help: "What the proxy refused from the upstream: server_request (a server-to-client request on a 2026-07-28 stream), form (a form the core or the policy refused), capability, invalid_result, tasks (a tasks/* request: the extension is not carried), not_object (a batch or other non-object message on its stream, dropped), unheard (a 2025-era upstream's notification while its call waited for a round's retry: no client was there to hear it).",
		}, []string{"what"}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_proxy_rounds_total", Help: "Input rounds at the proxy: sealed, reasked (by the proxy itself), forwarded, replayed, rejected, answered_ahead (answers sent without a state, checked against the round the upstream then asked); a 2025-era upstream's round that ended unanswered: expired, refused (by the guard or the policy), abandoned (its retry was refused for good), upstream_ended, shutdown.",
		}, []string{"outcome"}),
		busy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_proxy_busy_total", Help: "Requests refused for want of room, by pool: pending (calls of a 2025-era upstream held open), children (stdio children of a 2025-era upstream).",
		}, []string{"pool"}),
	}
	cfg.Registry.MustRegister(p.up.calls, p.up.seconds, p.up.refused, p.up.rounds, p.up.busy)
	p.up.dropped = newDroppedCounter(cfg.Registry)
	p.tools = newScopedCache[toolList](maxPrivateCached, cfg.ToolsMinTTL, cfg.ToolsTTL)
	p.discovery = newScopedCache[json.RawMessage](maxPrivateCached, cfg.ToolsMinTTL, cfg.ToolsTTL)
	if p.cfg.Version == "" {
		p.cfg.Version = "dev"
	}
	if p.cfg.SessionIdle <= 0 {
		p.cfg.SessionIdle = 10 * time.Minute
	}
	p.streams.Max = p.cfg.MaxStreams
	if p.cfg.MaxSessions <= 0 {
		p.cfg.MaxSessions = 1000
	}
	if p.cfg.PendingTTL <= 0 {
		p.cfg.PendingTTL = defaultPendingTTL
	}
	p.pending.calls.Max = cmp.Or(max(p.cfg.MaxPending, 0), defaultMaxPending)
	p.pending.calls.PerPrincipal = cmp.Or(max(p.cfg.MaxPendingPerPrincipal, 0), defaultMaxPendingPrincipal)
	p.legacy = p.newLegacyFront()
	// One sessions handler, however many handlers are built: the
	// sessions and their count live there.
	p.sessions = &legacy.Sessions{Server: p.legacy.srv, Max: p.cfg.MaxSessions, PerPrincipal: p.cfg.MaxSessionsPerPrincipal,
		Principal: identity.RequestPrincipal, Refused: p.metrics.LegacySessionsRefused.Inc,
		Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.legacy.srv }, &mcp.StreamableHTTPOptions{
			SessionTimeout: p.cfg.SessionIdle, MaxRequestBodyBytes: mcphttp.MaxBody,
		})}
	p.registerPools(cfg.Upstream)
	return p, nil
}

// Metrics returns the shared guard metrics.
func (p *Proxy) Metrics() *observe.Metrics { return p.metrics }

// Lifecycle is the proxy's readiness and drain (Drain on SIGTERM).
func (p *Proxy) Lifecycle() *ops.Lifecycle { return p.ops }

// Handler serves /mcp, /healthz, /readyz and /metrics.
func (p *Proxy) Handler() http.Handler { return p.handler(true) }

// OpsHandler serves /healthz, /readyz and /metrics, not /mcp: beside ServeStdio,
// whose one client is the local user, an MCP endpoint on the listener
// would let any local process drive the upstream as that user.
func (p *Proxy) OpsHandler() http.Handler { return p.handler(false) }

func (p *Proxy) handler(withMCP bool) http.Handler {
	var mcpHandler http.Handler = legacy.Router(http.HandlerFunc(p.serveMCP), p.sessions, mcphttp.MaxBody)
	mux := http.NewServeMux()
	if withMCP {
		if p.cfg.Auth != nil {
			mcpHandler = p.cfg.Auth.Middleware(mcpHandler)
			p.cfg.Auth.RegisterMetadata(mux, "/mcp")
		}
		mux.Handle("/mcp", p.ops.Guard(mcpHandler))
	}
	mux.HandleFunc("GET /healthz", p.ops.Healthz)
	mux.HandleFunc("GET /readyz", p.ops.Readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.cfg.Registry, promhttp.HandlerOpts{}))
	return mux
}

// registerPools exports a gauge for each pool a request may hold after its
// response: what is held now (the caps are the flags'). up is the
// upstream as configured (not wrapped for tracing).
func (p *Proxy) registerPools(up upstream.Upstream) {
	gauge := func(name, help string, f func() float64) {
		p.cfg.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	gauge("mrtr_proxy_pending_rounds", "Calls of a 2025-era upstream held open: in flight, or waiting for a round's retry (--max-pending).",
		func() float64 { return float64(p.pending.calls.Held()) })
	gauge("mrtr_proxy_streams", "subscriptions/listen streams relayed now (--max-streams).",
		func() float64 { return float64(p.streams.Held()) })
	gauge("mrtr_legacy_sessions", "Live sessions of 2025-era clients (--max-sessions).",
		func() float64 { return float64(p.sessions.Live()) })
	evicted := prometheus.NewCounter(prometheus.CounterOpts{Name: "mrtr_legacy_sessions_evicted_total",
		Help: "Sessions of 2025-era clients closed to make room for a new one of the same principal (16 per principal)."})
	p.cfg.Registry.MustRegister(evicted)
	p.sessions.Evicted = evicted.Inc
	if c, ok := up.(interface{ Children() int }); ok {
		gauge("mrtr_upstream_children", "Stdio children running now, one per principal for a 2025-era child (--max-children).",
			func() float64 { return float64(c.Children()) })
	}
	if c, ok := up.(interface{ Sessions() int }); ok {
		gauge("mrtr_upstream_sessions", "Sessions held at a 2025-era HTTP upstream, one per principal.",
			func() float64 { return float64(c.Sessions()) })
	}
	if c, ok := up.(interface{ QueuedBytes() int64 }); ok {
		gauge("mrtr_upstream_queued_bytes", "Bytes from stdio children queued for clients that read slowly (--upstream-max-queued).",
			func() float64 { return float64(c.QueuedBytes()) })
	}
}

// upstreamReady says why the upstream cannot take calls (its error code:
// a stdio child that keeps crashing, an HTTP upstream that refused).
func (p *Proxy) upstreamReady(context.Context) error {
	if err := p.cfg.Upstream.Health(); err != nil {
		if e, ok := upstream.AsError(err); ok {
			return errors.New(e.Code)
		}
		return errors.New("unavailable")
	}
	return nil
}

func (p *Proxy) serveMCP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if status, msg := mcphttp.CheckTransport(r); status != 0 {
		http.Error(w, msg, status)
		return
	}
	body, m, jerr, ok := mcphttp.Check(w, r)
	if !ok {
		return
	}
	if jerr != nil {
		var id json.RawMessage
		if m != nil {
			id = m.ID
		}
		mcphttp.WriteRPCError(w, http.StatusBadRequest, id, jerr)
		return
	}
	principal := identity.RequestPrincipal(r)
	h := p.upstreamHeaders(r.Header, principal)
	var params []mcphttp.ParamHeader
	if m.Method == "tools/call" {
		// The tools as this principal sees them (a private list is theirs).
		params = p.paramHeaders(r.Context(), h, principal, m.Target())
	}
	if jerr := mcphttp.CheckHeaders(r.Header, m, params); jerr != nil {
		mcphttp.WriteRPCError(w, http.StatusBadRequest, m.ID, jerr)
		return
	}
	declaredParamsOnly(h, params)
	if m.Method == "subscriptions/listen" && m.IsCall() {
		release, ok := p.streams.Acquire(principal)
		if !ok {
			mcphttp.WriteBusy(w, m.ID)
			return
		}
		defer release()
	}
	if !m.IsCall() {
		// On the principal's own session or child, as its calls.
		if err := p.cfg.Upstream.Send(upstream.WithPrincipal(r.Context(), principal), body, h); err != nil {
			p.log.Warn("upstream did not take a notification", "method", m.Method, "error", errText(err))
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s := &httpSink{w: w}
	p.Handle(r.Context(), m, body, h, principal, p.conforming(m, s))
	s.finish()
}

// conforming makes every result a 2026-07-28 client gets valid in its
// revision (mcphttp.ConformResult): what an upstream left out is added,
// and a result that cannot be made valid becomes an error that names the
// upstream's fault, never a relayed invalid result.
func (p *Proxy) conforming(m *mcphttp.Message, s Sink) Sink {
	return &conformingSink{Sink: s, p: p, m: m}
}

type conformingSink struct {
	Sink
	p *Proxy
	m *mcphttp.Message
}

func (c *conformingSink) Final(raw []byte) {
	out, err := mcphttp.ConformResult(c.m.Method, raw)
	if err != nil {
		c.p.up.refused.WithLabelValues("invalid_result").Inc()
		c.p.log.Warn("the upstream's result is not valid MCP 2026-07-28; the client gets an error", "method", c.m.Method, "error", err.Error())
		out = mcphttp.ErrorResponse(c.m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "the upstream server answered " + c.m.Method + " with a result that is not valid MCP 2026-07-28 (" + err.Error() + "); the proxy does not relay it"})
	}
	c.Sink.Final(out)
}

// upstreamHeaders are the headers sent upstream: the MCP ones of the
// client's request (never its Authorization), trace context, and the
// principal when configured.
func (p *Proxy) upstreamHeaders(in http.Header, principal string) http.Header {
	h := make(http.Header, 8)
	for k, v := range in {
		switch {
		case k == "Mcp-Method" || k == "Mcp-Name":
			h[k] = []string{mcphttp.EncodeHeader(v[0])}
		case k == "Mcp-Protocol-Version" || k == "Traceparent" || k == "Tracestate" || strings.HasPrefix(k, "Mcp-Param-"):
			h[k] = v
		}
	}
	if p.cfg.PassToken {
		if v := in.Get("Authorization"); v != "" {
			h.Set("Authorization", v)
		}
	}
	if p.cfg.ForwardPrincipal != "" {
		h.Set(p.cfg.ForwardPrincipal, mcphttp.EncodeHeader(principal))
	}
	return h
}

// declaredParamsOnly drops from h every Mcp-Param-* header that params
// (the tool's x-mcp-header annotations, which CheckHeaders compared with
// the arguments) does not declare: only checked headers reach the
// upstream, and none on a method other than tools/call.
func declaredParamsOnly(h http.Header, params []mcphttp.ParamHeader) {
	for k := range h {
		if !strings.HasPrefix(k, "Mcp-Param-") {
			continue
		}
		declared := false
		for _, ph := range params {
			if http.CanonicalHeaderKey("Mcp-Param-"+ph.Header) == k {
				declared = true
				break
			}
		}
		if !declared {
			delete(h, k)
		}
	}
}

// Sink receives what goes back to the client for one request: messages
// that arrive before the response (notifications), then the response.
type Sink interface {
	// Start: the upstream answers with a stream; answer with one too.
	Start()
	Notify(raw []byte) error
	Final(raw []byte)
}

// httpSink answers with application/json, or with an event stream when
// the upstream streams or a message arrives before the response. The
// stream's headers wait up to streamHeaderDelay for its first message:
// a call whose answer follows at once goes out in one write (one wake-up
// of the client, not two), and a stream that stays quiet longer gets its
// headers when the wait ends, as before. Messages are flushed as they
// arrive. The lock is for that timer.
type httpSink struct {
	mu        sync.Mutex
	w         http.ResponseWriter
	streaming bool // the answer is an event stream
	started   bool // its headers are written
	done      bool
	timer     *time.Timer
}

// streamHeaderDelay is how long an event stream's headers may wait for its
// first message.
const streamHeaderDelay = 50 * time.Millisecond

func (s *httpSink) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streaming || s.done {
		return
	}
	s.streaming = true
	s.timer = time.AfterFunc(streamHeaderDelay, s.startLate)
}

// startLate sends the headers of a stream that had nothing to say yet.
func (s *httpSink) startLate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.started {
		return
	}
	s.writeHeader()
	s.flush()
}

func (s *httpSink) writeHeader() {
	s.streaming, s.started = true, true
	s.w.Header().Set("Content-Type", "text/event-stream")
	s.w.Header().Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
}

func (s *httpSink) flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *httpSink) Notify(raw []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil
	}
	if !s.started {
		s.writeHeader()
	}
	if err := writeEvent(s.w, raw); err != nil {
		return err
	}
	s.flush()
	return nil
}

func (s *httpSink) Final(raw []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.streaming {
		if !s.started {
			s.writeHeader()
		}
		_ = writeEvent(s.w, raw)
		return
	}
	s.w.Header().Set("Content-Type", "application/json")
	status := errorStatus(raw)
	if status == http.StatusServiceUnavailable {
		_, after := retryAfter(raw)
		s.w.Header().Set("Retry-After", strconv.Itoa(after))
	}
	s.w.WriteHeader(status)
	_, _ = s.w.Write(raw)
}

var errorMark = []byte(`"error"`)

// errorStatus is the HTTP status of a JSON response, as SEP-2575 sets it
// from a JSON-RPC error code: 404 for -32601, 400 for -32602, -32020,
// -32021 and -32022, 503 for the proxy's own -32000 (no room: retry
// later), else 200.
func errorStatus(raw []byte) int {
	if !bytes.Contains(raw, errorMark) {
		return http.StatusOK
	}
	var r struct {
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Error == nil {
		return http.StatusOK
	}
	switch r.Error.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcphttp.CodeHeaderMismatch, -32021, mcphttp.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	case mcphttp.CodeServerBusy:
		if busy, _ := retryAfter(raw); busy {
			return http.StatusServiceUnavailable
		}
	}
	return http.StatusOK
}

// retryAfter reads the proxy's own busy answer (-32000 with data.code
// mrtr.proxy.busy; an upstream's -32000 is any server error): its
// data.retryAfter in seconds (default 5).
func retryAfter(raw []byte) (busy bool, seconds int) {
	var r struct {
		Error struct {
			Data struct {
				Code       string `json:"code"`
				RetryAfter int    `json:"retryAfter"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Error.Data.Code != busyCode {
		return false, 0
	}
	return true, cmp.Or(max(r.Error.Data.RetryAfter, 0), 5)
}

func (s *httpSink) finish() {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if !done {
		s.Final(mcphttp.ErrorResponse(nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}))
	}
}

func writeEvent(w io.Writer, raw []byte) error {
	var b bytes.Buffer
	b.Grow(len(raw) + 16)
	b.WriteString("event: message\n")
	for _, line := range bytes.Split(raw, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// rpcResult is a JSON-RPC result response with the given raw id.
func rpcResult(id, result json.RawMessage) []byte {
	b := make([]byte, 0, len(result)+len(id)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// withID returns a stored response with another request's id.
func withID(stored []byte, id json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(stored, &m) != nil {
		return stored
	}
	m["id"] = id
	b, err := json.Marshal(m)
	if err != nil {
		return stored
	}
	return b
}

func errText(err error) string {
	if e, ok := upstream.AsError(err); ok {
		if e.Err != nil {
			return e.Code + ": " + e.Message + " (" + e.Err.Error() + ")"
		}
		return e.Code + ": " + e.Message
	}
	return err.Error()
}
