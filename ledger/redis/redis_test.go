package redis

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
)

func TestMain(m *testing.M) {
	// The fault tests dial closed ports on purpose: keep go-redis quiet.
	goredis.SetLogger(&logging.VoidLogger{})
	os.Exit(m.Run())
}

// The contract, on a real Redis (skipped without one, unless
// MRTR_REQUIRE_SERVICES=1). Redis keeps its own time: the timed checks
// poll.
func TestContract(t *testing.T) {
	ledgertest.Contract(t, ledgertest.Wall, func(t *testing.T) ledger.Ledger { return ledgertest.OpenRedis(t) })
}

// The contract on the other deployments, on private servers: a Redis
// Cluster (every script in one slot) and a master whose writes wait for
// its replica (WAIT). Each subtest opens a ledger under its own prefix.
func TestContractDeployments(t *testing.T) {
	m := ledgertest.StartRedis(t)
	ledgertest.StartReplica(t, m)
	cluster := ledgertest.StartCluster(t, 3, 1, 5*time.Second)
	for _, c := range []struct{ name, setting string }{
		{"cluster", cluster.URL() + "&"},
		{"wait", m.URL() + "?wait_replicas=1&wait_timeout=2s&"},
		{"cluster+wait", cluster.URL() + "&wait_replicas=1&wait_timeout=2s&"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledgertest.Contract(t, ledgertest.Wall, func(t *testing.T) ledger.Ledger {
				l, err := ledger.Open(context.Background(), c.setting+"prefix="+ledgertest.NewOp(t)+":")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = l.Close() })
				return l
			})
		})
	}
}

func TestOpenSettings(t *testing.T) {
	ctx := context.Background()
	for _, s := range []string{"redis://%zz", "redis://h:6379/0?bogus=1"} {
		if _, err := ledger.Open(ctx, s); err == nil {
			t.Fatalf("%q opened", s)
		}
	}
	// A password in a bad URL never reaches the error.
	for _, s := range []string{"redis://user:hunter2@%zz:6379/0", "redis://user:hunter2@h:6379/0?bogus=1"} {
		_, err := ledger.Open(ctx, s)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%q: %v", s, err)
		}
	}
	l, err := ledger.Open(ctx, "redis://127.0.0.1:6379/0?prefix=abc:")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if p := l.(*redisLedger).prefix; p != "abc:" {
		t.Fatalf("prefix %q", p)
	}
	if p := New(nil, ledger.WithPrefix("x:")).(*redisLedger).prefix; p != "x:" {
		t.Fatalf("New: prefix %q", p)
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
	l, err := ledger.Open(context.Background(), "redis://"+addr+"/0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := l.Claim(ctx, ledgertest.NewOp(t), ledgertest.FP("a"), time.Minute); err == nil {
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
	l, err := ledger.Open(context.Background(), "redis://"+addr+"/0?read_timeout=30s&write_timeout=30s")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = l.Claim(ctx, ledgertest.NewOp(t), ledgertest.FP("a"), time.Minute)
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
	l := ledgertest.OpenRedis(t).(*redisLedger)
	ctx := context.Background()
	op, fp := ledgertest.NewOp(t), ledgertest.FP("answers")
	c := ledgertest.MustClaim(t, l, op, fp, time.Minute, ledger.Acquired)
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

// replayFirstSet makes the client send the first SET twice and return the
// second reply: what the client's own retry does after the first reply
// was lost (the SET landed, the retry finds the key taken). between runs
// between the two.
type replayFirstSet struct {
	done    atomic.Bool
	between func()
}

func (h *replayFirstSet) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *replayFirstSet) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if cmd.Name() == "set" && h.done.CompareAndSwap(false, true) {
			_ = next(ctx, cmd)
			h.between()
		}
		return next(ctx, cmd)
	}
}

func (h *replayFirstSet) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "set" && h.done.CompareAndSwap(false, true) {
			_ = next(ctx, cmds)
			h.between()
		}
		return next(ctx, cmds)
	}
}

// TestClaimRetriedSet: a claim whose SET the client sent twice is still
// the caller's (the entry holds its token). With WAIT, the WAIT that went
// with the retry proves nothing, so Claim asks again: here the replica
// left in between, and the claim fails closed.
func TestClaimRetriedSet(t *testing.T) {
	m := ledgertest.StartRedis(t)
	rep := ledgertest.StartReplica(t, m)
	for _, wait := range []bool{false, true} {
		t.Run("wait="+strconv.FormatBool(wait), func(t *testing.T) {
			ctx := context.Background()
			c := goredis.NewClient(&goredis.Options{Addr: m.Addr(), Protocol: 2, DisableIdentity: true})
			defer c.Close()
			h := &replayFirstSet{between: func() {}}
			c.AddHook(h)
			op, fp := ledgertest.NewOp(t), ledgertest.FP("a")
			if !wait {
				l := New(c)
				cl := ledgertest.MustClaim(t, l, op, fp, time.Minute, ledger.Acquired)
				if err := l.Finish(ctx, op, cl.Token, fp, []byte("R"), time.Hour); err != nil {
					t.Fatal(err)
				}
				ledgertest.MustClaim(t, l, op, fp, time.Minute, ledger.Finished)
				return
			}
			l := New(c, ledger.WithReplicaAck(1, 200*time.Millisecond))
			h.between = func() {
				if _, err := rep.Do(ctx, "REPLICAOF", "NO", "ONE"); err != nil {
					t.Error(err)
				}
			}
			if cl, err := l.Claim(ctx, op, fp, time.Minute); !errors.Is(err, ErrNotReplicated) {
				t.Fatalf("a retried claim no replica acknowledged: %v %v", cl, err)
			}
			ledgertest.MustGet(t, l, op, ledger.Absent)
		})
	}
}
