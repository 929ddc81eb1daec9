package upstream

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The multiplexer's cost per call, side by side with the same child
// driven over a bare pipe (one request line out, one response line back,
// nothing parsed or rewritten): the difference is what Stdio adds.
// cpu-ns/op is the CPU of this process (not the child's) per call, which
// a loaded machine inflates far less than the wall clock.
//
//	go test -run '^$' -bench 'Stdio(Call|RawPipe|Rewrite)' -benchmem ./internal/upstream

var benchCall = toolCall("1", "echo", map[string]int{"a": 1}, `{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`)

// cpuPerOp starts measuring this process's CPU time; the function it
// returns reports it per iteration.
func cpuPerOp(b *testing.B) func() {
	cpu := func() int64 {
		var r syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
		return r.Utime.Nano() + r.Stime.Nano()
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}

func BenchmarkStdioCall(b *testing.B) {
	cfg, _ := childConfig(b, "ok")
	s := startChild(b, cfg)
	ctx := context.Background()
	b.ReportAllocs()
	done := cpuPerOp(b)
	for b.Loop() {
		if _, err := s.Call(ctx, benchCall, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	done()
}

func BenchmarkStdioCallParallel(b *testing.B) {
	cfg, _ := childConfig(b, "ok")
	s := startChild(b, cfg)
	ctx := context.Background()
	b.ReportAllocs()
	done := cpuPerOp(b)
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Call(ctx, benchCall, nil, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	done()
}

func BenchmarkStdioRawPipe(b *testing.B) {
	cfg, _ := childConfig(b, "ok")
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = cfg.Env
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	br := bufio.NewReader(out)
	line := append(bytes.Clone(benchCall), '\n')
	b.ReportAllocs()
	done := cpuPerOp(b)
	for b.Loop() {
		if _, err := in.Write(line); err != nil {
			b.Fatal(err)
		}
		if _, err := br.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
	done()
}

// BenchmarkStdioRewrite is the multiplexer's own work per call, without
// the child: the request rewritten (id, progress token, traceparent), the
// response parsed and its id restored.
func BenchmarkStdioRewrite(b *testing.B) {
	resp := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"echo"}],"structuredContent":{"id":42,"arguments":{"a":1}}}}`)
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	b.ReportAllocs()
	done := cpuPerOp(b)
	for b.Loop() {
		m, err := parseMessage(benchCall)
		if err != nil {
			b.Fatal(err)
		}
		cl := &call{id: 42, origID: m.value(m.id)}
		if _, err := rewriteRequest(m, cl, tp); err != nil {
			b.Fatal(err)
		}
		r, err := parseMessage(resp)
		if err != nil || !r.isResponse() {
			b.Fatal(err)
		}
		_ = splice(r.raw, edit{r.id.Start, r.id.End, cl.origID})
	}
	done()
}

// BenchmarkStdioIdleMemory starts 8 idle children and reports the
// resident memory of each (VmRSS) and the proxy's heap per child. The
// child is the Go test server, or MRTR_BENCH_CHILD (a command line, e.g.
// "node server.mjs"; run with -benchtime 1x).
func BenchmarkStdioIdleMemory(b *testing.B) {
	const n = 8
	cfg, _ := childConfig(b, "ok")
	if c := os.Getenv("MRTR_BENCH_CHILD"); c != "" {
		f := strings.Fields(c)
		cfg.Command, cfg.Args, cfg.Env = f[0], f[1:], []string{"PATH=" + os.Getenv("PATH")}
	}
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		kids := make([]*Stdio, n)
		for i := range kids {
			s, err := NewStdio(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			kids[i] = s
		}
		time.Sleep(500 * time.Millisecond)
		runtime.GC()
		runtime.ReadMemStats(&after)
		var rss int64
		for _, s := range kids {
			rss += vmRSS(b, s)
		}
		b.ReportMetric(float64(rss)/n, "child-RSS-KiB")
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "proxy-heap-B/child")
		for _, s := range kids {
			s.Close()
		}
	}
}

func vmRSS(b *testing.B, s *Stdio) int64 {
	s.mu.Lock()
	pid := s.cur.pid
	s.mu.Unlock()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
