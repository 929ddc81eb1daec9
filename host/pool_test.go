package host

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingEngine wraps the Guard's real engine and counts the instances
// that are actually running, so that the tests see the pool from outside
// its own bookkeeping (g.live, g.idle).
type countingEngine struct {
	engine
	mu       sync.Mutex
	live     int // running now
	peak     int
	started  int
	closed   int
	calls    atomic.Int64
	overlaps atomic.Int64 // calls that found their instance busy
	lastErr  atomic.Value // the last error an instance returned
	// hold, when set before concurrent use, makes every call wait until
	// it is closed: a test can keep instances busy at once.
	hold chan struct{}
	// collectGate, when set before concurrent use, makes every collection
	// between calls signal collectStarted and wait until it is closed.
	collectGate, collectStarted chan struct{}
	// startGate, when set before concurrent use, makes every new instance
	// wait until it is closed; startErr, when set, fails every start.
	startGate chan struct{}
	startErr  error
}

type countedInstance struct {
	instance
	e    *countingEngine
	busy atomic.Int32
	once sync.Once
}

// instrument puts a countingEngine under g. It wraps the instances already
// in the pool (New starts one); call it before g is used
// concurrently.
func instrument(g *Guard) *countingEngine {
	ce := &countingEngine{engine: g.eng}
	for n := len(g.idle); n > 0; n-- {
		s := <-g.idle
		s.inst = ce.wrap(s.inst)
		g.idle <- s
	}
	g.eng = ce
	return ce
}

// countCalls is instrument for tests that only count guest calls.
func countCalls(g *Guard) *countingEngine { return instrument(g) }

func (e *countingEngine) wrap(in instance) instance {
	e.mu.Lock()
	e.live++
	e.started++
	e.peak = max(e.peak, e.live)
	e.mu.Unlock()
	return &countedInstance{instance: in, e: e}
}

func (e *countingEngine) newInstance(ctx context.Context) (instance, error) {
	if e.startGate != nil {
		<-e.startGate
	}
	if e.startErr != nil {
		return nil, e.startErr
	}
	in, err := e.engine.newInstance(ctx)
	if err != nil {
		return nil, err
	}
	return e.wrap(in), nil
}

func (e *countingEngine) snapshot() (live, peak, started, closed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.live, e.peak, e.started, e.closed
}

func (c *countedInstance) call(ctx context.Context, in []byte, timeout time.Duration) ([]byte, error) {
	c.e.calls.Add(1)
	if c.busy.Add(1) != 1 {
		c.e.overlaps.Add(1)
	}
	defer c.busy.Add(-1)
	if c.e.hold != nil {
		<-c.e.hold
	}
	out, err := c.instance.call(ctx, in, timeout)
	if err != nil {
		c.e.lastErr.Store(err)
	}
	return out, err
}

// collect counts as a use of the instance: a call during it is an overlap.
func (c *countedInstance) collect(ctx context.Context) error {
	if c.busy.Add(1) != 1 {
		c.e.overlaps.Add(1)
	}
	defer c.busy.Add(-1)
	if c.e.collectGate != nil {
		select {
		case c.e.collectStarted <- struct{}{}:
		default:
		}
		<-c.e.collectGate
	}
	return c.instance.collect(ctx)
}

func (c *countedInstance) close(ctx context.Context) {
	c.once.Do(func() {
		c.e.mu.Lock()
		c.e.live--
		c.e.closed++
		c.e.mu.Unlock()
	})
	c.instance.close(ctx)
}

// poolBalanced requires the pool's bookkeeping and the running instances
// to agree once no call is in flight: nothing leaked, nothing lost.
func poolBalanced(t testing.TB, g *Guard, ce *countingEngine) {
	t.Helper()
	g.starting.Wait()
	g.collecting.Wait()
	live, _, _, _ := ce.snapshot()
	if len(g.idle) != len(g.live) || len(g.live) != live {
		t.Errorf("idle %d, live tokens %d, running instances %d: they must be equal at rest", len(g.idle), len(g.live), live)
	}
}

// bigArgs is a request of many small JSON values (n+1 of them).
func bigArgs(n int) json.RawMessage {
	return json.RawMessage(`{"v":[` + strings.Repeat("0,", n) + `0]}`)
}

