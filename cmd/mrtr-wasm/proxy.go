package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/observe"
	"github.com/mrtr-wasm/mrtr-wasm/internal/proxy"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

const proxyUsage = `usage: mrtr-wasm proxy [flags] --upstream URL
       mrtr-wasm proxy [flags] -- CMD ARGS...          (the upstream is a stdio child)
       mrtr-wasm proxy --stdio [flags] -- CMD ARGS...  (a local client runs the proxy on stdio)
       mrtr-wasm proxy --stdio [flags] --upstream URL  (a local stdio client, a remote HTTP server)

Puts the guard in front of an MCP server you did not write. Downstream it
is an MCP 2026-07-28 server at http://ADDR/mcp (with /healthz and
/metrics); everything passes through as is, except input rounds: the
upstream's forms are linted and policed, its requestState is sealed into
the guard's own, answers are checked (and asked again by the proxy), and
each round reaches the upstream at most once.

Keys come from MRTR_KEYS or --keys FILE, as for serve. Without --policy the
default allows any form field that does not ask for a secret.

flags:
`

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type proxyOptions struct {
	serveOptions
	upstreamURL      string
	upstreamHeaders  multiFlag
	upstreamOAuth    upstreamOAuth
	upstreamEnv      multiFlag
	upstreamEnvPass  multiFlag
	upstreamUser     string
	credential       *syscall.Credential // from upstreamUser
	upstreamTimeout  time.Duration
	upstreamMaxBody  int64
	forwardPrincipal string
	passToken        bool
	command          []string
	maxChildren      int
	childIdle        time.Duration
	toolsMinTTL      time.Duration
	upstreamRoots    bool
	upstreamStderr   string
	maxPending       int
	maxPendingOne    int
	childRoundHold   time.Duration
	upstreamQueued   int64
}

