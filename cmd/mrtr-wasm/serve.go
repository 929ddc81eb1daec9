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
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/audit"
	"github.com/mrtr-wasm/mrtr-wasm/internal/conformance"
	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/observe"
	"github.com/mrtr-wasm/mrtr-wasm/internal/ops"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/postgres"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

const serveUsage = `usage: mrtr-wasm serve [flags]

Runs the demo MCP 2026-07-28 server: book_demo_call, list_bookings and
connect_calendar, each guarded by mrtr-wasm, over Streamable HTTP at
http://ADDR/mcp (or stdio with --stdio), with /connect/, /healthz and
/metrics beside it.

Keys come from MRTR_KEYS or --keys FILE (` + "`mrtr-wasm keygen`" + ` makes one); with
neither, an ephemeral key is generated and rounds do not survive a restart.

Traces (OpenTelemetry, OTLP over HTTP) are off unless the standard
variables turn them on: OTEL_EXPORTER_OTLP_ENDPOINT (or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp).

flags:
`

// checkBounds refuses shared flags whose value would turn a limit off: a
// negative --session-idle, for one, would keep sessions for ever.
func (o *serveOptions) checkBounds() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--state-ttl", o.stateTTL}, {"--session-idle", o.sessionIdle}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive (got %s)", d.name, d.v))
		}
	}
	if o.shutdown < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout must not be negative (got %s)", o.shutdown))
	}
	if o.maxRounds < 1 || o.maxRounds > host.MaxRoundsLimit {
		errs = append(errs, fmt.Errorf("--max-rounds must be between 1 and %d (got %d)", host.MaxRoundsLimit, o.maxRounds))
	}
	if o.maxSessions <= 0 {
		errs = append(errs, fmt.Errorf("--max-sessions must be positive (got %d)", o.maxSessions))
	}
	if o.maxStreams <= 0 {
		errs = append(errs, fmt.Errorf("--max-streams must be positive (got %d)", o.maxStreams))
	}
	return errors.Join(errs...)
}

// addSharedFlags registers the flags serve and proxy share (they mean the
// same thing in both).
func addSharedFlags(fs *flag.FlagSet, o *serveOptions) {
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "HTTP listen address (the MCP endpoint is /mcp)")
	fs.StringVar(&o.keysFile, "keys", "", "file of k4.local keys (the MRTR_KEYS format; mode 0600 or stricter); default: the MRTR_KEYS environment variable")
	o.identity.Register(fs)
	fs.StringVar(&o.policyDir, "policy", "", "policy directory (.rego files and data/); default: the shipped policies")
	fs.StringVar(&o.policyData, "policy-data", "", "data file name in the policy's data/ (default: demo for serve, proxy for proxy)")
	fs.StringVar(&o.ledger, "ledger", "memory:", "replay ledger: memory:, sqlite:/path/ledger.db, redis://host:6379/0 or postgres://… (the --crm's database and search_path: bookings commit with the ledger)")
	fs.DurationVar(&o.stateTTL, "state-ttl", host.DefaultTTL, "how long a requestState stays valid (the policy may narrow it)")
	fs.IntVar(&o.maxRounds, "max-rounds", host.DefaultMaxRounds, "most input rounds one request may take (the policy may narrow it per tool; the replay ledger keeps a finished request for this many --state-ttl)")
	fs.StringVar(&o.engine, "engine", "wasm", "guard engine: wasm (guard.wasm through wazero) or native")
	fs.StringVar(&o.logFormat, "log-format", "json", "log format: json or text (logs go to stderr)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.DurationVar(&o.shutdown, "shutdown-timeout", 30*time.Second, "how long a shutdown waits for requests in flight")
	fs.DurationVar(&o.sessionIdle, "session-idle", server.DefaultSessionIdle, "close a legacy (2025-era) client's session after this long without a request")
	fs.IntVar(&o.maxSessions, "max-sessions", server.DefaultMaxSessions, "most live legacy sessions, 16 per principal (a principal's 17th closes its least recently used one; past the total an initialize gets HTTP 503)")
	fs.StringVar(&o.auditFile, "audit", "", "append every input round and decision to this hash-chained audit `FILE` (mode 0600; mrtr-wasm audit verify checks it)")
	fs.IntVar(&o.maxStreams, "max-streams", mcphttp.DefaultMaxStreams, "most subscriptions/listen streams open at once, 16 per principal (a further one gets HTTP 503)")
}

