package host

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// Defaults of the replay ledger's timings.
const (
	defaultLedgerWait    = 2 * time.Second
	defaultLedgerLease   = 30 * time.Second
	defaultLedgerMargin  = time.Minute
	defaultLedgerTimeout = time.Second
)

// onceLedger is the ledger with the timings Once uses, fixed by New.
type onceLedger struct {
	ledger.Ledger
	wait, lease, margin, timeout time.Duration
	local                        bool // in-process: no deadlines needed
}

// bound gives a ledger call its deadline; the in-process ledger never
// waits, and skips the timer.
func (l *onceLedger) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.local {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, l.timeout)
}

// newOnceLedger fills in the defaults of what the options set.
func newOnceLedger(c *config) *onceLedger {
	o := &onceLedger{Ledger: c.ledger, wait: c.ledgerWait, lease: c.ledgerLease, margin: c.ledgerMargin, timeout: c.ledgerTimeout}
	if o.Ledger == nil {
		o.Ledger = ledger.NewMemory()
	}
	if o.wait <= 0 {
		o.wait = defaultLedgerWait
	}
	if o.lease <= 0 {
		o.lease = defaultLedgerLease
	}
	if o.margin <= 0 {
		o.margin = defaultLedgerMargin
	}
	if o.timeout <= 0 {
		o.timeout = defaultLedgerTimeout
	}
	o.local = ledger.InProcess(o.Ledger)
	return o
}

// WithLedger sets the replay ledger (default: an in-memory one).
// ledger.Open makes one from a setting: "memory:", "sqlite:/path/file.db"
// (with ledger/sqlite imported), "redis://host:6379/0" (ledger/redis),
// "postgres://…" (ledger/postgres). Guards that share it run each effect once
// between them. The guard does not close it.
func WithLedger(l ledger.Ledger) Option { return func(c *config) { c.ledger = l } }

// WithLedgerWait bounds how long Once waits for a duplicate's result
// before it answers CodeInProgress (default 2 s).
func WithLedgerWait(d time.Duration) Option { return func(c *config) { c.ledgerWait = d } }

// WithLedgerLease sets how long a claim holds an operation before it
// expires, so that a request whose server died can be completed later
// (default 30 s). Once ends the effect's context when the lease ends.
func WithLedgerLease(d time.Duration) Option { return func(c *config) { c.ledgerLease = d } }

// WithLedgerMargin is added to the operation's lifetime to get how long
// a finished operation is remembered (default 1 min, for clock skew
// between instances; must be positive).
func WithLedgerMargin(d time.Duration) Option { return func(c *config) { c.ledgerMargin = d } }

// WithLedgerTimeout bounds each ledger call (default 1 s). A call that
// runs over fails closed.
func WithLedgerTimeout(d time.Duration) Option { return func(c *config) { c.ledgerTimeout = d } }

// Each call returns a new *Error: callers may annotate theirs.
func errOnceNotComplete() error {
	return &Error{Code: CodeNotComplete, Message: "Once needs a complete outcome from Resume (with its answers digest): act only when every answer is in"}
}

func errOnceConflict() error {
	return &Error{Code: CodeConflict, Message: "this request was already carried out with other answers"}
}

func errOnceInProgress() error {
	return &Error{Code: CodeInProgress, Message: "this request is being carried out; retry shortly"}
}

// Once runs effect at most once for the outcome's operation. The first
// complete retry claims the operation id, runs effect and stores its result;
// a later retry with the same state and the same answers gets the stored
// result back with replay=true, and effect does not run again.
//
// A retry with other answers for the same operation gets CodeConflict. A
// duplicate that arrives while effect runs waits (WithLedgerWait) for its
// result, then gets CodeInProgress: retry it. If effect returns an error
// (or panics), the claim is released and the error returned as is, so
// the user can try again. If the ledger does not answer, nothing runs and
// the error is CodeLedgerUnavailable: retry later.
//
// effect's context ends when the claim's lease does: an effect that
// honours it cannot still run when another instance may take over. If
// effect ran but its result could not be recorded, Once returns the
// result together with a CodeLedgerUnavailable error (Reason
// "not_recorded" or "lease_lost"): the effect happened; answer with the
// result, and see ledger's documentation for what a later retry may do.
//
// The operation id is the key, so one logical request has one effect: a
// request continued with WithPrevious keeps its id, so call Once on its final
// outcome only.
func (g *Guard) Once(ctx context.Context, o *Outcome, effect func(ctx context.Context) ([]byte, error)) (result []byte, replay bool, err error) {
	fp, err := onceKey(o)
	if err != nil {
		return nil, false, err
	}
	if effect == nil {
		return nil, false, &Error{Code: CodeInternal, Message: "Once needs an effect"}
	}
	l := g.once
	var start time.Time
	c, err := l.settle(ctx, func() (ledger.Claim, error) {
		start = time.Now()
		cctx, cancel := l.bound(ctx)
		defer cancel()
		c, err := l.Claim(cctx, o.OperationID, fp, l.lease)
		if err != nil {
			return c, ledgerDown(err)
		}
		return c, nil
	})
	if err != nil || c.Status != ledger.Acquired {
		return c.Result, err == nil, err
	}
	return g.runClaimed(ctx, l, o.OperationID, fp, c.Token, start, o.remember+l.margin, effect)
}

