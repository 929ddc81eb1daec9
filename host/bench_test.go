package host

// The guard's benchmarks, natively and through guard.wasm in one run, so
// the two stand side by side (BenchmarkX/native, BenchmarkX/wasm):
//
//	go test ./host -run XXX -bench . -benchtime 20000x
//
// BENCHMARKS.md records the figures. Each op also reports its median and
// p99 latency (p50-µs, p99-µs): the targets are about the median.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

var benchSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","title":"Your name","minLength":1},"email":{"type":"string","title":"Work email","format":"email"}},"required":["name","email"]}`)

var benchEngines = []Engine{EngineNative, EngineWasm}

func benchRequest() *Request {
	return &Request{
		Principal:    "alice@example.com",
		Method:       "tools/call",
		Target:       "book_demo_call",
		Arguments:    json.RawMessage(`{"topic":"pricing"}`),
		Capabilities: json.RawMessage(`{"elicitation":{"form":{},"url":{}}}`),
	}
}

func benchGuard(b *testing.B, eng Engine, opts ...Option) *Guard {
	b.Helper()
	g, err := New(context.Background(), append([]Option{WithKeys(benchKeys), WithEngine(eng), WithPoolSize(1), WithAudience("bench.example")}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close(context.Background()) })
	return g
}

var benchKeys, _ = ParseKeys("k4.local." + base64.RawURLEncoding.EncodeToString(make([]byte, 32)))

// latencies records per-op durations and reports their median and p99.
type latencies []time.Duration

func (l *latencies) report(b *testing.B) {
	if len(*l) == 0 {
		return
	}
	p50, p99 := l.quantiles()
	b.ReportMetric(p50, "p50-µs")
	b.ReportMetric(p99, "p99-µs")
}

// timed runs f and records how long it took.
func (l *latencies) timed(b *testing.B, f func() error) {
	t0 := time.Now()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	*l = append(*l, time.Since(t0))
}

// quantiles is the median and p99 in µs.
func (l latencies) quantiles() (p50, p99 float64) {
	s := slices.Clone(l)
	slices.Sort(s)
	return float64(s[len(s)/2].Nanoseconds()) / 1e3, float64(s[len(s)*99/100].Nanoseconds()) / 1e3
}

func runTimed(b *testing.B, warm int, op func() error) {
	b.Helper()
	warmUp(b, warm, op)
	lat := make(latencies, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

// warmUp runs op n times, untimed.
func warmUp(b *testing.B, n int, op func() error) {
	b.Helper()
	for i := 0; i < n; i++ {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
}

// warmCalls brings an instance's heap to its steady size (the guest heap
// grows to its memory limit before it collects).
const warmCalls = 3000

func BenchmarkLint(b *testing.B) {
	in := Form("contact", "Who should we book the demo for?", benchSchema)
	for _, eng := range benchEngines {
		b.Run(eng.String(), func(b *testing.B) {
			g := benchGuard(b, eng)
			ctx := context.Background()
			runTimed(b, warmCalls, func() error {
				fs, err := g.Lint(ctx, in)
				if err == nil && len(fs) != 0 {
					b.Fatalf("findings: %v", fs)
				}
				return err
			})
		})
	}
}

func BenchmarkAsk(b *testing.B) {
	in := []InputRequest{Form("contact", "Who should we book the demo for?", benchSchema)}
	for _, eng := range benchEngines {
		b.Run(eng.String(), func(b *testing.B) {
			g := benchGuard(b, eng)
			ctx := context.Background()
			req := benchRequest()
			runTimed(b, warmCalls, func() error {
				_, err := g.Ask(ctx, req, in)
				return err
			})
		})
	}
}

// askedRequest returns a retry of a fresh ask with the given responses.
func askedRequest(b *testing.B, g *Guard, responses string) *Request {
	b.Helper()
	req := benchRequest()
	ir, err := g.Ask(context.Background(), req, []InputRequest{Form("contact", "Who should we book the demo for?", benchSchema)})
	if err != nil {
		b.Fatal(err)
	}
	req.RequestState = ir.RequestState
	req.InputResponses = json.RawMessage(responses)
	return req
}

const (
	validAnswer   = `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com"}}}`
	invalidAnswer = `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann-at-example"}}}`
)

// BenchmarkResume: open the state, validate a 2-field form, complete.
func BenchmarkResume(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.String(), func(b *testing.B) {
			g := benchGuard(b, eng)
			req := askedRequest(b, g, validAnswer)
			ctx := context.Background()
			runTimed(b, warmCalls, func() error {
				o, err := g.Resume(ctx, req)
				if err == nil && o.Status != Complete {
					b.Fatalf("status %s", o.Status)
				}
				return err
			})
		})
	}
}

// BenchmarkResumeModule compares guard.wasm builds in one run: "base" is
// the module at $MRTR_BENCH_BASE_WASM (e.g. main's, built into a temp
// file), "branch" the embedded one. The Resume is the same as
// BenchmarkResume/wasm; the base module has no answersDigest to compute.
//
//	MRTR_BENCH_BASE_WASM=/tmp/guard-main.wasm go test ./host -run XXX -bench BenchmarkResumeModule -benchtime 20000x -count 3
func BenchmarkResumeModule(b *testing.B) {
	base := os.Getenv("MRTR_BENCH_BASE_WASM")
	if base == "" {
		b.Skip("MRTR_BENCH_BASE_WASM is not set")
	}
	mod, err := os.ReadFile(base)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name string
		opts []Option
	}{{"base", []Option{WithModule(mod)}}, {"branch", nil}} {
		b.Run(m.name, func(b *testing.B) {
			g := benchGuard(b, EngineWasm, m.opts...)
			req := askedRequest(b, g, validAnswer)
			ctx := context.Background()
			runTimed(b, warmCalls, func() error {
				o, err := g.Resume(ctx, req)
				if err == nil && o.Status != Complete {
					b.Fatalf("status %s", o.Status)
				}
				return err
			})
		})
	}
}