// serveOptions are the parsed flags of serve.
type serveOptions struct {
	addr, publicURL, keysFile, policyDir, policyData            string
	ledger, dataDir, crm, audience, engine, logFormat, logLevel string
	cacheDir, auditFile                                         string
	identity                                                    identity.Flags
	stdio, conformance                                          bool
	stateTTL, shutdown, sessionIdle                             time.Duration
	maxSessions, maxRounds, maxStreams                          int
}

func parseServe(args []string, stderr io.Writer) (*serveOptions, error) {
	o := &serveOptions{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage)
		fs.PrintDefaults()
	}
	addSharedFlags(fs, o)
	fs.StringVar(&o.dataDir, "data", "mrtr-data", "data directory (the CRM's SQLite file, the wasm compilation cache); created on first run")
	fs.StringVar(&o.crm, "crm", "", "CRM database: sqlite:/path/crm.db, or postgres://USER@HOST:5432/DB?sslmode=disable for a CRM that several instances share (default sqlite:DATA/crm.db)")
	fs.BoolVar(&o.conformance, "conformance", false, "also serve the fixture tools of the official conformance suite")
	fs.StringVar(&o.cacheDir, "wasm-cache", "", "directory for wazero's compiled guard.wasm (default DATA/wasm-cache)")
	fs.StringVar(&o.audience, "audience", "mrtr-wasm-demo", "audience bound into every requestState (instances sharing keys must share it)")
	fs.BoolVar(&o.stdio, "stdio", false, "serve MCP on stdin/stdout (the HTTP listener still serves /connect, /healthz, /metrics)")
	fs.StringVar(&o.publicURL, "public-url", "", "base URL browsers use to reach this server, for /connect links (default http://ADDR)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("serve takes no arguments (got %q)", fs.Arg(0))
	}
	if o.cacheDir == "" {
		o.cacheDir = filepath.Join(o.dataDir, "wasm-cache")
	}
	if o.engine != "wasm" && o.engine != "native" {
		return nil, fmt.Errorf("--engine must be wasm or native")
	}
	if err := o.checkBounds(); err != nil {
		return nil, err
	}
	if err := o.identity.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// runServe is `mrtr-wasm serve`: it runs until SIGINT or SIGTERM, then
// finishes the requests in flight.
func runServe(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args, os.Stdin, stdout, stderr, nil)
}

// serve runs the server until ctx ends. ready, when set, gets the HTTP
// address once the listener is up.
func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, ready func(addr string)) int {
	o, err := parseServe(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = o.checkSecretFiles()
	}
	if err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm serve:", err)
		return 2
	}
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm serve:", err)
		return 2
	}
	harden(log)
	if err := runServer(ctx, o, stdin, stdout, stderr, log, ready); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, "mrtr-wasm serve:", err)
			return 2
		}
		log.Error("serve failed", "error", err.Error())
		fmt.Fprintln(stderr, "mrtr-wasm serve:", err)
		return 1
	}
	return 0
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	ho := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("--log-format must be json or text")
}

const ephemeralWarning = `
################################################################################
# WARNING: no keys (neither MRTR_KEYS nor --keys): using an EPHEMERAL key.      #
# Rounds in flight will NOT survive a restart and CANNOT span instances.        #
# For anything but a try-out: mrtr-wasm keygen -o keys && serve --keys keys     #
################################################################################
`

// checkSecretFiles refuses files of secrets that others may read (serve
// and proxy alike).
func (o *serveOptions) checkSecretFiles() error {
	return errors.Join(checkPrivateFile("--keys", o.keysFile), checkPrivateFile("--auth-tokens", o.identity.TokensFile),
		checkPrivateFile("--oauth-client-secret-file", o.identity.ClientSecretFile))
}

// harden keeps the process's secrets from other processes of its user
// (see undumpable); a failure is logged, not fatal.
func harden(log *slog.Logger) {
	if err := undumpable(); err != nil {
		log.Warn("could not make the process undumpable: processes of the same user may read its memory and environment", "error", err.Error())
	}
}

