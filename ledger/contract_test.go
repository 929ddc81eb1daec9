package ledger

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The contract every backend passes: TestContract runs it against memory,
// SQLite and a real Redis.

func TestContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		runContract(t, func(t *testing.T) Ledger { return NewMemory() })
	})
	t.Run("sqlite", func(t *testing.T) {
		runContract(t, func(t *testing.T) Ledger { return openTestSQLite(t, filepath.Join(t.TempDir(), "ledger.db")) })
	})
	t.Run("redis", func(t *testing.T) {
		runContract(t, func(t *testing.T) Ledger { return openTestRedis(t) })
	})
}

func fpOf(s string) Fingerprint { return sha256.Sum256([]byte(s)) }

func newOp(t testing.TB) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "op-" + hex.EncodeToString(b[:])
}

const long = time.Minute

func mustClaim(t *testing.T, l Ledger, op string, fp Fingerprint, lease time.Duration, want Status) Claim {
	t.Helper()
	c, err := l.Claim(context.Background(), op, fp, lease)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if c.Status != want {
		t.Fatalf("Claim: status %v, want %v", c.Status, want)
	}
	if (c.Token != "") != (want == Acquired) {
		t.Fatalf("Claim: token %q with status %v", c.Token, c.Status)
	}
	return c
}