// BenchmarkPolicyInput is the core building an ask's policy input (op
// policy.input): what a policy's memo miss adds to an ask.
func BenchmarkPolicyInput(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.String(), func(b *testing.B) {
			g := benchGuard(b, eng)
			ctx := context.Background()
			q := g.policyQuery(benchRequest(), []InputRequest{Form("contact", "Who should we book the demo for?", benchSchema)})
			runTimed(b, warmCalls, func() error {
				_, err := q.BuildInput(ctx, true, true)
				return err
			})
		})
	}
}

// BenchmarkResumeReask: open, validate, find the email wrong, re-seal a
// new form that names it.
func BenchmarkResumeReask(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.String(), func(b *testing.B) {
			g := benchGuard(b, eng)
			req := askedRequest(b, g, invalidAnswer)
			ctx := context.Background()
			runTimed(b, warmCalls, func() error {
				o, err := g.Resume(ctx, req)
				if err == nil && o.Status != InputRequired {
					b.Fatalf("status %s", o.Status)
				}
				return err
			})
		})
	}
}

// BenchmarkResumeTampered: a state with one character changed.
func BenchmarkResumeTampered(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.String(), func(b *testing.B) {
			g := benchGuard(b, eng)
			req := askedRequest(b, g, validAnswer)
			s := []byte(req.RequestState)
			s[40] ^= 1 // still base64url: flips a bit of the nonce
			req.RequestState = string(s)
			ctx := context.Background()
			runTimed(b, warmCalls, func() error {
				_, err := g.Resume(ctx, req)
				if e, ok := AsError(err); !ok || e.Code != CodeStateInvalid {
					b.Fatalf("want a state error, got %v", err)
				}
				return nil
			})
		})
	}
}

// BenchmarkResumeParallel: the pool under b.RunParallel. With GOMAXPROCS
// instances, throughput should scale with the cores (compare ns/op with
// BenchmarkResume: parallel ns/op is wall time per op).
func BenchmarkResumeParallel(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.String(), func(b *testing.B) {
			g := benchGuard(b, eng, WithPoolSize(runtime.GOMAXPROCS(0)))
			req := askedRequest(b, g, validAnswer)
			ctx := context.Background()
			// Warm every instance of the pool.
			var wg sync.WaitGroup
			for w := 0; w < g.cfg.poolSize; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < warmCalls; i++ {
						_, _ = g.Resume(ctx, req)
					}
				}()
			}
			wg.Wait()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if o, err := g.Resume(ctx, req); err != nil || o.Status != Complete {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkWarmStart: a host restart with the compilation cache present
// and a pool of 2: New, then both instances serving a Resume.
func BenchmarkWarmStart(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "wazero")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	seed, err := New(ctx, WithKeys(benchKeys), WithCompilationCache(dir))
	if err != nil {
		b.Fatal(err)
	}
	req := askedRequest(b, seed, validAnswer)
	_ = seed.Close(ctx)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g, err := New(ctx, WithKeys(benchKeys), WithCompilationCache(dir), WithPoolSize(2))
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := g.Resume(ctx, req); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		_ = g.Close(ctx)
		b.StartTimer()
	}
}

