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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkProxy measures, side by side in one run, what `mrtr-wasm proxy`
// adds in front of the go-sdk v1.8.0 conformance fixture: the latency of a
// plain tools/call and of an input round (ask, then resume) directly and
// through the proxy (p50/p99), the throughput of plain calls with 16
// clients, and the proxy process's resident memory at rest and under load.
// Both servers are real processes (the mrtr-wasm binary with guard.wasm,
// the fixture binary); the clients run here.
//
//	go test ./internal/proxy -run '^$' -bench BenchmarkProxy -benchtime 2000x
//	MRTR_BENCH_PIN=1 go test ...   # upstream on CPU 1, proxy on CPU 0 (taskset)
func BenchmarkProxy(b *testing.B) {
	env := startBench(b)
	plain := func(base string) func() error {
		return func() error {
			_, err := benchCall(env.client, base, "test_simple_text", "")
			return err
		}
	}
	round := func(base string) func() error {
		return func() error {
			r, err := benchCall(env.client, base, "test_input_required_result_request_state", "")
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
	b.Run("tools_call/direct", func(b *testing.B) { latency(b, plain(env.direct)) })
	b.Run("tools_call/proxy", func(b *testing.B) { latency(b, plain(env.proxy)) })
	b.Run("input_round/direct", func(b *testing.B) { latency(b, round(env.direct)) })
	b.Run("input_round/proxy", func(b *testing.B) { latency(b, round(env.proxy)) })
	b.Run("memory/at_rest", func(b *testing.B) {
		b.ReportMetric(float64(rss(b, env.proxyPID))/(1<<20), "RSS-MiB")
	})
	b.Run("throughput/direct", func(b *testing.B) { throughput(b, plain(env.direct), 0) })
	b.Run("throughput/proxy", func(b *testing.B) { throughput(b, plain(env.proxy), env.proxyPID) })
}

var stateRE = regexp.MustCompile(`"requestState":"([^"]+)"`)

type benchEnv struct {
	client        *http.Client
	direct, proxy string
	proxyPID      int
}

func startBench(b *testing.B) *benchEnv {
	b.Helper()
	dir := b.TempDir()
	root, _ := filepath.Abs("../..")
	for _, c := range [][]string{
		{"go", "build", "-o", filepath.Join(dir, "mrtr-wasm"), "./cmd/mrtr-wasm"},
		{"go", "build", "-o", filepath.Join(dir, "everything-server"), "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"},
	} {
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
	spawn("1", filepath.Join(dir, "everything-server"), "-http", ln)
	direct := "http://" + ln
	waitHTTP(b, direct+"/mcp")
	keys, err := exec.Command(filepath.Join(dir, "mrtr-wasm"), "keygen").Output()
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "keys"), keys, 0o600)
	px, logs := spawn("0", filepath.Join(dir, "mrtr-wasm"), "proxy", "--addr", "127.0.0.1:0", "--upstream", direct+"/mcp",
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
		b.Fatal("the proxy did not start")
	}
	proxy := "http://" + a
	waitHTTP(b, proxy+"/healthz")
	c := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
	e := &benchEnv{client: c, direct: direct, proxy: proxy, proxyPID: px.Process.Pid}
	for i := 0; i < 200; i++ { // warm both up (pool instances, connections, the tools/list cache)
		benchCall(c, direct, "test_simple_text", "")
		benchCall(c, proxy, "test_simple_text", "")
	}
	b.Logf("pinned with taskset (upstream CPU 1, proxy CPU 0): %v", pin)
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

// throughput runs 16 clients for b.N calls in all and reports calls/s;
// with pid, the proxy's peak RSS while it runs.
func throughput(b *testing.B, f func() error, pid int) {
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
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(b.N)/el.Seconds(), "calls/s")
	if pid != 0 {
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-RSS-MiB")
	}
}

// rss is a process's resident set in bytes (Linux).
func rss(b *testing.B, pid int) int64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
