package upstream

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
)

// StdioConfig describes a stdio child and how it is supervised. Zero
// values take the defaults named on each field.
type StdioConfig struct {
	// Command and Args start the child; Command is looked up in the
	// proxy's PATH.
	Command string
	Args    []string
	// Env is the child's whole environment (NAME=VALUE): nothing of the
	// proxy's own environment is passed unless it is listed here (see
	// StdioEnv).
	Env []string
	Dir string
	// Credential, when set, runs the child as another user and group
	// (the proxy must be root), so that it cannot read the proxy's files
	// or memory; without it the child can read any file the proxy can.
	Credential *syscall.Credential
	// Logger receives the child's stderr and the supervisor's events.
	Logger *slog.Logger
	// Version is the proxy's version in its clientInfo.
	Version string
	// StartTimeout bounds the start: spawning the child and its answer to
	// server/discover (or to initialize). Default 30 s.
	StartTimeout time.Duration
	// CallTimeout bounds one call (0: only the caller's context does).
	CallTimeout time.Duration
	// MaxMessage bounds one message from the child. Default 4 MiB.
	MaxMessage int
	// RestartBackoff is the delay before the first restart after a crash;
	// it doubles per crash in a row up to MaxBackoff. Defaults 200 ms, 30 s.
	RestartBackoff, MaxBackoff time.Duration
	// CrashLoop is how many crashes in a row (a child that ran for
	// StableAfter resets the count) end the restarts: the upstream is then
	// unhealthy for good. Defaults 5, 30 s.
	CrashLoop   int
	StableAfter time.Duration
	// StderrRate and StderrBurst limit how many stderr lines per second
	// reach the log; the others are counted. Defaults 20, 200.
	StderrRate  float64
	StderrBurst int
	// Stderr is what the log gets of the child's stderr: StderrLog (each
	// line, escaped; the default), StderrSize or StderrDrop.
	Stderr string
	// ShutdownGrace is how long Close waits after closing the child's stdin
	// and again after SIGTERM, before SIGKILL. Default 2 s.
	ShutdownGrace time.Duration
	// Unrouted gets the messages from the child that belong to no call: a
	// notification without a known progress token, and a server-to-client
	// request while not exactly one call is in flight (a request while one
	// call is in flight goes to that call's onMessage, and so does a legacy
	// child's log message). By default a notification is logged by method
	// and a request is refused with RefuseServerRequest (RefuseOutsideCall
	// for a legacy child).
	Unrouted func(raw []byte)
	// Roots declares the roots capability in a legacy child's initialize,
	// so that it may ask roots/list during a call (off: see LegacyCapabilities).
	Roots bool
	// MaxQueued bounds the bytes queued for slow readers across all calls
	// (of every child of a PerPrincipal): a message that would pass it
	// fails its call (CodeTooLarge). Default DefaultMaxQueued.
	MaxQueued int64
	queued    *byteBudget // shared by the children made from this config
	// RoundHold (PerPrincipal only) is how long a child whose calls all
	// wait for rounds is kept from other principals that find every child
	// busy. Default DefaultRoundHold.
	RoundHold time.Duration
}

// legacyVersion is what a child that does not know server/discover is
// offered in initialize.
const legacyVersion = "2025-11-25"

// maxQueued bounds the messages waiting for one call's onMessage.
const maxQueued = 4096

// queueBudget is how many MaxMessage's worth of bytes may wait for one
// call's onMessage (a slow client). Past it the call fails (CodeTooLarge)
// and the child is told to cancel it, rather than the reader waiting: the
// reader is the only one for every call on the child, so backpressure on
// one slow client would stall all the others.
const queueBudget = 4

// Stdio is a supervised stdio child: one process, JSON-RPC multiplexed by
// id over its stdin and stdout, restarted when it dies.
type Stdio struct {
	cfg  StdioConfig
	log  *slog.Logger
	id   string
	name string
	next atomic.Int64

	mu       sync.Mutex
	cur      *child
	ready    chan struct{} // closed when cur is set, or on failure or close
	failed   error         // the crash loop that ended the restarts
	closed   bool
	legacy   bool
	discover json.RawMessage

	done    chan struct{}
	stopped chan struct{}
}

// child is one run of the process.
type child struct {
	s      *Stdio
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File
	wsem   chan struct{} // one writer at a time, cancellable
	start  time.Time
	exited chan struct{} // closed once the process is gone and reaped
	gone   chan struct{} // closed when the process is reaped, before the drain
	read   chan struct{} // closed when stdout hits EOF
	cause  error         // why it exited (set before gone is closed)

	mu      sync.Mutex
	pending map[int64]*call
	dead    bool
}

