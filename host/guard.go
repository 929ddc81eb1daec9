package host

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testseam"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/wasm"
)

// Option configures a Guard. Options are applied in order by New; a Guard
// is immutable afterwards except for its keys (SetKeys).
type Option func(*config)

type config struct {
	keys           *Keyring
	audience       string
	ttl            time.Duration
	maxRounds      int
	maxState       int
	poolSize       int
	cacheDir       string
	engine         Engine
	now            func() time.Time
	rand           io.Reader
	wasiRand       io.Reader
	callTimeout    time.Duration
	memoryLimitMiB uint32
	maxMemoryMiB   uint32
	module         []byte
	policy         Policy
	ledger         ledger.Ledger
	ledgerWait     time.Duration
	ledgerLease    time.Duration
	ledgerMargin   time.Duration
	ledgerTimeout  time.Duration
}

// WithKeys sets the keyring (required).
func WithKeys(k *Keyring) Option { return func(c *config) { c.keys = k } }

// WithAudience names this server; states sealed for another audience do
// not open here even under the same keys. Default "mrtr-wasm".
func WithAudience(name string) Option { return func(c *config) { c.audience = name } }

// Defaults and bounds of WithTTL and WithMaxRounds.
const (
	DefaultTTL       = core.DefaultTTLSeconds * time.Second
	DefaultMaxRounds = core.DefaultMaxRounds
	MaxRoundsLimit   = core.MaxRoundsLimit
)

// WithTTL sets how long a requestState stays valid (default 5 minutes).
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithMaxRounds bounds the rounds of one logical request (default 3).
func WithMaxRounds(n int) Option { return func(c *config) { c.maxRounds = n } }

// WithMaxStateBytes caps a requestState in bytes (default 8 KiB), checked
// when sealing and before opening.
func WithMaxStateBytes(n int) Option { return func(c *config) { c.maxState = n } }

// WithPoolSize bounds the number of module instances (default GOMAXPROCS).
// Each call uses one instance at a time; callers beyond the pool wait.
// New starts one; more start when calls overlap, and an instance idle for
// a minute is closed, down to one.
func WithPoolSize(n int) Option { return func(c *config) { c.poolSize = n } }

// WithCompilationCache keeps wazero's compiled code in dir, so that a
// restart skips compiling guard.wasm.
func WithCompilationCache(dir string) Option { return func(c *config) { c.cacheDir = dir } }

// WithEngine chooses EngineWasm (default) or EngineNative.
func WithEngine(e Engine) Option { return func(c *config) { c.engine = e } }

// WithCallTimeout bounds one call into the core (default 5 s). A call
// that runs over is stopped and its instance replaced.
func WithCallTimeout(d time.Duration) Option { return func(c *config) { c.callTimeout = d } }

// WithMemoryLimitMiB sets the guest heap limit in MiB (default 16), roughly
// each instance's linear memory. The guest's garbage is collected between
// calls, when it asks, before its heap nears this limit; the instance is
// out of the pool for those few milliseconds.
func WithMemoryLimitMiB(mib int) Option { return func(c *config) { c.memoryLimitMiB = uint32(mib) } }

// WithMaxMemoryMiB hard-caps each instance's linear memory in MiB (default
// 256). A guest that needs more traps and its instance is replaced.
func WithMaxMemoryMiB(mib int) Option { return func(c *config) { c.maxMemoryMiB = uint32(mib) } }

// withClock replaces the clock, and withRandom the source of nonces and
// operation ids: test seams, reached through internal/testseam (or
// export_test.go) so that no caller can weaken the nonces.
func withClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

func withRandom(r io.Reader) Option { return func(c *config) { c.rand = r } }

func init() {
	testseam.Register(
		func(now func() time.Time) any { return withClock(now) },
		func(r io.Reader) any { return withRandom(r) })
}

// WithModule runs another build of guard.wasm instead of the embedded one.
func WithModule(b []byte) Option { return func(c *config) { c.module = b } }

