package ledger

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// claimOK claims op and fails t unless it is acquired.
func claimOK(t *testing.T, l Ledger, op string, fp Fingerprint, lease time.Duration) Claim {
	t.Helper()
	c, err := l.Claim(context.Background(), op, fp, lease)
	if err != nil || c.Status != Acquired {
		t.Fatalf("Claim %s: %v %v", op, c.Status, err)
	}
	return c
}

// TestMemoryBounded: a full memory ledger refuses new claims (fails
// closed) rather than forget a finished one, and frees room as entries
// expire. The clock is synctest's: exact, no slack.
func TestMemoryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := NewMemory(WithMaxEntries(3))
		fp := Fingerprint(sha256.Sum256([]byte("a")))
		for i := range 3 {
			op := "op-" + strconv.Itoa(i)
			c := claimOK(t, l, op, fp, time.Minute)
			if err := l.Finish(ctx, op, c.Token, fp, []byte("r"), 200*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Claim(ctx, "op-full", fp, time.Minute); !errors.Is(err, ErrFull) {
			t.Fatalf("claim on a full ledger: %v, want ErrFull", err)
		}
		time.Sleep(199 * time.Millisecond)
		if _, err := l.Claim(ctx, "op-full", fp, time.Minute); !errors.Is(err, ErrFull) {
			t.Fatalf("claim just before the TTL: %v, want ErrFull", err)
		}
		time.Sleep(time.Millisecond)
		claimOK(t, l, "op-new", fp, time.Minute)
		if n := l.(*memory).len(); n != 1 {
			t.Fatalf("%d live entries, want 1", n)
		}
	})
}

// TestMemoryHeapStaysBounded: claims released over and over do not grow
// the expiry heap without bound.
func TestMemoryHeapStaysBounded(t *testing.T) {
	ctx := context.Background()
	m := newMemory(Options{MaxEntries: 10})
	fp := Fingerprint(sha256.Sum256([]byte("a")))
	for range 20000 {
		c := claimOK(t, m, "op", fp, time.Hour)
		_ = m.Release(ctx, "op", c.Token)
	}
	if n := len(m.exp); n > 2000 {
		t.Fatalf("heap holds %d items for at most 1 entry", n)
	}
}

// TestMemoryReschedules: a finished entry outlives its claim's lease (its
// heap item moves to the new expiry) and then goes.
func TestMemoryReschedules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := newMemory(Options{MaxEntries: 10})
		fp := Fingerprint(sha256.Sum256([]byte("a")))
		c := claimOK(t, m, "op", fp, 50*time.Millisecond)
		if err := m.Finish(ctx, "op", c.Token, fp, []byte("r"), 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(299 * time.Millisecond)
		if m.len() != 1 {
			t.Fatal("the finished entry went with its claim's lease")
		}
		time.Sleep(time.Millisecond)
		if m.len() != 0 || len(m.exp) != 0 {
			t.Fatalf("%d entries, %d heap items after the TTL", m.len(), len(m.exp))
		}
	})
}

// TestMemoryByteBudget: claims that would go over the byte budget are
// refused with ErrFullBytes (an ErrFull) rather than forget a live entry;
// a Finish over it still records (the effect ran); entries that expire
// free their bytes, and a pending claim is never dropped for room.
func TestMemoryByteBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := newMemory(ApplyOptions(WithMaxBytes(10_000)))
		fp := Fingerprint(sha256.Sum256([]byte("a")))
		big := make([]byte, 4000)
		pending := claimOK(t, m, "pending", fp, time.Hour)
		for i := range 3 {
			op := "op-" + strconv.Itoa(i)
			c := claimOK(t, m, op, fp, time.Minute)
			if err := m.Finish(ctx, op, c.Token, fp, big, 200*time.Millisecond); err != nil {
				t.Fatalf("Finish %s: %v", op, err)
			}
		}
		if m.bytes <= m.maxBytes {
			t.Fatalf("%d bytes after three 4000-byte results, want over the budget of %d", m.bytes, m.maxBytes)
		}
		_, err := m.Claim(ctx, "op-new", fp, time.Minute)
		if !errors.Is(err, ErrFullBytes) || !errors.Is(err, ErrFull) {
			t.Fatalf("claim over the byte budget: %v, want ErrFullBytes", err)
		}
		if e, _ := m.Get(ctx, "op-2"); e.State != Done || len(e.Result) != len(big) {
			t.Fatalf("the result recorded over the budget: %v, %d bytes", e.State, len(e.Result))
		}
		time.Sleep(200 * time.Millisecond)
		claimOK(t, m, "op-new", fp, time.Minute)
		if e, _ := m.Get(ctx, "pending"); e.State != Pending {
			t.Fatalf("the live claim went: %v", e.State)
		}
		if err := m.Release(ctx, "pending", pending.Token); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if m.len() != 0 || m.bytes != 0 {
			t.Fatalf("%d entries and %d bytes once every entry expired", m.len(), m.bytes)
		}
	})
}
