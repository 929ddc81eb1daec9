package redis

// Crash and failover tests: users run host.Guard.Once, each on an
// operation of its own whose effect counts its runs, against private
// redis-server processes (never the shared 127.0.0.1:6379) that the test
// kills with SIGKILL in the middle of the run. Each skips without
// redis-server (fails under MRTR_REQUIRE_SERVICES=1).

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
)

// Timings of the runs. The machines are shared and loaded: every wait is
// generous, and bounded.
const (
	fleetUsers    = 40
	fleetSpread   = 3 * time.Second        // users start over this window
	fleetEffect   = 50 * time.Millisecond  // each effect takes this long
	fleetKillAt   = time.Second            // the store dies this far in
	fleetDeadline = 45 * time.Second       // every user must be done by then
	fleetLease    = 10 * time.Second       // a claim whose owner died blocks this long
	fleetTimeout  = 500 * time.Millisecond // each ledger call
)

type fleetUser struct {
	out     *host.Outcome
	key     string // the operation's ledger key
	runs    atomic.Int32
	started atomic.Int64 // when the effect last started (unix ns)
	result  []byte
	outcome string // "done", or the Reason of an effect that ran unrecorded
}

// once runs Once for u; ran tells whether this call ran the effect.
func (u *fleetUser) once(ctx context.Context, g *host.Guard) (res []byte, replay, ran bool, err error) {
	res, replay, err = g.Once(ctx, u.out, func(ctx context.Context) ([]byte, error) {
		ran = true
		u.started.Store(time.Now().UnixNano())
		n := u.runs.Add(1)
		select {
		case <-time.After(fleetEffect):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return []byte(`{"resultType":"complete","content":[{"type":"text","text":"booked #` + strconv.Itoa(int(n)) + `"}]}`), nil
	})
	return res, replay, ran, err
}

// fleetGuard is a guard (native engine) on the ledger at setting.
func fleetGuard(t *testing.T, setting string) (*host.Guard, *redisLedger) {
	t.Helper()
	l, err := ledger.Open(context.Background(), setting, ledger.WithPrefix("mrtr-fleet:"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	g, err := host.New(context.Background(), host.WithKeys(host.NewKeyring()), host.WithAudience("fleet.example"),
		host.WithEngine(host.EngineNative), host.WithLedger(l), host.WithLedgerTimeout(fleetTimeout),
		host.WithLedgerLease(fleetLease), host.WithLedgerWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	return g, l.(*redisLedger)
}

var fleetSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"]}`)

// newFleetUser asks and answers one form: a complete outcome with an
// operation of its own.
func newFleetUser(t testing.TB, g *host.Guard, i int) *fleetUser {
	t.Helper()
	ctx := context.Background()
	req := &host.Request{Principal: "user" + strconv.Itoa(i) + "@example.com", Method: "tools/call", Target: "book_demo_call",
		Arguments: json.RawMessage(`{"topic":"pricing"}`), Capabilities: json.RawMessage(`{"elicitation":{"form":{}}}`)}
	ir, err := g.Ask(ctx, req, []host.InputRequest{host.Form("contact", "Who?", fleetSchema)})
	if err != nil {
		t.Fatal(err)
	}
	req.RequestState = ir.RequestState
	req.InputResponses = json.RawMessage(`{"contact":{"action":"accept","content":{"name":"User ` + strconv.Itoa(i) + `"}}}`)
	o, err := g.Resume(ctx, req)
	if err != nil || o.Status != host.Complete {
		t.Fatalf("resume: %v", err)
	}
	return &fleetUser{out: o}
}

// fleetStats is what a run saw.
type fleetStats struct {
	failedClosed, inProgress atomic.Int32
}

// runFleet starts the users over fleetSpread, runs disrupt at fleetKillAt
// and waits until every user is done: its effect ran and Once returned
// its result (recorded, or not: "not_recorded" tells the user the effect
// happened). A fail-closed answer must not have run the effect; the user
// retries it.
func runFleet(t *testing.T, g *host.Guard, users []*fleetUser, disrupt func()) *fleetStats {
	t.Helper()
	st := &fleetStats{}
	deadline := time.Now().Add(fleetDeadline)
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(fleetSpread * time.Duration(i) / time.Duration(len(users)))
			for pause := 10 * time.Millisecond; time.Now().Before(deadline); pause = min(2*pause, 200*time.Millisecond) {
				res, _, ran, err := u.once(context.Background(), g)
				if err == nil {
					u.result, u.outcome = res, "done"
					return
				}
				e, ok := host.AsError(err)
				switch {
				case ok && e.Code == host.CodeLedgerUnavailable && res != nil:
					u.result, u.outcome = res, e.Reason
					return
				case ok && e.Code == host.CodeLedgerUnavailable:
					st.failedClosed.Add(1)
				case ok && e.Code == host.CodeInProgress:
					st.inProgress.Add(1)
				default:
					t.Errorf("user %d: %v", i, err)
					return
				}
				if ran {
					t.Errorf("user %d: the effect ran, and Once answered %v without its result", i, err)
				}
				time.Sleep(pause)
			}
		}()
	}
	time.Sleep(fleetKillAt)
	disrupt()
	wg.Wait()
	return st
}

// fleetCheck counts the users whose effect ran more than once, then
// replays every user whose result was recorded (the same accepted final
// retry again, after the failover) and counts those whose replay did not
// return the stored result. strict makes either count a failure;
// otherwise they are logged.
func fleetCheck(t *testing.T, g *host.Guard, users []*fleetUser, st *fleetStats, strict bool) {
	t.Helper()
	report := t.Logf
	if strict {
		report = t.Errorf
	}
	unfinished, unrecorded := 0, 0
	for i, u := range users {
		switch u.outcome {
		case "":
			unfinished++
			t.Errorf("user %d never got its result within %v", i, fleetDeadline)
		case "done":
		default:
			unrecorded++
		}
	}
	lost, twice := 0, 0
	for i, u := range users {
		if u.outcome != "done" {
			continue
		}
		res, replay, _, err := u.once(context.Background(), g)
		if err != nil || !replay || string(res) != string(u.result) {
			lost++
			report("user %d: replay after the failover: replay=%v err=%v (a recorded result was lost)", i, replay, err)
		}
	}
	for i, u := range users {
		if n := u.runs.Load(); n > 1 {
			twice++
			report("user %d: the effect ran %d times", i, n)
		} else if n == 0 && u.outcome != "" {
			t.Errorf("user %d: done without its effect", i)
		}
	}
	t.Logf("%d users: %d done and replayed, %d ran unrecorded (told not_recorded), %d unfinished; %d fail-closed answers, %d in-progress answers; effects twice: %d, recorded results lost: %d",
		len(users), len(users)-unrecorded-unfinished, unrecorded, unfinished, st.failedClosed.Load(), st.inProgress.Load(), twice, lost)
}

// mustFailClosed: while the store is away, Once answers a retryable
// error and runs nothing.
func mustFailClosed(t *testing.T, g *host.Guard, u *fleetUser) {
	t.Helper()
	_, _, ran, err := u.once(context.Background(), g)
	if e, ok := host.AsError(err); !ok || e.Code != host.CodeLedgerUnavailable || ran || u.runs.Load() != 0 {
		t.Errorf("with the store away: %v, effect ran: %v", err, ran)
	}
}

// firstSuccess runs Once for u until it succeeds (bounded) and returns
// how long it took from since until the effect started (the claim was
// taken).
func firstSuccess(t *testing.T, g *host.Guard, u *fleetUser, since time.Time) time.Duration {
	t.Helper()
	failures := map[string]int{} // by code/reason
	for time.Since(since) < fleetDeadline {
		t0 := time.Now()
		_, _, _, err := u.once(context.Background(), g)
		if err == nil {
			claimed := time.Unix(0, u.started.Load()).Sub(since)
			t.Logf("claimed after %v, after failed calls %v; the last call took %v with its %v effect", claimed, failures, time.Since(t0), fleetEffect)
			return claimed
		}
		e, _ := host.AsError(err)
		failures[e.Code+"/"+e.Reason]++
		time.Sleep(time.Millisecond)
	}
	t.Errorf("no successful Once within %v of the store's return", fleetDeadline)
	return 0
}

func newFleetUsers(t *testing.T, g *host.Guard, l *redisLedger, n int) []*fleetUser {
	users := make([]*fleetUser, n)
	for i := range users {
		users[i] = newFleetUser(t, g, i)
		users[i].key = l.key(users[i].out.OperationID)
	}
	return users
}

// TestCrashAppendOnly: a Redis with appendonly yes and appendfsync always
// is killed with SIGKILL and restarted mid-run. While it is away Once
// fails closed; the same client recovers; every user's effect ran once
// and every recorded result survives.
func TestCrashAppendOnly(t *testing.T) {
	srv := ledgertest.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	g, l := fleetGuard(t, srv.URL())
	users := newFleetUsers(t, g, l, fleetUsers)
	probes := newFleetUsers(t, g, l, 2)
	st := runFleet(t, g, users, func() {
		srv.Kill()
		mustFailClosed(t, g, probes[0])
		time.Sleep(500 * time.Millisecond)
		started := time.Now()
		srv.Start(t)
		back := time.Now()
		d := firstSuccess(t, g, probes[1], back)
		t.Logf("restart: %v until PING answers, then %v until the first Once ran its effect (same client)", back.Sub(started), d)
	})
	fleetCheck(t, g, users, st, true)
}

// TestFailoverCluster: a 3-master Redis Cluster with a replica each; a
// master is killed mid-run and its replica promoted. With
// wait_replicas=1 no effect runs twice and no recorded result is lost
// (asserted); without it, the test logs what it sees.
func TestFailoverCluster(t *testing.T) {
	for _, wait := range []bool{true, false} {
		t.Run("wait="+strconv.FormatBool(wait), func(t *testing.T) {
			c := ledgertest.StartCluster(t, 3, 1, 2*time.Second)
			setting := c.URL()
			if wait {
				setting += "&wait_replicas=1&wait_timeout=200ms"
			}
			g, l := fleetGuard(t, setting)
			users := newFleetUsers(t, g, l, fleetUsers)
			probes := newFleetUsers(t, g, l, 12)
			victim := c.MasterOf(probes[0].key)
			if victim == nil {
				t.Fatal("no master serves the probe's slot")
			}
			var replica *ledgertest.RedisProc
			for _, n := range c.Nodes {
				if n.Role() == "slave" && replicaOf(n) == victim.Port {
					replica = n
				}
			}
			if replica == nil {
				t.Fatal("the victim has no replica")
			}
			// Probes on the victim's slots: one to see it fail closed,
			// one to time the first success after the failover.
			var onVictim []*fleetUser
			for _, p := range probes {
				if c.MasterOf(p.key) == victim {
					onVictim = append(onVictim, p)
				}
			}
			if len(onVictim) < 2 {
				t.Skip("fewer than 2 of 12 probes hash to the victim's slots")
			}
			st := runFleet(t, g, users, func() {
				killed := time.Now()
				victim.Kill()
				mustFailClosed(t, g, onVictim[0])
				if err := waitRole(replica, "master", 30*time.Second); err != nil {
					t.Errorf("the replica was not promoted: %v", err)
					return
				}
				promoted := time.Now()
				if wait {
					// The new master has no replica until the old one
					// rejoins: every claim on its slots fails closed.
					mustFailClosed(t, g, onVictim[1])
					victim.Start(t)
					if err := waitRole(victim, "slave", 30*time.Second); err != nil {
						t.Errorf("the old master did not rejoin as a replica: %v", err)
					}
				}
				back := time.Now()
				d := firstSuccess(t, g, onVictim[1], back)
				t.Logf("failover: %v from the kill to the promotion; the first Once ran its effect %v after the store was back (%v after the kill)",
					promoted.Sub(killed), d, time.Since(killed))
			})
			fleetCheck(t, g, users, st, wait)
		})
	}
}

// TestFailoverSentinel: a master with one replica and three sentinels;
// the master is killed mid-run and a sentinel promotes the replica. As
// for the cluster: with wait_replicas=1 asserted, without it logged.
func TestFailoverSentinel(t *testing.T) {
	for _, wait := range []bool{true, false} {
		t.Run("wait="+strconv.FormatBool(wait), func(t *testing.T) {
			s := ledgertest.StartSentinels(t, 1, 3, time.Second)
			setting := s.URL()
			if wait {
				setting += "&wait_replicas=1&wait_timeout=200ms"
			}
			g, l := fleetGuard(t, setting)
			users := newFleetUsers(t, g, l, fleetUsers)
			probes := newFleetUsers(t, g, l, 3)
			st := runFleet(t, g, users, func() {
				killed := time.Now()
				s.Master.Kill()
				mustFailClosed(t, g, probes[0])
				if err := ledgertest.WaitFor(30*time.Second, func() bool { return s.MasterAddr() == s.Replicas[0].Addr() }); err != nil {
					t.Errorf("the sentinels did not promote the replica: %v", err)
					return
				}
				promoted := time.Now()
				if wait {
					mustFailClosed(t, g, probes[1])
					// The old master comes back empty and is made a
					// replica of the new one (as a sentinel would).
					s.Master.Start(t)
					if _, err := s.Master.Do(context.Background(), "REPLICAOF", "127.0.0.1", strconv.Itoa(s.Replicas[0].Port)); err != nil {
						t.Error(err)
					}
					if err := ledgertest.WaitFor(30*time.Second, func() bool { return s.Master.LinkUp() }); err != nil {
						t.Errorf("the old master did not sync as a replica: %v", err)
					}
				}
				back := time.Now()
				d := firstSuccess(t, g, probes[2], back)
				t.Logf("failover: %v from the kill to the promotion; the first Once ran its effect %v after the store was back (%v after the kill)",
					promoted.Sub(killed), d, time.Since(killed))
			})
			fleetCheck(t, g, users, st, wait)
		})
	}
}

// replicaOf is the port of the master a replica follows (ROLE).
func replicaOf(n *ledgertest.RedisProc) int {
	v, err := n.Do(context.Background(), "ROLE")
	a, ok := v.([]any)
	if err != nil || !ok || len(a) < 3 {
		return 0
	}
	p, _ := a[2].(int64)
	return int(p)
}

func waitRole(n *ledgertest.RedisProc, role string, within time.Duration) error {
	return ledgertest.WaitFor(within, func() bool { return n.Role() == role })
}

// TestReplicaAck is what wait_replicas buys, shown without a failover
// detector: the replica is promoted (REPLICAOF NO ONE, as after a
// partition) while this client still talks to the old master, which is
// then killed. Without WAIT a result that Finish reported stored is gone
// from the new master (a replay would run the effect again); with WAIT
// the claim fails closed, so no effect runs that the new master does not
// know of, and what was acknowledged before survives.
func TestReplicaAck(t *testing.T) {
	for _, wait := range []bool{false, true} {
		t.Run("wait="+strconv.FormatBool(wait), func(t *testing.T) {
			ctx := context.Background()
			m := ledgertest.StartRedis(t)
			rep := ledgertest.StartReplica(t, m)
			setting := m.URL()
			if wait {
				setting += "?wait_replicas=1&wait_timeout=100ms"
			}
			l, err := ledger.Open(ctx, setting)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			fp := ledgertest.FP("a")
			opA, opB := ledgertest.NewOp(t), ledgertest.NewOp(t)
			c := ledgertest.MustClaim(t, l, opA, fp, time.Minute, ledger.Acquired)
			if err := l.Finish(ctx, opA, c.Token, fp, []byte("A"), time.Hour); err != nil {
				t.Fatal(err)
			}

			if _, err := rep.Do(ctx, "REPLICAOF", "NO", "ONE"); err != nil {
				t.Fatal(err)
			}
			c, err = l.Claim(ctx, opB, fp, time.Minute)
			if wait {
				if !errors.Is(err, ErrNotReplicated) {
					t.Fatalf("a claim no replica acknowledged: %v %v", c, err)
				}
				// Released: a retry need not wait for the lease.
				ledgertest.MustGet(t, l, opB, ledger.Absent)
			} else {
				if err != nil || c.Status != ledger.Acquired {
					t.Fatal(c, err)
				}
				if err := l.Finish(ctx, opB, c.Token, fp, []byte("B"), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			m.Kill()

			promoted, err := ledger.Open(ctx, rep.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer promoted.Close()
			if wait {
				// Acknowledged before the promotion: it survived.
				ledgertest.MustGet(t, promoted, opA, ledger.Done)
			} else {
				e, err := promoted.Get(ctx, opA)
				t.Logf("without WAIT, the result finished just before the promotion is %v on the new master (%v)", e.State, err)
			}
			// B ran its effect only without WAIT, and its result is lost.
			ledgertest.MustGet(t, promoted, opB, ledger.Absent)
		})
	}
}