// Guard is the host side of mrtr-wasm: it runs the guard core, in a pool
// of instances, for the handlers of an MCP server. It is safe for
// concurrent use.
type Guard struct {
	cfg  config
	once *onceLedger
	eng  engine
	idle chan *slot
	live chan struct{}

	upDecisions decisionMemo // the policy's last decision per upstream tool (UpstreamAsk)

	keysMu  sync.RWMutex
	confEnv []byte // the configure envelope; it holds the keys
	keyIDs  []string
	gen     atomic.Uint64
	closed  atomic.Bool
	closeMu sync.RWMutex
	// collecting counts instances out of the pool for a collection
	// between calls (collectIdle); starting, instances being started for
	// the pool (grow), which Close waits for.
	collecting sync.WaitGroup
	starting   sync.WaitGroup
	stopTrim   chan struct{} // closed by Close; nil when nothing trims
}

type slot struct {
	inst instance
	gen  uint64
	idle time.Time // when it was last put back in the pool
}

// New compiles the module once and starts the first instance, so that a
// bad key or module fails here and not at the first request.
func New(ctx context.Context, opts ...Option) (*Guard, error) {
	cfg := config{
		audience:    "mrtr-wasm",
		ttl:         DefaultTTL,
		maxRounds:   DefaultMaxRounds,
		maxState:    core.DefaultMaxState,
		poolSize:    runtime.GOMAXPROCS(0),
		now:         time.Now,
		rand:        defaultRand,
		wasiRand:    defaultRand,
		callTimeout: 5 * time.Second,
		module:      wasm.Guard,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.keys == nil || cfg.keys.Len() == 0 {
		return nil, errors.New("mrtr: no keys: use WithKeys (host.KeysFromEnv, host.LoadKeyFile or host.NewKeyring)")
	}
	if cfg.poolSize < 1 {
		cfg.poolSize = 1
	}
	if cfg.ttl < time.Second || cfg.ttl > core.MaxTTLSeconds*time.Second {
		return nil, fmt.Errorf("mrtr: TTL %v is outside 1s..24h", cfg.ttl)
	}
	g := &Guard{cfg: cfg, once: newOnceLedger(&cfg), idle: make(chan *slot, cfg.poolSize), live: make(chan struct{}, cfg.poolSize)}
	switch cfg.engine {
	case EngineNative:
		g.eng = nativeEngine{}
	default:
		e, err := newWasmEngine(ctx, &g.cfg)
		if err != nil {
			return nil, err
		}
		g.eng = e
		if len(cfg.module) > 0 && &cfg.module[0] == &wasm.Guard[0] {
			reclaim(wasm.Guard) // compiled: nothing reads these bytes again but another New
		}
	}
	g.confEnv = configureEnvelope(&g.cfg, cfg.keys)
	g.gen.Store(1)
	if err := g.startPool(ctx); err != nil {
		_ = g.Close(ctx)
		return nil, err
	}
	if cfg.engine != EngineNative && cfg.poolSize > 1 {
		g.stopTrim = make(chan struct{})
		go g.trimLoop()
	}
	return g, nil
}

// startPool starts and configures the first instance, so that a bad key
// or module fails in New and not at the first request. The rest of the
// pool starts when calls overlap (grow): one instance of guard.wasm holds
// tens of MiB (its linear memory, its share of wazero's heap), and most
// of the time one is all a server or proxy uses.
func (g *Guard) startPool(ctx context.Context) error {
	g.live <- struct{}{}
	return g.startInstance(ctx)
}

// startInstance starts an instance for a pool token the caller took from
// g.live, configures it with the current keys and puts it in the pool. On
// error the token is given back.
func (g *Guard) startInstance(ctx context.Context) error {
	inst, err := g.eng.newInstance(ctx)
	if err != nil {
		<-g.live
		return err
	}
	s := &slot{inst: inst}
	g.keysMu.RLock()
	env, gen := g.confEnv, g.gen.Load()
	g.keysMu.RUnlock()
	var r response
	if err := configureInstance(ctx, inst, env, &r); err != nil {
		g.discard(ctx, s)
		return err
	}
	g.keysMu.Lock()
	if g.keyIDs == nil {
		g.keyIDs = r.KeyIDs
	}
	g.keysMu.Unlock()
	s.gen = gen
	g.release(s)
	return nil
}

// grow starts one more instance for a caller that found none idle, while
// the pool has room, and hands the caller whichever is ready first: the
// new instance or one that another call releases (a call takes a fraction
// of a millisecond, a start tens of milliseconds). The new instance stays
// in the pool either way.
func (g *Guard) grow(ctx context.Context) (*slot, error) {
	started := make(chan error, 1)
	g.starting.Go(func() { started <- g.startInstance(context.WithoutCancel(ctx)) })
	for {
		select {
		case s := <-g.idle:
			return s, nil
		case err := <-started:
			if err != nil {
				return nil, &Error{Code: CodeUnavailable, Message: "could not start a guard instance"}
			}
			started = nil // it is in the pool: take it, or the next one released
		case <-ctx.Done():
			return nil, &Error{Code: CodeUnavailable, Message: "no guard instance free: " + ctx.Err().Error()}
		}
	}
}

// SetKeys replaces the keyring. Instances pick the new keys up before
// their next call; a call sees the old keys or the new, never a mix.
func (g *Guard) SetKeys(ctx context.Context, k *Keyring) error {
	if k == nil || k.Len() == 0 {
		return errors.New("mrtr: no keys")
	}
	env := configureEnvelope(&g.cfg, k)

	// Prove the configuration on an instance before publishing it: a new
	// one while the pool has room, else a pooled one (never more than the
	// pool size at once).
	var s *slot
	select {
	case g.live <- struct{}{}:
		inst, err := g.eng.newInstance(ctx)
		if err != nil {
			<-g.live
			return err
		}
		s = &slot{inst: inst}
	default:
		var err error
		if s, err = g.acquire(ctx); err != nil {
			return err
		}
	}
	var r response
	if err := configureInstance(ctx, s.inst, env, &r); err != nil {
		g.discard(ctx, s)
		return err
	}
	g.keysMu.Lock()
	g.confEnv = env
	g.keyIDs = r.KeyIDs
	s.gen = g.gen.Add(1)
	g.keysMu.Unlock()
	g.release(s)
	return nil
}

// configureEnvelope is the configure request for a keyring (it holds the
// keys: it never leaves the process).
func configureEnvelope(cfg *config, k *Keyring) []byte {
	env := []byte(`{"v":1,"op":"configure","keys":[`)
	for i, key := range k.list() {
		if i > 0 {
			env = append(env, ',')
		}
		env = core.AppendJSONString(env, key)
	}
	env = append(env, `],"audience":`...)
	env = core.AppendJSONString(env, cfg.audience)
	env = append(env, `,"ttl":`...)
	env = strconv.AppendInt(env, int64(cfg.ttl/time.Second), 10)
	env = append(env, `,"maxRounds":`...)
	env = strconv.AppendInt(env, int64(cfg.maxRounds), 10)
	env = append(env, `,"maxState":`...)
	env = strconv.AppendInt(env, int64(cfg.maxState), 10)
	return append(env, '}')
}

func configureInstance(ctx context.Context, inst instance, env []byte, r *response) error {
	out, err := inst.call(ctx, env, 0)
	if err != nil {
		return fmt.Errorf("mrtr: configuring the guard: %w", err)
	}
	if err := json.Unmarshal(out, r); err != nil {
		return fmt.Errorf("mrtr: configuring the guard: bad response: %w", err)
	}
	if !r.OK {
		return r.err()
	}
	return nil
}

// KeyIDs returns the PASERK ids (k4.lid) of the keys, primary first. The
// ids are safe to log; the keys are not.
func (g *Guard) KeyIDs() []string {
	g.keysMu.RLock()
	defer g.keysMu.RUnlock()
	return append([]string(nil), g.keyIDs...)
}

// Close stops every instance. Calls after Close fail.
func (g *Guard) Close(ctx context.Context) error {
	if g.closed.Swap(true) {
		return nil
	}
	if g.stopTrim != nil {
		close(g.stopTrim)
	}
	g.closeMu.Lock()
	defer g.closeMu.Unlock()
	// A start that a caller no longer waits for ends in the pool: let it
	// finish rather than close the runtime under it.
	g.starting.Wait()
	for {
		select {
		case s := <-g.idle:
			s.inst.close(ctx)
		default:
			return g.eng.close(ctx)
		}
	}
}

var errClosed = &Error{Code: CodeUnavailable, Message: "the guard is closed"}

func (g *Guard) acquire(ctx context.Context) (*slot, error) {
	var s *slot
	select {
	case s = <-g.idle:
	default:
		select {
		case s = <-g.idle:
		case g.live <- struct{}{}:
			var err error
			if s, err = g.grow(ctx); err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, &Error{Code: CodeUnavailable, Message: "no guard instance free: " + ctx.Err().Error()}
		}
	}
	if gen := g.gen.Load(); s.gen != gen {
		g.keysMu.RLock()
		env := g.confEnv
		gen = g.gen.Load()
		g.keysMu.RUnlock()
		var r response
		if err := configureInstance(ctx, s.inst, env, &r); err != nil {
			g.discard(ctx, s)
			return nil, &Error{Code: CodeUnavailable, Message: "could not configure a guard instance"}
		}
		s.gen = gen
	}
	return s, nil
}

func (g *Guard) release(s *slot) {
	s.idle = time.Now()
	g.idle <- s
}

// idleTrim is how long an instance may sit unused before the pool closes
// it, down to one instance: its linear memory (up to about 12
// MiB) goes back to the OS. Starting it again when calls overlap costs
// tens of milliseconds of CPU, and no caller waits for it (grow).
const idleTrim = time.Minute

func (g *Guard) trimLoop() {
	t := time.NewTicker(idleTrim / 2)
	defer t.Stop()
	for {
		select {
		case <-g.stopTrim:
			return
		case now := <-t.C:
			g.trim(now)
		}
	}
}

// trim closes the instances idle since before now-idleTrim, keeping one.
func (g *Guard) trim(now time.Time) {
	g.closeMu.RLock()
	defer g.closeMu.RUnlock()
	if g.closed.Load() {
		return
	}
	for range len(g.idle) {
		var s *slot
		select {
		case s = <-g.idle:
		default:
			return
		}
		if len(g.live) > 1 && now.Sub(s.idle) > idleTrim {
			g.discard(context.Background(), s)
			continue
		}
		g.idle <- s // as it was: its idle time stands
	}
}

// collectIdle runs the guest's garbage collection after the call that
// asked for it has returned, so that no caller waits for it, and then
// returns the instance to the pool. Left to itself, the guest collects
// inside calls and spreads the work over hundreds of them (RATIONALE.md).
func (g *Guard) collectIdle(s *slot) {
	g.closeMu.RLock()
	defer g.closeMu.RUnlock()
	ctx := context.Background()
	if g.closed.Load() || s.inst.collect(ctx) != nil {
		g.discard(ctx, s)
		return
	}
	g.release(s)
}

func (g *Guard) discard(ctx context.Context, s *slot) {
	s.inst.close(ctx)
	<-g.live
}

// guestResponse is a response envelope decoded from the guest.
type guestResponse interface {
	ok() bool
	interrupted() bool
	err() error
}

func (r *response) ok() bool          { return r.OK }
func (r *response) interrupted() bool { return r.Interrupted }

// call runs one envelope and decodes the response into r while the
// instance is still held (the output lives in its memory).
func (g *Guard) call(ctx context.Context, env []byte, r guestResponse) error {
	g.closeMu.RLock()
	defer g.closeMu.RUnlock()
	if g.closed.Load() {
		return errClosed
	}
	if len(env) > core.DefaultMaxRequest {
		// Refused here: copying it into the guest would only grow its heap.
		return &Error{Code: CodeRequestTooLarge, Message: "request is larger than " + strconv.Itoa(core.DefaultMaxRequest) + " bytes"}
	}
	s, err := g.acquire(ctx)
	if err != nil {
		return err
	}
	out, err := g.invoke(ctx, s, env)
	if err != nil {
		return err
	}
	if d, ok := r.(rawDecoder); ok {
		err = d.decodeRaw(bytes.Clone(out)) // out is the guest's memory
	} else {
		err = json.Unmarshal(out, r)
	}
	if r.interrupted() {
		// Stopped at a checkpoint: discard the instance all the same, so
		// a call that ran over never leaves anything behind.
		g.discard(ctx, s)
		return &Error{Code: CodeUnavailable, Message: "guard call stopped: deadline exceeded or cancelled"}
	}
	switch {
	case s.inst.bloated():
		// A large request grew this instance's memory, which wasm never
		// gives back: replace it rather than keep the memory.
		g.discard(ctx, s)
	case s.inst.collectDue(ctx):
		g.collecting.Go(func() { g.collectIdle(s) })
	default:
		g.release(s)
	}
	if err != nil {
		return &Error{Code: CodeInternal, Message: "the guard module returned an unreadable response"}
	}
	if !r.ok() {
		return r.err()
	}
	return nil
}

// invoke runs env on the slot's instance. A call is not interrupted from
// outside (wazero can do that only by checking a flag through a trampoline
// at every loop header, which made calls several times slower; RATIONALE.md
// has the figure): the guest asks the host at checkpoints whether to stop,
// and the host answers from the caller's context and the call deadline.
// On error the slot is already discarded.
func (g *Guard) invoke(ctx context.Context, s *slot, env []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		g.release(s)
		return nil, &Error{Code: CodeUnavailable, Message: "guard call not started: " + err.Error()}
	}
	out, err := s.inst.call(ctx, env, g.cfg.callTimeout)
	if err != nil {
		// A trap or a guest exit leaves the instance unusable: replace it
		// and keep serving.
		g.discard(ctx, s)
		return nil, &Error{Code: CodeInternal, Message: "the guard module failed; its instance was replaced"}
	}
	return out, nil
}