// oneCall runs a whole ask → resume round and a lint on g.
func oneCall(ctx context.Context, g *Guard, principal string) error {
	req := bookReq(principal)
	res, err := g.Ask(ctx, req, []InputRequest{contactInput()})
	if err != nil {
		return err
	}
	out, err := g.Resume(ctx, retry(req, res.RequestState, annValid))
	if err != nil {
		return err
	}
	if out.Status != Complete {
		return errors.New("status " + string(out.Status))
	}
	_, err = g.Lint(ctx, contactInput())
	return err
}

func TestPoolBoundedUnderLoad(t *testing.T) {
	ctx := context.Background()
	for _, eng := range engines {
		t.Run(eng.String(), func(t *testing.T) {
			const size, workers = 3, 8
			rounds := 200
			if eng == EngineWasm {
				rounds = 40
			}
			g := newGuard(t, eng, WithPoolSize(size))
			ce := instrument(g)
			var wg sync.WaitGroup
			var failures atomic.Int64
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range rounds {
						if err := oneCall(ctx, g, "user"+string(rune('a'+w))); err != nil {
							if failures.Add(1) < 5 {
								t.Errorf("worker %d call %d: %v", w, i, err)
							}
						}
					}
				}()
			}
			wg.Wait()
			live, peak, started, closed := ce.snapshot()
			t.Logf("%d calls: peak %d instances, %d started, %d closed", ce.calls.Load(), peak, started, closed)
			if peak > size {
				t.Errorf("%d instances ran at once, pool size %d", peak, size)
			}
			if peak < 2 {
				t.Errorf("8 workers never used more than one instance")
			}
			if n := ce.overlaps.Load(); n != 0 {
				t.Errorf("%d calls ran on an instance that was already busy", n)
			}
			if closed != 0 || started > size || live != started {
				t.Errorf("instances churned under a clean load: %d started, %d closed", started, closed)
			}
			poolBalanced(t, g, ce)
		})
	}
}

// TestPoolBoundedDuringKeyRotation: SetKeys must not run a pool-size+1th
// instance either, even for a moment.
func TestPoolBoundedDuringKeyRotation(t *testing.T) {
	ctx := context.Background()
	forEngines(t, func(t *testing.T, eng Engine) {
		const size = 2
		g := newGuard(t, eng, WithPoolSize(size))
		ce := instrument(g)
		fillPool(t, g, size)
		if err := g.SetKeys(ctx, NewKeyring()); err != nil {
			t.Fatal(err)
		}
		if err := oneCall(ctx, g, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, peak, _, _ := ce.snapshot(); peak > size {
			t.Errorf("%d instances ran at once during SetKeys, pool size %d", peak, size)
		}
		poolBalanced(t, g, ce)
	})
}

// fillPool makes the pool start n instances (and returns them idle).
func fillPool(t testing.TB, g *Guard, n int) []*slot {
	t.Helper()
	ctx := context.Background()
	var slots []*slot
	for range n {
		s, err := g.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, s)
	}
	for _, s := range slots {
		g.release(s)
	}
	if len(g.live) != n {
		t.Fatalf("%d instances, want %d", len(g.live), n)
	}
	return slots
}

func TestPoolWaitsForAFreeInstance(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		g := newGuard(t, eng, WithPoolSize(1))
		ce := instrument(g)
		s, err := g.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// The only instance is busy: a caller waits, and gives up with
		// its context.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		_, err = g.Ask(ctx, bookReq("alice"), []InputRequest{contactInput()})
		if e := wantErr(t, err, CodeUnavailable); e.JSONRPCCode() != -32603 {
			t.Errorf("JSON-RPC %d", e.JSONRPCCode())
		}
		if _, _, started, _ := ce.snapshot(); started != 1 {
			t.Errorf("a waiting caller started instance number %d beyond the pool", started)
		}
		// A caller that waits gets the instance once it is released.
		done := make(chan error, 1)
		go func() { done <- oneCall(context.Background(), g, "bob") }()
		time.Sleep(10 * time.Millisecond)
		g.release(s)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		poolBalanced(t, g, ce)
	})
}

