//go:build guestprof

package host

// A profile of where a call's time goes inside guard.wasm, by function.
// wazero has no sampling profiler, so this times every guest function call
// through a function listener: the listener's own cost (well under a
// microsecond per call) inflates functions that make many calls, so read
// the leaf functions' self times and the big inclusive times, not small
// differences. It needs a guard.wasm with its name section, which the
// shipped one strips, so it builds one.
//
//	go test -tags guestprof ./host -run TestGuestProfile -v

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

type profFrame struct {
	fn    *profStat
	start time.Time
	child time.Duration
}

type profStat struct {
	name       string
	calls      int64
	self, incl time.Duration
	open       int // frames of this function on the stack (recursion)
}

// profiler assumes one instance called from one goroutine at a time.
type profiler struct {
	on    bool
	stack []profFrame
	stats map[string]*profStat
}

func (p *profiler) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	name := def.DebugName()
	s := p.stats[name]
	if s == nil {
		s = &profStat{name: name}
		p.stats[name] = s
	}
	return &profListener{p, s}
}

type profListener struct {
	p *profiler
	s *profStat
}

func (l *profListener) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	l.s.open++
	l.p.stack = append(l.p.stack, profFrame{fn: l.s, start: time.Now()})
}

func (l *profListener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) { l.end() }

func (l *profListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) { l.end() }

func (l *profListener) end() {
	p := l.p
	n := len(p.stack)
	if n == 0 {
		return
	}
	f := p.stack[n-1]
	p.stack = p.stack[:n-1]
	f.fn.open--
	d := time.Since(f.start)
	if n > 1 {
		p.stack[n-2].child += d
	}
	if !p.on {
		return
	}
	f.fn.calls++
	f.fn.self += d - f.child
	if f.fn.open == 0 {
		f.fn.incl += d
	}
}

func (p *profiler) report(ops int, top int) string {
	var rows []*profStat
	var total time.Duration
	for _, s := range p.stats {
		if s.calls > 0 {
			rows = append(rows, s)
			total += s.self
		}
	}
	var b strings.Builder
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(ops) }
	name := func(s string) string {
		s = strings.TrimPrefix(s, ".")
		return strings.ReplaceAll(s, "github.com_mrtr_wasm_mrtr_wasm_", "")
	}
	fmt.Fprintf(&b, "%d calls; listener-inflated total %.1f µs per call\n", ops, per(total))
	sort.Slice(rows, func(i, j int) bool { return rows[i].self > rows[j].self })
	fmt.Fprintf(&b, "\nby self time:\n%7s %10s %10s %8s  %s\n", "self%", "self µs", "incl µs", "calls", "function")
	for _, s := range rows[:min(top, len(rows))] {
		fmt.Fprintf(&b, "%6.1f%% %10.2f %10.2f %8.1f  %s\n", 100*float64(s.self)/float64(total), per(s.self), per(s.incl), float64(s.calls)/float64(ops), name(s.name))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].incl > rows[j].incl })
	fmt.Fprintf(&b, "\nby inclusive time:\n%7s %10s %10s %8s  %s\n", "incl%", "incl µs", "self µs", "calls", "function")
	for _, s := range rows[:min(top, len(rows))] {
		fmt.Fprintf(&b, "%6.1f%% %10.2f %10.2f %8.1f  %s\n", 100*float64(s.incl)/float64(total), per(s.incl), per(s.self), float64(s.calls)/float64(ops), name(s.name))
	}
	return b.String()
}