func parseProxy(args []string, stderr io.Writer) (*proxyOptions, error) {
	o := &proxyOptions{}
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, proxyUsage)
		fs.PrintDefaults()
	}
	addSharedFlags(fs, &o.serveOptions)
	fs.StringVar(&o.audience, "audience", "mrtr-wasm-proxy", "audience bound into every requestState (proxies sharing keys and a ledger must share it)")
	fs.StringVar(&o.publicURL, "public-url", "", "the URL clients reach this proxy at (logged; default http://ADDR)")
	fs.BoolVar(&o.stdio, "stdio", false, "serve MCP on stdin/stdout for a local client, of either era (the upstream is the stdio child after -- or --upstream URL; the listener at --addr serves only /healthz and /metrics)")
	fs.StringVar(&o.cacheDir, "wasm-cache", "", "directory for wazero's compiled guard.wasm (default: none)")
	fs.StringVar(&o.upstreamURL, "upstream", "", "the upstream's Streamable HTTP endpoint, e.g. http://127.0.0.1:9000/mcp")
	o.upstreamOAuth.flags(fs)
	fs.Var(&o.upstreamHeaders, "upstream-header", "\"Name: value\" sent to an HTTP upstream with every call (repeatable; never logged)")
	fs.DurationVar(&o.upstreamTimeout, "upstream-timeout", 60*time.Second, "bound on one upstream call, streamed messages included (a subscriptions/listen stream: only its start)")
	fs.Int64Var(&o.upstreamMaxBody, "upstream-max-body", 8<<20, "largest upstream answer (or stream event) in bytes")
	fs.BoolVar(&o.passToken, "upstream-pass-token", false, "send the client's own bearer token to an HTTP upstream (off: the upstream never sees it; its audience is this proxy, so the upstream must accept that)")
	fs.StringVar(&o.forwardPrincipal, "forward-principal", "", "header that carries the authenticated principal to an HTTP upstream (opt-in; the client's own token is never forwarded)")
	fs.IntVar(&o.maxChildren, "max-children", 16, "most stdio children at once when the child speaks the 2025 era (one per principal, so users never share its session state)")
	fs.DurationVar(&o.toolsMinTTL, "tools-min-ttl", time.Second, "least time the upstream's tools/list and server/discover stay cached, even when it says ttlMs 0 (0: re-fetch whenever its ttlMs has run out)")
	fs.DurationVar(&o.childIdle, "child-idle", 10*time.Minute, "stop a principal's stdio child after this long without a call")
	fs.DurationVar(&o.childRoundHold, "child-round-hold", upstream.DefaultRoundHold, "when every stdio child is busy, a child whose calls all wait this long for their clients' answers is stopped for a new principal (its rounds' retries are told to call again); the longest a new principal is kept out by waiting rounds")
	fs.IntVar(&o.maxPending, "max-pending", 1024, "most calls of a 2025-era upstream held open at once (in flight, or waiting for a round's answer), each holding an upstream connection or child; a further call gets HTTP 503 / -32000 before it reaches the upstream")
	fs.IntVar(&o.maxPendingOne, "max-pending-principal", 16, "most such calls held open for one principal")
	fs.Int64Var(&o.upstreamQueued, "upstream-max-queued", upstream.DefaultMaxQueued, "most bytes from stdio children queued, all calls together, for clients that read slowly; the call whose message would pass it fails")
	fs.BoolVar(&o.upstreamRoots, "upstream-roots", false, "declare roots to an upstream of the 2025 era, so that it may ask a client's roots/list during a call (off: a server may take the roots as the directories it works in, and clients would choose them)")
	fs.Var(&o.upstreamEnv, "upstream-env", "NAME=VALUE for a stdio child's environment (repeatable; the child gets a clean environment)")
	fs.Var(&o.upstreamEnvPass, "upstream-env-pass", "NAME of the proxy's environment passed to a stdio child (repeatable)")
	fs.StringVar(&o.upstreamStderr, "upstream-stderr", upstream.StderrLog, "what the log gets of a stdio child's stderr: log (each line, control characters escaped), size (each line's length only: a child that prints its requests would log users' answers) or drop")
	fs.StringVar(&o.upstreamUser, "upstream-user", "", "USER[:GROUP] (names or numbers) to run a stdio child as, with no supplementary groups; the proxy must run as root (default: the proxy's own user, and the child can then read every file the proxy can: its --keys, --auth-tokens and data)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	o.command = rest
	switch {
	case o.upstreamURL != "" && len(o.command) > 0:
		return nil, errors.New("give either --upstream URL or -- CMD ARGS, not both")
	case o.upstreamOAuth.tokenURL != "" && o.upstreamURL == "":
		return nil, errors.New("--upstream-oauth-token-url needs an HTTP upstream (--upstream URL)")
	case o.upstreamOAuth.tokenURL != "" && o.passToken:
		return nil, errors.New("give either --upstream-oauth-token-url or --upstream-pass-token, not both")
	case o.upstreamURL == "" && len(o.command) == 0:
		return nil, errors.New("no upstream: give --upstream URL or -- CMD ARGS")
	case o.toolsMinTTL < 0 || o.toolsMinTTL > time.Minute:
		return nil, errors.New("--tools-min-ttl must be between 0 and 1m")
	case o.upstreamTimeout <= 0, o.childIdle <= 0:
		return nil, errors.New("--upstream-timeout and --child-idle must be positive")
	case o.maxChildren <= 0, o.upstreamMaxBody <= 0:
		return nil, errors.New("--max-children and --upstream-max-body must be positive")
	case o.maxPending <= 0, o.maxPendingOne <= 0, o.upstreamQueued <= 0, o.childRoundHold <= 0:
		return nil, errors.New("--max-pending, --max-pending-principal, --upstream-max-queued and --child-round-hold must be positive")
	}
	if err := upstream.CheckStderrMode(o.upstreamStderr); err != nil {
		return nil, err
	}
	if err := o.checkBounds(); err != nil {
		return nil, err
	}
	if o.upstreamUser != "" {
		if len(o.command) == 0 {
			return nil, errors.New("--upstream-user applies to a stdio child (-- CMD ARGS), not to --upstream URL")
		}
		if o.credential, err = upstreamCredential(o.upstreamUser, os.Geteuid()); err != nil {
			return nil, err
		}
	}
	if o.engine != "wasm" && o.engine != "native" {
		return nil, fmt.Errorf("--engine must be wasm or native")
	}
	if err := o.identity.Validate(); err != nil {
		return nil, err
	}
	if o.policyData == "" && o.policyDir == "" {
		o.policyData = "proxy"
	}
	return o, nil
}