// BenchmarkMemoryFlat runs 100,000 Resumes on one wasm instance and
// reports its linear memory after 1k, 10k and 100k calls.
func BenchmarkMemoryFlat(b *testing.B) {
	g := benchGuard(b, EngineWasm)
	req := askedRequest(b, g, validAnswer)
	ctx := context.Background()
	mem := func() float64 {
		s, err := g.acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer g.release(s)
		return float64(s.inst.(*wasmInstance).mem.Size()) / (1 << 20)
	}
	for i := 0; i < b.N; i++ {
		for n := 1; n <= 100_000; n++ {
			if _, err := g.Resume(ctx, req); err != nil {
				b.Fatal(err)
			}
			switch n {
			case 1_000:
				b.ReportMetric(mem(), "MiB@1k")
			case 10_000:
				b.ReportMetric(mem(), "MiB@10k")
			case 100_000:
				b.ReportMetric(mem(), "MiB@100k")
			}
		}
	}
}

// The go-sdk conformance fixture's input round, as the proxy sees it
// (BenchmarkProxy in internal/proxy runs the same round end to end).
const (
	benchUpRequest  = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_input_required_result_request_state","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
	benchUpResponse = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Please confirm","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"round-1-state"}}`
)

func benchUpstreamCall(req string) *UpstreamCall {
	return &UpstreamCall{Principal: "anonymous", Upstream: "http://127.0.0.1:9000/mcp", Request: json.RawMessage(req),
		Method: "tools/call", Target: "test_input_required_result_request_state"}
}

// BenchmarkUpstreamAsk is a proxy sealing an upstream's InputRequiredResult
// (op upstream.ask), and BenchmarkUpstreamResume its retry (op
// upstream.resume: open, check the answer, build the forward): the
// guard's share of BenchmarkProxy's input round.
func BenchmarkUpstreamAsk(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.String(), func(b *testing.B) {
			g := benchGuard(b, eng)
			ctx := context.Background()
			c := benchUpstreamCall(benchUpRequest)
			runTimed(b, warmCalls, func() error {
				_, err := g.UpstreamAsk(ctx, c, json.RawMessage(benchUpResponse), nil)
				return err
			})
		})
	}
}

func BenchmarkUpstreamResume(b *testing.B) {
	for _, eng := range benchEngines {
		b.Run(eng.String(), func(b *testing.B) {
			g := benchGuard(b, eng)
			ctx := context.Background()
			c := upstreamRetry(b, g)
			runTimed(b, warmCalls, func() error {
				o, err := g.UpstreamResume(ctx, c)
				if err == nil && o.Status != Complete {
					b.Fatalf("status %s", o.Status)
				}
				return err
			})
		})
	}
}

// BenchmarkUpstreamResumeAfterIdle is BenchmarkUpstreamResume with the
// caller idle for a while before each call, as a proxy's guard is between
// rounds: only the call is timed. On a shared VM the first call after an
// idle millisecond runs with cold caches, and guard.wasm's working set
// (27 MiB of compiled code, its linear memory) pays far more for it than
// native code does (BENCHMARKS.md, "The guard after an idle gap"). The
// "syscall" gap enters the kernel (getppid) without idling: it shows the
// cost follows the idle CPU, not the kernel entry.
func BenchmarkUpstreamResumeAfterIdle(b *testing.B) {
	pauses := map[string]func(){
		"0s":      nil,
		"syscall": func() { syscall.Getppid() },
		"1ms":     func() { time.Sleep(time.Millisecond) },
		"5ms":     func() { time.Sleep(5 * time.Millisecond) },
	}
	for _, eng := range benchEngines {
		for _, gap := range []string{"0s", "syscall", "1ms", "5ms"} {
			b.Run(fmt.Sprintf("%s/idle_%s", eng, gap), func(b *testing.B) {
				g := benchGuard(b, eng)
				ctx := context.Background()
				c := upstreamRetry(b, g)
				afterIdle(b, pauses[gap], func() error {
					o, err := g.UpstreamResume(ctx, c)
					if err == nil && o.Status != Complete {
						b.Fatalf("status %s", o.Status)
					}
					return err
				})
			})
		}
	}
}

// upstreamRetry is the client's retry of the fixture's round, with the
// requestState g sealed for it.
func upstreamRetry(b testing.TB, g *Guard) *UpstreamCall {
	b.Helper()
	r, err := g.UpstreamAsk(context.Background(), benchUpstreamCall(benchUpRequest), json.RawMessage(benchUpResponse), nil)
	if err != nil {
		b.Fatal(err)
	}
	var res struct {
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		b.Fatal(err)
	}
	st, _ := json.Marshal(res.RequestState)
	return benchUpstreamCall(benchUpRequest[:len(benchUpRequest)-2] + `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":` + string(st) + `}}`)
}