// response is the guest's response envelope.
type response struct {
	OK            bool                       `json:"ok"`
	Interrupted   bool                       `json:"interrupted"`
	AnswersDigest string                     `json:"answersDigest"`
	Input         json.RawMessage            `json:"input"`
	Decision      json.RawMessage            `json:"decision"`
	Error         *wireError                 `json:"error"`
	Status        Status                     `json:"status"`
	OperationID   string                     `json:"operationId"`
	Round         int                        `json:"round"`
	Result        *InputRequiredResult       `json:"result"`
	Answers       map[string]json.RawMessage `json:"answers"`
	Declined      []string                   `json:"declined"`
	Remember      int64                      `json:"rememberSeconds"`
	Cancelled     []string                   `json:"cancelled"`
	Progress      string                     `json:"progress"`
	Findings      []Finding                  `json:"findings"`
	KeyIDs        []string                   `json:"keyIds"`
}

type wireError struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Reason  string          `json:"reason"`
	Data    json.RawMessage `json:"data"`
}

func (r *response) err() error {
	if r.Error == nil {
		return &Error{Code: CodeInternal, Message: "the guard module failed without an error"}
	}
	return &Error{Code: r.Error.Code, Message: r.Error.Message, Reason: r.Error.Reason, Data: r.Error.Data}
}