// call is one request in flight.
type call struct {
	id        int64
	origID    []byte
	origToken []byte // the client's progress token, when it sent one
	takesAll  bool   // the caller takes requests from the child (onMessage)
	token     string // ours, as it appears in the child's messages

	mu     sync.Mutex
	queue  [][]byte
	queued int         // bytes in queue
	budget int         // most bytes queued (queueBudget × MaxMessage)
	shared *byteBudget // the bytes queued by all calls (MaxQueued)
	over   bool        // its caller has returned: nothing more is queued
	final  []byte
	err    error
	notify chan struct{}
}

func (c *call) push(raw []byte, final bool, err error) {
	c.mu.Lock()
	switch {
	case c.final != nil || c.err != nil || c.over:
	case err != nil:
		c.err = err
	case final:
		c.final = raw
	case len(c.queue) >= maxQueued:
		c.err = Errorf(CodeBadResponse, "the upstream sent more messages for this call than the proxy queues", nil)
	case c.budget > 0 && c.queued+len(raw) > c.budget:
		c.err = Errorf(CodeTooLarge, fmt.Sprintf("the upstream sent more for this call than the %d bytes the proxy holds while its client reads", c.budget), nil)
	case !c.shared.take(len(raw)):
		c.err = Errorf(CodeTooLarge, fmt.Sprintf("the proxy already holds %d bytes for clients that read slowly (its overall limit): this call is failed rather than hold more", c.shared.max), nil)
	default:
		c.queue = append(c.queue, raw)
		c.queued += len(raw)
	}
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// NewStdio starts the child and waits for its answer to server/discover
// (or to initialize, for a child that predates 2026-07-28). A child that
// fails its first start is an error; later crashes restart it.
func NewStdio(ctx context.Context, cfg StdioConfig) (*Stdio, error) {
	if cfg.Command == "" {
		return nil, errors.New("upstream: no command for the stdio child")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.StartTimeout, 30*time.Second)
	def(&cfg.RestartBackoff, 200*time.Millisecond)
	def(&cfg.MaxBackoff, 30*time.Second)
	def(&cfg.StableAfter, 30*time.Second)
	def(&cfg.ShutdownGrace, 2*time.Second)
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = 4 << 20
	}
	if cfg.CrashLoop <= 0 {
		cfg.CrashLoop = 5
	}
	if cfg.StderrRate <= 0 {
		cfg.StderrRate = 20
	}
	if cfg.StderrBurst <= 0 {
		cfg.StderrBurst = 200
	}
	if err := CheckStderrMode(cfg.Stderr); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.queued == nil {
		cfg.queued = newByteBudget(cfg.MaxQueued)
	}
	sum := sha256.New()
	for _, a := range append([]string{cfg.Command}, cfg.Args...) {
		sum.Write([]byte(a))
		sum.Write([]byte{0})
	}
	name := filepath.Base(cfg.Command)
	s := &Stdio{
		cfg: cfg, name: name,
		// Arguments may hold secrets: the id shows the program and a hash.
		id:      "stdio:" + name + "#" + hex.EncodeToString(sum.Sum(nil))[:16],
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	s.log = cfg.Logger.With("upstream", s.id)
	c, err := s.start(ctx)
	if err != nil {
		close(s.stopped)
		return nil, err
	}
	s.setCurrent(c)
	go s.supervise(c)
	return s, nil
}

// ID names the child by its program and a hash of its command line.
func (s *Stdio) ID() string { return s.id }

// Discovery returns the child's answer to server/discover, or to
// initialize when legacy is true.
func (s *Stdio) Discovery() (result json.RawMessage, legacy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.discover, s.legacy
}

// Health is nil while a child is up, an unavailable error while it
// restarts, and the crash loop's error once restarts have stopped.
func (s *Stdio) Health() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return Errorf(CodeClosed, "the upstream is closed", nil)
	case s.failed != nil:
		return s.failed
	case s.cur == nil:
		return Errorf(CodeUnavailable, "the upstream process is restarting", nil)
	}
	return nil
}

// setCurrent publishes a started child; false when Close came first.
func (s *Stdio) setCurrent(c *child) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.cur = c
	close(s.ready)
	return true
}

// detach stops handing out c: calls wait for the next child.
func (s *Stdio) detach(c *child) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == c {
		s.cur = nil
		s.ready = make(chan struct{})
	}
}

// current waits for a running child.
func (s *Stdio) current(ctx context.Context) (*child, error) {
	for {
		s.mu.Lock()
		c, ready, closed, failed := s.cur, s.ready, s.closed, s.failed
		s.mu.Unlock()
		switch {
		case closed:
			return nil, Errorf(CodeClosed, "the upstream is closed", nil)
		case failed != nil:
			return nil, failed
		case c != nil:
			return c, nil
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctxError(ctx, "the upstream process is restarting and was not back in time")
		}
	}
}

