package ledgertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// Clock says how the contract waits for a lease or a TTL to run out.
type Clock int

const (
	// Bubble: the backend reads Go's clock, so the timed checks run in a
	// testing/synctest bubble: fake time, exact and instant, no slack.
	Bubble Clock = iota + 1
	// Wall: the store keeps its own time (Redis), so the timed checks
	// poll the ledger's state until it changes, with a deadline, and use
	// leases long enough that a loaded machine does not outrun them.
	Wall
)

// timed runs f on a fresh ledger with a short lease or TTL, and await,
// which returns once op is in the wanted state (or fails the test).
func timed(t *testing.T, clock Clock, open func(t *testing.T) ledger.Ledger, name string,
	f func(t *testing.T, l ledger.Ledger, short time.Duration, await func(op string, want ledger.State))) {
	t.Run(name, func(t *testing.T) {
		if clock == Bubble {
			synctest.Test(t, func(t *testing.T) {
				const short = 150 * time.Millisecond
				l := open(t)
				f(t, l, short, func(op string, want ledger.State) {
					time.Sleep(short + time.Millisecond) // exactly past it: the clock is fake
					MustGet(t, l, op, want)
				})
			})
			return
		}
		l := open(t)
		f(t, l, time.Second, func(op string, want ledger.State) {
			deadline := time.Now().Add(10 * time.Second)
			for {
				e, err := l.Get(context.Background(), op)
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				if e.State == want {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s is still %v after 10 s, want %v", op, e.State, want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	})
}

// FP is the fingerprint of s.
func FP(s string) ledger.Fingerprint { return sha256.Sum256([]byte(s)) }

// NewOp returns a fresh random operation id.
func NewOp(t testing.TB) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "op-" + hex.EncodeToString(b[:])
}

// long is a lease or TTL no test outlives.
const long = time.Minute

// MustClaim claims op and fails t unless the status is want.
func MustClaim(t testing.TB, l ledger.Ledger, op string, fp ledger.Fingerprint, lease time.Duration, want ledger.Status) ledger.Claim {
	t.Helper()
	c, err := l.Claim(context.Background(), op, fp, lease)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if c.Status != want {
		t.Fatalf("Claim: status %v, want %v", c.Status, want)
	}
	if (c.Token != "") != (want == ledger.Acquired) {
		t.Fatalf("Claim: token %q with status %v", c.Token, c.Status)
	}
	return c
}

// MustGet fails t unless op is in state want.
func MustGet(t testing.TB, l ledger.Ledger, op string, want ledger.State) ledger.Entry {
	t.Helper()
	e, err := l.Get(context.Background(), op)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if e.State != want {
		t.Fatalf("Get: state %v, want %v", e.State, want)
	}
	return e
}

// Contract runs the contract against the ledgers open returns.
func Contract(t *testing.T, clock Clock, open func(t *testing.T) ledger.Ledger) {
	ctx := context.Background()
	l := open(t)
	a, b := FP("answers A"), FP("answers B")

	t.Run("ping", func(t *testing.T) {
		if err := l.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("claim-finish-replay", func(t *testing.T) {
		op := NewOp(t)
		MustGet(t, l, op, ledger.Absent)
		c := MustClaim(t, l, op, a, long, ledger.Acquired)
		if len(c.Token) != 32 {
			t.Fatalf("token %q", c.Token)
		}
		if e := MustGet(t, l, op, ledger.Pending); e.Fingerprint != a {
			t.Fatal("pending entry has another fingerprint")
		}
		MustClaim(t, l, op, a, long, ledger.InProgress)
		MustClaim(t, l, op, b, long, ledger.Conflict)
		res := []byte(`{"content":[{"type":"text","text":"booked"}],"resultType":"complete"}`)
		if err := l.Finish(ctx, op, c.Token, a, res, long); err != nil {
			t.Fatalf("Finish: %v", err)
		}
		got := MustClaim(t, l, op, a, long, ledger.Finished)
		if !bytes.Equal(got.Result, res) {
			t.Fatalf("replayed %q, want %q", got.Result, res)
		}
		if e := MustGet(t, l, op, ledger.Done); !bytes.Equal(e.Result, res) || e.Fingerprint != a {
			t.Fatalf("Get: %+v", e)
		}
		c2 := MustClaim(t, l, op, b, long, ledger.Conflict)
		if c2.Result != nil {
			t.Fatal("a conflicting claim must not see the result")
		}
		// A retried Finish by the owner is harmless.
		if err := l.Finish(ctx, op, c.Token, a, res, long); err != nil {
			t.Fatalf("Finish again: %v", err)
		}
		// Release after finish does nothing.
		if err := l.Release(ctx, op, c.Token); err != nil {
			t.Fatal(err)
		}
		MustGet(t, l, op, ledger.Done)
	})

	t.Run("binary-and-empty-results", func(t *testing.T) {
		big := make([]byte, 256<<10)
		_, _ = rand.Read(big)
		for _, res := range [][]byte{big, {}, nil, []byte("\x00'd\"\\")} {
			op := NewOp(t)
			c := MustClaim(t, l, op, a, long, ledger.Acquired)
			if err := l.Finish(ctx, op, c.Token, a, res, long); err != nil {
				t.Fatal(err)
			}
			got := MustClaim(t, l, op, a, long, ledger.Finished)
			if !bytes.Equal(got.Result, res) || got.Result == nil {
				t.Fatalf("result of %d bytes came back as %d bytes (nil %v)", len(res), len(got.Result), got.Result == nil)
			}
		}
	})

	t.Run("release", func(t *testing.T) {
		op := NewOp(t)
		c := MustClaim(t, l, op, a, long, ledger.Acquired)
		// Someone else's token releases nothing.
		if err := l.Release(ctx, op, strings.Repeat("0", 32)); err != nil {
			t.Fatal(err)
		}
		MustClaim(t, l, op, a, long, ledger.InProgress)
		if err := l.Release(ctx, op, c.Token); err != nil {
			t.Fatal(err)
		}
		MustGet(t, l, op, ledger.Absent)
		// Released: a retry, even with other answers, may run.
		c2 := MustClaim(t, l, op, b, long, ledger.Acquired)
		if c2.Token == c.Token {
			t.Fatal("tokens repeat")
		}
		// The first owner is stale now: it cannot finish over the new claim.
		if err := l.Finish(ctx, op, c.Token, a, []byte("stale"), long); !errors.Is(err, ledger.ErrLost) {
			t.Fatalf("stale Finish: %v, want ledger.ErrLost", err)
		}
		MustGet(t, l, op, ledger.Pending)
	})

	timed(t, clock, open, "lease-expiry", func(t *testing.T, l ledger.Ledger, lease time.Duration, await func(string, ledger.State)) {
		op := NewOp(t)
		c := MustClaim(t, l, op, a, lease, ledger.Acquired)
		await(op, ledger.Absent)
		c2 := MustClaim(t, l, op, a, long, ledger.Acquired)
		if err := l.Finish(ctx, op, c.Token, a, []byte("stale"), long); !errors.Is(err, ledger.ErrLost) {
			t.Fatalf("Finish by the dead owner: %v, want ErrLost", err)
		}
		if err := l.Finish(ctx, op, c2.Token, a, []byte("new"), long); err != nil {
			t.Fatal(err)
		}
		if got := MustClaim(t, l, op, a, long, ledger.Finished); string(got.Result) != "new" {
			t.Fatalf("result %q", got.Result)
		}
		if err := l.Finish(ctx, op, c.Token, a, []byte("stale"), long); !errors.Is(err, ledger.ErrLost) {
			t.Fatalf("stale Finish over a result: %v, want ErrLost", err)
		}
	})

	timed(t, clock, open, "finish-after-own-lease", func(t *testing.T, l ledger.Ledger, lease time.Duration, await func(string, ledger.State)) {
		// The lease ran out but nobody took over: the effect did run, so
		// it is recorded.
		op := NewOp(t)
		c := MustClaim(t, l, op, a, lease, ledger.Acquired)
		await(op, ledger.Absent)
		if err := l.Finish(ctx, op, c.Token, a, []byte("late"), long); err != nil {
			t.Fatal(err)
		}
		if got := MustClaim(t, l, op, a, long, ledger.Finished); string(got.Result) != "late" {
			t.Fatalf("result %q", got.Result)
		}
	})

	timed(t, clock, open, "ttl-expiry", func(t *testing.T, l ledger.Ledger, ttl time.Duration, await func(string, ledger.State)) {
		op := NewOp(t)
		c := MustClaim(t, l, op, a, long, ledger.Acquired)
		if err := l.Finish(ctx, op, c.Token, a, []byte("r"), ttl); err != nil {
			t.Fatal(err)
		}
		MustGet(t, l, op, ledger.Done)
		await(op, ledger.Absent)
		MustClaim(t, l, op, b, long, ledger.Acquired)
	})

	t.Run("concurrent-claims", func(t *testing.T) {
		const n = 50
		for round := 0; round < 5; round++ {
			op := NewOp(t)
			var acquired, inProgress atomic.Int32
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					c, err := l.Claim(ctx, op, a, long)
					if err != nil {
						t.Error(err)
						return
					}
					switch c.Status {
					case ledger.Acquired:
						acquired.Add(1)
					case ledger.InProgress:
						inProgress.Add(1)
					default:
						t.Errorf("status %v", c.Status)
					}
				}()
			}
			close(start)
			wg.Wait()
			if acquired.Load() != 1 || inProgress.Load() != n-1 {
				t.Fatalf("%d acquired, %d in progress; want 1 and %d", acquired.Load(), inProgress.Load(), n-1)
			}
		}
	})

	t.Run("bad-input", func(t *testing.T) {
		if _, err := l.Claim(ctx, "", a, long); !errors.Is(err, ledger.ErrBadOperation) {
			t.Fatalf("empty op: %v", err)
		}
		if _, err := l.Claim(ctx, string(make([]byte, 300)), a, long); !errors.Is(err, ledger.ErrBadOperation) {
			t.Fatalf("long op: %v", err)
		}
		if err := l.Finish(ctx, NewOp(t), "short", a, nil, long); !errors.Is(err, ledger.ErrBadOperation) {
			t.Fatalf("bad token: %v", err)
		}
	})

	t.Run("cancelled-context", func(t *testing.T) {
		op := NewOp(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := l.Claim(cctx, op, a, long); err == nil {
			t.Fatal("a claim under a cancelled context succeeded")
		}
		MustGet(t, l, op, ledger.Absent)
	})

	t.Run("close", func(t *testing.T) {
		l2 := open(t)
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := l2.Claim(ctx, NewOp(t), a, long); err == nil {
			t.Fatal("Claim after Close succeeded")
		}
	})
}
