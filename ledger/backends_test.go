package ledger

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOpenSettings(t *testing.T) {
	ctx := context.Background()
	for _, s := range []string{"", "memory:", "memory:?max=5"} {
		l, err := Open(ctx, s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if _, ok := l.(*memory); !ok {
			t.Fatalf("%q opened %T", s, l)
		}
	}
	if l, _ := Open(ctx, "memory:?max=5"); l.(*memory).max != 5 {
		t.Fatal("memory:?max=5 ignored")
	}
	for _, s := range []string{"memory:x", "memory:?max=0", "memory:?size=3", "sqlite:", "postgres://x", "redis://%zz", "redis://h:6379/0?bogus=1"} {
		if _, err := Open(ctx, s); err == nil {
			t.Fatalf("%q opened", s)
		}
	}
	// A password in a bad URL never reaches the error.
	for _, s := range []string{"redis://user:hunter2@%zz:6379/0", "redis://user:hunter2@h:6379/0?bogus=1"} {
		_, err := Open(ctx, s)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%q: %v", s, err)
		}
	}
	l, err := Open(ctx, "redis://127.0.0.1:6379/0?prefix=abc:")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if p := l.(*redisLedger).prefix; p != "abc:" {
		t.Fatalf("prefix %q", p)
	}
}

// TestMemoryBounded: a full memory ledger refuses new claims (fails
// closed) rather than forget a finished one, and frees room as entries
// expire.
func TestMemoryBounded(t *testing.T) {
	ctx := context.Background()
	l := NewMemory(WithMaxEntries(3))
	fp := fpOf("a")
	for i := 0; i < 3; i++ {
		op := newOp(t)
		c := mustClaim(t, l, op, fp, time.Minute, Acquired)
		if err := l.Finish(ctx, op, c.Token, fp, []byte("r"), 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Claim(ctx, newOp(t), fp, time.Minute); !errors.Is(err, ErrFull) {
		t.Fatalf("claim on a full ledger: %v, want ErrFull", err)
	}
	time.Sleep(300 * time.Millisecond)
	mustClaim(t, l, newOp(t), fp, time.Minute, Acquired)
	if n := l.(*memory).len(); n != 1 {
		t.Fatalf("%d live entries, want 1", n)
	}
}

// TestMemoryHeapStaysBounded: claims released over and over do not grow
// the expiry heap without bound.
func TestMemoryHeapStaysBounded(t *testing.T) {
	ctx := context.Background()
	m := newMemory(options{maxEntries: 10})
	fp := fpOf("a")
	for i := 0; i < 20000; i++ {
		c, err := m.Claim(ctx, "op", fp, time.Hour)
		if err != nil || c.Status != Acquired {
			t.Fatal(c, err)
		}
		_ = m.Release(ctx, "op", c.Token)
	}
	if n := len(m.exp); n > 2000 {
		t.Fatalf("heap holds %d items for at most 1 entry", n)
	}
}

// TestRedisUnreachable: a closed port fails every call with an error,
// quickly; nothing is claimed.
func TestRedisUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	l, err := Open(context.Background(), "redis://"+addr+"/0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := l.Claim(ctx, newOp(t), fpOf("a"), time.Minute); err == nil {
		t.Fatal("claim against a closed port succeeded")
	}
	if err := l.Ping(ctx); err == nil {
		t.Fatal("ping against a closed port succeeded")
	}
	if ctx.Err() != nil {
		t.Fatal("the unreachable Redis was not noticed before the deadline")
	}
}

// TestRedisSilent: a server that accepts and never answers makes calls
// fail at the caller's deadline (go-redis must honour the context).
func TestRedisSilent(t *testing.T) {
	addr := silentServer(t)
	l, err := Open(context.Background(), "redis://"+addr+"/0?read_timeout=30s&write_timeout=30s")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = l.Claim(ctx, newOp(t), fpOf("a"), time.Minute)
	if err == nil {
		t.Fatal("claim against a silent server succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("claim took %v: the context deadline was not honoured", d)
	}
}

// silentServer accepts connections and never writes a byte.
func silentServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestRedisStoredFormat: the stored value holds the fingerprint and the
// result, never more (the answers are not in the ledger).
func TestRedisStoredFormat(t *testing.T) {
	l := openTestRedis(t).(*redisLedger)
	ctx := context.Background()
	op, fp := newOp(t), fpOf("answers")
	c := mustClaim(t, l, op, fp, time.Minute, Acquired)
	v, err := l.c.Get(ctx, l.key(op)).Result()
	if err != nil || v != "p"+c.Token+hexFP(fp) {
		t.Fatalf("pending value %q %v", v, err)
	}
	if ttl, err := l.c.PTTL(ctx, l.key(op)).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("claim without its lease: PTTL %v %v", ttl, err)
	}
	if err := l.Finish(ctx, op, c.Token, fp, []byte("R"), time.Hour); err != nil {
		t.Fatal(err)
	}
	v, err = l.c.Get(ctx, l.key(op)).Result()
	if err != nil || v != "d"+c.Token+hexFP(fp)+"R" {
		t.Fatalf("done value %q %v", v, err)
	}
	if ttl, err := l.c.PTTL(ctx, l.key(op)).Result(); err != nil || ttl <= time.Minute || ttl > time.Hour {
		t.Fatalf("result without its TTL: PTTL %v %v", ttl, err)
	}
}

// TestExpHeap: the typed heap pops in time order.
func TestExpHeap(t *testing.T) {
	var h expHeap
	for _, d := range []int64{5, 3, 9, 1, 7, 3, 0, 8, 2, 6, 4} {
		h.push(expItem{at: d})
	}
	var got []int64
	for len(h) > 0 {
		got = append(got, h.pop().at)
	}
	if !slices.IsSorted(got) || len(got) != 11 {
		t.Fatalf("popped %v", got)
	}
	h = nil
	for _, d := range []int64{5, 3, 9, 1, 7} {
		h = append(h, expItem{at: d})
	}
	h.init()
	got = got[:0]
	for len(h) > 0 {
		got = append(got, h.pop().at)
	}
	if !slices.Equal(got, []int64{1, 3, 5, 7, 9}) {
		t.Fatalf("after init: %v", got)
	}
}

// TestMemoryReschedules: a finished entry outlives its claim's lease (its
// heap item moves to the new expiry) and then goes.
func TestMemoryReschedules(t *testing.T) {
	ctx := context.Background()
	m := newMemory(options{maxEntries: 10})
	fp := fpOf("a")
	c, _ := m.Claim(ctx, "op", fp, 50*time.Millisecond)
	if err := m.Finish(ctx, "op", c.Token, fp, []byte("r"), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if m.len() != 1 {
		t.Fatal("the finished entry went with its claim's lease")
	}
	time.Sleep(250 * time.Millisecond)
	if m.len() != 0 || len(m.exp) != 0 {
		t.Fatalf("%d entries, %d heap items after the TTL", m.len(), len(m.exp))
	}
}