func ctxError(ctx context.Context, msg string) error {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return Errorf(CodeTimeout, msg, ctx.Err())
	}
	return ctx.Err()
}

// supervise restarts the child after each crash, with exponential backoff,
// until Close or the crash-loop cap.
func (s *Stdio) supervise(c *child) {
	defer close(s.stopped)
	crashes := 0
	for {
		select {
		case <-c.exited:
		case <-s.done:
			return
		}
		s.detach(c)
		if time.Since(c.start) >= s.cfg.StableAfter {
			crashes = 0
		}
		for {
			crashes++
			if crashes >= s.cfg.CrashLoop {
				err := Errorf(CodeUnavailable, fmt.Sprintf("the upstream process crashed %d times in a row; restarts have stopped", crashes), c.cause)
				s.log.Error("upstream crash loop: not restarting", "crashes", crashes, "cause", errString(c.cause))
				s.mu.Lock()
				if !s.closed {
					s.failed = err
					close(s.ready)
				}
				s.mu.Unlock()
				return
			}
			delay := s.cfg.RestartBackoff << (crashes - 1)
			if delay > s.cfg.MaxBackoff || delay <= 0 {
				delay = s.cfg.MaxBackoff
			}
			s.log.Warn("upstream process exited; restarting", "cause", errString(c.cause), "in", delay.String(), "crashes", crashes)
			select {
			case <-time.After(delay):
			case <-s.done:
				return
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-s.done:
					cancel()
				case <-ctx.Done():
				}
			}()
			n, err := s.start(ctx)
			cancel()
			if err == nil {
				if !s.setCurrent(n) {
					n.stop(s.cfg.ShutdownGrace)
					return
				}
				s.log.Info("upstream process restarted", "pid", n.pid)
				c = n
				break
			}
			s.log.Warn("upstream restart failed", "error", err.Error())
			c = &child{start: time.Now(), cause: err}
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// start spawns a child and runs the handshake within StartTimeout.
func (s *Stdio) start(ctx context.Context) (*child, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	c, err := s.spawn()
	if err != nil {
		return nil, err
	}
	if err := s.handshake(ctx, c); err != nil {
		c.stop(0)
		return nil, err
	}
	return c, nil
}

func (s *Stdio) spawn() (*child, error) {
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	// Never nil: a nil Env would hand the child the proxy's environment,
	// keys included.
	cmd.Env = append([]string{}, s.cfg.Env...)
	cmd.Dir = s.cfg.Dir
	// Its own process group, so that a shutdown or a crash takes the
	// child's children with it; and killed if the proxy dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.cfg.Credential}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, Errorf(CodeUnavailable, "the upstream command could not be started", err)
	}
	c := &child{
		s: s, cmd: cmd, pid: cmd.Process.Pid, stdin: inW, wsem: make(chan struct{}, 1),
		start: time.Now(), exited: make(chan struct{}), gone: make(chan struct{}), read: make(chan struct{}),
		pending: map[int64]*call{},
	}
	s.log.Info("upstream process started", "pid", c.pid)
	go s.readStderr(c, errR)
	go s.readStdout(c, outR)
	go c.wait()
	return c, nil
}

// wait reaps the process, kills what is left of its group, lets stdout
// drain (a response written just before exiting still counts), then fails
// the calls still in flight.
func (c *child) wait() {
	err := c.cmd.Wait()
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	if err == nil {
		err = errors.New("exited with status 0")
	}
	c.cause = err
	// New calls wait for the next child from now on, not during the
	// drain, and not in the moment before the supervisor wakes.
	c.s.detach(c)
	close(c.gone)
	select {
	case <-c.read:
	case <-time.After(time.Second):
	}
	c.stdin.Close()
	c.failAll(Errorf(CodeUnavailable, "the upstream process exited during the call; it is being restarted", err))
	close(c.exited)
}

func (c *child) failAll(err error) {
	c.mu.Lock()
	c.dead = true
	calls := c.pending
	c.pending = map[int64]*call{}
	c.mu.Unlock()
	for _, cl := range calls {
		cl.push(nil, false, err)
	}
}

// stop ends the child: stdin closed (the MCP way to ask a stdio server to
// stop), then SIGTERM to its group, then SIGKILL, grace apart.
func (c *child) stop(grace time.Duration) {
	c.stdin.Close()
	if grace > 0 {
		select {
		case <-c.exited:
			return
		case <-time.After(grace):
		}
		_ = syscall.Kill(-c.pid, syscall.SIGTERM)
		select {
		case <-c.exited:
			return
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	<-c.exited
}

// handshake sends server/discover and, when the child refuses it, the
// legacy initialize.
func (s *Stdio) handshake(ctx context.Context, c *child) error {
	info, _ := json.Marshal(map[string]string{"name": "mrtr-wasm-proxy", "version": s.cfg.Version})
	disc := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":%s}}}`, mcphttp.ProtocolVersion, info)
	res, err := c.roundTrip(ctx, disc, "")
	if err != nil {
		return s.startError(ctx, c, "server/discover", err)
	}
	legacy := false
	if _, isErr := res.get("error"); isErr {
		init := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":%s,"clientInfo":%s}}`, legacyVersion, LegacyCapabilities(s.cfg.Roots), info)
		if res, err = c.roundTrip(ctx, init, ""); err != nil {
			return s.startError(ctx, c, "initialize", err)
		}
		if _, isErr := res.get("error"); isErr {
			return Errorf(CodeBadResponse, "the upstream refused both server/discover and initialize", nil)
		}
		legacy = true
	}
	r, _ := res.get("result")
	result := json.RawMessage(bytes.Clone(res.value(r)))
	// The era is known before initialized is sent: a legacy child may ask
	// (roots/list) the moment it reads it, and the reader must answer as
	// to a legacy child.
	s.mu.Lock()
	s.discover, s.legacy = result, legacy
	s.mu.Unlock()
	if !legacy {
		return nil
	}
	s.log.Warn("upstream does not answer server/discover; it answered the legacy initialize", "pid", c.pid)
	if err := c.write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return s.startError(ctx, c, "initialize", err)
	}
	return nil
}

func (s *Stdio) startError(ctx context.Context, c *child, method string, err error) error {
	if e, ok := AsError(err); ok && e.Code != CodeTimeout {
		return Errorf(e.Code, "the upstream failed during "+method+": "+e.Message, e.Err)
	}
	if ctx.Err() != nil {
		return Errorf(CodeTimeout, fmt.Sprintf("the upstream did not answer %s within %s", method, s.cfg.StartTimeout), err)
	}
	return err
}

// Call sends one request to the child under an id of its own, and
// returns the child's response with the caller's id restored. A legacy
// child gets the request without its 2026-07-28 _meta keys.
func (s *Stdio) Call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error) {
	if s.isLegacy() {
		msg = withoutModernMeta(msg)
	}
	m, err := parseMessage(msg)
	if err != nil || m.method == "" || !m.hasID {
		return nil, fmt.Errorf("upstream: Call needs a JSON-RPC request: %w", errOr(err, "no method or no id"))
	}
	ctx, onMessage, cancel := callTimeout(ctx, s.cfg.CallTimeout, onMessage)
	defer cancel()
	tp := ""
	if h != nil {
		tp = h.Get("traceparent")
	}
	if !validTraceparent(tp) {
		tp = telemetry.Traceparent(ctx)
	}
	for {
		c, err := s.current(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := c.call(ctx, m, tp, onMessage)
		var ns *notSent
		if !errors.As(err, &ns) {
			return resp, err
		}
		// The child died before a byte of the request reached it: the
		// next child gets it, as if the call had come a moment later.
		select {
		case <-c.gone:
		case <-ctx.Done():
			return nil, ns.err
		}
	}
}

// notSent is a call's error when its child died before any of the request
// was written: the request can go to the next child.
type notSent struct{ err error }

func (e *notSent) Error() string { return e.err.Error() }
func (e *notSent) Unwrap() error { return e.err }

func errOr(err error, s string) error {
	if err != nil {
		return err
	}
	return errors.New(s)
}

// Send writes a message that has no response: a notification, or the
// proxy's reply to a request from the child (whose id is the child's).
// notifications/cancelled and notifications/progress from a client name
// the client's ids and tokens, which mean nothing to the child: they are
// dropped (a call's context cancels it).
func (s *Stdio) Send(ctx context.Context, msg []byte, h http.Header) error {
	m, err := parseMessage(msg)
	if err != nil {
		return fmt.Errorf("upstream: Send needs a JSON-RPC message: %w", err)
	}
	if m.hasID && m.method != "" {
		return errors.New("upstream: Send cannot send a request (use Call)")
	}
	if m.method == "notifications/cancelled" || m.method == "notifications/progress" {
		return nil
	}
	c, err := s.current(ctx)
	if err != nil {
		return err
	}
	return c.write(ctx, msg)
}

// QueuedBytes is how many bytes wait for slow readers now, across the
// calls of every child that shares this one's budget.
func (s *Stdio) QueuedBytes() int64 { return s.cfg.queued.held() }

// Close stops the child (stdin closed, SIGTERM, SIGKILL to its process
// group) and fails the calls in flight with CodeClosed.
func (s *Stdio) Close() error {
	return s.closeWith(Errorf(CodeClosed, "the proxy is shutting down", nil))
}

// closeWith is Close, failing the calls in flight with err.
func (s *Stdio) closeWith(err *Error) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.stopped
		return nil
	}
	s.closed = true
	c := s.cur
	s.cur = nil
	close(s.done)
	select {
	case <-s.ready:
	default:
		close(s.ready)
	}
	s.mu.Unlock()
	<-s.stopped
	if c != nil {
		c.failAll(err)
		c.stop(s.cfg.ShutdownGrace)
		s.log.Info("upstream process stopped", "pid", c.pid)
	}
	return nil
}