func TestPoolClose(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng, WithPoolSize(2))
		ce := instrument(g)
		// Close under load: in-flight calls finish or fail cleanly.
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					err := oneCall(ctx, g, "w")
					if err == nil {
						continue
					}
					if e, ok := AsError(err); !ok || e.Code != CodeUnavailable {
						t.Errorf("worker %d: %v", w, err)
					}
					return
				}
			}()
		}
		time.Sleep(50 * time.Millisecond)
		if err := g.Close(ctx); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		if live, _, _, _ := ce.snapshot(); live != 0 {
			t.Errorf("%d instances still running after Close", live)
		}
		if err := g.Close(ctx); err != nil {
			t.Errorf("second Close: %v", err)
		}
		req := bookReq("alice")
		_, err := g.Ask(ctx, req, []InputRequest{contactInput()})
		if e := wantErr(t, err, CodeUnavailable); e.JSONRPCCode() != -32603 {
			t.Errorf("JSON-RPC %d", e.JSONRPCCode())
		}
		_, err = g.Resume(ctx, retry(req, "v4.local.x", annValid))
		wantErr(t, err, CodeUnavailable)
		_, err = g.Lint(ctx, contactInput())
		wantErr(t, err, CodeUnavailable)
		_, err = g.LintSchema(ctx, json.RawMessage(contactSchema))
		wantErr(t, err, CodeUnavailable)
		if live, _, _, _ := ce.snapshot(); live != 0 {
			t.Errorf("a call after Close started an instance")
		}
	})
}

// TestWasmTrapReplacesInstance makes guard.wasm really trap: with 16 MiB
// of linear memory at most, a 1 MiB request of half a million values
// needs more memory than the instance may grow to (the guest collects
// garbage only near its 16 MiB heap limit; a 1 MiB request of tiny
// values takes well over 100 MiB with the defaults).
func TestWasmTrapReplacesInstance(t *testing.T) {
	ctx := context.Background()
	// One instance: New starts the whole pool, and the counts below are
	// about the one that traps and the one that replaces it.
	g := newGuard(t, EngineWasm, WithMaxMemoryMiB(16), WithPoolSize(1))
	ce := instrument(g)
	if err := oneCall(ctx, g, "alice"); err != nil {
		t.Fatal(err)
	}
	liveBefore, _, startedBefore, _ := ce.snapshot()
	req := bookReq("alice")
	req.Arguments = json.RawMessage(`{"marker":"Zebra-7731",` + string(bigArgs(500_000))[1:])
	if len(req.Arguments) > 1<<20 {
		t.Fatalf("request of %d bytes is over the 1 MiB limit", len(req.Arguments))
	}
	_, err := g.Ask(ctx, req, []InputRequest{contactInput()})
	e := wantErr(t, err, CodeInternal)
	trap, _ := ce.lastErr.Load().(error)
	if trap == nil {
		t.Fatal("the instance returned no error: it did not trap")
	}
	t.Logf("guest failure: %.120s", trap)
	if e.JSONRPCCode() != -32603 || strings.Contains(e.Error(), "Zebra") || strings.Contains(e.Error(), "wasm") {
		t.Errorf("trap error %q (JSON-RPC %d): generic, no request data, no internals", e.Error(), e.JSONRPCCode())
	}
	live, _, _, closed := ce.snapshot()
	if live != liveBefore-1 || closed != 1 || len(g.live) != live {
		t.Errorf("after the trap: %d running (was %d), %d closed, %d live tokens", live, liveBefore, closed, len(g.live))
	}
	poolBalanced(t, g, ce)
	// The host keeps serving, on a fresh instance.
	if err := oneCall(ctx, g, "alice"); err != nil {
		t.Fatalf("after a trap: %v", err)
	}
	if _, _, started, _ := ce.snapshot(); started != startedBefore+1 {
		t.Errorf("%d instances started after the trap, want 1", started-startedBefore)
	}
	poolBalanced(t, g, ce)
}