// BenchmarkGuestEntryAfterIdle splits BenchmarkUpstreamResumeAfterIdle's
// slowdown: entering guard.wasm (an export that returns a constant, and a
// guard_call refused at once) against the full upstream.resume, hot and
// after an idle millisecond. Only the call is timed.
func BenchmarkGuestEntryAfterIdle(b *testing.B) {
	ctx := context.Background()
	g := benchGuard(b, EngineWasm)
	c := upstreamRetry(b, g)
	inst, err := g.eng.(*wasmEngine).newInstance(ctx)
	if err != nil {
		b.Fatal(err)
	}
	wi := inst.(*wasmInstance)
	defer wi.close(ctx)
	abi := wi.m.ExportedFunction("guard_abi_version")
	for _, op := range []struct {
		name string
		f    func() error
	}{
		{"abi_version", func() error { return abi.CallWithStack(ctx, wi.stack[:]) }},
		{"refused_call", func() error { _, err := wi.call(ctx, []byte(`{}`), time.Second); return err }},
		{"upstream_resume", func() error { _, err := g.UpstreamResume(ctx, c); return err }},
	} {
		for _, gap := range []time.Duration{0, time.Millisecond} {
			b.Run(fmt.Sprintf("%s/idle_%s", op.name, gap), func(b *testing.B) {
				afterIdle(b, sleepFor(gap), op.f)
			})
		}
	}
}

// BenchmarkGuestHeapLimit is upstream.resume hot and after an idle
// millisecond with the guest heap limited to 4, 8, 16 (the default), 32
// and 512 MiB: what the limit does to a call that follows an idle wait.
// Run it for 10,000 calls or more, so that the small limits collect.
func BenchmarkGuestHeapLimit(b *testing.B) {
	ctx := context.Background()
	for _, mib := range []int{4, 8, 16, 32, 512} {
		for _, gap := range []time.Duration{0, time.Millisecond} {
			b.Run(fmt.Sprintf("mib_%d/idle_%s", mib, gap), func(b *testing.B) {
				g := benchGuard(b, EngineWasm, WithMemoryLimitMiB(mib))
				c := upstreamRetry(b, g)
				afterIdle(b, sleepFor(gap), func() error { _, err := g.UpstreamResume(ctx, c); return err })
			})
		}
	}
}

