package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testseam"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

// A re-ask sealed from the final round's state after Once finished gets a
// fresh expiry: the ledger keeps the result for rounds × TTL + margin, so
// a replay of the re-ask still gets it (with TTL + margin it ran the
// effect again).
func TestReaskAfterFinishStillReplays(t *testing.T) {
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		l := ledger.NewMemory()
		g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(l)) // defaults: TTL 5 min, margin 1 min
		req := onceAsk(t, g, onceAnswer)
		var c onceCounter
		if _, _, err := g.Once(ctx, onceResume(t, g, req), c.effect); err != nil {
			t.Fatal(err)
		}
		// 2 min later: the same (still valid) state with a bad answer -> re-ask.
		time.Sleep(2 * time.Minute)
		bad := *req
		bad.InputResponses = json.RawMessage(`{"contact":{"action":"accept","content":{"name":"Ann Lee"}}}`)
		o, err := g.Resume(ctx, &bad)
		if err != nil || o.Status != host.InputRequired {
			t.Fatalf("re-ask: %v %v", o, err)
		}
		// 6.5 min after the effect: the re-asked state (sealed at 2 min,
		// 5 min TTL) still opens, and the ledger still has the result.
		time.Sleep(4*time.Minute + 30*time.Second)
		re := *req
		re.RequestState = o.InputRequired.RequestState
		re.InputResponses = json.RawMessage(onceAnswer)
		o2 := onceResume(t, g, &re)
		res, replay, err := g.Once(ctx, o2, c.effect)
		if n := c.n.Load(); n != 1 {
			t.Fatalf("the effect ran %d times (second: replay=%v err=%v res=%s)", n, replay, err, res)
		}
	})
}

// ttlPolicy allows everything with a per-tool TTL longer than the guard's,
// as the shipped demo policy does for book_demo_call (600 s vs 300 s).
type ttlPolicy struct{ ttl time.Duration }

func (p ttlPolicy) Ask(context.Context, *host.PolicyQuery) (*host.PolicyDecision, error) {
	return &host.PolicyDecision{Allow: true, TTL: p.ttl, MaxRounds: 3}, nil
}
func (p ttlPolicy) Resume(context.Context, *host.PolicyQuery) (*host.PolicyDecision, error) {
	return &host.PolicyDecision{Allow: true, TTL: p.ttl, MaxRounds: 3}, nil
}

// A policy's TTL longer than the guard's is not used: the ledger sizes
// what it keeps from the guard's limits.
func TestPolicyTTLNeverOutlivesTheLedger(t *testing.T) {
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		l := ledger.NewMemory()
		g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(l),
			host.WithTTL(5*time.Minute), host.WithPolicy(ttlPolicy{10 * time.Minute}))
		req := onceAsk(t, g, onceAnswer)
		var c onceCounter
		if _, _, err := g.Once(ctx, onceResume(t, g, req), c.effect); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5*time.Minute + time.Second) // the guard's TTL, not the policy's 10 min
		if _, err := g.Resume(ctx, req); !errors.Is(err, host.ErrInvalidState) {
			t.Fatalf("the state opens past the guard's TTL: %v", err)
		}
		if n := c.n.Load(); n != 1 {
			t.Fatalf("the effect ran %d times", n)
		}
	})
}

// With the shipped demo policy (600 s for book_demo_call) and the guard's
// TTL at 5 min (serve's --state-ttl default), the state does not open 7
// min later.
func TestShippedPolicyNarrowsOnly(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.Default(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	g := policyGuard(t, pol, testseam.Clock[host.Option](clock), host.WithTTL(5*time.Minute))
	req := toolRequest("book_demo_call")
	ir, err := g.Ask(ctx, req, []host.InputRequest{host.Form("contact", "Who?", contactSchema)})
	if err != nil {
		t.Fatal(err)
	}
	req.RequestState = ir.RequestState
	req.InputResponses = json.RawMessage(`{"contact":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}}}`)
	now.Add(int64(7 * time.Minute))
	if out, err := g.Resume(ctx, req); err == nil && out.Status == host.Complete {
		t.Fatalf("state sealed with the policy's 600 s opens 7 min later; the ledger keeps results 6 min")
	}
}