// --- envelopes --------------------------------------------------------------

// envelopeHead starts a call's envelope (guest/ABI.md): the op, the
// host's clock, fresh randomness and the principal.
func (g *Guard) envelopeHead(size int, op, principal string) ([]byte, error) {
	var rnd [48]byte
	if _, err := io.ReadFull(g.cfg.rand, rnd[:]); err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "no randomness"}
	}
	env := make([]byte, 0, size)
	env = append(env, `{"v":1,"op":"`...)
	env = append(env, op...)
	env = append(env, `","now":`...)
	env = strconv.AppendInt(env, g.cfg.now().UnixMilli(), 10)
	env = append(env, `,"rand":"`...)
	env = base64.RawURLEncoding.AppendEncode(env, rnd[:])
	env = append(env, `","principal":`...)
	return core.AppendJSONString(env, principal), nil
}

func (g *Guard) envelope(op string, req *Request) ([]byte, error) {
	size := 512 + len(req.Arguments) + len(req.Capabilities)
	if op == "resume" { // an ask of a retry leaves the answers out: no room for them
		size += len(req.InputResponses) + len(req.RequestState)
	}
	env, err := g.envelopeHead(size, op, req.Principal)
	if err != nil {
		return nil, err
	}
	env = append(env, `,"method":`...)
	env = core.AppendJSONString(env, req.Method)
	env = append(env, `,"target":`...)
	env = core.AppendJSONString(env, req.Target)
	// Raw JSON from the client is checked to be exactly one value before
	// it is spliced in, so it cannot add members to the envelope.
	if env, err = appendRaw(env, "arguments", req.Arguments); err != nil {
		return nil, err
	}
	if env, err = appendRaw(env, "capabilities", req.Capabilities); err != nil {
		return nil, err
	}
	if op == "resume" {
		if env, err = appendRaw(env, "inputResponses", req.InputResponses); err != nil {
			return nil, err
		}
		env = append(env, `,"requestState":`...)
		env = core.AppendJSONString(env, req.RequestState)
	}
	return env, nil
}