// roundTrip is the handshake's call: one request, its response.
func (c *child) roundTrip(ctx context.Context, msg []byte, tp string) (*rpcMessage, error) {
	m, err := parseMessage(msg)
	if err != nil {
		return nil, err
	}
	resp, err := c.call(ctx, m, tp, nil)
	if err != nil {
		return nil, err
	}
	return parseMessage(resp)
}

func (c *child) call(ctx context.Context, m *rpcMessage, tp string, onMessage func([]byte) error) ([]byte, error) {
	s := c.s
	cl := &call{id: s.next.Add(1), origID: m.value(m.id), notify: make(chan struct{}, 1), takesAll: onMessage != nil,
		budget: queueBudget * s.cfg.MaxMessage, shared: s.cfg.queued}
	taken := 0     // bytes taken from the queue, not yet through onMessage
	defer func() { // what is still queued goes back to the budget
		cl.mu.Lock()
		n := cl.queued
		cl.queue, cl.queued, cl.over = nil, 0, true
		cl.mu.Unlock()
		cl.shared.give(n + taken)
	}()
	out, err := rewriteRequest(m, cl, tp)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return nil, &notSent{Errorf(CodeUnavailable, "the upstream process exited; it is being restarted", c.cause)}
	}
	c.pending[cl.id] = cl
	c.mu.Unlock()
	if err := c.write(ctx, out); err != nil {
		c.forget(cl.id)
		return nil, err
	}
	for {
		cl.mu.Lock()
		queue, final, cerr := cl.queue, cl.final, cl.err
		taken += cl.queued // held until onMessage has each
		cl.queue, cl.queued = nil, 0
		cl.mu.Unlock()
		for _, raw := range queue {
			var err error
			if onMessage != nil {
				err = onMessage(raw)
			}
			taken -= len(raw)
			cl.shared.give(len(raw))
			if err != nil {
				c.cancel(cl.id, "the client went away")
				return nil, err
			}
		}
		if cerr != nil {
			c.cancel(cl.id, "the proxy's call failed") // still in flight after an overflow
			return nil, cerr
		}
		if final != nil {
			return final, nil
		}
		select {
		case <-cl.notify:
		case <-ctx.Done():
			c.cancel(cl.id, "the proxy's call ended: "+ctx.Err().Error())
			return nil, ctxError(ctx, "the upstream did not answer in time")
		}
	}
}

