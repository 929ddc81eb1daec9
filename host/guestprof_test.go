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
	"strconv"
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
	index      uint32 // in the module's function index space (imports first)
	calls      int64
	self, incl time.Duration
	open       int // frames of this function on the stack (recursion)
}

// profiler assumes one instance called from one goroutine at a time.
type profiler struct {
	on     bool
	stack  []profFrame
	stats  map[string]*profStat
	module []byte // the profiled guard.wasm
}

func (p *profiler) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	name := def.DebugName()
	s := p.stats[name]
	if s == nil {
		s = &profStat{name: name, index: def.Index()}
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
// name section, every guest call timed by prof. wazero caches a compiled
// module with its listeners, so each guard compiles into a cache of its
// own: one sharing the process's cache would report to the profiler of
// the first test that compiled the module.
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
	prof := &profiler{stats: map[string]*profStat{}, module: wasmBytes}
	ctx := experimental.WithFunctionListenerFactory(context.Background(), prof)
	g, err := New(ctx, WithModule(wasmBytes), WithKeys(benchKeys), WithEngine(EngineWasm), WithPoolSize(1), WithAudience("bench.example"),
		WithCompilationCache(t.TempDir()))
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
			*s = profStat{name: s.name, index: s.index}
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
				*s = profStat{name: s.name, index: s.index}
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

// TestGuestFootprintUpstream is how much of guard.wasm one warm call runs
// through: the distinct functions the proxy's two guest calls enter and
// the size of their bodies in the module, by package. A cold call pays
// for fetching that code (TestGuestProfileUpstreamCold), so this is the
// figure a smaller guest would have to shrink.
//
//	go test -tags guestprof ./host -run TestGuestFootprintUpstream -v
func TestGuestFootprintUpstream(t *testing.T) {
	g, prof, _ := profiledGuard(t)
	imports, bodies := wasmFunctionSizes(t, prof.module)
	var code int
	for _, n := range bodies {
		code += n
	}
	for _, op := range []string{"ask", "resume"} {
		call := upstreamOp(t, g, op)
		for i := 0; i < 200; i++ { // past first-call set-up
			if err := call(); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range prof.stats {
			*s = profStat{name: s.name, index: s.index}
		}
		prof.on = true
		if err := call(); err != nil {
			t.Fatal(err)
		}
		prof.on = false
		byPkg := map[string][2]int{}
		type fnSize struct {
			name string
			size int
		}
		var big []fnSize
		var fns, size int
		for _, s := range prof.stats {
			if s.calls == 0 || s.index < imports {
				continue
			}
			n := bodies[s.index-imports]
			fns++
			size += n
			pkg := strings.TrimPrefix(s.name, ".")
			for _, host := range []string{"github.com_mrtr_wasm_mrtr_wasm_", "github.com_", "golang.org_"} {
				pkg = strings.TrimPrefix(pkg, host)
			}
			pkg, _, _ = strings.Cut(pkg, ".")
			big = append(big, fnSize{s.name, n})
			v := byPkg[pkg]
			byPkg[pkg] = [2]int{v[0] + 1, v[1] + n}
		}
		if fns == 0 || size == 0 {
			t.Fatalf("upstream.%s entered no guest function: the listener saw nothing", op)
		}
		pkgs := make([]string, 0, len(byPkg))
		for k := range byPkg {
			pkgs = append(pkgs, k)
		}
		sort.Slice(pkgs, func(i, j int) bool { return byPkg[pkgs[i]][1] > byPkg[pkgs[j]][1] })
		var b strings.Builder
		fmt.Fprintf(&b, "upstream.%s enters %d of %d functions; their bodies are %d KiB of the code section's %d KiB\n%9s %6s  %s\n",
			op, fns, len(bodies), size>>10, code>>10, "KiB", "funcs", "package")
		for _, k := range pkgs[:min(25, len(pkgs))] {
			fmt.Fprintf(&b, "%9.1f %6d  %s\n", float64(byPkg[k][1])/1024, byPkg[k][0], k)
		}
		sort.Slice(big, func(i, j int) bool { return big[i].size > big[j].size })
		fmt.Fprintf(&b, "largest:\n")
		for _, f := range big[:min(footprintList, len(big))] {
			fmt.Fprintf(&b, "%9.1f  %s\n", float64(f.size)/1024, strings.TrimPrefix(f.name, "."))
		}
		t.Log(b.String())
	}
}

// wasmFunctionSizes reads a module's function imports (they come first in
// the function index space) and the size of each body in its code section.
func wasmFunctionSizes(t *testing.T, m []byte) (imports uint32, bodies []int) {
	t.Helper()
	if len(m) < 8 || string(m[:4]) != "\x00asm" {
		t.Fatal("not a wasm module")
	}
	i := 8
	uleb := func() uint64 {
		var v uint64
		for shift := 0; ; shift += 7 {
			c := m[i]
			i++
			v |= uint64(c&0x7f) << shift
			if c < 0x80 {
				return v
			}
		}
	}
	name := func() { n := int(uleb()); i += n }
	limits := func() {
		if flag := m[i]; true {
			i++
			uleb()
			if flag&1 != 0 {
				uleb()
			}
		}
	}
	for i < len(m) {
		id := m[i]
		i++
		size := int(uleb())
		end := i + size
		switch id {
		case 2: // imports
			for n := uleb(); n > 0; n-- {
				name()
				name()
				kind := m[i]
				i++
				switch kind {
				case 0:
					uleb()
					imports++
				case 1:
					i++ // reftype
					limits()
				case 2:
					limits()
				case 3:
					i += 2 // valtype, mutability
				default:
					t.Fatalf("import kind %d", kind)
				}
			}
		case 10: // code
			for n := uleb(); n > 0; n-- {
				sz := int(uleb())
				bodies = append(bodies, sz)
				i += sz
			}
		}
		i = end
	}
	return imports, bodies
}

// footprintList is how many of the largest functions entered
// TestGuestFootprintUpstream lists (MRTR_FOOTPRINT_LIST to see more).
var footprintList = func() int {
	if n, err := strconv.Atoi(os.Getenv("MRTR_FOOTPRINT_LIST")); err == nil && n > 0 {
		return n
	}
	return 15
}()