// loadKeys reads --keys, else MRTR_KEYS, else makes an ephemeral key and
// says so, once and loudly. MRTR_KEYS then leaves the environment, so that
// nothing this process starts later can inherit it.
func loadKeys(o *serveOptions, stderr io.Writer, log *slog.Logger) (*host.Keyring, error) {
	defer os.Unsetenv("MRTR_KEYS")
	if o.keysFile != "" {
		return host.LoadKeyFile(o.keysFile)
	}
	k, err := host.KeysFromEnv()
	if err != nil {
		return nil, err
	}
	if k != nil {
		return k, nil
	}
	fmt.Fprint(stderr, ephemeralWarning)
	log.Warn("ephemeral key: rounds will not survive a restart or span instances; set MRTR_KEYS or --keys")
	return host.NewKeyring(), nil
}

func runServer(ctx context.Context, o *serveOptions, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger, ready func(string)) error {
	keys, err := loadKeys(o, stderr, log)
	if err != nil {
		return usageError{err}
	}
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	store, err := openCRM(ctx, o.crm, o.dataDir)
	if err != nil {
		return err
	}
	defer store.Close()
	led, err := ledger.Open(ctx, o.ledger)
	if err != nil {
		return fmt.Errorf("--ledger: %w", err)
	}
	defer led.Close()

	pol, stopReload, err := loadDeployedPolicy(ctx, o, log)
	if err != nil {
		return err
	}
	defer stopReload()

	tel, err := telemetry.Setup(ctx, "mrtr-wasm", version())
	if err != nil {
		return fmt.Errorf("OpenTelemetry: %w", err)
	}
	defer shutdownTelemetry(tel, log)

	engine, base := guardOptions(o, keys, led)
	base = append(base, host.WithCompilationCache(o.cacheDir))
	base = append(base, testGuardOptions...)
	guard, err := host.New(ctx, append(base, host.WithPolicy(observe.TracePolicy(pol, tel)))...)
	if err != nil {
		return err
	}
	defer guard.Close(context.Background())

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
	switch {
	case authn == nil:
		log.Warn("no --oauth-issuer or --auth-tokens: every caller is the principal \"anonymous\" and nobody can be told apart")
	case authn.OAuth() && authn.Login() == nil:
		log.Warn("--oauth-issuer without --oauth-client-id: the /connect page cannot sign people in and refuses to take keys")
	}
	al, closeAudit, err := openAudit(o, log)
	if err != nil {
		return err
	}
	defer closeAudit()
	var audited observe.Guard = guard
	if al != nil {
		audited = audit.Wrap(guard, al, func(err error) { log.Error("audit record not written", "error", err.Error()) })
	}
	cfg := server.Config{
		Guard: audited, CRM: store, Auth: authn, PublicURL: publicURL, Logger: log, Version: version(),
		Telemetry:   tel,
		SessionIdle: o.sessionIdle, MaxSessions: o.maxSessions, MaxStreams: o.maxStreams,
		Ready: readyChecks(led, pol, log),
	}
	// A ledger in the CRM's own PostgreSQL tables (same database and
	// search_path) books in one transaction with its ledger entry.
	if pl, ok := led.(*postgres.Ledger); ok && pl.Where() == store.Where {
		cfg.TxLedger = pl
	}
	if o.conformance {
		// The fixtures ask for sampling and roots, which the demo policy
		// refuses: they get a guard with the same keys and ledger and no
		// deployment policy.
		fg, err := host.New(ctx, base...)
		if err != nil {
			return err
		}
		defer fg.Close(context.Background())
		cfg.Fixtures = func(s *mcp.Server, wrap func(mcp.ToolHandler) mcp.ToolHandler, m *observe.Metrics, log *slog.Logger) {
			conformance.Register(s, wrap, observe.TraceGuard(fg, tel), m, log)
		}
		cfg.Options = func(o *mcp.ServerOptions) { o.CompletionHandler = conformance.Complete }
		cfg.SSE = true
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	log.Info("mrtr-wasm serve starting",
		"keys", len(guard.KeyIDs()), "key_ids", strings.Join(guard.KeyIDs(), ","),
		"engine", engine.String(), "crm", store.Where, "ledger", ledgerKind(o.ledger), "bookings_tx", cfg.TxLedger != nil,
		"policy", pol.Info().Revision, "auth", authKind(authn), "conformance", o.conformance, "tracing", tel.Enabled())

	var hs *http.Server
	var httpDone <-chan error
	if ln != nil {
		h := srv.Handler()
		if o.stdio {
			h = srv.OpsHandler() // the MCP client is on stdio
		}
		hs, httpDone = serveHTTP(ln, h, requestReadTimeout, log, publicURL, ready)
	} else {
		log.Warn("no HTTP listener: /connect pages are unavailable", "error", lerr.Error())
	}

	var stdio func() error
	if o.stdio {
		stdio = func() error { return srv.RunStdio(ctx, stdin, nopWriteCloser{stdout}) }
	}
	return awaitStop(ctx, stdio, httpDone, hs, srv.Lifecycle(), o.shutdown, log)
}

// readyChecks are what /readyz asks of the library layer: the ledger
// answers and the policy evaluates. /readyz shows a state; the log has
// the error (which may name a host, never a password).
func readyChecks(led ledger.Ledger, pol *policy.Engine, log *slog.Logger) []ops.Check {
	return []ops.Check{
		{Name: "ledger", Probe: func(ctx context.Context) error {
			if err := led.Ping(ctx); err != nil {
				log.Warn("not ready: the ledger does not answer", "error", err.Error())
				return errors.New("unavailable")
			}
			return nil
		}},
		{Name: "policy", Probe: func(ctx context.Context) error {
			if _, err := pol.Eval(ctx, policy.AskEntrypoint, []byte(`{}`)); err != nil {
				log.Warn("not ready: the policy does not evaluate", "error", err.Error())
				return errors.New("does not evaluate")
			}
			return nil
		}},
	}
}

// awaitStop serves until ctx ends, the stdio session ends (when stdio is
// set) or the HTTP server fails. Then it drains (readiness turns false,
// new requests get a retryable refusal, those in flight finish within
// shutdown) and stops the HTTP server.
func awaitStop(ctx context.Context, stdio func() error, httpDone <-chan error, hs *http.Server, lc *ops.Lifecycle, shutdown time.Duration, log *slog.Logger) error {
	var runErr error
	if stdio != nil {
		// A read of stdin does not end with ctx: on SIGTERM with the
		// client's pipe still open, stop waiting for it.
		stdioDone := make(chan error, 1)
		go func() { stdioDone <- stdio() }()
		select {
		case runErr = <-stdioDone:
		case <-ctx.Done():
		}
		if errors.Is(runErr, context.Canceled) || errors.Is(runErr, io.EOF) {
			runErr = nil
		}
	} else {
		select {
		case <-ctx.Done():
		case runErr = <-httpDone:
		}
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(context.Background(), shutdown)
	log.Info("draining: not ready, refusing new requests, finishing those in flight", "in_flight", lc.InFlight(), "timeout", shutdown.String())
	if err := lc.Drain(dctx); err != nil {
		log.Error("requests still in flight at the end of --shutdown-timeout", "in_flight", lc.InFlight())
	}
	cancel()
	stopHTTP(hs, max(shutdown-time.Since(start), time.Second), log)
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	log.Info("stopped")
	return runErr
}

// shutdownTelemetry exports the spans still buffered, within a bound.
func shutdownTelemetry(tel *telemetry.Telemetry, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		log.Warn("OpenTelemetry: spans not exported at shutdown", "error", err.Error())
	}
}

// crmOpenTimeout bounds connecting to the CRM and migrating its schema at
// start, so an unreachable PostgreSQL fails the start instead of hanging.
const crmOpenTimeout = 30 * time.Second

// openCRM opens --crm (default: SQLite in the data directory). Its errors
// never repeat the setting, which may hold a password.
func openCRM(ctx context.Context, setting, dataDir string) (*crm.Store, error) {
	if setting == "" {
		setting = "sqlite:" + filepath.Join(dataDir, "crm.db")
	}
	ctx, cancel := context.WithTimeout(ctx, crmOpenTimeout)
	defer cancel()
	store, err := crm.Open(ctx, setting)
	if err != nil {
		return nil, fmt.Errorf("--crm: %w", err)
	}
	return store, nil
}

// testGuardOptions lets tests drive the real guard's clock.
var testGuardOptions []host.Option

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// browserAddr turns a listen address into one a browser can open.
func browserAddr(addr string) string {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		h = "127.0.0.1"
	}
	return net.JoinHostPort(h, p)
}