func (c *child) forget(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// cancel forgets a call and tells the child, so that it may stop work
// nobody waits for; a late response is then dropped.
func (c *child) cancel(id int64, reason string) {
	if !c.forget(id) {
		return
	}
	msg := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":%q}}`, id, reason)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.write(ctx, msg)
}

// write sends one line. A write cut short leaves half a message in the
// pipe, which no later message can follow: the child is then killed and
// restarted.
func (c *child) write(ctx context.Context, msg []byte) error {
	select {
	case c.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctxError(ctx, "the upstream is not reading its input")
	case <-c.gone:
		return &notSent{Errorf(CodeUnavailable, "the upstream process exited; it is being restarted", c.cause)}
	}
	defer func() { <-c.wsem }()
	dl, _ := ctx.Deadline()
	_ = c.stdin.SetWriteDeadline(dl)
	// A cancel cuts the write with a past deadline. Its AfterFunc may start
	// just as the write ends: it must be done before the next writer sets
	// its own deadline, or that writer's write fails (wsem is released
	// only after this).
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.stdin.SetWriteDeadline(time.Unix(1, 0))
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	line := append(msg[:len(msg):len(msg)], '\n')
	n, err := c.stdin.Write(line)
	if err == nil {
		return nil
	}
	if n > 0 {
		c.s.log.Error("upstream stdin write cut short; killing the process", "pid", c.pid)
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		return ctxError(ctx, "the upstream is not reading its input")
	}
	return Errorf(CodeUnavailable, "the upstream process is not accepting input", err)
}

// rewriteRequest gives a request the call's id and progress token, and
// the traceparent in _meta.
func rewriteRequest(m *rpcMessage, cl *call, tp string) ([]byte, error) {
	edits := []edit{{m.id.Start, m.id.End, strconv.AppendInt(nil, cl.id, 10)}}
	p, pms, hasParams, err := paramsObject(m)
	if err != nil {
		return nil, err
	}
	var meta []byte
	metaSpan, hasMeta := rawjson.Find(pms, "_meta")
	if hasMeta {
		mm := metaSpan
		meta = m.raw[p.Start+mm.Start : p.Start+mm.End]
		ms, err := rawjson.Object(meta)
		if err != nil {
			return nil, errors.New("params._meta is not an object")
		}
		if t, ok := rawjson.Find(ms, "progressToken"); ok {
			cl.origToken = meta[t.Start:t.End]
			cl.token = "mrtr-" + strconv.FormatInt(cl.id, 10)
			if meta, err = setMember(meta, "progressToken", appendJSONString(nil, cl.token)); err != nil {
				return nil, err
			}
		}
	}
	if tp != "" {
		if meta == nil {
			meta = []byte("{}")
		}
		var err error
		// A JSON string, not Go quoting (which writes \xff, \U…).
		if meta, err = setMember(meta, "traceparent", appendJSONString(nil, tp)); err != nil {
			return nil, err
		}
	}
	switch {
	case meta == nil:
	case hasMeta:
		edits = append(edits, edit{p.Start + metaSpan.Start, p.Start + metaSpan.End, meta})
	case hasParams:
		params, err := setMember(m.value(p), "_meta", meta)
		if err != nil {
			return nil, err
		}
		edits = append(edits, edit{p.Start, p.End, params})
	default:
		end := bytes.LastIndexByte(m.raw, '}')
		edits = append(edits, edit{end, end, append([]byte(`,"params":{"_meta":`), append(meta, '}')...)})
	}
	return splice(m.raw, edits...), nil
}

// readStdout reads the child's messages, one per line, and routes them.
func (s *Stdio) readStdout(c *child, r *os.File) {
	defer close(c.read)
	defer r.Close()
	br := bufio.NewReaderSize(r, 16<<10)
	garbage := rate.NewLimiter(1, 5)
	for {
		line, long, err := readLine(br, s.cfg.MaxMessage)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				s.log.Warn("upstream stdout read failed", "pid", c.pid, "error", err.Error())
			}
			return
		}
		if long {
			s.log.Warn("upstream message over the size limit dropped", "pid", c.pid, "limit", s.cfg.MaxMessage)
			if id, ok := idInPrefix(line); ok {
				c.fail(id, Errorf(CodeTooLarge, fmt.Sprintf("the upstream's answer is over the %d-byte limit", s.cfg.MaxMessage), nil))
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, err := parseMessage(line)
		if err != nil {
			if garbage.Allow() {
				s.logGarbage(c, line, err)
			}
			if id, ok := idInPrefix(line); ok {
				c.fail(id, Errorf(CodeBadResponse, "the upstream answered with a message that is not valid JSON-RPC", err))
			}
			continue
		}
		s.route(c, m)
	}
}

// logGarbage says what the child wrote that is not JSON-RPC. A line that
// looks like JSON may carry a user's answers, so only its size is logged;
// anything else (a stray print) is shown in part, to help its author.
func (s *Stdio) logGarbage(c *child, line []byte, err error) {
	attrs := []any{"pid", c.pid, "bytes", len(line), "error", err.Error()}
	if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '{' && t[0] != '[' {
		attrs = append(attrs, "start", escapeLog(t[:min(len(t), 80)]))
	}
	s.log.Warn("upstream wrote a line to stdout that is not JSON-RPC (stdio servers must log to stderr)", attrs...)
}

func (c *child) fail(id int64, err error) {
	c.mu.Lock()
	cl := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if cl != nil {
		cl.push(nil, false, err)
	}
}

// route hands a message from the child to the call it belongs to.
func (s *Stdio) route(c *child, m *rpcMessage) {
	if !m.hasID && bytes.Contains(m.raw, subscriptionIDKey) {
		if cl, out := c.subscriptionCall(m); cl != nil {
			cl.push(out, false, nil)
			return
		}
	}
	switch {
	case m.isResponse():
		id, err := strconv.ParseInt(string(m.value(m.id)), 10, 64)
		c.mu.Lock()
		cl := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if err != nil || cl == nil {
			s.log.Debug("upstream response to no call in flight (late, after a cancel)", "pid", c.pid)
			return
		}
		cl.push(withID(m, cl.origID), true, nil)
		return
	case m.method == "notifications/progress":
		if cl, out := c.progressCall(m); cl != nil {
			cl.push(out, false, nil)
			return
		}
	case m.hasID && m.method == "roots/list" && !s.cfg.Roots && s.isLegacy():
		s.log.Info("upstream asked roots/list, which were not declared to it; answered with an error", "pid", c.pid)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.write(ctx, RefuseUndeclared(m.value(m.id), m.method))
		return
	case m.hasID:
		// A request to the client, which 2026-07-28 forbids on stdio: the
		// call it was made for, when that is unambiguous, refuses it (a
		// legacy child's becomes an input round).
		if only := c.onlyCall(); only != nil {
			only.push(m.raw, false, nil)
			return
		}
	case m.method == "notifications/message" && s.isLegacy():
		// A legacy server logs to its session, not to a request: the
		// call, when only one is open, takes it. A legacy child serves one
		// principal, so no other principal's call can get it.
		if only := c.onlyCall(); only != nil {
			only.push(m.raw, false, nil)
			return
		}
	}
	s.unrouted(c, m)
}

// onlyCall is the call in flight when exactly one is, and it takes the
// child's requests (onMessage); nil otherwise.
func (c *child) onlyCall() *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) != 1 {
		return nil
	}
	for _, cl := range c.pending {
		if cl.takesAll {
			return cl
		}
	}
	return nil
}