// parseHeaders reads --upstream-header values. Errors never quote a value.
func parseHeaders(list []string) (http.Header, error) {
	h := http.Header{}
	for i, v := range list {
		name, val, ok := strings.Cut(v, ":")
		name = strings.TrimSpace(name)
		// A name that is not an HTTP token would fail each request with an
		// error that quotes it, and a mistyped flag's "name" may be a
		// secret ("TOKEN=sk-…:…"): refuse it here, by number.
		// An empty value too: "sk-live-…:" is a token, but a credential
		// put where the name goes, which would be sent as a header name.
		if !ok || !headerToken(name) || strings.ContainsAny(val, "\r\n") || strings.TrimSpace(val) == "" {
			return nil, fmt.Errorf("--upstream-header number %d is not \"Name: value\"", i+1)
		}
		switch strings.ToLower(name) {
		case "content-type", "accept", "content-length", "host", "mcp-method", "mcp-name", "mcp-protocol-version":
			return nil, fmt.Errorf("--upstream-header number %d sets %s, which the proxy sets itself", i+1, name)
		}
		h.Add(name, strings.TrimSpace(val))
	}
	return h, nil
}

// headerToken reports whether name is an HTTP field name (RFC 9110 token).
func headerToken(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func runProxy(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return proxyMain(ctx, args, os.Stdin, stdout, stderr, nil)
}

// proxyMain runs the proxy until ctx ends; ready gets the HTTP address.
func proxyMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, ready func(addr string)) int {
	o, err := parseProxy(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err == nil {
		err = o.checkSecretFiles()
	}
	if err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm proxy:", err)
		return exitUsage
	}
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm proxy:", err)
		return exitUsage
	}
	harden(log)
	if err := runProxyServer(ctx, o, stdin, stdout, stderr, log, ready); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, "mrtr-wasm proxy:", err)
			return exitUsage
		}
		log.Error("proxy failed", "error", err.Error())
		fmt.Fprintln(stderr, "mrtr-wasm proxy:", err)
		return 1
	}
	return exitOK
}

type usageError struct{ error }

func openUpstream(ctx context.Context, o *proxyOptions, log *slog.Logger) (upstream.Upstream, error) {
	if o.upstreamURL != "" {
		h, err := parseHeaders(o.upstreamHeaders)
		if err != nil {
			return nil, usageError{err}
		}
		ts, err := o.upstreamOAuth.tokenSource(ctx, o.upstreamURL, h)
		if err != nil {
			return nil, usageError{err}
		}
		u, err := upstream.NewHTTP(upstream.HTTPOptions{URL: o.upstreamURL, Header: h, Timeout: o.upstreamTimeout, MaxBody: o.upstreamMaxBody, TokenSource: ts})
		if err != nil {
			return nil, usageError{err}
		}
		// A server of the 2025 era gets an upstream session per principal.
		up, err := upstream.DetectHTTP(ctx, u, o.upstreamRoots)
		if _, legacy := up.(*upstream.LegacyHTTP); legacy {
			log.Warn("the upstream does not answer server/discover; it answered the legacy initialize: one upstream session per principal", "upstream", u.ID())
		}
		return up, err
	}
	return openStdioUpstream(ctx, o, log)
}