// TestWasmGrownInstanceReplaced: an instance whose linear memory a large
// request grew past twice the guest's own heap limit (read from the
// module, not repeated by the host) is replaced after the call, which
// succeeds; everyday calls keep their instance.
func TestWasmGrownInstanceReplaced(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, EngineWasm, WithPoolSize(1))
	ce := instrument(g)
	for range 20 {
		if err := oneCall(ctx, g, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, started, closed := ce.snapshot(); started != 1 || closed != 0 {
		t.Fatalf("everyday calls: %d instances started, %d closed; want the one instance kept", started, closed)
	}
	s := <-g.idle
	limit := s.inst.(*countedInstance).instance.(*wasmInstance).maxBytes
	g.idle <- s
	if limit != (2*16+16)<<20 {
		t.Errorf("an instance is replaced past %d MiB; want 48 (twice the guest's default 16 MiB heap limit, and 16)", limit>>20)
	}
	req := bookReq("alice")
	req.Arguments = bigArgs(400_000)
	if _, err := g.Ask(ctx, req, []InputRequest{contactInput()}); err != nil {
		t.Fatalf("a large request: %v", err)
	}
	if _, _, _, closed := ce.snapshot(); closed != 1 {
		t.Errorf("after a request that grew the instance: %d instances closed, want 1", closed)
	}
	if err := oneCall(ctx, g, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, started, _ := ce.snapshot(); started != 2 {
		t.Errorf("%d instances started in all, want 2", started)
	}
	poolBalanced(t, g, ce)
}

// TestWasmOversizeRequestIsNotATrap: a request over the 1 MiB limit is
// refused as too large, and must not cost an instance, even when the
// instance could not hold it in its memory.
func TestWasmOversizeRequestIsNotATrap(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, EngineWasm, WithMaxMemoryMiB(16), WithPoolSize(1))
	ce := instrument(g)
	req := bookReq("alice")
	req.Arguments = json.RawMessage(`{"blob":"` + strings.Repeat("x", 16<<20) + `"}`)
	_, err := g.Ask(ctx, req, []InputRequest{contactInput()})
	wantErr(t, err, CodeRequestTooLarge)
	if _, _, _, closed := ce.snapshot(); closed != 0 {
		t.Errorf("an oversize request cost %d instances", closed)
	}
	poolBalanced(t, g, ce)
}

// countingCtx is a context whose Err turns non-nil once it has been asked
// more than `after` times: a caller that goes away in the middle of a call.
type countingCtx struct {
	context.Context
	after    int64
	asks     atomic.Int64
	deadline time.Time
}

func (c *countingCtx) Err() error {
	if c.asks.Add(1) > c.after {
		return context.Canceled
	}
	return nil
}

func (c *countingCtx) Deadline() (time.Time, bool) {
	return c.deadline, !c.deadline.IsZero()
}

func TestPoolContext(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		g := newGuard(t, eng, WithPoolSize(1))
		ce := instrument(g)
		if err := oneCall(context.Background(), g, "alice"); err != nil {
			t.Fatal(err)
		}
		req := bookReq("alice")
		state := ask(t, g, req, []InputRequest{contactInput()}).RequestState

		t.Run("already cancelled", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			calls := ce.calls.Load()
			_, err := g.Ask(ctx, req, []InputRequest{contactInput()})
			wantErr(t, err, CodeUnavailable)
			_, err = g.Resume(ctx, retry(req, state, annValid))
			wantErr(t, err, CodeUnavailable)
			_, err = g.Lint(ctx, contactInput())
			wantErr(t, err, CodeUnavailable)
			if n := ce.calls.Load() - calls; n != 0 {
				t.Errorf("%d calls reached the guest with a cancelled context", n)
			}
			if _, _, started, closed := ce.snapshot(); started != 1 || closed != 0 {
				t.Errorf("a call that never started cost an instance: %d started, %d closed", started, closed)
			}
			poolBalanced(t, g, ce)
		})

		// Calibrate: how often a whole call asks whether to stop.
		big := bookReq("alice")
		big.Arguments = bigArgs(100_000)
		full := &countingCtx{Context: context.Background(), after: math.MaxInt64}
		if _, err := g.Ask(full, big, []InputRequest{contactInput()}); err != nil {
			t.Fatal(err)
		}
		t.Logf("a call of 100k values asks %d times", full.asks.Load())
		if full.asks.Load() < 20 {
			t.Fatalf("only %d checkpoints in a call of 100k values", full.asks.Load())
		}

		t.Run("cancelled mid-call", func(t *testing.T) {
			_, _, startedBefore, closedBefore := ce.snapshot()
			ctx := &countingCtx{Context: context.Background(), after: 5}
			_, err := g.Ask(ctx, big, []InputRequest{contactInput()})
			wantErr(t, err, CodeUnavailable)
			// The guest stopped at the first checkpoint told to stop.
			if n := ctx.asks.Load(); n != ctx.after+1 {
				t.Errorf("the guest asked %d times, want it to stop at ask %d", n, ctx.after+1)
			}
			_, _, _, closed := ce.snapshot()
			if closed != closedBefore+1 {
				t.Errorf("the interrupted instance was not discarded")
			}
			poolBalanced(t, g, ce)
			if err := oneCall(context.Background(), g, "alice"); err != nil {
				t.Fatalf("after an interrupted call: %v", err)
			}
			if _, _, started, _ := ce.snapshot(); started != startedBefore+1 {
				t.Errorf("the interrupted instance was not replaced")
			}
			// A resume is interrupted the same way.
			ctx = &countingCtx{Context: context.Background(), after: 3}
			r := retry(big, state, annValid)
			_, err = g.Resume(ctx, r)
			wantErr(t, err, CodeUnavailable)
			poolBalanced(t, g, ce)
		})

		t.Run("deadline checked by the guest", func(t *testing.T) {
			// Err never turns: only the deadline can stop the call.
			ctx := &countingCtx{Context: context.Background(), after: math.MaxInt64, deadline: time.Now().Add(time.Millisecond)}
			time.Sleep(2 * time.Millisecond)
			_, err := g.Ask(ctx, big, []InputRequest{contactInput()})
			wantErr(t, err, CodeUnavailable)
			if n := ctx.asks.Load(); n >= full.asks.Load() {
				t.Errorf("the call ran to the end (%d asks) past its deadline", n)
			}
			poolBalanced(t, g, ce)
			if err := oneCall(context.Background(), g, "alice"); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func TestPoolCallTimeout(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		g := newGuard(t, eng, WithPoolSize(1), WithCallTimeout(time.Nanosecond))
		ce := instrument(g)
		big := bookReq("alice")
		big.Arguments = bigArgs(100_000)
		_, err := g.Ask(context.Background(), big, []InputRequest{contactInput()})
		wantErr(t, err, CodeUnavailable)
		if _, _, _, closed := ce.snapshot(); closed != 1 {
			t.Errorf("the instance that ran over was not discarded")
		}
		poolBalanced(t, g, ce)
		// The replacement is configured (configure is not bound by the
		// call timeout) and its call is stopped in turn.
		_, err = g.Ask(context.Background(), big, []InputRequest{contactInput()})
		if e := wantErr(t, err, CodeUnavailable); !strings.Contains(e.Message, "stopped") {
			t.Errorf("message %q: the call, not the configuration, must be what stopped", e.Message)
		}
		if _, _, started, _ := ce.snapshot(); started != 2 {
			t.Errorf("%d instances started, want the first and its replacement", started)
		}
	})
}

// TestPoolNativePanic injects a panic into the core through its
// interrupt hook: it must come back as mrtr.internal, carry nothing of
// the panic, and leave the instance serving.
func TestPoolNativePanic(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, EngineNative, WithPoolSize(1))
	s, err := g.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := s.inst.(*nativeInstance)
	if !ok {
		t.Fatalf("instance %T", s.inst)
	}
	var fired atomic.Bool
	n.g.SetInterrupt(func() bool {
		if fired.CompareAndSwap(false, true) {
			panic("secret-answer-4242")
		}
		return n.cc.stop()
	})
	g.release(s)

	_, err = g.Ask(ctx, bookReq("alice"), []InputRequest{contactInput()})
	e := wantErr(t, err, CodeInternal)
	if e.JSONRPCCode() != -32603 || strings.Contains(e.Error(), "4242") {
		t.Errorf("panic error %q (JSON-RPC %d)", e.Error(), e.JSONRPCCode())
	}
	if !fired.Load() {
		t.Fatal("the panic never fired")
	}
	if err := oneCall(ctx, g, "alice"); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
	if len(g.live) != 1 || len(g.idle) != 1 {
		t.Errorf("pool %d live, %d idle", len(g.live), len(g.idle))
	}
	if s2, _ := g.acquire(ctx); s2.inst != n {
		t.Errorf("a recovered panic must not cost the instance")
	} else {
		g.release(s2)
	}
}