func (s *Stdio) isLegacy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.legacy
}

var subscriptionIDKey = []byte(`"io.modelcontextprotocol/subscriptionId"`)

// subscriptionCall finds the subscriptions/listen call a notification was
// delivered on: its _meta subscriptionId is the id the child saw, which
// becomes the client's again.
func (c *child) subscriptionCall(m *rpcMessage) (*call, []byte) {
	p, pms, ok, err := paramsObject(m)
	if !ok || err != nil {
		return nil, nil
	}
	mt, ok := rawjson.Find(pms, "_meta")
	if !ok {
		return nil, nil
	}
	at := p.Start + mt.Start
	ms, err := rawjson.Object(m.raw[at : p.Start+mt.End])
	if err != nil {
		return nil, nil
	}
	sid, ok := rawjson.Find(ms, "io.modelcontextprotocol/subscriptionId")
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(string(m.raw[at+sid.Start:at+sid.End]), 10, 64)
	if err != nil {
		return nil, nil
	}
	c.mu.Lock()
	cl := c.pending[n]
	c.mu.Unlock()
	if cl == nil {
		return nil, nil
	}
	return cl, splice(m.raw, edit{at + sid.Start, at + sid.End, cl.origID})
}

// progressCall finds the call of a progress notification by its token and
// restores the client's token.
func (c *child) progressCall(m *rpcMessage) (*call, []byte) {
	p, pms, ok, err := paramsObject(m)
	if !ok || err != nil {
		return nil, nil
	}
	t, ok := rawjson.Find(pms, "progressToken")
	if !ok {
		return nil, nil
	}
	var token string
	if json.Unmarshal(m.raw[p.Start+t.Start:p.Start+t.End], &token) != nil {
		return nil, nil
	}
	id, ok := strings.CutPrefix(token, "mrtr-")
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, nil
	}
	c.mu.Lock()
	cl := c.pending[n]
	c.mu.Unlock()
	if cl == nil || cl.origToken == nil {
		return nil, nil
	}
	return cl, splice(m.raw, edit{p.Start + t.Start, p.Start + t.End, cl.origToken})
}