// OnceTx is Once for an effect that runs inside the store's claim, so
// that the claim, the effect and its result commit together or not at
// all (ledger/postgres: run is pl.Tx(effect), the effect writing through
// the transaction it is given). run answers as postgres.Ledger.OnceTx
// does: Acquired with the effect's result, Finished with the stored one
// (replay=true), InProgress or Conflict; its errors that wrap
// ledger.ErrUnavailable are CodeLedgerUnavailable (retry), any other is
// the effect's, returned as is. run's context ends when the lease does.
// Use the ledger the guard was given (WithLedger), so that Once and
// OnceTx agree on every operation.
func (g *Guard) OnceTx(ctx context.Context, o *Outcome, run func(context.Context, ledger.Op) (ledger.Claim, error)) (result []byte, replay bool, err error) {
	fp, err := onceKey(o)
	if err != nil {
		return nil, false, err
	}
	if run == nil {
		return nil, false, &Error{Code: CodeInternal, Message: "OnceTx needs a run"}
	}
	l := g.once
	op := ledger.Op{ID: o.OperationID, Fingerprint: fp, Lease: l.lease, TTL: o.remember + l.margin}
	var effectErr error
	c, err := l.settle(ctx, func() (ledger.Claim, error) {
		rctx, cancel := context.WithTimeout(ctx, l.lease)
		defer cancel()
		c, err := run(rctx, op)
		switch {
		case err == nil:
			return c, nil
		case errors.Is(err, ledger.ErrUnavailable):
			return c, ledgerDown(err)
		}
		effectErr = err
		return c, err
	})
	if effectErr != nil {
		return nil, false, effectErr
	}
	if err != nil {
		return nil, false, err
	}
	if c.Result == nil {
		c.Result = []byte{}
	}
	return c.Result, c.Status == ledger.Finished, nil
}

// onceKey checks that o can be carried out and returns its answers'
// fingerprint.
func onceKey(o *Outcome) (ledger.Fingerprint, error) {
	if o == nil || o.Status != Complete || o.OperationID == "" {
		return ledger.Fingerprint{}, errOnceNotComplete()
	}
	fp, ok := answersKey(o)
	if !ok || o.remember <= 0 {
		return ledger.Fingerprint{}, errOnceNotComplete()
	}
	return fp, nil
}

// settle calls claim until it answers something other than InProgress,
// waiting between calls, for at most the ledger wait: then the answer is
// CodeInProgress. It answers Acquired or Finished with a nil error, and
// CodeConflict for Conflict.
func (l *onceLedger) settle(ctx context.Context, claim func() (ledger.Claim, error)) (ledger.Claim, error) {
	deadline := time.Now().Add(l.wait)
	pause := time.Millisecond
	for {
		c, err := claim()
		if err != nil {
			return ledger.Claim{}, err
		}
		switch c.Status {
		case ledger.Acquired, ledger.Finished:
			return c, nil
		case ledger.Conflict:
			return ledger.Claim{}, errOnceConflict()
		case ledger.InProgress:
		default:
			return ledger.Claim{}, &Error{Code: CodeInternal, Message: "the ledger answered an unknown status"}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return ledger.Claim{}, errOnceInProgress()
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return ledger.Claim{}, errOnceInProgress()
		case <-t.C:
		}
		pause = min(pause*2, 50*time.Millisecond)
	}
}

