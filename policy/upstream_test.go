package policy

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testseam"
	"github.com/mrtr-wasm/mrtr-wasm/policies"
)

// guestCalls counts the guard module's guard_call invocations.
type guestCalls struct{ n atomic.Int64 }

func (c *guestCalls) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	for _, name := range def.ExportNames() {
		if name == "guard_call" {
			return c
		}
	}
	return nil
}

func (c *guestCalls) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	c.n.Add(1)
}
func (c *guestCalls) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}
func (c *guestCalls) Abort(context.Context, api.Module, api.FunctionDefinition, error)    {}

const (
	upRequest  = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"book","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
	upResponse = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Book it?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"s1"}}`
)

// TestUpstreamAskLimits: a proxy's round is sealed in one guest call
// once the policy's limits for the tool are known (the guard's own at
// first, then the ones the policy last set), and sealed again with the
// policy's when they differ: a shorter TTL expires the state, a lower
// round limit refuses the round it forbids. A higher one is not used (the
// guard's limits are the ceiling the replay ledger is sized for) unless
// the guard's own allows it.
func TestUpstreamAskLimits(t *testing.T) {
	for _, c := range []struct {
		name          string
		edit          func(tool map[string]any)
		guardTTL      time.Duration
		guardRounds   int
		first, second int64 // guest calls for the first ask and the next
		ttl           time.Duration
		lastRound     int
	}{
		// The first ask also has the core build the policy's input and
		// read the policy's decision document, and seals again whenever
		// the policy's decision is not the (empty) one it guessed: the
		// host never judges a decision or compares limits with the
		// guard's own, the core does (guest/ABI.md, policy and limits).
		// From the second ask of a tool on, one call.
		{name: "own limits", edit: func(map[string]any) {}, first: 4, second: 1, ttl: 300 * time.Second, lastRound: 3},
		{name: "shorter ttl", edit: func(d map[string]any) { d["ttl_seconds"] = 60 }, first: 4, second: 1, ttl: 60 * time.Second, lastRound: 3},
		{name: "fewer rounds", edit: func(d map[string]any) { d["max_rounds"] = 2 }, first: 4, second: 1, ttl: 300 * time.Second, lastRound: 2},
		{name: "more rounds than the guard's: the guard's hold", edit: func(d map[string]any) { d["max_rounds"] = 5 }, first: 4, second: 1, ttl: 300 * time.Second, lastRound: 3},
		{name: "more rounds within the guard's", edit: func(d map[string]any) { d["max_rounds"] = 5 }, guardRounds: 6, first: 4, second: 1, ttl: 300 * time.Second, lastRound: 5},
		{name: "guard ttl longer than the policy's", edit: func(map[string]any) {}, guardTTL: 10 * time.Minute, first: 4, second: 1, ttl: 300 * time.Second, lastRound: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			raw, err := fs.ReadFile(policies.FS, "data/proxy.json")
			if err != nil {
				t.Fatal(err)
			}
			var data map[string]any
			if err := json.Unmarshal(raw, &data); err != nil {
				t.Fatal(err)
			}
			c.edit(data["default"].(map[string]any))
			raw, _ = json.Marshal(data)
			file := filepath.Join(t.TempDir(), "data.json")
			if err := os.WriteFile(file, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			pol, err := Default(ctx, WithDataFile(file))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
			var count guestCalls
			lctx := experimental.WithFunctionListenerFactory(ctx, &count)
			// A compilation cache of its own: guard.wasm is compiled
			// again, with the call counter, not shared from another guard.
			opts := []host.Option{host.WithKeys(host.NewKeyring()), host.WithPoolSize(1), host.WithEngine(host.EngineWasm),
				host.WithCompilationCache(t.TempDir()), host.WithPolicy(pol), testseam.Clock[host.Option](func() time.Time { return now })}
			if c.guardTTL > 0 {
				opts = append(opts, host.WithTTL(c.guardTTL))
			}
			if c.guardRounds > 0 {
				opts = append(opts, host.WithMaxRounds(c.guardRounds))
			}
			g, err := host.New(lctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close(ctx)
			call := &host.UpstreamCall{Principal: "alice", Upstream: "http://up.example/mcp", Method: "tools/call", Target: "book",
				Request: json.RawMessage(upRequest)}

			var r *host.UpstreamRound
			for i, want := range []int64{c.first, c.second} {
				before := count.n.Load()
				if r, err = g.UpstreamAsk(lctx, call, json.RawMessage(upResponse), nil); err != nil {
					t.Fatal(err)
				}
				if got := count.n.Load() - before; got != want {
					t.Errorf("ask %d took %d guest calls, want %d", i+1, got, want)
				}
			}

			// The state lives exactly the policy's TTL.
			var res struct {
				RequestState string `json:"requestState"`
			}
			if err := json.Unmarshal(r.Result, &res); err != nil || !strings.HasPrefix(res.RequestState, "v4.local.") {
				t.Fatalf("sealed result %s: %v", r.Result, err)
			}
			st, _ := json.Marshal(res.RequestState)
			retry := *call
			retry.Request = json.RawMessage(upRequest[:len(upRequest)-2] + `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":` + string(st) + `}}`)
			now = now.Add(c.ttl - time.Second)
			if o, err := g.UpstreamResume(lctx, &retry); err != nil || o.Status != host.Complete {
				t.Fatalf("a second before the TTL: %v", err)
			}
			now = now.Add(2 * time.Second)
			if _, err := g.UpstreamResume(lctx, &retry); err == nil {
				t.Fatalf("a second after the TTL of %v the state still opened", c.ttl)
			} else if e, ok := host.AsError(err); !ok || e.Reason != "expired" {
				t.Fatalf("a second after the TTL: %v, want expired", err)
			}

			// The upstream asks again and again: the policy's round limit holds.
			after := &host.UpstreamOutcome{OperationID: r.OperationID, Round: r.Round}
			for round := 2; ; round++ {
				r, err := g.UpstreamAsk(lctx, call, json.RawMessage(upResponse), after)
				if round > c.lastRound {
					if e, ok := host.AsError(err); !ok || e.Code != host.CodeRoundsExceeded {
						t.Fatalf("round %d of at most %d: %v", round, c.lastRound, err)
					}
					break
				}
				if err != nil {
					t.Fatalf("round %d of at most %d: %v", round, c.lastRound, err)
				}
				if r.Round != round {
					t.Fatalf("sealed round %d, want %d", r.Round, round)
				}
				after = &host.UpstreamOutcome{OperationID: r.OperationID, Round: r.Round}
			}
		})
	}
}