// profiledGuard is a guard of one instance of a guard.wasm built with its
// name section, every guest call timed by prof. Use one per test: wazero
// caches the compiled module, listeners included, so a second guard would
// report to the first profiler.
func profiledGuard(t *testing.T) (*Guard, *profiler, context.Context) {
	mod := filepath.Join(t.TempDir(), "guard-names.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-o", mod, "../guest")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building guard.wasm with names: %v\n%s", err, out)
	}
	wasmBytes, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	prof := &profiler{stats: map[string]*profStat{}}
	ctx := experimental.WithFunctionListenerFactory(context.Background(), prof)
	g, err := New(ctx, WithModule(wasmBytes), WithKeys(benchKeys), WithEngine(EngineWasm), WithPoolSize(1), WithAudience("bench.example"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g, prof, ctx
}

func TestGuestProfile(t *testing.T) {
	g, prof, ctx := profiledGuard(t)
	req := benchRequest()
	ir, err := g.Ask(ctx, req, []InputRequest{Form("contact", "Who should we book the demo for?", benchSchema)})
	if err != nil {
		t.Fatal(err)
	}
	req.RequestState, req.InputResponses = ir.RequestState, []byte(validAnswer)
	const warm, n = 2000, 3000
	for i := 0; i < warm+n; i++ {
		prof.on = i >= warm
		if o, err := g.Resume(ctx, req); err != nil || o.Status != Complete {
			t.Fatalf("resume: %v", err)
		}
	}
	if len(prof.stack) != 0 {
		t.Fatalf("%d guest frames left open: the listener lost calls", len(prof.stack))
	}
	rep := prof.report(n, 40)
	if !strings.Contains(rep, "resumeOp") {
		t.Fatalf("the profile does not name the core's resume: no name section?\n%s", rep)
	}
	t.Log("Resume (open, validate a 2-field form, complete) inside guard.wasm:\n" + rep)
}

// TestGuestProfileUpstream is the same profile for the proxy's round: op
// upstream.ask on the fixture's InputRequiredResult, then upstream.resume
// on the client's retry (BenchmarkUpstreamAsk and BenchmarkUpstreamResume).
func TestGuestProfileUpstream(t *testing.T) {
	g, prof, ctx := profiledGuard(t) // one guard for both ops: see profiledGuard
	retry := upstreamRetry(t, g)
	var err error
	const warm, n = 2000, 3000
	for _, op := range []string{"ask", "resume"} {
		for _, s := range prof.stats {
			*s = profStat{name: s.name}
		}
		for i := 0; i < warm+n; i++ {
			prof.on = i >= warm
			if op == "ask" {
				_, err = g.UpstreamAsk(ctx, benchUpstreamCall(benchUpRequest), json.RawMessage(benchUpResponse), nil)
			} else {
				_, err = g.UpstreamResume(ctx, retry)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("upstream.%s inside guard.wasm:\n%s", op, prof.report(n, 45))
	}
}

// TestGuestProfileUpstreamCold is where the proxy's two guest calls lose
// time when the CPU caches are cold (BenchmarkUpstreamColdCache): each
// function's self time with the caches emptied before every call, less
// its self time hot, largest first.
//
//	go test -tags guestprof ./host -run TestGuestProfileUpstreamCold -v
func TestGuestProfileUpstreamCold(t *testing.T) {
	g, prof, _ := profiledGuard(t)
	const warm, n = 2000, 1500
	for _, op := range []string{"ask", "resume"} {
		call := upstreamOp(t, g, op)
		self := map[bool]map[string]time.Duration{}
		for _, cold := range []bool{false, true} {
			for _, s := range prof.stats {
				*s = profStat{name: s.name}
			}
			for i := 0; i < warm+n; i++ {
				if cold && i >= warm {
					emptyCaches()
				}
				prof.on = i >= warm
				if err := call(); err != nil {
					t.Fatal(err)
				}
			}
			self[cold] = map[string]time.Duration{}
			for k, s := range prof.stats {
				self[cold][k] = s.self
			}
		}
		type row struct {
			name      string
			hot, cold time.Duration
		}
		var rows []row
		var hot, cold time.Duration
		for k, c := range self[true] {
			rows = append(rows, row{k, self[false][k], c})
			hot += self[false][k]
			cold += c
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].cold-rows[i].hot > rows[j].cold-rows[j].hot })
		per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / n }
		var b strings.Builder
		fmt.Fprintf(&b, "upstream.%s: %.1f µs hot, %.1f µs cold per call (listener-inflated)\n%10s %9s %9s  %s\n",
			op, per(hot), per(cold), "cold-hot", "hot", "cold", "function")
		for _, r := range rows[:min(30, len(rows))] {
			fmt.Fprintf(&b, "%10.2f %9.2f %9.2f  %s\n", per(r.cold-r.hot), per(r.hot), per(r.cold),
				strings.ReplaceAll(strings.TrimPrefix(r.name, "."), "github.com_mrtr_wasm_mrtr_wasm_", ""))
		}
		if cold <= hot {
			t.Errorf("upstream.%s: cold %v is not slower than hot %v: were the caches emptied?", op, cold, hot)
		}
		t.Log(b.String())
	}
}