func (s *Stdio) unrouted(c *child, m *rpcMessage) {
	if s.cfg.Unrouted != nil {
		s.cfg.Unrouted(m.raw)
		return
	}
	if !m.hasID {
		s.log.Debug("upstream notification for no call", "pid", c.pid, "method", m.method)
		return
	}
	reply := RefuseServerRequest(m.value(m.id), m.method)
	if s.isLegacy() {
		c.mu.Lock()
		open := len(c.pending)
		c.mu.Unlock()
		s.log.Info("upstream sent a server-to-client request outside a call; answered with an error", "pid", c.pid, "method", m.method, "calls_open", open)
		reply = RefuseOutsideCall(m.value(m.id), m.method)
		if open > 1 {
			// The real cause: the proxy cannot tell which call asks.
			reply = refusal(m.value(m.id), fmt.Sprintf("mrtr-wasm proxy: %s arrived while %d calls of this user were open on this server; the proxy cannot tell which of them asks (one call at a time of a user can ask): try again when the other calls are done", m.method, open))
		}
	} else {
		s.log.Warn("upstream sent a server-to-client request, which MCP 2026-07-28 forbids; refused", "pid", c.pid, "method", m.method)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.write(ctx, reply)
}

// RefuseOutsideCall is the error reply to a legacy upstream's
// server-to-client request that belongs to no call the proxy can tell (none
// is open on its session, or several are): the proxy asks a client only on
// behalf of one of its calls, as an input round, and answers at once
// rather than leave the server waiting.
func RefuseOutsideCall(id []byte, method string) []byte {
	return refusal(id, "mrtr-wasm proxy: "+method+" arrived outside any single call; the proxy asks its clients only during one of their calls, so there is nobody to ask now")
}

// RefuseUndeclared is the error reply to a legacy upstream's request for a
// capability the proxy did not declare to it (roots without
// --upstream-roots): no client is asked.
func RefuseUndeclared(id []byte, method string) []byte {
	return refusal(id, "mrtr-wasm proxy: "+method+" needs a capability that was not declared to this server")
}

// LegacyCapabilities are the client capabilities the proxy declares in its
// initialize to a legacy upstream: elicitation (form and URL) and sampling,
// which become input rounds for the client of the call; roots only when
// asked, because a server takes a client's roots as the directories it may
// work in (server-filesystem replaces its command-line directories with
// them), so declaring them lets remote clients choose. A 2026-07-28 client
// declares its capabilities per request; one that lacks a kind when the
// upstream asks for it is told so by the proxy.
func LegacyCapabilities(roots bool) string {
	if roots {
		return `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`
	}
	return `{"elicitation":{"form":{},"url":{}},"sampling":{}}`
}

// RefuseServerRequest is the error reply to a server-to-client request
// from an upstream speaking to the proxy: it tells the server's author
// what to do instead.
func RefuseServerRequest(id []byte, method string) []byte {
	return refusal(id, "server-to-client requests ("+method+") are not supported by this MCP 2026-07-28 proxy: return a result with resultType \"input_required\" and inputRequests instead")
}

// refusal is a -32601 error reply to the upstream's request id.
func refusal(id []byte, msg string) []byte {
	b, _ := json.Marshal(msg)
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":%s}}`, id, b)
}

// readLine reads one line without its newline. A line over max is
// drained, and long is true with the line's first 4 KiB (where its id
// usually is).
func readLine(br *bufio.Reader, max int) (line []byte, long bool, err error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > max+1 {
			if !long {
				buf = append(buf, frag[:min(len(frag), 4096)]...)
				if len(buf) > 4096 {
					buf = buf[:4096]
				}
				long = true
			}
		} else if !long {
			buf = append(buf, frag...)
		}
		switch {
		case err == nil:
			if long {
				return buf, true, nil
			}
			return bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r")), false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0 && !long:
			return buf, false, nil
		default:
			return nil, false, err
		}
	}
}