// TestUpstreamAskPolicyFirst: when both the policy and the core would
// refuse a round (a form field the policy does not allow, asked of a
// client without elicitation), the client hears the policy's refusal, as
// before the round was sealed in one call.
func TestUpstreamAskPolicyFirst(t *testing.T) {
	ctx := context.Background()
	pol, err := Default(ctx, WithData("demo"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPoolSize(1), host.WithEngine(host.EngineWasm), host.WithPolicy(pol))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	phone := `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"contact":{"method":"elicitation/create","params":{"message":"Your number?","requestedSchema":{"type":"object","properties":{"phone":{"type":"string","title":"Phone number"}}}}}}}}`
	for _, caps := range []string{`{"elicitation":{}}`, `{}`} {
		req := strings.Replace(upRequest, `"name":"book"`, `"name":"book_demo_call"`, 1)
		req = strings.Replace(req, `{"elicitation":{}}`, caps, 1)
		call := &host.UpstreamCall{Principal: "alice", Upstream: "http://up.example/mcp", Method: "tools/call", Target: "book_demo_call", Request: json.RawMessage(req)}
		_, err := g.UpstreamAsk(ctx, call, json.RawMessage(phone), nil)
		if e, ok := host.AsError(err); !ok || e.Code != host.CodePolicyDenied {
			t.Errorf("capabilities %s: %v, want the policy's refusal", caps, err)
		}
	}
}

// TestUpstreamAskLimitsGuessedWrong: the limits remembered for a tool are
// only a guess. Here the policy gives bob a 60 s TTL and everyone else
// the tool's 300 s: asks that alternate between them are each sealed
// with their own, whatever the one before was.
func TestUpstreamAskLimitsGuessedWrong(t *testing.T) {
	ctx := context.Background()
	raw, err := fs.ReadFile(policies.FS, "ask.rego")
	if err != nil {
		t.Fatal(err)
	}
	rego := strings.Replace(string(raw), `"ttl_seconds": tools.ttl_seconds,`, `"ttl_seconds": ttl,`, 1)
	rego += "\nttl := 60 if input.principal == \"bob\"\n\nelse := tools.ttl_seconds\n"
	pol, err := Load(ctx, copyPolicies(t, map[string]string{"ask.rego": rego}), WithData("proxy"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPoolSize(1), host.WithEngine(host.EngineWasm),
		host.WithPolicy(pol), testseam.Clock[host.Option](func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	for i, who := range []string{"alice", "bob", "alice", "bob", "bob", "alice"} {
		call := &host.UpstreamCall{Principal: who, Upstream: "http://up.example/mcp", Method: "tools/call", Target: "book", Request: json.RawMessage(upRequest)}
		r, err := g.UpstreamAsk(ctx, call, json.RawMessage(upResponse), nil)
		if err != nil {
			t.Fatalf("ask %d (%s): %v", i, who, err)
		}
		var res struct {
			RequestState string `json:"requestState"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		st, _ := json.Marshal(res.RequestState)
		retry := *call
		retry.Request = json.RawMessage(upRequest[:len(upRequest)-2] + `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":` + string(st) + `}}`)
		saved := now
		now = now.Add(61 * time.Second)
		_, err = g.UpstreamResume(ctx, &retry)
		now = saved
		if expired := err != nil; expired != (who == "bob") {
			t.Fatalf("ask %d (%s): resumed 61 s later: %v", i, who, err)
		}
	}
}