func appendRaw(env []byte, name string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return env, nil
	}
	if !json.Valid(raw) {
		code := core.CodeJSONSyntax
		if name == "inputResponses" {
			code = core.CodeResponsesMalformed
		}
		return nil, &Error{Code: code, Message: name + " is not valid JSON"}
	}
	env = append(env, `,"`...)
	env = append(env, name...)
	env = append(env, `":`...)
	return append(env, raw...), nil
}

// AskOption adjusts one Ask.
type AskOption func(*askOptions)

type askOptions struct {
	progress []byte
	after    *Outcome
	policy   []byte // the policy's decision as the envelope's "policy" (nil: no policy)
}

// WithProgress seals the application's own bytes into the state; Resume
// returns them in Outcome.Progress. Keep them small (at most 4 KiB).
func WithProgress(b []byte) AskOption { return func(o *askOptions) { o.progress = b } }

// WithPrevious continues a logical request whose round just completed
// (o, the previous Outcome): the new round keeps its operation id and
// carries its answers, so nothing is asked twice.
func WithPrevious(o *Outcome) AskOption { return func(a *askOptions) { a.after = o } }

// Ask seals a new requestState and returns the InputRequiredResult to send.
// Every input request is linted first: a form that asks for a secret, a
// schema outside the form subset or a mode the client did not declare is
// refused with an *Error.
func (g *Guard) Ask(ctx context.Context, req *Request, inputs []InputRequest, opts ...AskOption) (*InputRequiredResult, error) {
	var o askOptions
	for _, f := range opts {
		f(&o)
	}
	if err := g.policyAsk(ctx, req, inputs, &o); err != nil {
		return nil, err
	}
	env, err := g.envelope("ask", req)
	if err != nil {
		return nil, err
	}
	if env, err = appendInputRequests(env, inputs); err != nil {
		return nil, err
	}
	if len(o.progress) > 0 {
		env = append(env, `,"progress":"`...)
		env = base64.RawURLEncoding.AppendEncode(env, o.progress)
		env = append(env, '"')
	}
	env = o.appendPolicy(env)
	if a := o.after; a != nil {
		if a.Status != Complete {
			return nil, &Error{Code: core.CodeRequestMalformed, Message: "WithPrevious needs a complete outcome"}
		}
		env = append(env, `,"after":{"operationId":`...)
		env = core.AppendJSONString(env, a.OperationID)
		env = append(env, `,"round":`...)
		env = strconv.AppendInt(env, int64(a.Round), 10)
		env = append(env, `,"answers":{`...)
		first := true
		for k, v := range a.Answers {
			if !json.Valid(v) {
				return nil, &Error{Code: core.CodeRequestMalformed, Message: "WithPrevious: an answer of the outcome is not valid JSON"}
			}
			if !first {
				env = append(env, ',')
			}
			first = false
			env = core.AppendJSONString(env, k)
			env = append(env, ':')
			env = append(env, v...)
		}
		env = append(env, "}}"...)
	}
	env = append(env, '}')
	var r response
	if err := g.call(ctx, env, &r); err != nil {
		return nil, err
	}
	return r.Result, nil
}