// readStderr logs the child's stderr, line by line, rate-limited.
func (s *Stdio) readStderr(c *child, r *os.File) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 4<<10)
	lim := rate.NewLimiter(rate.Limit(s.cfg.StderrRate), s.cfg.StderrBurst)
	dropped := 0
	for {
		line, long, err := readLine(br, 4096)
		if err != nil {
			break
		}
		if !lim.Allow() {
			dropped++
			continue
		}
		if dropped > 0 {
			s.log.Warn("upstream stderr lines dropped (rate limit)", "pid", c.pid, "dropped", dropped)
			dropped = 0
		}
		if s.cfg.Stderr == StderrDrop {
			continue
		}
		if s.cfg.Stderr == StderrSize {
			s.log.Info("upstream stderr", "pid", c.pid, "bytes", len(line), "cut", long)
			continue
		}
		text := escapeLog(line)
		if long {
			text += "… (cut)"
		}
		s.log.Info("upstream stderr", "pid", c.pid, "line", text)
	}
	if dropped > 0 {
		s.log.Warn("upstream stderr lines dropped (rate limit)", "pid", c.pid, "dropped", dropped)
	}
}

// StdioEnv builds a child's environment from --upstream-env NAME=VALUE
// settings and --upstream-env-pass names (taken from the proxy's own
// environment through lookup when set there). The proxy's keys are never
// passed.
func StdioEnv(set, pass []string, lookup func(string) (string, bool)) ([]string, error) {
	env := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	// Errors name a setting by its place on the command line, never by
	// its text: a mistyped one may be the secret itself (--upstream-env
	// "$TOKEN").
	check := func(name, flag string, i int) error {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return fmt.Errorf("%s number %d is not a variable name", flag, i+1)
		}
		if name == "MRTR_KEYS" {
			return fmt.Errorf("%s: MRTR_KEYS is the proxy's own keys and is never passed to the upstream", flag)
		}
		return nil
	}
	for i, p := range pass {
		if err := check(p, "--upstream-env-pass", i); err != nil {
			return nil, err
		}
		if v, ok := lookup(p); ok {
			put(p, v)
		}
	}
	for i, kv := range set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--upstream-env number %d is not NAME=VALUE (it has no '=')", i+1)
		}
		if err := check(k, "--upstream-env", i); err != nil {
			return nil, err
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("--upstream-env: the value of %s holds a NUL byte", k)
		}
		put(k, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out, nil
}