// ledgerKind names the ledger backend without its address or password.
func ledgerKind(setting string) string {
	k, _, _ := strings.Cut(setting, ":")
	if k == "" {
		return "memory"
	}
	return k
}

// authKind names the authentication in use, for the start log line.
func authKind(a *identity.Authenticator) string {
	switch {
	case a == nil:
		return "none"
	case a.OAuth():
		return "oauth"
	}
	return "tokens"
}

func version() string { return "0.1.0" }

// loadDeployedPolicy loads --policy (or the shipped policies) with --policy-data
// and reloads it on SIGHUP; stop ends the reloading.
func loadDeployedPolicy(ctx context.Context, o *serveOptions, log *slog.Logger) (pol *policy.Engine, stop func(), err error) {
	var popts []policy.Option
	if o.policyData != "" {
		popts = append(popts, policy.WithData(o.policyData))
	}
	if o.policyDir != "" {
		pol, err = policy.Load(ctx, o.policyDir, popts...)
	} else {
		pol, err = policy.Default(ctx, popts...)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--policy: %w", err)
	}
	stop = pol.ReloadOnSIGHUP(ctx, func(err error) {
		if err != nil {
			log.Error("policy reload failed; the previous policy stays", "error", err.Error())
		} else {
			log.Info("policy reloaded", "revision", pol.Info().Revision)
		}
	})
	return pol, stop, nil
}