// TestPoolPrestart: New starts one instance, configured and ready,
// whatever the pool's size (each wasm instance holds tens of MiB); the pool
// grows to its size only when calls overlap.
func TestPoolPrestart(t *testing.T) {
	ctx := context.Background()
	forEngines(t, func(t *testing.T, eng Engine) {
		for _, size := range []int{1, 2, 6} {
			g := newGuard(t, eng, WithPoolSize(size))
			if n := len(g.live); n != 1 {
				t.Errorf("pool of %d: %d instances after New, want 1", size, n)
			}
			if n := len(g.idle); n != 1 {
				t.Errorf("pool of %d: %d idle instances after New, want 1 (started but not ready?)", size, n)
			}
			// Calls one after another never need a second instance.
			for range 3 {
				if err := oneCall(ctx, g, "user"); err != nil {
					t.Fatal(err)
				}
			}
			g.collecting.Wait()
			if n := len(g.live); n != 1 {
				t.Errorf("pool of %d: %d instances after calls one at a time, want 1", size, n)
			}
			if size == 1 {
				continue
			}
			// Hold every instance at once: the pool must grow to its size.
			ce := instrument(g)
			ce.hold = make(chan struct{})
			var wg sync.WaitGroup
			for i := 0; i < size; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := oneCall(ctx, g, "user"); err != nil {
						t.Error(err)
					}
				}()
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(g.live) < size && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			close(ce.hold)
			wg.Wait()
			if n := len(g.live); n != size {
				t.Errorf("pool of %d under %d concurrent calls grew to %d", size, size, n)
			}
			poolBalanced(t, g, ce)
		}
	})
}

