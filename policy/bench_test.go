package policy

// Policy time per ask and per resume, in the same run as the guard's own
// Resume through guard.wasm, so the share stands beside it:
//
//	go test ./policy -run XXX -bench . -benchtime 20000x
//
// Each op reports its median and p99 latency (p50-µs, p99-µs) and the
// process CPU time per op (cpu-µs/op), which a busy machine does not
// inflate the way wall time is. The target: policy time (BenchmarkPolicyAsk,
// BenchmarkPolicyResume) under a third of BenchmarkGuardResume/wasm.

import (
	"context"
	"encoding/json"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

var benchSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","title":"Your name","minLength":1},"email":{"type":"string","title":"Work email","format":"email"}},"required":["name","email"]}`)

func benchAskQuery() *host.PolicyQuery {
	return &host.PolicyQuery{
		Principal: "alice@example.com", Method: "tools/call", Target: "book_demo_call",
		TTL: 5 * time.Minute, MaxRounds: 3,
		Inputs: []host.InputRequest{host.Form("contact", "Who should we book the demo for?", benchSchema)},
	}
}

func benchResumeQuery() *host.PolicyQuery {
	return &host.PolicyQuery{Principal: "alice@example.com", Method: "tools/call", Target: "book_demo_call", TTL: 5 * time.Minute, MaxRounds: 3}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timed runs op b.N times after warm runs and reports p50, p99 and CPU
// per op.
func timed(b *testing.B, warm int, op func() error) {
	b.Helper()
	for i := 0; i < warm; i++ {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
}

func benchEngine(b *testing.B) *Engine {
	b.Helper()
	e, err := Default(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkPolicyAsk is the policy's time in an ask, as the guard calls
// it: a prepared query, and the memo for inputs already decided.
func BenchmarkPolicyAsk(b *testing.B) {
	e := benchEngine(b)
	ctx := context.Background()
	q := benchAskQuery()
	timed(b, 100, func() error {
		d, err := e.Ask(ctx, q)
		if err == nil && !d.Allow {
			b.Fatalf("denied: %+v", d)
		}
		return err
	})
}

// BenchmarkPolicyAskEval is one full evaluation of the ask decision (the
// first time an input is seen).
func BenchmarkPolicyAskEval(b *testing.B) {
	c := benchEngine(b).cur.Load()
	ctx := context.Background()
	q := benchAskQuery()
	timed(b, 100, func() error {
		d, err := c.evalQuery(ctx, 'a', q)
		if err == nil && !d.Allow {
			b.Fatalf("denied: %+v", d)
		}
		return err
	})
}

func BenchmarkPolicyResume(b *testing.B) {
	e := benchEngine(b)
	ctx := context.Background()
	q := benchResumeQuery()
	timed(b, 100, func() error {
		d, err := e.Resume(ctx, q)
		if err == nil && d.MaxRounds != 3 {
			b.Fatalf("decision: %+v", d)
		}
		return err
	})
}

func BenchmarkPolicyResumeEval(b *testing.B) {
	c := benchEngine(b).cur.Load()
	ctx := context.Background()
	q := benchResumeQuery()
	timed(b, 100, func() error {
		d, err := c.evalQuery(ctx, 'r', q)
		if err == nil && d.MaxRounds != 3 {
			b.Fatalf("decision: %+v", d)
		}
		return err
	})
}

// BenchmarkGuardResume is the guard's own Resume through guard.wasm (open
// the state, validate a 2-field form, complete), without and with the
// policy, for the share.
func BenchmarkGuardResume(b *testing.B) {
	wasmWithAndWithoutPolicy(b, func(b *testing.B, withPolicy bool) {
		ctx := context.Background()
		var pol host.Policy
		if withPolicy {
			pol = benchEngine(b)
		}
		g := benchWasmGuard(b, pol)
		req := &host.Request{
			Principal: "alice@example.com", Method: "tools/call", Target: "book_demo_call",
			Arguments:    json.RawMessage(`{"topic":"pricing"}`),
			Capabilities: json.RawMessage(`{"elicitation":{"form":{},"url":{}}}`),
		}
		ir, err := g.Ask(ctx, req, benchAskQuery().Inputs)
		if err != nil {
			b.Fatal(err)
		}
		req.RequestState = ir.RequestState
		req.InputResponses = json.RawMessage(`{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com"}}}`)
		timed(b, 3000, func() error {
			o, err := g.Resume(ctx, req)
			if err == nil && o.Status != host.Complete {
				b.Fatalf("status %s", o.Status)
			}
			return err
		})
	})
}

// BenchmarkGuardUpstreamAsk is a proxy sealing an upstream's round (the
// go-sdk fixture's) through guard.wasm, without and with the proxy's
// default policy: with it, the policy decides on the requests of the
// round the core sealed (whose limits are the policy's too: one guest
// call), and the decision is memoised.
func BenchmarkGuardUpstreamAsk(b *testing.B) {
	wasmWithAndWithoutPolicy(b, func(b *testing.B, withPolicy bool) {
		ctx := context.Background()
		var pol host.Policy
		if withPolicy {
			e, err := Default(ctx, WithData("proxy"))
			if err != nil {
				b.Fatal(err)
			}
			pol = e
		}
		g := benchWasmGuard(b, pol)
		c := &host.UpstreamCall{Principal: "anonymous", Upstream: "http://127.0.0.1:9000/mcp", Method: "tools/call", Target: "test_input_required_result_request_state",
			Request: json.RawMessage(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_input_required_result_request_state","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)}
		resp := json.RawMessage(`{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Please confirm","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"round-1-state"}}`)
		timed(b, 3000, func() error {
			_, err := g.UpstreamAsk(ctx, c, resp, nil)
			return err
		})
	})
}

// benchWasmGuard is a guard.wasm guard of one instance, with pol if set.
func benchWasmGuard(b *testing.B, pol host.Policy) *host.Guard {
	b.Helper()
	opts := []host.Option{host.WithKeys(host.NewKeyring()), host.WithPoolSize(1), host.WithAudience("bench.example")}
	if pol != nil {
		opts = append(opts, host.WithPolicy(pol))
	}
	g, err := host.New(context.Background(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close(context.Background()) })
	return g
}

// wasmWithAndWithoutPolicy runs run as sub-benchmarks "wasm" and
// "wasm+policy".
func wasmWithAndWithoutPolicy(b *testing.B, run func(b *testing.B, withPolicy bool)) {
	for _, withPolicy := range []bool{false, true} {
		name := "wasm"
		if withPolicy {
			name = "wasm+policy"
		}
		b.Run(name, func(b *testing.B) { run(b, withPolicy) })
	}
}