// afterIdle warms f up, then times each call of it after pause (nil:
// none), which runs outside the timer.
func afterIdle(b *testing.B, pause func(), f func() error) {
	warmUp(b, warmCalls, f)
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if pause != nil {
			b.StopTimer()
			pause()
			b.StartTimer()
		}
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkUpstreamColdCache is the proxy's two guest calls (upstream.ask
// and upstream.resume) hot, and with the CPU caches emptied before each
// call by writing over 32 MiB (outside the timer): what the guard costs
// when the proxy's HTTP work, another process or an idle spell has run on
// the CPU since its last call, without depending on how this VM idles.
// Both engines alternate call by call, so they share the machine's drift.
func BenchmarkUpstreamColdCache(b *testing.B) {
	for _, cold := range []bool{false, true} {
		for _, op := range []string{"ask", "resume"} {
			b.Run(fmt.Sprintf("%s/cold_%v", op, cold), func(b *testing.B) {
				calls := make([]func() error, len(benchEngines))
				for i, eng := range benchEngines {
					g := benchGuard(b, eng)
					calls[i] = upstreamOp(b, g, op)
					warmUp(b, warmCalls, calls[i])
				}
				lats := make([]latencies, len(calls))
				b.ResetTimer()
				for n := 0; n < b.N; n++ {
					for k := range calls {
						i := (n + k) % len(calls)
						b.StopTimer()
						if cold {
							emptyCaches()
						} else if err := calls[i](); err != nil { // the other engine's call ran last
							b.Fatal(err)
						}
						b.StartTimer()
						lats[i].timed(b, calls[i])
					}
				}
				b.StopTimer()
				for i, eng := range benchEngines {
					p50, _ := lats[i].quantiles()
					b.ReportMetric(p50, eng.String()+"-p50-µs")
				}
			})
		}
	}
}

// upstreamOp is one of the proxy's guest calls on the fixture's round.
func upstreamOp(b testing.TB, g *Guard, op string) func() error {
	ctx := context.Background()
	if op == "ask" {
		c := benchUpstreamCall(benchUpRequest)
		return func() error {
			_, err := g.UpstreamAsk(ctx, c, json.RawMessage(benchUpResponse), nil)
			return err
		}
	}
	c := upstreamRetry(b, g)
	return func() error {
		o, err := g.UpstreamResume(ctx, c)
		if err == nil && o.Status != Complete {
			return fmt.Errorf("status %s", o.Status)
		}
		return err
	}
}

var cacheSweep []byte

// emptyCaches writes a byte in every line of a buffer larger than this
// machine's caches.
func emptyCaches() {
	if cacheSweep == nil {
		cacheSweep = make([]byte, 32<<20)
	}
	for i := 0; i < len(cacheSweep); i += 64 {
		cacheSweep[i]++
	}
}

// sleepFor is a pause of d (nil for 0).
func sleepFor(d time.Duration) func() {
	if d == 0 {
		return nil
	}
	return func() { time.Sleep(d) }
}

// BenchmarkGuestCollection is the proxy's two guest calls with the guest's
// garbage collected between calls, as the host does it (guard_collect_due,
// then guard_collect off the caller's path), against the guest left to
// collect inside calls at its limit, as before. The two guards alternate
// call by call, so they share the machine's drift; each has a pool of two,
// so a call need not wait for a collection under way.
func BenchmarkGuestCollection(b *testing.B) {
	for _, op := range []string{"ask", "resume"} {
		b.Run(op, func(b *testing.B) {
			names := []string{"between", "inside"}
			calls := make([]func() error, 2)
			for i := range calls {
				g := benchGuard(b, EngineWasm, WithPoolSize(2))
				if names[i] == "inside" {
					for n := len(g.idle); n > 0; n-- {
						s := <-g.idle
						s.inst = neverCollect{s.inst}
						g.idle <- s
					}
				}
				calls[i] = upstreamOp(b, g, op)
				warmUp(b, warmCalls, calls[i])
			}
			lats := make([]latencies, len(calls))
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				for i := range calls {
					lats[i].timed(b, calls[i])
				}
			}
			b.StopTimer()
			for i, name := range names {
				s := slices.Clone(lats[i])
				slices.Sort(s)
				var sum time.Duration
				for _, d := range s {
					sum += d
				}
				q := func(f float64) float64 { return float64(s[int(f*float64(len(s)-1))].Nanoseconds()) / 1e3 }
				b.ReportMetric(q(.5), name+"-p50-µs")
				b.ReportMetric(q(.9), name+"-p90-µs")
				b.ReportMetric(q(.99), name+"-p99-µs")
				b.ReportMetric(float64(sum.Nanoseconds())/1e3/float64(len(s)), name+"-mean-µs")
			}
		})
	}
}

// neverCollect is an instance whose host never runs the guest's collection
// between calls: the guest collects inside them, at its limit.
type neverCollect struct{ instance }

func (neverCollect) collectDue(context.Context) bool { return false }