// TestPoolGrowTakesTheFirstFree: a caller that finds every instance busy
// starts another but takes an instance released meanwhile instead of
// waiting for the start; the new instance joins the pool when it is up.
// A start that fails is an error at once.
func TestPoolGrowTakesTheFirstFree(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng, WithPoolSize(2))
		ce := instrument(g)
		ce.startGate = make(chan struct{})
		held, err := g.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *slot, 1)
		go func() {
			s, err := g.acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- s
		}()
		deadline := time.Now().Add(10 * time.Second)
		for len(g.live) < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if len(g.live) != 2 {
			t.Fatal("the second caller did not start an instance")
		}
		g.release(held)
		select {
		case s := <-got:
			if s == nil || s.inst != held.inst {
				t.Fatal("the waiting caller did not get the released instance")
			}
			g.release(s)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting caller waited for the start, not the released instance")
		}
		close(ce.startGate)
		for len(g.idle) < 2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if _, _, started, _ := ce.snapshot(); started != 2 || len(g.idle) != 2 {
			t.Errorf("%d instances started, %d idle: want 2 and 2", started, len(g.idle))
		}
		poolBalanced(t, g, ce)

		// A failed start: the caller gets a retryable error at once and
		// the pool gives the start's place back.
		g2 := newGuard(t, eng, WithPoolSize(2))
		ce2 := instrument(g2)
		ce2.startErr = errors.New("no memory")
		held, err = g2.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = g2.acquire(ctx)
		wantErr(t, err, CodeUnavailable)
		g2.release(held)
		if len(g2.live) != 1 {
			t.Errorf("%d live tokens after a failed start, want 1", len(g2.live))
		}
		poolBalanced(t, g2, ce2)
	})
}