func runProxyServer(ctx context.Context, o *proxyOptions, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger, ready func(string)) error {
	keys, err := loadKeys(&o.serveOptions, stderr, log)
	if err != nil {
		return usageError{err}
	}
	led, err := ledger.Open(ctx, o.ledger)
	if err != nil {
		return fmt.Errorf("--ledger: %w", err)
	}
	defer led.Close()
	pol, stopReload, err := loadDeployedPolicy(ctx, &o.serveOptions, log)
	if err != nil {
		return err
	}
	defer stopReload()
	tel, err := telemetry.Setup(ctx, "mrtr-wasm-proxy", version())
	if err != nil {
		return fmt.Errorf("OpenTelemetry: %w", err)
	}
	defer shutdownTelemetry(tel, log)
	engine, gopts := guardOptions(&o.serveOptions, keys, led)
	gopts = append(gopts, host.WithPolicy(observe.TracePolicy(pol, tel)),
		// An upstream's own requestState travels inside ours.
		host.WithMaxStateBytes(64<<10))
	if o.cacheDir != "" {
		gopts = append(gopts, host.WithCompilationCache(o.cacheDir))
	}
	gopts = append(gopts, testGuardOptions...)
	guard, err := host.New(ctx, gopts...)
	if err != nil {
		return err
	}
	defer guard.Close(context.Background())

	al, closeAudit, err := openAudit(&o.serveOptions, log)
	if err != nil {
		return err
	}
	defer closeAudit()
	up, err := openUpstream(ctx, o, log)
	if err != nil {
		return err
	}
	defer up.Close()
	ln, lerr := net.Listen("tcp", o.addr)
	if lerr != nil && !o.stdio {
		return fmt.Errorf("--addr: %w", lerr)
	}
	publicURL := o.publicURL
	if publicURL == "" && ln != nil {
		publicURL = "http://" + browserAddr(ln.Addr().String())
	}
	authn, err := o.identity.Build(ctx, identity.Options{PublicURL: publicURL, Logger: log})
	if err != nil {
		return err
	}
	if authn == nil && !o.stdio {
		log.Warn("no --oauth-issuer or --auth-tokens: every caller is the principal \"anonymous\" and nobody can be told apart")
	}
	px, err := proxy.New(proxy.Config{Guard: guard, Upstream: up, Version: version(), Auth: authn, PassToken: o.passToken, ForwardPrincipal: o.forwardPrincipal,
		Logger: log, Telemetry: tel, SessionIdle: o.sessionIdle, MaxSessions: o.maxSessions, MaxStreams: o.maxStreams, ToolsMinTTL: minTTL(o.toolsMinTTL),
		FetchTimeout: o.upstreamTimeout, Ready: readyChecks(led, pol, log), MaxPending: o.maxPending, MaxPendingPerPrincipal: o.maxPendingOne, Audit: al})
	if err != nil {
		return err
	}
	defer px.Close() // before the upstream closes: its waiting rounds hear cancel
	log.Info("mrtr-wasm proxy starting", "upstream", up.ID(), "keys", len(guard.KeyIDs()), "key_ids", strings.Join(guard.KeyIDs(), ","),
		"engine", engine.String(), "ledger", ledgerKind(o.ledger), "policy", pol.Info().Revision, "auth", authKind(authn), "tracing", tel.Enabled())

	var hs *http.Server
	var httpDone <-chan error
	if ln != nil {
		h := px.Handler()
		if o.stdio {
			h = px.OpsHandler() // the MCP client is on stdio
		}
		hs, httpDone = serveHTTP(ln, h, requestReadTimeout, log, publicURL, ready)
	}
	var stdio func() error
	if o.stdio {
		stdio = func() error { return px.ServeStdio(ctx, stdin, stdout) }
	}
	return awaitStop(ctx, stdio, httpDone, hs, px.Lifecycle(), o.shutdown, log)
}

// minTTL maps --tools-min-ttl 0 ("none") to the Config's "none".
func minTTL(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