func (g *Guard) runClaimed(ctx context.Context, l *onceLedger, op string, fp ledger.Fingerprint, token string, start time.Time, ttl time.Duration, effect func(context.Context) ([]byte, error)) ([]byte, bool, error) {
	// The lease started no earlier than start, on any clock: ending here
	// ends the effect before the ledger can give the operation away.
	ectx := &leaseContext{Context: ctx, end: start.Add(l.lease)}
	defer ectx.stop()
	// Record or release even if the caller has gone: the effect's fate
	// must reach the ledger.
	bg := context.WithoutCancel(ctx)
	finished := false
	defer func() {
		if !finished {
			// effect failed or panicked: free the operation for a retry.
			rctx, cancel := l.bound(bg)
			_ = l.Release(rctx, op, token)
			cancel()
		}
	}()
	res, err := effect(ectx)
	if err != nil {
		return nil, false, err
	}
	if res == nil {
		res = []byte{}
	}
	finished = true
	for attempt := 0; ; attempt++ {
		fctx, cancel := l.bound(bg)
		err = l.Finish(fctx, op, token, fp, res, ttl)
		cancel()
		switch {
		case err == nil:
			return res, false, nil
		case errors.Is(err, ledger.ErrLost):
			return res, false, &Error{Code: CodeLedgerUnavailable, Reason: "lease_lost",
				Message: "the request was carried out, but after its lease ran out: another attempt may have run too"}
		case attempt < 2:
			time.Sleep(time.Duration(10<<(2*attempt)) * time.Millisecond)
			continue
		}
		return res, false, &Error{Code: CodeLedgerUnavailable, Reason: "not_recorded",
			Message: "the request was carried out, but the replay ledger did not record it"}
	}
}

// leaseContext is the effect's context: the caller's, ending when the
// lease does. context.WithDeadline would start a timer for every effect,
// the largest single cost of Once; this starts it only when the effect
// first waits on Done (or derives a context, which does).
type leaseContext struct {
	context.Context // the caller's
	end             time.Time
	mu              sync.Mutex
	inner           atomic.Pointer[context.Context] // WithDeadline(caller's, end)
	cancel          context.CancelFunc
	stopped         bool
}

// stoppedContext stands in for the inner context of an effect that has
// returned: done, with the error an ended context has.
var stoppedContext = func() context.Context {
	c, cancel := context.WithCancel(context.Background())
	cancel()
	return c
}()

func (c *leaseContext) get() context.Context {
	if in := c.inner.Load(); in != nil {
		return *in
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.inner.Load(); in != nil {
		return *in
	}
	in := stoppedContext
	if !c.stopped {
		in, c.cancel = context.WithDeadline(c.Context, c.end)
	}
	c.inner.Store(&in)
	return in
}

func (c *leaseContext) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.end) {
		return d, true
	}
	return c.end, true
}

func (c *leaseContext) Done() <-chan struct{} { return c.get().Done() }

// Err needs no timer: it is the caller's error, or the lease's end.
func (c *leaseContext) Err() error {
	if in := c.inner.Load(); in != nil {
		return (*in).Err()
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.end) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value goes through the inner context once it exists, so contexts the
// effect derives attach to it as to any standard context.
func (c *leaseContext) Value(key any) any {
	if in := c.inner.Load(); in != nil {
		return (*in).Value(key)
	}
	return c.Context.Value(key)
}

// stop ends the context when the effect has returned.
func (c *leaseContext) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.cancel != nil {
		c.cancel()
	}
}

// ledgerDown is the fail-closed answer: nothing ran, retry later. The
// cause goes into Reason as a class only (a store's error text may name
// hosts or hold data).
func ledgerDown(err error) error {
	reason := "error"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		reason = "timeout"
	case errors.Is(err, context.Canceled):
		reason = "cancelled"
	case errors.Is(err, ledger.ErrFull):
		reason = "full"
	case errors.Is(err, ledger.ErrClosed):
		reason = "closed"
	case errors.Is(err, ledger.ErrBadOperation):
		reason = "bad_operation"
	}
	return &Error{Code: CodeLedgerUnavailable, Reason: reason,
		Message: "the replay ledger is unavailable: nothing was done; retry later"}
}

// answersKey is the ledger key of the outcome's answers: the digest the
// guard core wrote (guest/ABI.md), used as it is, so every host and every
// build of guard.wasm agrees on "the same answers". The ledger stores
// this, never the answers.
func answersKey(o *Outcome) (ledger.Fingerprint, bool) {
	var fp ledger.Fingerprint
	if len(o.AnswersDigest) != 2*len(fp) {
		return fp, false
	}
	_, err := hex.Decode(fp[:], []byte(o.AnswersDigest))
	return fp, err == nil
}