// guardOptions are the guard options serve and proxy share: keys,
// audience, state TTL, round limit, ledger and engine (--engine).
func guardOptions(o *serveOptions, keys *host.Keyring, led ledger.Ledger) (host.Engine, []host.Option) {
	engine := host.EngineWasm
	if o.engine == "native" {
		engine = host.EngineNative
	}
	return engine, []host.Option{
		host.WithKeys(keys), host.WithAudience(o.audience), host.WithTTL(o.stateTTL), host.WithMaxRounds(o.maxRounds),
		host.WithLedger(led), host.WithEngine(engine),
	}
}

// requestReadTimeout bounds how long a request's headers and body may take to
// arrive. net/http lifts it once the body is in (its background read
// clears the deadline), so it never cuts a response that streams.
const requestReadTimeout = 30 * time.Second

// serveHTTP serves h on ln with the limits serve and proxy share, and
// says where.
func serveHTTP(ln net.Listener, h http.Handler, readTimeout time.Duration, log *slog.Logger, publicURL string, ready func(string)) (*http.Server, <-chan error) {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       readTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	log.Info("listening", "mcp", "http://"+ln.Addr().String()+"/mcp", "public_url", publicURL)
	if ready != nil {
		ready(ln.Addr().String())
	}
	return hs, done
}

// stopHTTP lets the requests in flight finish within timeout (hs nil: no
// listener).
func stopHTTP(hs *http.Server, timeout time.Duration, log *slog.Logger) {
	if hs == nil {
		return
	}
	log.Info("shutting down: finishing requests in flight", "timeout", timeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		log.Error("shutdown did not finish in time", "error", err.Error())
	}
}

// openAudit opens --audit, if set; closing logs the chain's head, which
// is what audit verify --head compares to detect a cut tail.
func openAudit(o *serveOptions, log *slog.Logger) (*audit.Log, func(), error) {
	if o.auditFile == "" {
		return nil, func() {}, nil
	}
	al, err := audit.Open(o.auditFile, 0)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("--audit: %w", err)}
	}
	return al, func() {
		seq, head := al.Head()
		log.Info("audit log closed", "file", o.auditFile, "records", seq, "head", head)
		al.Close()
	}, nil
}