// appendInputRequests appends "inputRequests" as ask and policy.input
// read it.
func appendInputRequests(env []byte, inputs []InputRequest) ([]byte, error) {
	env = append(env, `,"inputRequests":{`...)
	for i, in := range inputs {
		if i > 0 {
			env = append(env, ',')
		}
		env = core.AppendJSONString(env, in.Key)
		env = append(env, `:{"method":`...)
		env = core.AppendJSONString(env, in.Method)
		var err error
		if env, err = appendRaw(env, "params", in.Params); err != nil {
			return nil, err
		}
		env = append(env, '}')
	}
	return append(env, '}'), nil
}

// Resume checks a retry: it opens the requestState (bound to the
// principal, method, target, arguments and audience), validates every
// answer against the schema that was asked, and says what happened. An
// invalid, tampered or expired state is an *Error with code
// CodeStateInvalid (JSON-RPC -32602, "invalid or expired requestState")
// and a Reason for logs.
func (g *Guard) Resume(ctx context.Context, req *Request) (*Outcome, error) {
	return g.resume(ctx, req, nil)
}

// resume is Resume; ap, when set, is the approval the policy requires.
func (g *Guard) resume(ctx context.Context, req *Request, ap *Approval) (*Outcome, error) {
	if req.RequestState == "" {
		return nil, &Error{Code: core.CodeRequestMalformed, Message: "Resume needs the requestState the client echoed"}
	}
	env, err := g.envelope("resume", req)
	if err != nil {
		return nil, err
	}
	lim, err := g.policyResume(ctx, req)
	if err != nil {
		return nil, err
	}
	env = lim.appendPolicy(env)
	if ap != nil {
		env = appendApproval(env, ap, false)
	}
	env = append(env, '}')
	var r response
	if err := g.call(ctx, env, &r); err != nil {
		return nil, err
	}
	o := &Outcome{
		Status:        r.Status,
		OperationID:   r.OperationID,
		Round:         r.Round,
		Answers:       r.Answers,
		AnswersDigest: r.AnswersDigest,
		Declined:      r.Declined,
		Cancelled:     r.Cancelled,
		remember:      time.Duration(r.Remember) * time.Second,
	}
	if r.Progress != "" {
		o.Progress, _ = base64.RawURLEncoding.DecodeString(r.Progress)
	}
	if r.Status == InputRequired {
		o.InputRequired = r.Result
	}
	return o, nil
}

// Lint checks an input request without asking: the same checks Ask runs.
func (g *Guard) Lint(ctx context.Context, in InputRequest) ([]Finding, error) {
	env := []byte(`{"v":1,"op":"lint","request":{"method":`)
	env = core.AppendJSONString(env, in.Method)
	var err error
	if env, err = appendRaw(env, "params", in.Params); err != nil {
		return nil, err
	}
	env = append(env, "}}"...)
	return g.lint(ctx, env)
}

// LintSchema checks a bare requestedSchema.
func (g *Guard) LintSchema(ctx context.Context, schema json.RawMessage) ([]Finding, error) {
	if !json.Valid(schema) {
		return nil, &Error{Code: core.CodeJSONSyntax, Message: "schema is not valid JSON"}
	}
	env := append([]byte(`{"v":1,"op":"lint","schema":`), schema...)
	env = append(env, '}')
	return g.lint(ctx, env)
}

func (g *Guard) lint(ctx context.Context, env []byte) ([]Finding, error) {
	var r response
	if err := g.call(ctx, env, &r); err != nil {
		return nil, err
	}
	return r.Findings, nil
}