func mustGet(t *testing.T, l Ledger, op string, want State) Entry {
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

func runContract(t *testing.T, open func(t *testing.T) Ledger) {
	ctx := context.Background()
	l := open(t)
	a, b := fpOf("answers A"), fpOf("answers B")

	t.Run("ping", func(t *testing.T) {
		if err := l.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("claim-finish-replay", func(t *testing.T) {
		op := newOp(t)
		mustGet(t, l, op, Absent)
		c := mustClaim(t, l, op, a, long, Acquired)
		if len(c.Token) != tokenLen {
			t.Fatalf("token %q", c.Token)
		}
		if e := mustGet(t, l, op, Pending); e.Fingerprint != a {
			t.Fatal("pending entry has another fingerprint")
		}
		mustClaim(t, l, op, a, long, InProgress)
		mustClaim(t, l, op, b, long, Conflict)
		res := []byte(`{"content":[{"type":"text","text":"booked"}],"resultType":"complete"}`)
		if err := l.Finish(ctx, op, c.Token, a, res, long); err != nil {
			t.Fatalf("Finish: %v", err)
		}
		got := mustClaim(t, l, op, a, long, Finished)
		if !bytes.Equal(got.Result, res) {
			t.Fatalf("replayed %q, want %q", got.Result, res)
		}
		if e := mustGet(t, l, op, Done); !bytes.Equal(e.Result, res) || e.Fingerprint != a {
			t.Fatalf("Get: %+v", e)
		}
		c2 := mustClaim(t, l, op, b, long, Conflict)
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
		mustGet(t, l, op, Done)
	})

	t.Run("binary-and-empty-results", func(t *testing.T) {
		big := make([]byte, 256<<10)
		_, _ = rand.Read(big)
		for _, res := range [][]byte{big, {}, nil, []byte("\x00'd\"\\")} {
			op := newOp(t)
			c := mustClaim(t, l, op, a, long, Acquired)
			if err := l.Finish(ctx, op, c.Token, a, res, long); err != nil {
				t.Fatal(err)
			}
			got := mustClaim(t, l, op, a, long, Finished)
			if !bytes.Equal(got.Result, res) || got.Result == nil {
				t.Fatalf("result of %d bytes came back as %d bytes (nil %v)", len(res), len(got.Result), got.Result == nil)
			}
		}
	})

	t.Run("release", func(t *testing.T) {
		op := newOp(t)
		c := mustClaim(t, l, op, a, long, Acquired)
		// Someone else's token releases nothing.
		if err := l.Release(ctx, op, newToken()); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, l, op, a, long, InProgress)
		if err := l.Release(ctx, op, c.Token); err != nil {
			t.Fatal(err)
		}
		mustGet(t, l, op, Absent)
		// Released: a retry, even with other answers, may run.
		c2 := mustClaim(t, l, op, b, long, Acquired)
		if c2.Token == c.Token {
			t.Fatal("tokens repeat")
		}
		// The first owner is stale now: it cannot finish over the new claim.
		if err := l.Finish(ctx, op, c.Token, a, []byte("stale"), long); !errors.Is(err, ErrLost) {
			t.Fatalf("stale Finish: %v, want ErrLost", err)
		}
		mustGet(t, l, op, Pending)
	})

	t.Run("lease-expiry", func(t *testing.T) {
		op := newOp(t)
		c := mustClaim(t, l, op, a, 150*time.Millisecond, Acquired)
		time.Sleep(400 * time.Millisecond)
		mustGet(t, l, op, Absent)
		c2 := mustClaim(t, l, op, a, long, Acquired)
		if err := l.Finish(ctx, op, c.Token, a, []byte("stale"), long); !errors.Is(err, ErrLost) {
			t.Fatalf("Finish by the dead owner: %v, want ErrLost", err)
		}
		if err := l.Finish(ctx, op, c2.Token, a, []byte("new"), long); err != nil {
			t.Fatal(err)
		}
		if got := mustClaim(t, l, op, a, long, Finished); string(got.Result) != "new" {
			t.Fatalf("result %q", got.Result)
		}
		if err := l.Finish(ctx, op, c.Token, a, []byte("stale"), long); !errors.Is(err, ErrLost) {
			t.Fatalf("stale Finish over a result: %v, want ErrLost", err)
		}
	})

	t.Run("finish-after-own-lease", func(t *testing.T) {
		// The lease ran out but nobody took over: the effect did run, so
		// it is recorded.
		op := newOp(t)
		c := mustClaim(t, l, op, a, 100*time.Millisecond, Acquired)
		time.Sleep(300 * time.Millisecond)
		if err := l.Finish(ctx, op, c.Token, a, []byte("late"), long); err != nil {
			t.Fatal(err)
		}
		if got := mustClaim(t, l, op, a, long, Finished); string(got.Result) != "late" {
			t.Fatalf("result %q", got.Result)
		}
	})

	t.Run("ttl-expiry", func(t *testing.T) {
		op := newOp(t)
		c := mustClaim(t, l, op, a, long, Acquired)
		if err := l.Finish(ctx, op, c.Token, a, []byte("r"), 150*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		mustGet(t, l, op, Done)
		time.Sleep(400 * time.Millisecond)
		mustGet(t, l, op, Absent)
		mustClaim(t, l, op, b, long, Acquired)
	})

	t.Run("concurrent-claims", func(t *testing.T) {
		const n = 50
		for round := 0; round < 5; round++ {
			op := newOp(t)
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
					case Acquired:
						acquired.Add(1)
					case InProgress:
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
		if _, err := l.Claim(ctx, "", a, long); !errors.Is(err, ErrBadOperation) {
			t.Fatalf("empty op: %v", err)
		}
		if _, err := l.Claim(ctx, string(make([]byte, 300)), a, long); !errors.Is(err, ErrBadOperation) {
			t.Fatalf("long op: %v", err)
		}
		if err := l.Finish(ctx, newOp(t), "short", a, nil, long); !errors.Is(err, ErrBadOperation) {
			t.Fatalf("bad token: %v", err)
		}
	})

	t.Run("cancelled-context", func(t *testing.T) {
		op := newOp(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := l.Claim(cctx, op, a, long); err == nil {
			t.Fatal("a claim under a cancelled context succeeded")
		}
		mustGet(t, l, op, Absent)
	})

	t.Run("close", func(t *testing.T) {
		l2 := open(t)
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := l2.Claim(ctx, newOp(t), a, long); err == nil {
			t.Fatal("Claim after Close succeeded")
		}
	})
}
