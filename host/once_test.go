package host_test

// Tests of Guard.Once against the real guard (guard.wasm through wazero,
// and the native core), the real ledgers and a real Redis: the shared one
// at 127.0.0.1:6379 (MRTR_TEST_REDIS overrides it; the tests fail if it
// does not answer) and redis-server processes of their own for the
// restart tests.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	_ "github.com/mrtr-wasm/mrtr-wasm/ledger/redis"
	_ "github.com/mrtr-wasm/mrtr-wasm/ledger/sqlite"
)

// The fault tests dial closed ports on purpose: keep go-redis quiet.
func init() { redis.SetLogger(&logging.VoidLogger{}) }

var onceSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1},"email":{"type":"string","format":"email"}},"required":["name","email"]}`)

const (
	onceAnswer      = `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com"}}}`
	onceOtherAnswer = `{"contact":{"action":"accept","content":{"name":"Bob Roe","email":"bob@example.com"}}}`
)

func onceGuard(t testing.TB, keys *host.Keyring, opts ...host.Option) *host.Guard {
	t.Helper()
	g, err := host.New(context.Background(), append([]host.Option{host.WithKeys(keys), host.WithAudience("once.example")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	return g
}

// onceAsk asks for a contact on g and returns the retry carrying answer.
func onceAsk(t testing.TB, g *host.Guard, answer string) *host.Request {
	t.Helper()
	req := &host.Request{
		Principal:    "alice@example.com",
		Method:       "tools/call",
		Target:       "book_demo_call",
		Arguments:    json.RawMessage(`{"topic":"pricing"}`),
		Capabilities: json.RawMessage(`{"elicitation":{"form":{}}}`),
	}
	ir, err := g.Ask(context.Background(), req, []host.InputRequest{host.Form("contact", "Who should we book?", onceSchema)})
	if err != nil {
		t.Fatal(err)
	}
	req.RequestState = ir.RequestState
	req.InputResponses = json.RawMessage(answer)
	return req
}

func onceResume(t testing.TB, g *host.Guard, req *host.Request) *host.Outcome {
	t.Helper()
	o, err := g.Resume(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != host.Complete {
		t.Fatalf("status %s", o.Status)
	}
	return o
}

func onceCode(t testing.TB, err error, code string) *host.Error {
	t.Helper()
	e, ok := host.AsError(err)
	if !ok || e.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
	return e
}

// onceCounter is an effect that counts its runs and answers with its run
// number.
type onceCounter struct{ n atomic.Int32 }

func (c *onceCounter) effect(ctx context.Context) ([]byte, error) {
	n := c.n.Add(1)
	return []byte(`{"resultType":"complete","content":[{"type":"text","text":"booked #` + strconv.Itoa(int(n)) + `"}]}`), nil
}

func TestOnce(t *testing.T) {
	for _, eng := range []host.Engine{host.EngineNative, host.EngineWasm} {
		t.Run(eng.String(), func(t *testing.T) {
			ctx := context.Background()
			g := onceGuard(t, host.NewKeyring(), host.WithEngine(eng))
			req := onceAsk(t, g, onceAnswer)
			var c onceCounter

			res, replay, err := g.Once(ctx, onceResume(t, g, req), c.effect)
			if err != nil || replay || !strings.Contains(string(res), "booked #1") {
				t.Fatalf("first: %s %v %v", res, replay, err)
			}
			// The same accepted retry again: the stored result, no new effect.
			for i := 0; i < 3; i++ {
				res2, replay, err := g.Once(ctx, onceResume(t, g, req), c.effect)
				if err != nil || !replay || !bytes.Equal(res2, res) {
					t.Fatalf("replay: %s %v %v", res2, replay, err)
				}
			}
			// The same state with other answers: refused.
			other := *req
			other.InputResponses = json.RawMessage(onceOtherAnswer)
			_, _, err = g.Once(ctx, onceResume(t, g, &other), c.effect)
			e := onceCode(t, err, host.CodeConflict)
			if e.JSONRPCCode() != -32602 {
				t.Fatalf("conflict maps to %d", e.JSONRPCCode())
			}
			if n := c.n.Load(); n != 1 {
				t.Fatalf("the effect ran %d times", n)
			}
		})
	}
}

func TestOnceNotComplete(t *testing.T) {
	ctx := context.Background()
	g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative))
	var c onceCounter
	declined := onceAsk(t, g, `{"contact":{"action":"decline"}}`)
	o, err := g.Resume(ctx, declined)
	if err != nil || o.Status != host.Declined {
		t.Fatal(o, err)
	}
	// A complete outcome built by hand, with a valid digest, lacks the
	// core's rememberSeconds: the ledger would not know how long to keep it.
	handmade := &host.Outcome{Status: host.Complete, OperationID: "op", Round: 1, AnswersDigest: strings.Repeat("ab", 32)}
	for _, o := range []*host.Outcome{nil, o, {Status: host.InputRequired, OperationID: "x"}, {Status: host.Complete}, handmade} {
		_, _, err := g.Once(ctx, o, c.effect)
		onceCode(t, err, host.CodeNotComplete)
	}
	if c.n.Load() != 0 {
		t.Fatal("an effect ran for an outcome that is not complete")
	}
}

// TestOnceCanonicalAnswers: Once keys the ledger with the core's answers
// digest, so one retry spelled another way (member order, 1.0 or 1e0 for
// 1, "\u00e9" for "é") is the same answers: a replay, in both engines;
// any change of value is a conflict. It also checks that the digest is the
// RFC 8785 one ABI.md defines, recomputed here from Go values.
func TestOnceCanonicalAnswers(t *testing.T) {
	ctx := context.Background()
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"number"},"ok":{"type":"boolean"}},"required":["name","n"]}`)
	keys := host.NewKeyring()
	l := ledger.NewMemory()
	guards := map[host.Engine]*host.Guard{}
	for _, e := range []host.Engine{host.EngineNative, host.EngineWasm} {
		guards[e] = onceGuard(t, keys, host.WithEngine(e), host.WithLedger(l))
	}
	req := &host.Request{Principal: "alice@example.com", Method: "tools/call", Target: "t", Capabilities: json.RawMessage(`{"elicitation":{"form":{}}}`)}
	ir, err := guards[host.EngineNative].Ask(ctx, req, []host.InputRequest{host.Form("f", "?", schema)})
	if err != nil {
		t.Fatal(err)
	}
	req.RequestState = ir.RequestState
	outcome := func(e host.Engine, answers string) *host.Outcome {
		r := *req
		r.InputResponses = json.RawMessage(answers)
		return onceResume(t, guards[e], &r)
	}
	var c onceCounter
	first := outcome(host.EngineNative, `{"f":{"action":"accept","content":{"name":"Jos\u00e9","n":1.0,"ok":true}}}`)
	if _, _, err := guards[host.EngineNative].Once(ctx, first, c.effect); err != nil {
		t.Fatal(err)
	}
	// The digest is SHA-256 over the domain and the RFC 8785 form.
	want := sha256.Sum256([]byte("mrtr-wasm/answers/v2\x00" + `{"f":{"action":"accept","content":{"n":1,"name":"José","ok":true}}}`))
	if first.AnswersDigest != hex.EncodeToString(want[:]) {
		t.Fatalf("digest %s, want %x", first.AnswersDigest, want)
	}
	for _, e := range []host.Engine{host.EngineNative, host.EngineWasm} {
		for _, same := range []string{
			`{"f":{"content":{"ok":true,"n":1,"name":"José"},"action":"accept"}}`,
			`{"f":{"action":"accept","content":{"name":"Jos\u00E9","n":1e0,"ok":true}}}`,
			`{"f":{"action":"accept","content":{"name":"José","n":0.1e1,"ok":true}}}`,
		} {
			o := outcome(e, same)
			if o.AnswersDigest != first.AnswersDigest {
				t.Fatalf("%s: %s: digest %s, want %s", e, same, o.AnswersDigest, first.AnswersDigest)
			}
			if _, replay, err := guards[e].Once(ctx, o, c.effect); err != nil || !replay {
				t.Fatalf("%s: %s: replay %v, %v", e, same, replay, err)
			}
		}
		for _, diff := range []string{
			`{"f":{"action":"accept","content":{"name":"Jose","n":1,"ok":true}}}`,
			`{"f":{"action":"accept","content":{"name":"José","n":1.5,"ok":true}}}`,
			`{"f":{"action":"accept","content":{"name":"José","n":1}}}`,
		} {
			_, _, err := guards[e].Once(ctx, outcome(e, diff), c.effect)
			onceCode(t, err, host.CodeConflict)
		}
	}
	if c.n.Load() != 1 {
		t.Fatalf("the effect ran %d times", c.n.Load())
	}
	// An outcome without the core's digest (built by hand) is refused.
	hand := *first
	hand.AnswersDigest = ""
	_, _, err = guards[host.EngineNative].Once(ctx, &hand, c.effect)
	onceCode(t, err, host.CodeNotComplete)
}

// TestOnceEffectFails: an error or a panic releases the claim, so the
// user's retry runs the effect again; success is then final.
func TestOnceEffectFails(t *testing.T) {
	ctx := context.Background()
	l := ledger.NewMemory()
	g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(l))
	o := onceResume(t, g, onceAsk(t, g, onceAnswer))
	boom := errors.New("the CRM is down")
	runs := 0
	_, _, err := g.Once(ctx, o, func(context.Context) ([]byte, error) { runs++; return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("the effect's error came back as %v", err)
	}
	if e, _ := l.Get(ctx, o.OperationID); e.State != ledger.Absent {
		t.Fatalf("a failed effect left %v", e.State)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic was swallowed")
			}
		}()
		_, _, _ = g.Once(ctx, o, func(context.Context) ([]byte, error) { runs++; panic("bug") })
	}()
	if e, _ := l.Get(ctx, o.OperationID); e.State != ledger.Absent {
		t.Fatalf("a panicking effect left %v", e.State)
	}
	res, replay, err := g.Once(ctx, o, func(context.Context) ([]byte, error) { runs++; return []byte(`"ok"`), nil })
	if err != nil || replay || string(res) != `"ok"` {
		t.Fatal(res, replay, err)
	}
	_, replay, err = g.Once(ctx, o, func(context.Context) ([]byte, error) { runs++; return nil, nil })
	if err != nil || !replay || runs != 3 {
		t.Fatalf("replay %v, err %v, %d runs", replay, err, runs)
	}
}

// TestOnceConcurrentDuplicate: a duplicate waits for the running
// effect's result; past its wait it gets a retryable in-progress error.
func TestOnceConcurrentDuplicate(t *testing.T) {
	ctx := context.Background()
	l := ledger.NewMemory()
	keys := host.NewKeyring()
	g := onceGuard(t, keys, host.WithEngine(host.EngineNative), host.WithLedger(l))
	impatient := onceGuard(t, keys, host.WithEngine(host.EngineNative), host.WithLedger(l), host.WithLedgerWait(100*time.Millisecond))
	o := onceResume(t, g, onceAsk(t, g, onceAnswer))
	release := make(chan struct{})
	started := make(chan struct{})
	var c onceCounter
	done := make(chan []byte)
	go func() {
		res, _, err := g.Once(ctx, o, func(ctx context.Context) ([]byte, error) {
			close(started)
			<-release
			return c.effect(ctx)
		})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-started
	t0 := time.Now()
	_, _, err := impatient.Once(ctx, o, c.effect)
	e := onceCode(t, err, host.CodeInProgress)
	if d := time.Since(t0); d < 100*time.Millisecond || d > 2*time.Second {
		t.Fatalf("waited %v, want about 100ms", d)
	}
	if e.JSONRPCCode() != -32603 {
		t.Fatalf("in progress maps to %d", e.JSONRPCCode())
	}
	// A patient duplicate gets the result as soon as it is stored.
	waiter := make(chan []byte)
	go func() {
		res, replay, err := g.Once(ctx, o, c.effect)
		if err != nil || !replay {
			t.Errorf("waiting duplicate: %v %v", replay, err)
		}
		waiter <- res
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	first, second := <-done, <-waiter
	if !bytes.Equal(first, second) || c.n.Load() != 1 {
		t.Fatalf("%s / %s, %d runs", first, second, c.n.Load())
	}
}

// TestOnceDeadOwner: a claim whose owner died (claimed, never finished)
// blocks duplicates until its lease ends; then the request completes.
func TestOnceDeadOwner(t *testing.T) {
	for name, b := range map[string]struct {
		open func(t *testing.T) ledger.Ledger
		// bubble: the ledger reads Go's clock, so the lease runs on
		// synctest's fake one; Redis keeps its own time and is polled.
		bubble bool
	}{
		"memory": {func(t *testing.T) ledger.Ledger { return ledger.NewMemory() }, true},
		"sqlite": {func(t *testing.T) ledger.Ledger { return onceSQLite(t) }, true},
		"redis":  {func(t *testing.T) ledger.Ledger { return onceRedis(t, onceRedisURL()) }, false},
	} {
		run := func(t *testing.T) {
			ctx := context.Background()
			l := b.open(t)
			g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(l), host.WithLedgerWait(50*time.Millisecond))
			o := onceResume(t, g, onceAsk(t, g, onceAnswer))
			// Another instance claimed and was killed.
			lease := 300 * time.Millisecond
			if !b.bubble {
				lease = 3 * time.Second
			}
			fp := onceFingerprintOf(t, g, o, l)
			if _, err := l.Claim(ctx, o.OperationID, fp, lease); err != nil {
				t.Fatal(err)
			}
			var c onceCounter
			_, _, err := g.Once(ctx, o, c.effect)
			onceCode(t, err, host.CodeInProgress)
			if b.bubble {
				time.Sleep(lease)
			} else {
				onceAwait(t, l, o.OperationID, ledger.Absent)
			}
			res, replay, err := g.Once(ctx, o, c.effect)
			if err != nil || replay || c.n.Load() != 1 {
				t.Fatalf("after the lease: %s %v %v (%d runs)", res, replay, err, c.n.Load())
			}
		}
		t.Run(name, func(t *testing.T) {
			if b.bubble {
				synctest.Test(t, run)
			} else {
				run(t)
			}
		})
	}
}

// onceAwait polls l until op is in state want (a Redis TTL runs on the
// server's clock), failing after 10 s.
func onceAwait(t *testing.T, l ledger.Ledger, op string, want ledger.State) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		e, err := l.Get(context.Background(), op)
		if err != nil {
			t.Fatal(err)
		}
		if e.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %v after 10 s, want %v", op, e.State, want)
		}
	}
}

// onceFingerprintOf learns the fingerprint Once uses for o, from the
// ledger entry of a throwaway operation with the same answers.
func onceFingerprintOf(t *testing.T, g *host.Guard, o *host.Outcome, l ledger.Ledger) ledger.Fingerprint {
	t.Helper()
	probe := *o
	probe.OperationID = o.OperationID + "-probe"
	if _, _, err := g.Once(context.Background(), &probe, func(context.Context) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	e, err := l.Get(context.Background(), probe.OperationID)
	if err != nil || e.State != ledger.Done {
		t.Fatal(e, err)
	}
	return e.Fingerprint
}

// TestOnceLeaseEndsEffect: the effect's context ends with the lease, so an
// effect that honours it never runs while another instance may take over;
// the claim is released.
func TestOnceLeaseEndsEffect(t *testing.T) {
	ctx := context.Background()
	l := ledger.NewMemory()
	g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(l), host.WithLedgerLease(200*time.Millisecond))
	o := onceResume(t, g, onceAsk(t, g, onceAnswer))
	t0 := time.Now()
	_, _, err := g.Once(ctx, o, func(ctx context.Context) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(t0); d < 150*time.Millisecond || d > 2*time.Second {
		t.Fatalf("the effect ran %v, want about the 200ms lease", d)
	}
	if e, _ := l.Get(ctx, o.OperationID); e.State != ledger.Absent {
		t.Fatalf("entry %v after the lease ended the effect", e.State)
	}
}

// TestOnceEffectContext: the effect's context carries the lease's end as
// its deadline, ends at it (also for contexts derived from it), follows
// the caller's cancellation, and is done once the effect has returned.
func TestOnceEffectContext(t *testing.T) {
	ctx := context.Background()
	g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedgerLease(300*time.Millisecond))
	out := func() *host.Outcome { return onceResume(t, g, onceAsk(t, g, onceAnswer)) }

	t0 := time.Now()
	var leaked context.Context
	_, _, err := g.Once(ctx, out(), func(ctx context.Context) ([]byte, error) {
		d, ok := ctx.Deadline()
		if !ok || d.Before(t0.Add(250*time.Millisecond)) || d.After(time.Now().Add(300*time.Millisecond)) {
			t.Errorf("deadline %v (%v), want the lease's end", d.Sub(t0), ok)
		}
		if ctx.Err() != nil {
			t.Errorf("ended at the start: %v", ctx.Err())
		}
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		<-child.Done()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Errorf("after the lease: %v / %v", ctx.Err(), child.Err())
		}
		leaked = ctx
		return nil, ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) < 250*time.Millisecond {
		t.Fatalf("%v after %v", err, time.Since(t0))
	}

	// The caller cancels: the effect sees it.
	cctx, cancel := context.WithCancel(ctx)
	_, _, err = g.Once(cctx, out(), func(ctx context.Context) ([]byte, error) {
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
			t.Error("the caller's cancellation did not reach the effect")
		}
		return nil, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}

	// A quick effect that never looked: its context is done afterwards.
	_, _, err = g.Once(ctx, out(), func(ctx context.Context) ([]byte, error) { leaked = ctx; return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-leaked.Done():
	case <-time.After(time.Second):
		t.Fatal("the effect's context outlived the effect")
	}
}

// TestOnceExpires: a finished operation is kept for the state's lifetime
// plus the margin, then forgotten (the state has expired by then).
func TestOnceExpires(t *testing.T) {
	ctx := context.Background()
	// The memory ledger and the guard read Go's clock: synctest's fake one.
	synctest.Test(t, func(t *testing.T) {
		l := ledger.NewMemory()
		// Kept for rounds × TTL + margin: a replay may seal a re-ask,
		// with a fresh TTL, up to the round limit (2 here).
		g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(l),
			host.WithTTL(time.Second), host.WithMaxRounds(2), host.WithLedgerMargin(200*time.Millisecond))
		req := onceAsk(t, g, onceAnswer)
		o := onceResume(t, g, req)
		var c onceCounter
		if _, _, err := g.Once(ctx, o, c.effect); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2100 * time.Millisecond)
		if e, _ := l.Get(ctx, o.OperationID); e.State != ledger.Done {
			t.Fatalf("forgotten before a re-ask of it could expire: %v", e.State)
		}
		time.Sleep(300 * time.Millisecond)
		if e, _ := l.Get(ctx, o.OperationID); e.State != ledger.Absent {
			t.Fatalf("kept past rounds × TTL + margin: %v", e.State)
		}
		// And the state itself no longer opens, so nothing can replay it.
		_, err := g.Resume(ctx, req)
		onceCode(t, err, host.CodeStateInvalid)
	})

	var c onceCounter
	// With the defaults (3 rounds × 5 min + 1 min), Redis holds the
	// result that long.
	r := onceRedis(t, onceRedisURL())
	g2 := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(r.Ledger))
	o2 := onceResume(t, g2, onceAsk(t, g2, onceAnswer))
	if _, _, err := g2.Once(ctx, o2, c.effect); err != nil {
		t.Fatal(err)
	}
	ttl, err := r.client.PTTL(ctx, r.prefix+o2.OperationID).Result()
	if err != nil || ttl <= 15*time.Minute || ttl > 16*time.Minute {
		t.Fatalf("Redis keeps the result for %v (%v), want 15-16 min", ttl, err)
	}
}

// TestOnceTwoInstances: two guards with the same keys and one Redis
// ledger. A request asked on one is resumed on the other; the same
// accepted answer sent 100 times at once, alternating between the two,
// acts exactly once (an atomic onceCounter and a row in a SQLite table), and
// every caller gets the same result.
func TestOnceTwoInstances(t *testing.T) {
	ctx := context.Background()
	keys := host.NewKeyring()
	r := onceRedis(t, onceRedisURL())
	// Short waits, so some callers get in-progress and retry.
	opts := []host.Option{host.WithLedger(r.Ledger), host.WithLedgerWait(20 * time.Millisecond)}
	guards := []*host.Guard{
		onceGuard(t, keys, append(opts, host.WithEngine(host.EngineWasm))...),
		onceGuard(t, keys, append(opts, host.WithEngine(host.EngineNative))...),
	}
	req := onceAsk(t, guards[0], onceAnswer)
	if o := onceResume(t, guards[1], req); o.Status != host.Complete {
		t.Fatal(o.Status)
	}

	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "crm.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE bookings(id INTEGER PRIMARY KEY, op TEXT, name TEXT)`); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	effect := func(o *host.Outcome) func(ctx context.Context) ([]byte, error) {
		return func(ctx context.Context) ([]byte, error) {
			runs.Add(1)
			var contact struct{ Name string }
			if err := o.Content("contact", &contact); err != nil {
				return nil, err
			}
			time.Sleep(30 * time.Millisecond) // a slow CRM: duplicates arrive meanwhile
			res, err := db.ExecContext(ctx, `INSERT INTO bookings(op, name) VALUES(?, ?)`, o.OperationID, contact.Name)
			if err != nil {
				return nil, err
			}
			id, _ := res.LastInsertId()
			return []byte(fmt.Sprintf(`{"resultType":"complete","content":[{"type":"text","text":"booking %d for %s"}]}`, id, contact.Name)), nil
		}
	}

	const n = 100
	results := make([][]byte, n)
	var replays, inProgress atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			g := guards[i%2]
			mine := *req
			o, err := g.Resume(ctx, &mine)
			if err != nil || o.Status != host.Complete {
				t.Errorf("caller %d: Resume: %v", i, err)
				return
			}
			// Retry in-progress, as a client would, within a bound.
			for attempt := 0; ; attempt++ {
				res, replay, err := g.Once(ctx, o, effect(o))
				if e, ok := host.AsError(err); ok && e.Code == host.CodeInProgress && attempt < 200 {
					inProgress.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if err != nil {
					t.Errorf("caller %d: Once: %v", i, err)
					return
				}
				if replay {
					replays.Add(1)
				}
				results[i] = res
				return
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM bookings`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 || rows != 1 {
		t.Fatalf("the effect ran %d times, %d rows", runs.Load(), rows)
	}
	for i := range results {
		if !bytes.Equal(results[i], results[0]) {
			t.Fatalf("caller %d got %s, caller 0 got %s", i, results[i], results[0])
		}
	}
	if replays.Load() != n-1 {
		t.Fatalf("%d replays, want %d", replays.Load(), n-1)
	}
	t.Logf("result %s; %d replays, %d in-progress answers retried", results[0], replays.Load(), inProgress.Load())
}

// TestOnceLedgerDown: an unreachable ledger, a ledger that never answers
// and a cancelled caller all fail closed: no effect, a retryable
// CodeLedgerUnavailable, no secret in the error, and nothing recorded.
func TestOnceLedgerDown(t *testing.T) {
	ctx := context.Background()
	closed := onceFreePort(t)
	silent := onceSilentServer(t)
	for name, url := range map[string]string{
		"unreachable": "redis://:hunter2@" + closed + "/0",
		"silent":      "redis://:hunter2@" + silent + "/0",
	} {
		t.Run(name, func(t *testing.T) {
			l, err := ledger.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(l), host.WithLedgerTimeout(300*time.Millisecond))
			o := onceResume(t, g, onceAsk(t, g, onceAnswer))
			var c onceCounter
			t0 := time.Now()
			res, replay, err := g.Once(ctx, o, c.effect)
			e := onceCode(t, err, host.CodeLedgerUnavailable)
			if res != nil || replay || c.n.Load() != 0 {
				t.Fatalf("failed open: %s %v, %d runs", res, replay, c.n.Load())
			}
			if d := time.Since(t0); d > 3*time.Second {
				t.Fatalf("took %v to fail", d)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(e.Reason, "hunter2") {
				t.Fatal("the password reached the error")
			}
			if e.JSONRPCCode() != -32603 {
				t.Fatalf("JSON-RPC %d", e.JSONRPCCode())
			}
			t.Logf("%v (reason %s) after %v", err, e.Reason, time.Since(t0).Round(time.Millisecond))
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		l := ledger.NewMemory()
		g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(l))
		o := onceResume(t, g, onceAsk(t, g, onceAnswer))
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		var c onceCounter
		_, _, err := g.Once(cctx, o, c.effect)
		onceCode(t, err, host.CodeLedgerUnavailable)
		if e, _ := l.Get(ctx, o.OperationID); c.n.Load() != 0 || e.State != ledger.Absent {
			t.Fatalf("%d runs, entry %v", c.n.Load(), e.State)
		}
	})
	t.Run("full", func(t *testing.T) {
		l := ledger.NewMemory(ledger.WithMaxEntries(1))
		g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(l))
		var c onceCounter
		if _, _, err := g.Once(ctx, onceResume(t, g, onceAsk(t, g, onceAnswer)), c.effect); err != nil {
			t.Fatal(err)
		}
		_, _, err := g.Once(ctx, onceResume(t, g, onceAsk(t, g, onceAnswer)), c.effect)
		if e := onceCode(t, err, host.CodeLedgerUnavailable); e.Reason != "full" || c.n.Load() != 1 {
			t.Fatalf("reason %q, %d runs", e.Reason, c.n.Load())
		}
	})
}

// TestOnceRedisRestart runs requests against a redis-server of its own,
// kills it and starts it again on the same port.
//
// Without persistence (--save "" --appendonly no) a restart forgets every
// claim and result: requests fail closed while it is down and recover
// after, but a request finished before the restart and replayed after it
// runs again. That is the limit this test pins down; production Redis
// needs appendonly yes.
//
// With appendonly yes and appendfsync always, finished results and live
// claims survive a kill -9: the replay is recognised, and an effect whose
// finish was lost with the server stays claimed until its lease ends.
func TestOnceRedisRestart(t *testing.T) {
	testenv.Require(t, testenv.RedisServer)
	ctx := context.Background()
	keys := host.NewKeyring()

	t.Run("no-persistence", func(t *testing.T) {
		srv := onceStartRedis(t, false)
		r := onceRedis(t, srv.url)
		g := onceGuard(t, keys, host.WithEngine(host.EngineNative), host.WithLedger(r.Ledger), host.WithLedgerTimeout(300*time.Millisecond))
		var c onceCounter
		req1 := onceAsk(t, g, onceAnswer)
		if _, _, err := g.Once(ctx, onceResume(t, g, req1), c.effect); err != nil {
			t.Fatal(err)
		}
		srv.kill(t)
		req2 := onceAsk(t, g, onceAnswer)
		o2 := onceResume(t, g, req2)
		_, _, err := g.Once(ctx, o2, c.effect)
		onceCode(t, err, host.CodeLedgerUnavailable)
		if c.n.Load() != 1 {
			t.Fatal("an effect ran while the ledger was down")
		}
		srv.start(t)
		// The next requests recover: the one refused during the outage,
		// and a new one.
		if _, replay, err := g.Once(ctx, o2, c.effect); err != nil || replay {
			t.Fatalf("after the restart: %v %v", replay, err)
		}
		if _, _, err := g.Once(ctx, onceResume(t, g, onceAsk(t, g, onceAnswer)), c.effect); err != nil {
			t.Fatal(err)
		}
		if _, replay, _ := g.Once(ctx, onceResume(t, g, req2), c.effect); !replay {
			t.Fatal("a result stored after the restart was not replayed")
		}
		// The limit: the result of req1 died with the server.
		_, replay, err := g.Once(ctx, onceResume(t, g, req1), c.effect)
		if err != nil || replay || c.n.Load() != 4 {
			t.Fatalf("replay of a pre-restart request: replay %v, %v, %d runs", replay, err, c.n.Load())
		}
	})

	t.Run("appendonly", func(t *testing.T) {
		// Long enough that a restart on a loaded machine stays inside it;
		// its end is awaited by polling, not by sleeping.
		const lease = 5 * time.Second
		srv := onceStartRedis(t, true)
		r := onceRedis(t, srv.url)
		g := onceGuard(t, keys, host.WithEngine(host.EngineNative), host.WithLedger(r.Ledger),
			host.WithLedgerTimeout(300*time.Millisecond), host.WithLedgerLease(lease), host.WithLedgerWait(10*time.Millisecond))
		var c onceCounter
		req1 := onceAsk(t, g, onceAnswer)
		res1, _, err := g.Once(ctx, onceResume(t, g, req1), c.effect)
		if err != nil {
			t.Fatal(err)
		}
		srv.kill(t)
		srv.start(t)
		res, replay, err := g.Once(ctx, onceResume(t, g, req1), c.effect)
		if err != nil || !replay || !bytes.Equal(res, res1) || c.n.Load() != 1 {
			t.Fatalf("replay after kill -9: %s %v %v, %d runs", res, replay, err, c.n.Load())
		}

		// The server dies between claim and finish: the effect ran, Once
		// says so (result + not_recorded). The claim was persisted, so a
		// retry after the restart waits for the lease instead of acting.
		o2 := onceResume(t, g, onceAsk(t, g, onceAnswer))
		res2, _, err := g.Once(ctx, o2, func(ctx context.Context) ([]byte, error) {
			srv.kill(t)
			return c.effect(ctx)
		})
		if e := onceCode(t, err, host.CodeLedgerUnavailable); e.Reason != "not_recorded" || res2 == nil {
			t.Fatalf("reason %q, result %s", e.Reason, res2)
		}
		claimed := time.Now()
		srv.start(t)
		_, _, err = g.Once(ctx, o2, c.effect)
		onceCode(t, err, host.CodeInProgress)
		if c.n.Load() != 2 {
			t.Fatalf("%d runs", c.n.Load())
		}
		// Once the lease is over, the retry acts again: the documented
		// limit of an effect whose result was never recorded. Until then
		// every retry is refused as in progress.
		for {
			_, replay, err := g.Once(ctx, o2, c.effect)
			if e, ok := host.AsError(err); ok && e.Code == host.CodeInProgress {
				if time.Since(claimed) > lease+10*time.Second {
					t.Fatal("the claim outlived its lease by 10 s")
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if err != nil || replay || c.n.Load() != 3 {
				t.Fatalf("after the lease: %v %v, %d runs", replay, err, c.n.Load())
			}
			break
		}
	})
}

// --- Redis helpers -----------------------------------------------------------

func onceRedisURL() string { return testenv.RedisURL() }

type onceRedisLedger struct {
	ledger.Ledger
	client *redis.Client
	prefix string
}

// onceRedis opens a Redis ledger under a key prefix of its own and
// removes its keys afterwards. Without Redis it skips (fails under
// MRTR_REQUIRE_SERVICES=1).
func onceRedis(t testing.TB, url string) *onceRedisLedger {
	t.Helper()
	if url == onceRedisURL() {
		testenv.Require(t, testenv.Redis)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "mrtr-test:" + hex.EncodeToString(b[:]) + ":"
	l, err := ledger.Open(context.Background(), url, ledger.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.Ping(ctx); err != nil {
		t.Fatalf("Redis at %s does not answer (%v): these tests need a real Redis; start it with `service redis-server start`", url, err)
	}
	o, _ := redis.ParseURL(url)
	c := redis.NewClient(o)
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			_ = c.Del(ctx, keys...).Err()
		}
		_ = c.Close()
		_ = l.Close()
	})
	return &onceRedisLedger{Ledger: l, client: c, prefix: prefix}
}

type onceRedisProc struct {
	port, dir string
	aof       bool
	url       string
	cmd       *exec.Cmd
}

// onceStartRedis starts redis-server on a free port (never 6379).
func onceStartRedis(t *testing.T, aof bool) *onceRedisProc {
	addr := onceFreePort(t)
	_, port, _ := net.SplitHostPort(addr)
	p := &onceRedisProc{port: port, dir: t.TempDir(), aof: aof, url: "redis://127.0.0.1:" + port + "/0"}
	p.start(t)
	t.Cleanup(func() { p.kill(t) })
	return p
}

func (p *onceRedisProc) start(t *testing.T) {
	t.Helper()
	args := []string{"--port", p.port, "--bind", "127.0.0.1", "--save", "", "--dir", p.dir, "--daemonize", "no", "--logfile", ""}
	if p.aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	p.cmd = exec.Command("redis-server", args...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + p.port})
	defer c.Close()
	for i := 0; ; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		if i == 100 {
			t.Fatal("redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL (no shutdown save) and waits for the process.
func (p *onceRedisProc) kill(t *testing.T) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

func onceFreePort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// onceSilentServer accepts connections and never answers.
func onceSilentServer(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func onceSQLite(t *testing.T) ledger.Ledger {
	l, err := ledger.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// --- benchmarks --------------------------------------------------------------

// BenchmarkLedgerOverhead: Resume alone against Resume + Once with the
// memory ledger (a fresh operation each time: claim, effect, finish), on
// both engines. resume+once also reports once-%: the median cost of Once
// as a share of the median Resume, measured in the same loop.
//
//	go test ./host -run XXX -bench LedgerOverhead -benchtime 20000x
func BenchmarkLedgerOverhead(b *testing.B) {
	keys, _ := host.ParseKeys("k4.local." + strings.Repeat("A", 43))
	for _, eng := range []host.Engine{host.EngineNative, host.EngineWasm} {
		b.Run(eng.String(), func(b *testing.B) {
			g := onceGuard(b, keys, host.WithEngine(eng), host.WithPoolSize(1))
			req := onceAsk(b, g, onceAnswer)
			ctx := context.Background()
			effect := func(context.Context) ([]byte, error) { return []byte(`{"resultType":"complete"}`), nil }
			for i := 0; i < 3000; i++ { // warm the instance's heap
				if _, err := g.Resume(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("resume", func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if o, err := g.Resume(ctx, req); err != nil || o.Status != host.Complete {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				b.StopTimer()
				onceReport(b, "", lat)
			})
			seq := 0 // b.Run runs the function more than once: never reuse an id
			b.Run("resume+once", func(b *testing.B) {
				var resumeLat, onceLat, total []time.Duration
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					o, err := g.Resume(ctx, req)
					if err != nil || o.Status != host.Complete {
						b.Fatal(err)
					}
					resumed := time.Now()
					seq++
					o.OperationID = strconv.Itoa(seq) + o.OperationID // a fresh operation
					t1 := time.Now()
					if _, replay, err := g.Once(ctx, o, effect); err != nil || replay {
						b.Fatal(replay, err)
					}
					t2 := time.Now()
					resumeLat = append(resumeLat, resumed.Sub(t0))
					onceLat = append(onceLat, t2.Sub(t1))
					total = append(total, resumed.Sub(t0)+t2.Sub(t1))
				}
				b.StopTimer()
				onceReport(b, "", total)
				onceReport(b, "once-", onceLat)
				b.ReportMetric(100*float64(onceMedian(onceLat))/float64(onceMedian(resumeLat)), "once-%")
			})
		})
	}
}

func onceMedian(l []time.Duration) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s[len(s)/2]
}

func onceReport(b *testing.B, prefix string, l []time.Duration) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Nanoseconds())/1e3, prefix+"p50-µs")
	if prefix == "" {
		b.ReportMetric(float64(s[len(s)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}
