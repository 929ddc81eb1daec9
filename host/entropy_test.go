package host

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wazero's defaults are a fixed-seed random source and a frozen clock:
// every instance in every process would see the same "random" bytes and
// the same time. These tests prove the guard gives its instances (and its
// states) real ones, across instances and across processes.

const entropyHelperEnv = "MRTR_ENTROPY_HELPER_OUT"

// entropyReport is what one process measured, per engine.
type entropyReport struct {
	Engines map[string]*engineEntropy `json:"engines"`
}

type engineEntropy struct {
	// Per instance: the nonces of its states and its operation ids.
	Nonces [][]string `json:"nonces"`
	Ops    [][]string `json:"ops"`
	// Per instance, two guard_stats readings (wasm only).
	Stats [][]guestStats `json:"stats,omitempty"`
}

type guestStats struct {
	Random string `json:"random"`
	NowMs  int64  `json:"nowMs"`
	HostMs int64  `json:"hostMs"` // the host's clock when it asked
}

// measureEntropy runs asks on two instances of one Guard, each ask
// straight on its instance so that both are certainly used.
func measureEntropy(t testing.TB, eng Engine, asks int, opts ...Option) *engineEntropy {
	t.Helper()
	ctx := context.Background()
	g, err := New(ctx, append([]Option{WithEngine(eng), WithKeys(NewKeyring()), WithPoolSize(2)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	var slots []*slot
	for range 2 {
		s, err := g.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, s)
	}
	if slots[0].inst == slots[1].inst {
		t.Fatal("one instance twice")
	}
	req := bookReq("alice")
	r := &engineEntropy{}
	for _, s := range slots {
		var nonces, ops []string
		for range asks {
			env, err := g.envelope("ask", req)
			if err != nil {
				t.Fatal(err)
			}
			env = append(env, `,"inputRequests":{"c":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"n":{"type":"string"}}}}}}}`...)
			out, err := s.inst.call(ctx, env, 0)
			if err != nil {
				t.Fatal(err)
			}
			var resp response
			if err := json.Unmarshal(out, &resp); err != nil || !resp.OK || resp.Result == nil {
				t.Fatalf("ask: %v %s", err, out)
			}
			nonces = append(nonces, stateNonce(t, resp.Result.RequestState))
			ops = append(ops, resp.OperationID)
		}
		r.Nonces = append(r.Nonces, nonces)
		r.Ops = append(r.Ops, ops)
		if eng == EngineWasm {
			var st []guestStats
			for i := range 2 {
				if i > 0 {
					time.Sleep(20 * time.Millisecond)
				}
				raw, err := s.inst.stats(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var gs guestStats
				if err := json.Unmarshal(raw, &gs); err != nil {
					t.Fatalf("guard_stats: %v %s", err, raw)
				}
				gs.HostMs = time.Now().UnixMilli()
				st = append(st, gs)
			}
			r.Stats = append(r.Stats, st)
		}
	}
	for _, s := range slots {
		g.release(s)
	}
	return r
}

// stateNonce is the PASETO nonce of a requestState: the first 32 bytes of
// its decoded body.
func stateNonce(t testing.TB, state string) string {
	t.Helper()
	parts := strings.Split(state, ".")
	if len(parts) != 4 || parts[0] != "v4" || parts[1] != "local" {
		t.Fatalf("state %q is not v4.local.body.footer", state)
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(body) < 64 {
		t.Fatalf("state body: %v (%d bytes)", err, len(body))
	}
	return hex.EncodeToString(body[:32])
}

// TestEntropyHelperProcess is the child of TestEntropyAcrossProcesses: it
// measures in its own process and writes the report to a file.
func TestEntropyHelperProcess(t *testing.T) {
	out := os.Getenv(entropyHelperEnv)
	if out == "" {
		return // only as a child process
	}
	asks := 500
	rep := entropyReport{Engines: map[string]*engineEntropy{}}
	for _, eng := range engines {
		rep.Engines[eng.String()] = measureEntropy(t, eng, asks, WithCompilationCache(os.Getenv(entropyHelperEnv+"_CACHE")))
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestEntropyAcrossProcesses: two processes × two instances × 500 asks
// per engine, and no nonce or operation id ever repeats; every guard_stats
// reading has its own random bytes and a clock within seconds of ours.
func TestEntropyAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	start := time.Now()
	var reports []entropyReport
	// One child after the other: the first compiles guard.wasm into the
	// shared cache, the second loads it.
	for i := range 2 {
		out := filepath.Join(dir, "report"+string(rune('0'+i))+".json")
		cmd := exec.Command(os.Args[0], "-test.run=^TestEntropyHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), entropyHelperEnv+"="+out, entropyHelperEnv+"_CACHE="+cache)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("child %d wrote no report: %v", i, err)
		}
		var r entropyReport
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		reports = append(reports, r)
	}
	end := time.Now()

	seenNonce := map[string]string{}
	seenOp := map[string]string{}
	seenRandom := map[string]string{}
	total := 0
	for p, r := range reports {
		for _, eng := range engines {
			e := r.Engines[eng.String()]
			if e == nil || len(e.Nonces) != 2 {
				t.Fatalf("process %d, %s: no measurements for two instances", p, eng)
			}
			for i := range e.Nonces {
				where := eng.String() + " process " + string(rune('0'+p)) + " instance " + string(rune('0'+i))
				if len(e.Nonces[i]) != 500 || len(e.Ops[i]) != 500 {
					t.Fatalf("%s: %d nonces, %d ops", where, len(e.Nonces[i]), len(e.Ops[i]))
				}
				for _, n := range e.Nonces[i] {
					if prev, dup := seenNonce[n]; dup {
						t.Fatalf("nonce %s repeated: %s and %s", n, prev, where)
					}
					seenNonce[n] = where
				}
				for _, o := range e.Ops[i] {
					if raw, err := base64.RawURLEncoding.DecodeString(o); err != nil || len(raw) != 16 {
						t.Fatalf("%s: operation id %q is not 128 bits of base64url", where, o)
					}
					if prev, dup := seenOp[o]; dup {
						t.Fatalf("operation id %s repeated: %s and %s", o, prev, where)
					}
					seenOp[o] = where
				}
				total += len(e.Nonces[i])
			}
			if eng != EngineWasm {
				continue
			}
			for i, st := range e.Stats {
				if len(st) != 2 {
					t.Fatalf("wasm process %d instance %d: %d stats readings", p, i, len(st))
				}
				for _, s := range st {
					if b, err := hex.DecodeString(s.Random); err != nil || len(b) != 16 {
						t.Fatalf("guard_stats random %q", s.Random)
					}
					if prev, dup := seenRandom[s.Random]; dup {
						t.Errorf("guard_stats random %s repeated (%s): a fixed-seed source", s.Random, prev)
					}
					seenRandom[s.Random] = "process " + string(rune('0'+p))
					if d := s.NowMs - s.HostMs; d < -3000 || d > 3000 {
						t.Errorf("guest clock %d is %d ms off the host's", s.NowMs, d)
					}
					if s.NowMs < start.Add(-3*time.Second).UnixMilli() || s.NowMs > end.Add(3*time.Second).UnixMilli() {
						t.Errorf("guest clock %s is outside the test's run %s..%s", time.UnixMilli(s.NowMs), start, end)
					}
				}
				if st[1].NowMs < st[0].NowMs+10 {
					t.Errorf("guest clock did not move over 20 ms: %d then %d", st[0].NowMs, st[1].NowMs)
				}
			}
		}
	}
	t.Logf("%d asks: every nonce and operation id distinct; %d distinct guard_stats random values", total, len(seenRandom))
}

// TestEntropyInOneProcess: the same checks within this process, on a
// Guard built with the process-wide compilation cache.
func TestEntropyInOneProcess(t *testing.T) {
	for _, eng := range engines {
		e := measureEntropy(t, eng, 200)
		seen := map[string]bool{}
		for i := range e.Nonces {
			for _, v := range append(append([]string(nil), e.Nonces[i]...), e.Ops[i]...) {
				if seen[v] {
					t.Fatalf("%s: %s repeated", eng, v)
				}
				seen[v] = true
			}
		}
		if eng == EngineWasm {
			a, b := e.Stats[0][0], e.Stats[1][0]
			if a.Random == b.Random {
				t.Errorf("two instances read the same random bytes %s", a.Random)
			}
			for _, s := range []guestStats{a, b} {
				if d := s.NowMs - s.HostMs; d < -3000 || d > 3000 {
					t.Errorf("guest clock %d ms off the host's", d)
				}
			}
		}
	}
}