// TestWasmCollectsBetweenCalls: the guest's garbage is collected after the
// calls that asked for it, off their path (guard_collect_due, then
// guard_collect), before the runtime would collect inside a call at its
// limit: every collection the guest ran was one the host asked for.
func TestWasmCollectsBetweenCalls(t *testing.T) {
	ctx := context.Background()
	// At 8 MiB the runtime would collect several times in these calls.
	g := newGuard(t, EngineWasm, WithPoolSize(1), WithMemoryLimitMiB(8))
	ce := instrument(g)
	for range 1500 {
		if err := oneCall(ctx, g, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	collectedBetweenCalls(t, g)
	poolBalanced(t, g, ce)
}

// collectedBetweenCalls requires the guest instances at rest in g's pool
// to have collected at least once, every time because the host asked.
func collectedBetweenCalls(t *testing.T, g *Guard) {
	t.Helper()
	g.collecting.Wait()
	var numGC, collections int
	var held []*slot
	for range len(g.idle) {
		s := <-g.idle
		held = append(held, s)
		raw, err := s.inst.stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var st struct{ NumGC, Collections int }
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatalf("guard_stats: %v %s", err, raw)
		}
		numGC += st.NumGC
		collections += st.Collections
	}
	for _, s := range held {
		g.idle <- s
	}
	if collections == 0 {
		t.Fatalf("no collection between calls (%d inside them)", numGC)
	}
	if numGC != collections {
		t.Errorf("the guest collected %d times, %d of them between calls: the runtime collected inside calls", numGC, collections)
	}
}

// TestWasmCollectsConcurrently: with callers in parallel, a collection
// between calls never shares its instance with a call, every collection is
// still the host's, and Close during collections loses no instance.
func TestWasmCollectsConcurrently(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, EngineWasm, WithPoolSize(2), WithMemoryLimitMiB(8))
	ce := instrument(g)
	rounds := func(n int) error {
		for range n {
			if err := oneCall(ctx, g, "alice"); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- rounds(400) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	g.collecting.Wait()
	if n := ce.overlaps.Load(); n != 0 {
		t.Fatalf("%d uses of an instance overlapped", n)
	}
	collectedBetweenCalls(t, g)

	// Close while a collection holds an instance and calls go on.
	g2 := newGuard(t, EngineWasm, WithPoolSize(2), WithMemoryLimitMiB(8))
	ce2 := instrument(g2)
	ce2.collectGate, ce2.collectStarted = make(chan struct{}), make(chan struct{}, 1)
	var stop atomic.Bool
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				if oneCall(ctx, g2, "alice") != nil {
					return // closed
				}
			}
		})
	}
	select {
	case <-ce2.collectStarted:
	case <-time.After(time.Minute):
		t.Fatal("no collection started")
	}
	closed := make(chan error, 1)
	go func() { closed <- g2.Close(ctx) }()
	time.Sleep(50 * time.Millisecond) // Close waits for the collection
	close(ce2.collectGate)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close never returned")
	}
	stop.Store(true)
	wg.Wait()
	g2.collecting.Wait()
	if live, _, started, closed := ce2.snapshot(); live != 0 {
		t.Errorf("after Close: %d instances still running (%d started, %d closed)", live, started, closed)
	}
}

// TestPoolTrimsIdleInstances: instances left idle longer than idleTrim
// are closed, down to one, and the pool grows again when calls overlap.
func TestPoolTrimsIdleInstances(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng, WithPoolSize(3))
		ce := instrument(g)
		fillPool(t, g, 3)
		g.trim(time.Now())
		if _, _, _, closed := ce.snapshot(); closed != 0 || len(g.live) != 3 {
			t.Fatalf("instances just used: %d closed, %d live; want 0 and 3", closed, len(g.live))
		}
		g.trim(time.Now().Add(idleTrim + time.Second))
		if _, _, _, closed := ce.snapshot(); closed != 2 || len(g.live) != 1 || len(g.idle) != 1 {
			t.Fatalf("after idleTrim: %d closed, %d live, %d idle; want 2, 1, 1", closed, len(g.live), len(g.idle))
		}
		g.trim(time.Now().Add(10 * idleTrim))
		if len(g.live) != 1 {
			t.Fatalf("the last instance was trimmed: %d live", len(g.live))
		}
		if err := oneCall(ctx, g, "alice"); err != nil {
			t.Fatal(err)
		}
		fillPool(t, g, 3)
		poolBalanced(t, g, ce)
	})
}
